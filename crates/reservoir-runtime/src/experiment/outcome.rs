//! What [`run_full`](super::run_full) is asked for and
//! what it gives back besides the report: progress calls, the trained model, the test data.

use ndarray::Array2;

use super::ExperimentReport;
use crate::model::{Model, SpikeModel};
use crate::tasks::spike_classification::SpikeClassificationData;

/// A progress callback: `(stage, done, total)`.
pub type ProgressFn<'a> = dyn FnMut(&str, usize, usize) + 'a;

/// How a run reports progress and what it keeps.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// Called as long loops advance with `(stage, done, total)`: stage `training` counts the
    /// training rows run (series tasks), `esn` and `lif` the samples run through each
    /// reservoir (spike task; training samples, then test samples), `detection` the test
    /// samples searched. A new stage starts at `done` 0 or more; `done == total` ends it.
    pub progress: Option<&'a mut ProgressFn<'a>>,
    /// Keep the trained model in [`RunOutcome::model`] (with a copy of the reservoir's
    /// weights).
    pub keep_model: bool,
}

impl RunHooks<'_> {
    /// Reports `(stage, done, total)` to the progress callback, if there is one.
    pub fn report(&mut self, stage: &str, done: usize, total: usize) {
        if let Some(progress) = self.progress.as_mut() {
            progress(stage, done, total);
        }
    }
}

impl std::fmt::Debug for RunHooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHooks")
            .field("progress", &self.progress.is_some())
            .field("keep_model", &self.keep_model)
            .finish()
    }
}

/// A trained model of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainedModel {
    /// NARMA-10 or Mackey–Glass: the echo-state readout with one input and one target column
    /// (`u` → `y`, `x` → `x_next`, as `reservoir generate` names them), and the state after
    /// the test rows.
    Series(Model),
    /// Spike classification: the echo-state classifier.
    SpikeClassifier(SpikeModel),
}

/// The predictions and targets of a series task's test rows (test rows × 1 each).
#[derive(Debug, Clone, PartialEq)]
pub struct TestSeries {
    /// The readout's outputs, one row per test row.
    pub predictions: Array2<f64>,
    /// The true targets.
    pub targets: Array2<f64>,
}

/// A run's report and what it leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Scores and timings.
    pub report: ExperimentReport,
    /// The trained model, when [`RunHooks::keep_model`] asked for it and the task trains one
    /// (memory capacity does not: it fits one readout per delay).
    pub model: Option<TrainedModel>,
    /// NARMA-10 and Mackey–Glass: the one-step test predictions and targets.
    pub test_series: Option<TestSeries>,
    /// Spike classification: the generated templates and samples.
    pub spike_data: Option<SpikeClassificationData>,
}
