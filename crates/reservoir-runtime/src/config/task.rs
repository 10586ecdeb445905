//! The `[task]` table: what `reservoir run` and `reservoir sweep` do with the reservoir.

use std::convert::Infallible;

use reservoir_core::architecture::Architecture;
use reservoir_core::lif::LifConfig;
use reservoir_core::memory::bytes_of;
use reservoir_core::readout::ridge_bytes;
use reservoir_core::weights::weights_bytes;
use reservoir_core::{ConfigError, ReadoutConfig};
use serde::{Deserialize, Serialize};

use super::spikes::{self, SpikeClassificationOptions, SpikeClassificationParams};
use crate::device::Workload;
use crate::memory::JobMemory;

/// What `reservoir run` does with the reservoir: the `[task]` table, its spike task's options
/// of type `S` ([`TaskParams`] as written, [`TaskConfig`] once checked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Task<S> {
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
    /// Spike-pattern classification (see [`crate::data::tasks::spikes`]) by the `[reservoir]`
    /// echo-state network and, when a `[lif]` table is given, a LIF network; plus the
    /// template detector's recall and precision.
    SpikeClassification(S),
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

/// The `[task]` table as written.
pub type TaskParams = Task<SpikeClassificationParams>;

/// The `[task]` table, checked (by `TaskParams::check`, when the experiment config is).
pub type TaskConfig = Task<SpikeClassificationOptions>;

impl<S> Task<S> {
    /// The task's name in reports, e.g. `narma10`.
    pub fn kind(&self) -> &'static str {
        match self {
            Task::Narma10 { .. } => "narma10",
            Task::MackeyGlass { .. } => "mackey_glass",
            Task::SpikeClassification(_) => "spike_classification",
            Task::MemoryCapacity { .. } => "memory_capacity",
        }
    }
}

impl TaskParams {
    /// Checks the task and its agreement with the readout (its washout must leave training
    /// rows) and the LIF reservoir (it must step at the spike task's bin width); field names
    /// carry their table.
    pub(crate) fn check(
        self,
        readout: &ReadoutConfig,
        lif: Option<&LifConfig>,
    ) -> Result<TaskConfig, ConfigError> {
        let (train, test) = match &self {
            Task::Narma10 { train, test, .. } => (*train, *test),
            Task::MackeyGlass {
                train,
                test,
                forecast,
            } => {
                if forecast > test {
                    return Err(ConfigError::new(
                        "task.forecast",
                        format!("must be <= task.test ({test}): the forecast is scored on the test rows"),
                        forecast,
                    ));
                }
                (*train, *test)
            }
            Task::MemoryCapacity {
                max_delay,
                train,
                test,
            } => {
                check_rows("task.max_delay", *max_delay, 1)?;
                (*train, *test)
            }
            Task::SpikeClassification(_) => {
                return self.try_map_spikes(|params| spikes::check(params, lif))
            }
        };
        check_rows("task.train", train, 1)?;
        check_rows("task.test", test, 2)?;
        if readout.washout() >= train {
            return Err(ConfigError::new(
                "readout.washout",
                "must be < task.train",
                readout.washout(),
            ));
        }
        self.try_map_spikes(|params| params.check())
    }
}

impl From<TaskConfig> for TaskParams {
    fn from(task: TaskConfig) -> Self {
        match task.try_map_spikes(|options| Ok::<_, Infallible>(options.into())) {
            Ok(task) => task,
            Err(never) => match never {},
        }
    }
}

impl<S> Task<S> {
    /// The same task with its spike options mapped by `f`.
    fn try_map_spikes<T, E>(self, f: impl FnOnce(S) -> Result<T, E>) -> Result<Task<T>, E> {
        Ok(match self {
            Task::SpikeClassification(options) => Task::SpikeClassification(f(options)?),
            Task::Narma10 { train, test, seed } => Task::Narma10 { train, test, seed },
            Task::MackeyGlass {
                train,
                test,
                forecast,
            } => Task::MackeyGlass {
                train,
                test,
                forecast,
            },
            Task::MemoryCapacity {
                max_delay,
                train,
                test,
            } => Task::MemoryCapacity {
                max_delay,
                train,
                test,
            },
        })
    }
}

impl TaskConfig {
    /// What the task asks of its echo-state reservoir: its sequences and their steps (the
    /// readout's `washout` comes on top of memory capacity's rows).
    pub(crate) fn workload(&self, washout: usize) -> Workload {
        match self {
            Task::Narma10 { train, test, .. } => Workload::single(train + test),
            Task::MackeyGlass {
                train,
                test,
                forecast,
            } => Workload::single(train + test + forecast),
            Task::MemoryCapacity {
                max_delay,
                train,
                test,
            } => Workload::single(washout.max(*max_delay) + train + test),
            Task::SpikeClassification(options) => options.workload(),
        }
    }

    /// The host memory of a time-series task on the echo-state reservoir `esn` at its peak:
    /// weights, ridge sums, the task's rows and the test predictions (the spike task's is
    /// estimated by its own run).
    pub(crate) fn memory(&self, architecture: &Architecture, washout: usize) -> JobMemory {
        let (rows, values, outputs, test) = match self {
            Task::Narma10 { train, test, .. } => (train + test, 4, 1, *test),
            Task::MackeyGlass { train, test, .. } => (train + test + 1, 4, 1, *test),
            Task::MemoryCapacity {
                max_delay,
                train,
                test,
            } => (
                washout.max(*max_delay) + train + test,
                max_delay + 2,
                *max_delay,
                *test,
            ),
            Task::SpikeClassification(_) => (0, 0, 0, 0),
        };
        let weights = architecture
            .echo_state_configs()
            .into_iter()
            .fold(0u64, |sum, config| {
                sum.saturating_add(weights_bytes(config))
            });
        JobMemory::default()
            .add("weights", weights)
            .add("ridge sums", ridge_bytes(architecture.size(), outputs))
            .add("task data", bytes_of(rows, values).saturating_mul(8))
            .add("predictions", bytes_of(test, outputs).saturating_mul(16))
    }
}

/// Most rows (or delays, or forecast steps) a task field may ask for: far beyond any memory, so
/// memory is what refuses a large task (with the size it needs), and sums of these fields
/// never overflow.
const MAX_ROWS: usize = 1_000_000_000_000;

/// `value` in `min..=`[`MAX_ROWS`].
fn check_rows(field: &str, value: usize, min: usize) -> Result<(), ConfigError> {
    if !(min..=MAX_ROWS).contains(&value) {
        return Err(ConfigError::new(
            field,
            format!("must be in {min}..={MAX_ROWS}"),
            value,
        ));
    }
    Ok(())
}
