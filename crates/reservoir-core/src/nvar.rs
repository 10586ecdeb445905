//! The features of next-generation reservoir computing (NVAR: a nonlinear vector
//! autoregression; Gauthier et al., Nature Communications 12, 5564, 2021), with ReservoirPy's
//! names (`delay`, `order`, `strides`) and its feature order, so that the same
//! hyper-parameters give the same features.
//!
//! At step t the linear part is the input and `delay − 1` earlier inputs, one every `strides`
//! steps: x(t) ⊕ x(t − s) ⊕ … ⊕ x(t − (delay − 1)s), `delay · K` values (inputs before the
//! first are zero). The nonlinear part is every unique monomial of exactly `order` of those
//! values, in the lexicographic order of their index tuples i₀ ≤ i₁ ≤ … (Python's
//! `itertools.combinations_with_replacement`), each multiplied left to right. A readout's
//! intercept is the constant term.
//!
//! ```
//! use ndarray::array;
//! use reservoir_core::nvar::{Nvar, NvarParams};
//!
//! let config = NvarParams::new().delay(2).order(2).input_size(1).check()?;
//! let mut nvar = Nvar::new(&config)?;
//! // Linear [x(t), x(t-1)], then x(t)², x(t)·x(t-1), x(t-1)².
//! let features = nvar.run(array![[2.0], [3.0]].view())?;
//! assert_eq!(features.row(1).to_vec(), vec![3.0, 2.0, 9.0, 6.0, 4.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`NvarReservoir`] is the same features behind the [`Reservoir`] trait, so every job that
//! runs a reservoir (fits, forecasts, many sequences) runs NVAR.

use std::sync::Arc;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use serde::{Deserialize, Serialize};

use crate::checks::{check_inputs, check_run, check_state};
use crate::config::{check, checked_conversions};
use crate::error::{ConfigError, ReservoirError, Result};
use crate::memory::try_vec;
use crate::par::Par;
use crate::reservoir::{run_on_threads, Reservoir, SequenceVisitor};

/// Most features a step may have (linear and nonlinear together): a million f64 values a row.
pub const MAX_FEATURES: usize = 1 << 20;

/// Highest degree of the monomials (a product of more factors is no feature a readout uses).
pub const MAX_ORDER: usize = 32;

/// Unchecked NVAR parameters; [`NvarParams::check`] makes them an [`NvarConfig`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NvarParams {
    /// Inputs in the linear part: the current one and `delay − 1` earlier ones (default 2).
    pub delay: usize,
    /// Degree of the monomials of the nonlinear part (default 2).
    pub order: usize,
    /// Steps between the inputs of the linear part (default 1).
    pub strides: usize,
    /// Input channels K (default 1).
    pub input_size: usize,
}

impl Default for NvarParams {
    fn default() -> Self {
        Self {
            delay: 2,
            order: 2,
            strides: 1,
            input_size: 1,
        }
    }
}

impl NvarParams {
    /// The defaults: two inputs (now and one step back), their quadratic monomials.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the inputs in the linear part.
    pub fn delay(mut self, delay: usize) -> Self {
        self.delay = delay;
        self
    }

    /// Sets the degree of the monomials.
    pub fn order(mut self, order: usize) -> Self {
        self.order = order;
        self
    }

    /// Sets the steps between the inputs of the linear part.
    pub fn strides(mut self, strides: usize) -> Self {
        self.strides = strides;
        self
    }

    /// Sets the input channels.
    pub fn input_size(mut self, input_size: usize) -> Self {
        self.input_size = input_size;
        self
    }

    /// Checks the rules: every count ≥ 1, `order` at most [`MAX_ORDER`], at most
    /// [`MAX_FEATURES`] features a step.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field.
    pub fn check(self) -> std::result::Result<NvarConfig, ConfigError> {
        for (field, value) in [
            ("delay", self.delay),
            ("order", self.order),
            ("strides", self.strides),
            ("input_size", self.input_size),
        ] {
            check(value >= 1, field, "must be >= 1", value)?;
        }
        check(
            self.order <= MAX_ORDER,
            "order",
            &format!("must be at most {MAX_ORDER}"),
            self.order,
        )?;
        let linear = self.delay.checked_mul(self.input_size);
        // The linear part alone too wide: the delay's fault, whatever the order.
        check(
            linear.is_some_and(|l| l <= MAX_FEATURES),
            "delay",
            &format!("must keep delay · input_size at most {MAX_FEATURES} linear features"),
            self.delay,
        )?;
        let width = linear.and_then(|l| monomials(l, self.order).and_then(|m| m.checked_add(l)));
        let limit = format!(
            "must give at most {MAX_FEATURES} features a step (delay · input_size linear \
             ones and their monomials of this degree)"
        );
        check(
            width.is_some_and(|w| w <= MAX_FEATURES),
            "order",
            &limit,
            self.order,
        )?;
        check(
            self.delay
                .checked_mul(self.strides)
                .is_some_and(|d| d <= MAX_FEATURES),
            "strides",
            &format!("must keep delay · strides at most {MAX_FEATURES} steps"),
            self.strides,
        )?;
        Ok(NvarConfig { params: self })
    }
}

