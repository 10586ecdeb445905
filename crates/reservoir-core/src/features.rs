//! The readout features of a whole sequence: summaries of its states (the last state, the mean
//! state, the mean of the last k), concatenated. What a sequence classifier trains on.
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

use ndarray::{Array1, ArrayView2, ArrayViewMut1, Axis};
use serde::{Deserialize, Serialize};

use crate::config::checked_conversions;
use crate::error::{ConfigError, ReservoirError, Result};

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
}

impl Summary {
    /// `last`, `mean` or `mean_last`.
    pub fn name(self) -> &'static str {
        match self {
            Summary::Last => "last",
            Summary::Mean => "mean",
            Summary::MeanLast => "mean_last",
        }
    }

    /// Whether the summary averages states (and so skips the warm-up).
    fn averages(self) -> bool {
        !matches!(self, Summary::Last)
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
    /// States at the start of each sequence left out of its averages, while the reservoir
    /// settles from the zero state (default 0).
    pub warmup: usize,
}

impl Default for FeatureParams {
    fn default() -> Self {
        Self {
            summaries: vec![Summary::Last],
            last_k: 5,
            warmup: 0,
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

    /// Checks the rules: at least one summary, none twice, `last_k` ≥ 1.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field (`summaries`, `last_k`).
    pub fn check(self) -> std::result::Result<SequenceFeatures, ConfigError> {
        let listed = || {
            let names: Vec<&str> = self.summaries.iter().map(|s| s.name()).collect();
            format!("[{}]", names.join(", "))
        };
        if self.summaries.is_empty() {
            return Err(ConfigError::new(
                "summaries",
                "must name at least one of last, mean, mean_last",
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
        Ok(SequenceFeatures { params: self })
    }
}

/// Checked feature parameters: how a sequence's states become one row of readout features
/// (`summaries.len() × N` values). The default is the last state alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "FeatureParams", try_from = "FeatureParams")]
pub struct SequenceFeatures {
    params: FeatureParams,
}

checked_conversions!(SequenceFeatures, FeatureParams);

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

    /// Features per sequence of a reservoir of `n` units.
    pub fn width(&self, n: usize) -> usize {
        self.params.summaries.len() * n
    }

    /// Fewest steps a sequence needs: one, and one after the warm-up when a summary averages.
    pub fn min_steps(&self) -> usize {
        if self.params.summaries.iter().any(|s| s.averages()) {
            self.params.warmup + 1
        } else {
            1
        }
    }

    /// The rows `start..end` of a T-step sequence that `summary` averages (`Last`: the last).
    pub fn rows(&self, summary: Summary, steps: usize) -> std::ops::Range<usize> {
        let after_warmup = self.params.warmup.min(steps);
        match summary {
            Summary::Last => steps.saturating_sub(1)..steps,
            Summary::Mean => after_warmup..steps,
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
                "has {steps} step(s), and averaging after a warm-up of {} needs at least {needed}",
                self.params.warmup
            ))
        }
    }

    /// Writes the features of sequence `index` from its states (T × N) into `out`.
    ///
    /// # Errors
    /// `out` not [`SequenceFeatures::width`] long, or too few states (see
    /// [`SequenceFeatures::check_steps`]).
    pub fn write(
        &self,
        states: ArrayView2<f64>,
        index: usize,
        mut out: ArrayViewMut1<f64>,
    ) -> Result<()> {
        let (steps, n) = states.dim();
        if out.len() != self.width(n) {
            return Err(ReservoirError::shape(
                "sequence features",
                self.width(n),
                out.len(),
            ));
        }
        self.check_steps(index, steps)?;
        out.fill(0.0);
        for (k, &summary) in self.params.summaries.iter().enumerate() {
            let mut slot = out.slice_mut(ndarray::s![k * n..(k + 1) * n]);
            for row in states
                .slice(ndarray::s![self.rows(summary, steps), ..])
                .axis_iter(Axis(0))
            {
                slot += &row;
            }
        }
        self.scale_sums(out, n, steps);
        Ok(())
    }

    /// Turns the sums of each summary's rows (of a `steps`-step sequence of `n` units) into the
    /// features: the averaging summaries divided by their row counts.
    pub(crate) fn scale_sums(&self, mut sums: ArrayViewMut1<f64>, n: usize, steps: usize) {
        for (k, &summary) in self.params.summaries.iter().enumerate() {
            if summary.averages() {
                let count = self.rows(summary, steps).len() as f64;
                let mut slot = sums.slice_mut(ndarray::s![k * n..(k + 1) * n]);
                slot /= count;
            }
        }
    }

    /// The features of sequence `index` from its states (T × N).
    ///
    /// # Errors
    /// As [`SequenceFeatures::write`].
    pub fn of(&self, states: ArrayView2<f64>, index: usize) -> Result<Array1<f64>> {
        let mut out = Array1::zeros(self.width(states.ncols()));
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
