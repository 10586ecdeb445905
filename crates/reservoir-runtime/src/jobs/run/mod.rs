//! `reservoir run`: a config's `[task]` run end to end on the device the config asks for,
//! with the protocols of [`crate::data::tasks`] (the spike task in `spike_task`, the
//! series tasks in `series`).

use std::time::Instant;

use ndarray::Array2;
use reservoir_core::ConfigError;
use serde::Serialize;

use crate::config::{ExperimentConfig, TaskConfig};
use crate::data::tasks::spikes::SpikeClassificationData;
use crate::device::Dispatch;
use crate::error::Result;
use crate::model::{Model, SpikeModel};

mod series;
mod spike_task;

pub(crate) use series::series_task;

/// One named figure of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Name, e.g. `test_nrmse`.
    pub name: String,
    /// Value.
    pub value: f64,
}

/// What a run measured: scores and wall-clock timings, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReport {
    /// Task kind, e.g. `narma10`.
    pub task: String,
    /// Reservoir units.
    pub size: usize,
    /// Scores (NRMSE, R², memory capacity, …).
    pub metrics: Vec<Figure>,
    /// Seconds per phase.
    pub timings: Vec<Figure>,
}

fn figure(name: &str, value: f64) -> Figure {
    Figure {
        name: name.to_string(),
        value,
    }
}

/// Runs the config's task on the devices `dispatch` picks and reports its scores and timings.
///
/// # Errors
/// A config error naming `task` when there is no `[task]` table; any error of the run.
pub fn run(config: &ExperimentConfig, dispatch: &mut Dispatch) -> Result<ExperimentReport> {
    Ok(run_full(config, dispatch, &mut RunHooks::default())?.report)
}

/// [`run`] with progress calls, keeping the trained model when `hooks` asks for it, and the
/// test data (see [`RunOutcome`]).
pub fn run_full(
    config: &ExperimentConfig,
    dispatch: &mut Dispatch,
    hooks: &mut RunHooks<'_>,
) -> Result<RunOutcome> {
    let task = config.task().ok_or_else(|| {
        ConfigError::new("task", "a [task] table is required to run a config", "none")
    })?;
    let start = Instant::now();
    let mut outcome = match task {
        TaskConfig::SpikeClassification(options) => {
            spike_task::run(config, options, dispatch, hooks)?
        }
        task => series::run(config, task, dispatch, hooks)?,
    };
    outcome
        .report
        .timings
        .push(figure("total_seconds", start.elapsed().as_secs_f64()));
    Ok(outcome)
}

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