/// The number of monomials of degree `order` in `n` variables, C(n + order − 1, order), or
/// None past `usize`.
fn monomials(n: usize, order: usize) -> Option<usize> {
    // C(n + k − 1, k) built as a product of k exact integer steps.
    let mut count: usize = 1;
    for i in 1..=order {
        count = count.checked_mul(n.checked_add(i - 1)?)? / i;
    }
    Some(count)
}

/// Checked NVAR parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "NvarParams", try_from = "NvarParams")]
pub struct NvarConfig {
    params: NvarParams,
}

checked_conversions!(NvarConfig, NvarParams);

impl NvarConfig {
    /// Inputs in the linear part.
    pub fn delay(&self) -> usize {
        self.params.delay
    }

    /// Degree of the monomials.
    pub fn order(&self) -> usize {
        self.params.order
    }

    /// Steps between the inputs of the linear part.
    pub fn strides(&self) -> usize {
        self.params.strides
    }

    /// Input channels K.
    pub fn input_size(&self) -> usize {
        self.params.input_size
    }

    /// Values of the linear part: `delay · K`.
    pub fn linear_width(&self) -> usize {
        self.params.delay * self.params.input_size
    }

    /// Features a step: the linear part and its monomials.
    pub fn width(&self) -> usize {
        let linear = self.linear_width();
        // Checked not to overflow by `NvarParams::check`.
        linear + monomials(linear, self.params.order).unwrap_or(0)
    }
}

/// NVAR features of a series, step by step: the inputs it has seen are kept, so a series
/// given in parts gives the features of the whole.
#[derive(Debug, Clone)]
pub struct Nvar {
    config: NvarConfig,
    /// Index tuples of the monomials, `order` indices each, in ReservoirPy's order (shared by
    /// clones, which `run_many` runs sequences on).
    monomials: Arc<[u32]>,
    /// The last `delay · strides` inputs, a ring: row `newest` is the latest.
    store: Array2<f64>,
    newest: usize,
}

