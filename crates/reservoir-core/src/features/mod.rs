//! The readout features of a whole sequence: summaries of its states (the last state, the mean
//! state, the mean of the last k, the reservoir model space), concatenated. What a sequence
//! classifier trains on.
//!
//! A sequence's states pass three optional stages before they are summarized: the states of
//! the time-reversed sequence beside the forward ones (`bidirectional`), a projection onto
//! principal components fitted on the training sequences' states (`components`), then the
//! summaries. The reservoir model space summarizes a sequence by the weights and biases of a
//! ridge model that predicts each of its (projected) states from the one before (Bianchi et
//! al., IEEE TNNLS 2020).
//!
//! ```
//! use ndarray::array;
//! use reservoir_core::features::{FeatureParams, Summary};
//!
//! let features = FeatureParams::new()
//!     .summaries(vec![Summary::Last, Summary::Mean])
//!     .check()?;
//! let states = array![[1.0, 0.0], [3.0, 2.0]];
//! assert_eq!(features.of(states.view(), 0)?.to_vec(), vec![3.0, 2.0, 2.0, 1.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod model_space;
mod projection;

use ndarray::{s, Array1, ArrayView2, ArrayViewMut1, Axis};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, ReservoirError, Result};

pub use projection::{Projection, StateCovariance};

/// One summary of a sequence's states (T × N), N values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Summary {
    /// The state after the last step: what the reservoir remembers of the whole sequence.
    Last,
    /// The mean state after the warm-up.
    Mean,
    /// The mean of the last `last_k` states (of those after the warm-up, when fewer).
    MeanLast,
    /// The reservoir model space: the weights (d × d, row-major: input state × next state) and
    /// the biases (d) of a ridge model, of strength `model_ridge`, that predicts each state
    /// after the warm-up from the one before; d² + d values for states of width d.
    ModelSpace,
}

impl Summary {
    /// `last`, `mean` or `mean_last`.
    pub fn name(self) -> &'static str {
        match self {
            Summary::Last => "last",
            Summary::Mean => "mean",
            Summary::MeanLast => "mean_last",
            Summary::ModelSpace => "model_space",
        }
    }

    /// Whether the summary reads the states after the warm-up (all but `last`).
    fn skips_warmup(self) -> bool {
        !matches!(self, Summary::Last)
    }

    /// Values for states of width `d`.
    fn width(self, d: usize) -> usize {
        match self {
            Summary::ModelSpace => d * d + d,
            _ => d,
        }
    }
}

/// Unchecked feature parameters (the `[features]` table of a config); [`FeatureParams::check`]
/// makes them [`SequenceFeatures`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeatureParams {
    /// The summaries, concatenated in this order (default `["last"]`).
    pub summaries: Vec<Summary>,
    /// States averaged by `mean_last` (default 5).
    pub last_k: usize,
    /// States at the start of each sequence left out of its averages and its model, while the
    /// reservoir settles from the zero state (default 0).
    pub warmup: usize,
    /// The states of the time-reversed sequence beside the forward ones, doubling the state
    /// width (default false).
    pub bidirectional: bool,
    /// Principal components the states are projected onto before the summaries, fitted on the
    /// training sequences' states; 0 keeps the states as they are (default 0).
    pub components: usize,
    /// Ridge strength of the `model_space` summary's per-sequence models (default 1).
    pub model_ridge: f64,
}

impl Default for FeatureParams {
    fn default() -> Self {
        Self {
            summaries: vec![Summary::Last],
            last_k: 5,
            warmup: 0,
            bidirectional: false,
            components: 0,
            model_ridge: 1.0,
        }
    }
}

impl FeatureParams {
    /// The defaults: the last state only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the summaries.
    pub fn summaries(mut self, summaries: Vec<Summary>) -> Self {
        self.summaries = summaries;
        self
    }

    /// Sets the states averaged by [`Summary::MeanLast`].
    pub fn last_k(mut self, last_k: usize) -> Self {
        self.last_k = last_k;
        self
    }

    /// Sets the warm-up left out of the averages.
    pub fn warmup(mut self, warmup: usize) -> Self {
        self.warmup = warmup;
        self
    }

    /// Sets whether the time-reversed sequence's states join the forward ones.
    pub fn bidirectional(mut self, bidirectional: bool) -> Self {
        self.bidirectional = bidirectional;
        self
    }

    /// Sets the principal components the states are projected onto (0: none).
    pub fn components(mut self, components: usize) -> Self {
        self.components = components;
        self
    }

    /// Sets the ridge strength of the model-space summary.
    pub fn model_ridge(mut self, model_ridge: f64) -> Self {
        self.model_ridge = model_ridge;
        self
    }

