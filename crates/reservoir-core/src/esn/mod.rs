//! The echo-state reservoir on the CPU.

mod blocks;

use std::sync::Arc;

use ndarray::linalg::general_mat_vec_mul;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::activation::apply_in_place;
use crate::checks::{check_run, check_state};
use crate::config::{Precision, ReservoirConfig};
use crate::error::Result;
use crate::features::SequenceFeatures;
use crate::random::{stream_rng, Stream};
use crate::real::Real;
use crate::reservoir::{
    features_of_runs, run_on_all_cores, run_one_by_one, Reservoir, SequenceVisitor,
};
use crate::sparse::CsrMatrix;
use crate::weights::ReservoirWeights;

/// Density at and above which W is stored dense: with SIMD gathers the CSR mat-vec beats the
/// dense one up to about this density at N = 100 … 1000 (docs/performance.md).
const DENSE_DENSITY: f64 = 0.7;

/// W in the layout its CPU mat-vec is fastest in.
#[derive(Debug, Clone)]
enum RecurrentLayout<T> {
    Sparse(CsrMatrix<T>),
    Dense(Array2<T>),
}

impl<T: Real> RecurrentLayout<T> {
    fn new(w: &CsrMatrix<f64>) -> Self {
        let density = w.nnz() as f64 / (w.nrows() as f64 * w.ncols() as f64);
        if density >= DENSE_DENSITY {
            RecurrentLayout::Dense(w.to_dense().mapv(T::from_f64))
        } else {
            RecurrentLayout::Sparse(w.cast())
        }
    }

    /// `y ← W·x`; lengths are checked once by the owner.
    fn mul_vec(&self, x: &[T], y: &mut [T]) {
        match self {
            RecurrentLayout::Sparse(w) => w.mul_vec_trusted(x, y),
            RecurrentLayout::Dense(w) => general_mat_vec_mul(
                T::one(),
                w,
                &ArrayView1::from(x),
                T::zero(),
                &mut ArrayViewMut1::from(y),
            ),
        }
    }
}

/// Echo-state reservoir: `x(t+1) = (1 − a)·x(t) + a·f(W_in·u(t) + W·x(t) + b + σ·ξ(t))`,
/// with ξ(t) standard normal noise drawn from the config's seeded noise stream.
///
/// `T` is the arithmetic of the update (`f32` or `f64`); weights are generated in `f64` and
/// rounded once. A reservoir built twice from the same config produces bit-identical states.
///
/// The weights are shared (`Arc`): a clone copies only the state, so that
/// [`Reservoir::run_many`] can run sequences on clones, one per thread.
#[derive(Debug, Clone)]
pub struct EchoStateNetwork<T: Real = f32> {
    config: ReservoirConfig,
    weights: Arc<ReservoirWeights>,
    recurrent: Arc<RecurrentLayout<T>>,
    /// W_in transposed (K × N), so each input channel's weights are contiguous.
    input_by_channel: Arc<Array2<T>>,
    bias: Arc<[T]>,
    leak: T,
    state: Vec<T>,
    pre_activation: Vec<T>,
    noise: ChaCha8Rng,
}

impl<T: Real> EchoStateNetwork<T> {
    /// Generates the weights for `config` and builds the reservoir in the zero state.
    pub fn new(config: &ReservoirConfig) -> Result<Self> {
        let (weights, _) = ReservoirWeights::generate(config)?;
        Self::from_weights(config, weights)
    }

    /// Builds a reservoir on existing weights (a loaded model, or weights made elsewhere).
    ///
    /// # Errors
    /// Weights whose sizes differ from the config's `size` / `input_size`.
    pub fn from_weights(config: &ReservoirConfig, weights: ReservoirWeights) -> Result<Self> {
        weights.check_fits(config)?;
        let n = config.size();
        Ok(Self {
            recurrent: Arc::new(RecurrentLayout::new(weights.recurrent())),
            input_by_channel: Arc::new(weights.input().t().mapv(T::from_f64)),
            bias: weights.bias().iter().map(|&b| T::from_f64(b)).collect(),
            leak: T::from_f64(config.leak_rate()),
            state: vec![T::zero(); n],
            pre_activation: vec![T::zero(); n],
            noise: stream_rng(config.seed(), Stream::Noise),
            config: config.clone(),
            weights: Arc::new(weights),
        })
    }