impl Nvar {
    /// An NVAR with no inputs seen (its past is zero).
    ///
    /// # Errors
    /// Out of memory for the monomials' indices or the store.
    pub fn new(config: &NvarConfig) -> Result<Self> {
        let (linear, order) = (config.linear_width(), config.order());
        let count = config.width() - linear;
        let mut monomials = try_vec("NVAR monomials", count * order, 0u32)?;
        // combinations_with_replacement(range(linear), order), lexicographic.
        let mut index = vec![0u32; order];
        for tuple in monomials.chunks_exact_mut(order) {
            tuple.copy_from_slice(&index);
            if let Some(i) = (0..order).rev().find(|&i| (index[i] as usize) + 1 < linear) {
                let next = index[i] + 1;
                index[i..].fill(next);
            }
        }
        let rows = config.delay() * config.strides();
        let store = try_vec("NVAR input store", rows * config.input_size(), 0.0)?;
        Ok(Self {
            config: config.clone(),
            monomials: monomials.into(),
            store: Array2::from_shape_vec((rows, config.input_size()), store)
                .map_err(|e| ReservoirError::invalid("NVAR input store", e.to_string()))?,
            newest: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &NvarConfig {
        &self.config
    }

    /// Forgets every input seen: the past is zero again.
    pub fn reset(&mut self) {
        self.store.fill(0.0);
        self.newest = 0;
    }

    /// The features (T × width) after each row of `inputs` (T × K), continuing from the
    /// inputs seen before.
    ///
    /// # Errors
    /// Inputs of the wrong width, not finite or beyond ±[`crate::checks::MAX_INPUT`]; out of
    /// memory for the features.
    pub fn run(&mut self, inputs: ArrayView2<f64>) -> Result<Array2<f64>> {
        check_inputs(self.config.input_size(), &inputs)?;
        let width = self.config.width();
        let mut values = try_vec("NVAR features", inputs.nrows() * width, 0.0)?;
        for (row, out) in inputs
            .rows()
            .into_iter()
            .zip(values.chunks_exact_mut(width))
        {
            self.step(row, out);
        }
        Array2::from_shape_vec((inputs.nrows(), width), values)
            .map_err(|e| ReservoirError::invalid("NVAR features", e.to_string()))
    }

    /// Takes in one input (K values, checked) and writes the features it gives to `out`
    /// (width values).
    fn step(&mut self, input: ArrayView1<f64>, out: &mut [f64]) {
        let (k, linear, order) = (
            self.config.input_size(),
            self.config.linear_width(),
            self.config.order(),
        );
        let (rows, strides) = (self.store.nrows(), self.config.strides());
        self.newest = (self.newest + rows - 1) % rows;
        self.store.row_mut(self.newest).assign(&input);
        for d in 0..self.config.delay() {
            let past = self.store.row((self.newest + d * strides) % rows);
            for (o, &v) in out[d * k..(d + 1) * k].iter_mut().zip(past) {
                *o = v;
            }
        }
        let (lin, nonlin) = out.split_at_mut(linear);
        for (o, tuple) in nonlin.iter_mut().zip(self.monomials.chunks_exact(order)) {
            let mut product = lin[tuple[0] as usize];
            for &i in &tuple[1..] {
                product *= lin[i as usize];
            }
            *o = product;
        }
    }

    /// Makes `linear` (a linear part: `delay · K` values, newest input first) the inputs seen,
    /// where the store holds exactly those (`strides` 1); `false`, and nothing changed, where
    /// it holds inputs between them that a linear part does not carry.
    fn restore(&mut self, linear: &[f64]) -> bool {
        if self.config.strides() != 1 {
            return false;
        }
        let k = self.config.input_size();
        for (mut row, values) in self
            .store
            .rows_mut()
            .into_iter()
            .zip(linear.chunks_exact(k))
        {
            for (s, &v) in row.iter_mut().zip(values) {
                *s = v;
            }
        }
        self.newest = 0;
        true
    }
}

/// NVAR as a [`Reservoir`]: N ([`Reservoir::size`]) is the feature width, K the input
/// channels, and the states of a run are its features, one row a step.
///
/// **The state** is the last step's features (zero after [`Reservoir::reset`], as are the
/// features of zero inputs), so that, as of every reservoir, it is the last row of a run. What
/// the next steps depend on is the past inputs alone, and the linear part of the features is
/// exactly those when `strides` is 1: [`Reservoir::set_state`] then restores the past inputs
/// from the state's linear part, and `state` gives back the vector set (its nonlinear part
/// plays no part in the next steps, being the monomials of the linear part in any state a run
/// reaches). With `strides` above 1 the reservoir also remembers the inputs between those of
/// the linear part, which no state of N values carries, so `set_state` is refused there.
#[derive(Debug, Clone)]
pub struct NvarReservoir {
    nvar: Nvar,
    /// The state: the last step's features, or the vector set.
    features: Vec<f64>,
    /// The threads `run_many` spreads sequences over.
    par: Par,
}

impl NvarReservoir {
    /// An NVAR reservoir with no inputs seen, running on one thread.
    ///
    /// # Errors
    /// Out of memory for the monomials' indices, the store or the state.
    pub fn new(config: &NvarConfig) -> Result<Self> {
        Ok(Self {
            nvar: Nvar::new(config)?,
            features: try_vec("NVAR state", config.width(), 0.0)?,
            par: Par::Seq,
        })
    }

    /// Lets `run_many` run sequences on the threads of `par` (the same bits as on one).
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &NvarConfig {
        self.nvar.config()
    }
}

impl Reservoir for NvarReservoir {
    fn size(&self) -> usize {
        self.nvar.config().width()
    }

    fn input_size(&self) -> usize {
        self.nvar.config().input_size()
    }

    fn par(&self) -> Par {
        self.par
    }

    fn set_par(&mut self, par: Par) {
        self.par = par;
    }

    fn reset(&mut self) -> Result<()> {
        self.nvar.reset();
        self.features.fill(0.0);
        Ok(())
    }

    fn state(&self) -> Result<Array1<f64>> {
        Ok(Array1::from(self.features.clone()))
    }

    /// Restores the past inputs from the state's linear part (see [`NvarReservoir`]).
    ///
    /// # Errors
    /// As every reservoir's; and an invalid-input error, the state unchanged, when `strides`
    /// is above 1.
    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        check_state(self.size(), &state)?;
        let values = state.to_vec();
        let linear = &values[..self.nvar.config().linear_width()];
        if !self.nvar.restore(linear) {
            return Err(ReservoirError::invalid(
                "NVAR state",
                format!(
                    "with strides {} the NVAR remembers inputs that its features do not hold, \
                     so no state of features can be set (only strides 1 allows set_state)",
                    self.nvar.config().strides()
                ),
            ));
        }
        self.features = values;
        Ok(())
    }

    fn run_into(&mut self, inputs: ArrayView2<f64>, mut states: ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        for (row, mut out) in inputs.rows().into_iter().zip(states.rows_mut()) {
            self.nvar.step(row, &mut self.features);
            for (o, &f) in out.iter_mut().zip(&self.features) {
                *o = f;
            }
        }
        Ok(())
    }

    /// Runs the sequences on clones sharing the monomials' indices, on the threads of
    /// [`Reservoir::par`]: the same bits as one after another.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        run_on_threads(self, sequences, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn features_follow_reservoirpys_definition() {
        // Two channels, delay 2, strides 2, order 2: linear [x(t), x(t-2)] of 4 values, then
        // the 10 monomials (i, j), i <= j, lexicographic.
        let config = NvarParams::new()
            .delay(2)
            .order(2)
            .strides(2)
            .input_size(2)
            .check()
            .expect("config");
        assert_eq!((config.linear_width(), config.width()), (4, 14));
        let mut nvar = Nvar::new(&config).expect("nvar");
        let u = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]];
        let f = nvar.run(u.view()).expect("run");
        let expected = |now: [f64; 2], past: [f64; 2]| {
            let lin = [now[0], now[1], past[0], past[1]];
            let mut out = lin.to_vec();
            for i in 0..4 {
                for j in i..4 {
                    out.push(lin[i] * lin[j]);
                }
            }
            out
        };
        assert_eq!(f.row(0).to_vec(), expected([1.0, 2.0], [0.0, 0.0]));
        assert_eq!(f.row(2).to_vec(), expected([5.0, 6.0], [1.0, 2.0]));
        assert_eq!(f.row(3).to_vec(), expected([7.0, 8.0], [3.0, 4.0]));
        // In parts: the same features as in one run.
        nvar.reset();
        let first = nvar.run(u.slice(ndarray::s![..3, ..])).expect("first");
        let rest = nvar.run(u.slice(ndarray::s![3.., ..])).expect("rest");
        assert_eq!(first.row(2), f.row(2));
        assert_eq!(rest.row(0), f.row(3));
    }

    #[test]
    fn monomials_of_degree_three_are_in_lexicographic_order() {
        let config = NvarParams::new()
            .delay(1)
            .order(3)
            .input_size(2)
            .check()
            .expect("config");
        let nvar = Nvar::new(&config).expect("nvar");
        let tuples: Vec<&[u32]> = nvar.monomials.chunks_exact(3).collect();
        assert_eq!(
            tuples,
            [[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]]
                .iter()
                .map(|t| &t[..])
                .collect::<Vec<_>>()
        );
        assert_eq!(monomials(4, 2), Some(10));
        assert_eq!(monomials(usize::MAX / 2, 3), None);
    }

    #[test]
    fn bad_parameters_and_inputs_are_errors_naming_them() {
        let zero = NvarParams::new().delay(0).check().unwrap_err().to_string();
        assert!(zero.contains("delay"), "{zero}");
        let huge = NvarParams::new().delay(100).order(5).input_size(10).check();
        assert!(huge.unwrap_err().to_string().contains("order"));
        // One linear value has one monomial of any degree: the degree has its own bound.
        let deep = NvarParams::new().delay(1).order(1 << 40).check();
        assert!(deep.unwrap_err().to_string().contains("at most 32"));
        let config = NvarParams::new().input_size(2).check().expect("config");
        let mut nvar = Nvar::new(&config).expect("nvar");
        assert!(nvar.run(array![[1.0]].view()).is_err());
        assert!(nvar.run(array![[1.0, f64::NAN]].view()).is_err());
    }
}