    /// Checks the rules: at least one summary, none twice, `last_k` ≥ 1, `model_ridge` finite
    /// and positive, `components` at most [`MAX_COMPONENTS`].
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field (`summaries`, `last_k`, `model_ridge`, `components`).
    pub fn check(self) -> std::result::Result<SequenceFeatures, ConfigError> {
        self.checked(None)
    }

    fn checked(
        self,
        projection: Option<Projection>,
    ) -> std::result::Result<SequenceFeatures, ConfigError> {
        let listed = || {
            let names: Vec<&str> = self.summaries.iter().map(|s| s.name()).collect();
            format!("[{}]", names.join(", "))
        };
        if self.summaries.is_empty() {
            return Err(ConfigError::new(
                "summaries",
                "must name at least one of last, mean, mean_last, model_space",
                "[]",
            ));
        }
        for (i, summary) in self.summaries.iter().enumerate() {
            if self.summaries[..i].contains(summary) {
                return Err(ConfigError::new(
                    "summaries",
                    format!("names `{}` more than once", summary.name()),
                    listed(),
                ));
            }
        }
        if self.last_k == 0 {
            return Err(ConfigError::new("last_k", "must be >= 1", 0));
        }
        if !(self.model_ridge > 0.0 && self.model_ridge <= MAX_MODEL_RIDGE) {
            return Err(ConfigError::new(
                "model_ridge",
                format!("must be in (0, {MAX_MODEL_RIDGE:e}]"),
                self.model_ridge,
            ));
        }
        if self.components > MAX_COMPONENTS {
            return Err(ConfigError::new(
                "components",
                format!("must be at most {MAX_COMPONENTS}"),
                self.components,
            ));
        }
        if let Some(p) = &projection {
            if self.components == 0 || p.components() != self.components {
                return Err(ConfigError::new(
                    "components",
                    format!("the fitted projection has {} components", p.components()),
                    self.components,
                ));
            }
        }
        Ok(SequenceFeatures {
            params: self,
            projection,
        })
    }
}

/// Most principal components `components` may ask for: the covariance of the states is
/// decomposed whole, so the states' width bounds it in practice.
pub const MAX_COMPONENTS: usize = 4096;

/// Largest `model_ridge`: beyond it every model is its biases alone.
const MAX_MODEL_RIDGE: f64 = 1e12;

/// Checked feature parameters, with the projection once fitted: how a sequence's states
/// become one row of readout features ([`SequenceFeatures::width`] values). The default is
/// the last state alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "FeatureParts", try_from = "FeatureParts")]
pub struct SequenceFeatures {
    params: FeatureParams,
    projection: Option<Projection>,
}

/// [`SequenceFeatures`] as stored: the parameters and the fitted projection, checked together
/// when read.
#[derive(Serialize, Deserialize)]
struct FeatureParts {
    params: FeatureParams,
    projection: Option<Projection>,
}

impl TryFrom<FeatureParts> for SequenceFeatures {
    type Error = ConfigError;
    fn try_from(parts: FeatureParts) -> std::result::Result<Self, ConfigError> {
        parts.params.checked(parts.projection)
    }
}

impl From<SequenceFeatures> for FeatureParts {
    fn from(features: SequenceFeatures) -> Self {
        FeatureParts {
            params: features.params,
            projection: features.projection,
        }
    }
}

impl TryFrom<FeatureParams> for SequenceFeatures {
    type Error = ConfigError;
    fn try_from(params: FeatureParams) -> std::result::Result<Self, ConfigError> {
        params.check()
    }
}

impl From<SequenceFeatures> for FeatureParams {
    fn from(features: SequenceFeatures) -> Self {
        features.params
    }
}

impl SequenceFeatures {
    /// The summaries, in the order of the features.
    pub fn summaries(&self) -> &[Summary] {
        &self.params.summaries
    }

    /// States averaged by [`Summary::MeanLast`].
    pub fn last_k(&self) -> usize {
        self.params.last_k
    }

    /// States left out of the averages at the start of each sequence.
    pub fn warmup(&self) -> usize {
        self.params.warmup
    }

    /// Whether the time-reversed sequence's states join the forward ones.
    pub fn bidirectional(&self) -> bool {
        self.params.bidirectional
    }

    /// The principal components asked for (0: none).
    pub fn components(&self) -> usize {
        self.params.components
    }

    /// Ridge strength of the model-space summary.
    pub fn model_ridge(&self) -> f64 {
        self.params.model_ridge
    }

    /// The fitted projection, once [`SequenceFeatures::with_projection`] gave it.
    pub fn projection(&self) -> Option<&Projection> {
        self.projection.as_ref()
    }

