//! Config files: `[reservoir]`, `[readout]` and an optional `[task]` table.
//!
//! `reservoir fit` uses the first two on CSV data; `reservoir run` runs the task end to end on
//! the CPU with the protocols of the `tasks` module. One file serves both, so a task's
//! reservoir can be refitted on exported CSV data unchanged.

mod outcome;
pub(crate) mod series;
mod spikes;

pub use outcome::{ProgressFn, RunHooks, RunOutcome, TestSeries, TrainedModel};

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::{parse_toml, ReadoutConfig, ReservoirConfig};
use crate::detection::DetectorOptions;
use crate::error::{ConfigError, Result};
use crate::esn::cpu_reservoir;
use crate::lif::{LifConfig, LifNetwork};
use crate::reservoir::Reservoir;
use crate::sweep::{CpuLaneRunner, LaneRunner, SweepConfig};
use crate::tasks::spike_classification::SpikeClassificationOptions;

/// What `reservoir run` does with the reservoir.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskConfig {
    /// Canonical NARMA-10: train on `train` rows, score every one of the next `test` rows.
    Narma10 {
        /// Training rows (the readout's washout is dropped from these).
        train: usize,
        /// Test rows, continuing the training run in time.
        test: usize,
        /// Seed of the input sequence.
        seed: u64,
    },
    /// Mackey–Glass (τ = 17): one-step prediction, then a closed-loop forecast.
    MackeyGlass {
        /// Training rows (teacher-forced one-step prediction).
        train: usize,
        /// Test rows of the one-step task.
        test: usize,
        /// Closed-loop steps after training; NRMSE is reported at the last one (84 in the
        /// literature's NRMSE84). 0 skips the forecast.
        forecast: usize,
    },
    /// Spike-pattern classification (see `tasks::spike_classification`) by the `[reservoir]`
    /// echo-state network and, when a `[lif]` table is given, a LIF network; plus the
    /// template detector's recall and precision.
    SpikeClassification(SpikeClassificationOptions),
    /// Memory capacity (Jaeger 2001) of a one-input reservoir.
    MemoryCapacity {
        /// Largest delay.
        max_delay: usize,
        /// Training rows after the washout.
        train: usize,
        /// Held-out rows.
        test: usize,
    },
}

/// A config file: `[reservoir]`, `[readout]` and, for `reservoir run`, `[task]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExperimentConfig {
    /// The `[task]` table (required by [`ExperimentConfig::run`] only).
    pub task: Option<TaskConfig>,
    /// The `[reservoir]` table.
    pub reservoir: ReservoirConfig,
    /// The `[readout]` table.
    pub readout: ReadoutConfig,
    /// The `[lif]` table: a LIF reservoir for the spike task (optional).
    pub lif: Option<LifConfig>,
    /// The `[detector]` table: the template detector of the spike task.
    pub detector: DetectorOptions,
    /// The `[sweep]` table: the hyper-parameter grid of `reservoir sweep` (ignored by
    /// [`ExperimentConfig::run`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepConfig>,
}

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

fn check_positive(field: &str, value: usize) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::new(field, "must be >= 1", value));
    }
    Ok(())
}

impl ExperimentConfig {
    /// Parses and validates TOML text; `origin` (a path or `<embedded>`) prefixes messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let config: Self = parse_toml(text, origin)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every table; field names carry their table (`task.train`, `sweep.ridge[1]`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.reservoir
            .validate()
            .map_err(|e| e.prefixed("reservoir"))?;
        self.readout.validate().map_err(|e| e.prefixed("readout"))?;
        if let Some(sweep) = &self.sweep {
            sweep.validate().map_err(|e| e.prefixed("sweep"))?;
        }
        let Some(task) = &self.task else {
            return Ok(());
        };
        let (train, test) = match task {
            TaskConfig::Narma10 { train, test, .. }
            | TaskConfig::MackeyGlass { train, test, .. } => (*train, *test),
            TaskConfig::MemoryCapacity {
                max_delay,
                train,
                test,
            } => {
                check_positive("task.max_delay", *max_delay)?;
                (*train, *test)
            }
            TaskConfig::SpikeClassification(options) => return spikes::validate(self, options),
        };
        check_positive("task.train", train)?;
        if test < 2 {
            return Err(ConfigError::new("task.test", "must be >= 2", test));
        }
        if self.readout.washout >= train {
            return Err(ConfigError::new(
                "readout.washout",
                "must be < task.train",
                self.readout.washout,
            ));
        }
        Ok(())
    }

    /// Runs the task on CPU reservoirs and reports its scores and timings.
    ///
    /// # Errors
    /// A config error naming `task` when there is no `[task]` table; any error of the run.
    pub fn run(&self) -> Result<ExperimentReport> {
        self.run_with(&mut CpuFactory)
    }

    /// Runs the task on the reservoirs `factory` builds (the GPU backend passes its own).
    pub fn run_with(&self, factory: &mut dyn ReservoirFactory) -> Result<ExperimentReport> {
        Ok(self.run_full(factory, &mut RunHooks::default())?.report)
    }

    /// [`ExperimentConfig::run_with`] with progress calls, keeping the trained model when
    /// `hooks` asks for it, and the test data (see [`RunOutcome`]).
    pub fn run_full(
        &self,
        factory: &mut dyn ReservoirFactory,
        hooks: &mut RunHooks<'_>,
    ) -> Result<RunOutcome> {
        let task = self.task.as_ref().ok_or_else(|| {
            ConfigError::new("task", "a [task] table is required to run a config", "none")
        })?;
        let start = Instant::now();
        let mut outcome = match task {
            TaskConfig::SpikeClassification(options) => spikes::run(self, options, factory, hooks)?,
            series_task => series::run(self, series_task, factory, hooks)?,
        };
        outcome
            .report
            .timings
            .push(figure("total_seconds", start.elapsed().as_secs_f64()));
        Ok(outcome)
    }
}

/// Builds the reservoirs of a run; the core builds them on the CPU ([`CpuFactory`]), the GPU
/// crate and the command line pass factories that honour `backend`.
pub trait ReservoirFactory {
    /// An echo-state reservoir for `config`.
    fn echo_state(&mut self, config: &ReservoirConfig) -> Result<Box<dyn Reservoir + Send>>;
    /// A LIF reservoir for `config`.
    fn lif(&mut self, config: &LifConfig) -> Result<Box<dyn Reservoir + Send>>;
    /// The runner of a sweep's lanes around `base` (default: [`CpuLaneRunner`]).
    fn lane_runner(&mut self, _base: &ReservoirConfig) -> Result<Box<dyn LaneRunner>> {
        Ok(Box::new(CpuLaneRunner))
    }
}

/// Builds every reservoir on the CPU.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuFactory;

impl ReservoirFactory for CpuFactory {
    fn echo_state(&mut self, config: &ReservoirConfig) -> Result<Box<dyn Reservoir + Send>> {
        cpu_reservoir(config)
    }
    fn lif(&mut self, config: &LifConfig) -> Result<Box<dyn Reservoir + Send>> {
        Ok(Box::new(LifNetwork::new(config)?))
    }
}