    /// The configuration the reservoir was built from.
    pub fn config(&self) -> &ReservoirConfig {
        &self.config
    }

    /// The weights (in `f64`, as generated).
    pub fn weights(&self) -> &ReservoirWeights {
        &self.weights
    }

    /// One update with input `u` (K entries, already checked).
    fn step(&mut self, u: ArrayView1<f64>) {
        let pre = &mut self.pre_activation;
        self.recurrent.mul_vec(&self.state, pre);
        for (p, &b) in pre.iter_mut().zip(self.bias.iter()) {
            *p += b;
        }
        for (&u_k, w_k) in u.iter().zip(self.input_by_channel.rows()) {
            if u_k != 0.0 {
                let u_k = T::from_f64(u_k);
                for (p, &w) in pre.iter_mut().zip(w_k.iter()) {
                    *p += w * u_k;
                }
            }
        }
        let noise_level = self.config.noise_level();
        if noise_level > 0.0 {
            for p in pre.iter_mut() {
                let xi: f64 = self.noise.sample(StandardNormal);
                *p += T::from_f64(noise_level * xi);
            }
        }
        apply_in_place(self.config.activation(), pre);
        let keep = T::one() - self.leak;
        for (x, &p) in self.state.iter_mut().zip(pre.iter()) {
            *x = keep * *x + self.leak * p;
        }
    }
}

impl<T: Real> Reservoir for EchoStateNetwork<T> {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn reset(&mut self) -> Result<()> {
        self.state.fill(T::zero());
        Ok(())
    }

    fn state(&self) -> Result<Array1<f64>> {
        Ok(self.state.iter().map(|v| v.as_f64()).collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        check_state(self.size(), &state)?;
        for (x, &v) in self.state.iter_mut().zip(state.iter()) {
            *x = T::from_f64(v);
        }
        Ok(())
    }

    fn run_into(&mut self, inputs: ArrayView2<f64>, mut states: ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.size(), self.input_size(), &inputs, &states)?;
        for (u, mut out) in inputs.rows().into_iter().zip(states.rows_mut()) {
            self.step(u);
            for (o, x) in out.iter_mut().zip(&self.state) {
                *o = x.as_f64();
            }
        }
        Ok(())
    }

    /// Runs the sequences on every core. A sparse W steps them in blocks of
    /// [`crate::real::LANES`] (see `blocks.rs`: the same states to rounding, the same bits
    /// whatever the threads or the order); a dense one runs them on clones sharing the
    /// weights, with the same bits as one after another. With noise the states depend on the
    /// order in which the sequences draw from the one noise stream, so they run one after
    /// another.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        if self.config.noise_level() > 0.0 || sequences.len() < 2 {
            return run_one_by_one(self, sequences, visit);
        }
        let recurrent = Arc::clone(&self.recurrent);
        match &*recurrent {
            RecurrentLayout::Sparse(w) => {
                blocks::run_in_blocks(self, w, sequences, visit)?;
                self.reset()
            }
            RecurrentLayout::Dense(_) => run_on_all_cores(self, sequences, visit),
        }
    }

    /// A sparse W sums each block's features as its states go by (see `blocks.rs`), without
    /// holding any sequence's states; otherwise the features of [`Reservoir::run_many`].
    fn sequence_features(
        &mut self,
        sequences: &[ArrayView2<f64>],
        features: &SequenceFeatures,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        let recurrent = Arc::clone(&self.recurrent);
        match &*recurrent {
            RecurrentLayout::Sparse(w)
                if self.config.noise_level() == 0.0 && sequences.len() >= 2 =>
            {
                let rows = blocks::features_in_blocks(self, w, sequences, features, progress)?;
                self.reset()?;
                Ok(rows)
            }
            _ => features_of_runs(self, sequences, features, progress),
        }
    }
}

/// The CPU echo-state reservoir for `weights`, in the precision the config asks for.
///
/// # Errors
/// Weights whose sizes differ from the config's.
pub fn cpu_reservoir(
    config: &ReservoirConfig,
    weights: ReservoirWeights,
) -> Result<Box<dyn Reservoir>> {
    Ok(match config.precision() {
        Precision::F32 => Box::new(EchoStateNetwork::<f32>::from_weights(config, weights)?),
        Precision::F64 => Box::new(EchoStateNetwork::<f64>::from_weights(config, weights)?),
    })
}