    /// Whether the features still need a projection fitted on training states (`components`
    /// asked for, none given yet).
    pub fn needs_projection(&self) -> bool {
        self.params.components > 0 && self.projection.is_none()
    }

    /// These features with `projection` (fitted on states of [`SequenceFeatures::state_width`]).
    ///
    /// # Errors
    /// A projection with another number of components than `components`.
    pub fn with_projection(&self, projection: Projection) -> Result<Self> {
        Ok(self.params.clone().checked(Some(projection))?)
    }

    /// These features summed straight from a reservoir's states, one direction, no
    /// projection, no model space: what a backend may sum as its states go by (the CPU's
    /// blocks, the GPU's device sums). Other features need each sequence's states whole.
    pub fn is_plain(&self) -> bool {
        !self.params.bidirectional
            && self.params.components == 0
            && !self.params.summaries.contains(&Summary::ModelSpace)
    }

    /// These features for the forward states alone (`bidirectional` off): the half that a
    /// backend sums for each direction.
    pub fn one_direction(&self) -> Self {
        let mut params = self.params.clone();
        params.bidirectional = false;
        SequenceFeatures {
            params,
            projection: self.projection.clone(),
        }
    }

    /// Width of the states the features read, for a reservoir of `n` units: 2n when
    /// bidirectional, n otherwise (before any projection).
    pub fn state_width(&self, n: usize) -> usize {
        if self.params.bidirectional {
            2 * n
        } else {
            n
        }
    }

    /// Width of the states the summaries read: the components when projected, else
    /// [`SequenceFeatures::state_width`].
    fn summarized_width(&self, n: usize) -> usize {
        if self.params.components > 0 {
            self.params.components
        } else {
            self.state_width(n)
        }
    }

    /// Features per sequence of a reservoir of `n` units.
    pub fn width(&self, n: usize) -> usize {
        self.width_of_summaries(self.summarized_width(n))
    }

    /// Features per sequence whose summarized states are `d` wide.
    fn width_of_summaries(&self, d: usize) -> usize {
        self.params.summaries.iter().map(|s| s.width(d)).sum()
    }

    /// Fewest steps a sequence needs: one; one after the warm-up when a summary averages; two
    /// after it for the model space.
    pub fn min_steps(&self) -> usize {
        let summaries = &self.params.summaries;
        if summaries.contains(&Summary::ModelSpace) {
            self.params.warmup + 2
        } else if summaries.iter().any(|s| s.skips_warmup()) {
            self.params.warmup + 1
        } else {
            1
        }
    }

    /// The rows `start..end` of a T-step sequence that `summary` reads (`Last`: the last).
    pub fn rows(&self, summary: Summary, steps: usize) -> std::ops::Range<usize> {
        let after_warmup = self.params.warmup.min(steps);
        match summary {
            Summary::Last => steps.saturating_sub(1)..steps,
            Summary::Mean | Summary::ModelSpace => after_warmup..steps,
            Summary::MeanLast => steps.saturating_sub(self.params.last_k).max(after_warmup)..steps,
        }
    }

    /// An error unless sequence `index` with `steps` steps has the states the summaries need.
    ///
    /// # Errors
    /// An invalid-input error naming the sequence.
    pub fn check_steps(&self, index: usize, steps: usize) -> Result<()> {
        match self.shortfall(steps) {
            None => Ok(()),
            Some(why) => Err(ReservoirError::invalid(
                "sequence features",
                format!("sequence {index} {why}"),
            )),
        }
    }

    /// What a sequence of `steps` steps lacks for the summaries (`has no steps`, ...), if
    /// anything: the reason of [`SequenceFeatures::check_steps`], for callers that name
    /// sequences otherwise.
    pub fn shortfall(&self, steps: usize) -> Option<String> {
        let needed = self.min_steps();
        if steps >= needed {
            None
        } else if steps == 0 {
            Some("has no steps".to_string())
        } else {
            Some(format!(
                "has {steps} step(s), and {} after a warm-up of {} needs at least {needed}",
                if self.params.summaries.contains(&Summary::ModelSpace) {
                    "a state model"
                } else {
                    "averaging"
                },
                self.params.warmup
            ))
        }
    }

    /// Writes the features of sequence `index` from its states (T × [`state_width`] of the
    /// reservoir: the forward states, then the reversed sequence's beside them when
    /// bidirectional) into `out`: projected when a projection was fitted, then summarized.
    ///
    /// [`state_width`]: SequenceFeatures::state_width
    ///
    /// # Errors
    /// `out` not [`SequenceFeatures::width`] long, states not as wide as the projection's
    /// input, too few states (see [`SequenceFeatures::check_steps`]), a projection still to
    /// fit, or a model-space solve that fails.
    pub fn write(
        &self,
        states: ArrayView2<f64>,
        index: usize,
        mut out: ArrayViewMut1<f64>,
    ) -> Result<()> {
        let steps = states.nrows();
        self.check_steps(index, steps)?;
        if self.needs_projection() {
            return Err(ReservoirError::invalid(
                "sequence features",
                "the projection onto principal components has not been fitted",
            ));
        }
        let projected;
        let states = match &self.projection {
            Some(projection) => {
                projected = projection.apply(states)?;
                projected.view()
            }
            None => states,
        };
        let d = states.ncols();
        let width = self.width_of_summaries(d);
        if out.len() != width {
            return Err(ReservoirError::shape("sequence features", width, out.len()));
        }
        let mut at = 0;
        for &summary in &self.params.summaries {
            let mut slot = out.slice_mut(s![at..at + summary.width(d)]);
            at += summary.width(d);
            let rows = states.slice(s![self.rows(summary, steps), ..]);
            if summary == Summary::ModelSpace {
                model_space::write(rows, self.params.model_ridge, slot)?;
                continue;
            }
            slot.fill(0.0);
            for row in rows.axis_iter(Axis(0)) {
                slot += &row;
            }
            if summary.skips_warmup() {
                slot /= rows.nrows() as f64;
            }
        }
        Ok(())
    }

    /// Turns the sums of each summary's rows (of a `steps`-step sequence of `n` units) into the
    /// features of [plain](SequenceFeatures::is_plain) features: the averaging summaries
    /// divided by their row counts.
    pub(crate) fn scale_sums(&self, mut sums: ArrayViewMut1<f64>, n: usize, steps: usize) {
        for (k, &summary) in self.params.summaries.iter().enumerate() {
            if summary.skips_warmup() {
                let count = self.rows(summary, steps).len() as f64;
                let mut slot = sums.slice_mut(ndarray::s![k * n..(k + 1) * n]);
                slot /= count;
            }
        }
    }

    /// The features of sequence `index` from its states (T × state width, as
    /// [`SequenceFeatures::write`] takes them).
    ///
    /// # Errors
    /// As [`SequenceFeatures::write`].
    pub fn of(&self, states: ArrayView2<f64>, index: usize) -> Result<Array1<f64>> {
        let d = match &self.projection {
            Some(p) => p.components(),
            None => states.ncols(),
        };
        let width = self.width_of_summaries(d);
        let mut out = Array1::zeros(width);
        self.write(states, index, out.view_mut())?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn summaries_average_the_rows_they_name() {
        let states = array![[1.0], [2.0], [3.0], [4.0], [6.0]];
        let features = FeatureParams::new()
            .summaries(vec![Summary::MeanLast, Summary::Last, Summary::Mean])
            .last_k(2)
            .warmup(1)
            .check()
            .expect("valid");
        assert_eq!(
            features.of(states.view(), 0).expect("features").to_vec(),
            vec![5.0, 6.0, 15.0 / 4.0]
        );
        // Fewer states after the warm-up than last_k: mean_last averages those there are.
        let short = array![[1.0], [3.0]];
        let wide = FeatureParams::new()
            .summaries(vec![Summary::MeanLast])
            .last_k(9)
            .warmup(1)
            .check()
            .expect("valid");
        assert_eq!(wide.of(short.view(), 0).expect("ok").to_vec(), vec![3.0]);
    }

    #[test]
    fn bad_params_and_short_sequences_are_named() {
        assert_eq!(
            FeatureParams::new()
                .summaries(vec![])
                .check()
                .map_err(|e| e.field),
            Err("summaries".to_string())
        );
        let twice = FeatureParams::new().summaries(vec![Summary::Mean, Summary::Mean]);
        assert!(twice.check().is_err_and(|e| e.rule.contains("`mean`")));
        assert!(FeatureParams::new().last_k(0).check().is_err());

        let features = FeatureParams::new()
            .summaries(vec![Summary::Mean])
            .warmup(3)
            .check()
            .expect("valid");
        let message = features
            .of(Array2::zeros((3, 2)).view(), 7)
            .expect_err("all warm-up")
            .to_string();
        assert!(
            message.contains("sequence 7") && message.contains("at least 4"),
            "{message}"
        );
        let last = SequenceFeatures::default();
        assert!(last
            .of(Array2::zeros((0, 2)).view(), 2)
            .is_err_and(|e| e.to_string().contains("sequence 2 has no steps")));
        assert!(last.of(Array2::zeros((1, 2)).view(), 0).is_ok());
    }
}
