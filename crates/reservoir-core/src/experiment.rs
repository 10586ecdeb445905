//! Config files: `[reservoir]`, `[readout]` and an optional `[task]` table.
//!
//! `reservoir fit` uses the first two on CSV data; `reservoir run` runs the task end to end on
//! the CPU with the protocols of the `tasks` module. One file serves both, so a task's
//! reservoir can be refitted on exported CSV data unchanged.

use std::time::Instant;

use ndarray::{s, Array1};
use serde::{Deserialize, Serialize};

use crate::config::{parse_toml, ReadoutConfig, ReservoirConfig};
use crate::error::{ConfigError, Result};
use crate::esn::cpu_reservoir;
use crate::forecast::closed_loop;
use crate::metrics::{nrmse, r2, rmse};
use crate::readout::{fit_ridge, LinearReadout};
use crate::reservoir::Reservoir;
use crate::tasks::mackey_glass::{mackey_glass, one_step_task, MackeyGlassOptions};
use crate::tasks::memory::{memory_capacity, MemoryCapacityOptions};
use crate::tasks::narma::narma10;
use crate::tasks::TaskData;

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

    /// Checks all three tables; field names carry their table (`task.train`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.reservoir
            .validate()
            .map_err(|e| e.prefixed("reservoir"))?;
        self.readout.validate().map_err(|e| e.prefixed("readout"))?;
        let Some(task) = &self.task else {
            return Ok(());
        };
        let (train, test) = match *task {
            TaskConfig::Narma10 { train, test, .. }
            | TaskConfig::MackeyGlass { train, test, .. } => (train, test),
            TaskConfig::MemoryCapacity {
                max_delay,
                train,
                test,
            } => {
                check_positive("task.max_delay", max_delay)?;
                (train, test)
            }
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

    /// Runs the task on a CPU reservoir and reports its scores and timings.
    ///
    /// # Errors
    /// A config error naming `task` when there is no `[task]` table; any error of the run.
    pub fn run(&self) -> Result<ExperimentReport> {
        self.run_with(cpu_reservoir)
    }

    /// Runs the task on the reservoir `build` makes from the `[reservoir]` table (with one
    /// input channel, as every task here has); the GPU backend passes its own builder.
    pub fn run_with(
        &self,
        build: impl FnOnce(&ReservoirConfig) -> Result<Box<dyn Reservoir + Send>>,
    ) -> Result<ExperimentReport> {
        let task = self.task.as_ref().ok_or_else(|| {
            ConfigError::new("task", "a [task] table is required to run a config", "none")
        })?;
        let start = Instant::now();
        let mut reservoir = build(&ReservoirConfig {
            input_size: 1,
            ..self.reservoir.clone()
        })?;
        let mut timings = vec![figure("setup_seconds", start.elapsed().as_secs_f64())];
        let mut metrics = Vec::new();
        let kind = match task {
            TaskConfig::Narma10 { train, test, seed } => {
                let data = narma10(train + test, *seed)?;
                self.train_and_test(
                    reservoir.as_mut(),
                    &data,
                    *train,
                    &mut metrics,
                    &mut timings,
                )?;
                "narma10"
            }
            TaskConfig::MackeyGlass {
                train,
                test,
                forecast,
            } => {
                let series = mackey_glass(train + test + 1, MackeyGlassOptions::default())?;
                let data = one_step_task(series.view());
                let (readout, trained_state) = self.train_and_test(
                    reservoir.as_mut(),
                    &data,
                    *train,
                    &mut metrics,
                    &mut timings,
                )?;
                if *forecast > 0 {
                    // Run free from the end of training.
                    let t = Instant::now();
                    reservoir.set_state(trained_state.view())?;
                    let steps = (*forecast).min(*test);
                    let generated = closed_loop(
                        reservoir.as_mut(),
                        &readout,
                        series.slice(s![*train..*train + 1]),
                        steps,
                    )?;
                    let error = (generated[(steps - 1, 0)] - series[*train + steps]).abs()
                        / series.std(0.0);
                    metrics.push(figure(&format!("closed_loop_nrmse{steps}"), error));
                    timings.push(figure("forecast_seconds", t.elapsed().as_secs_f64()));
                }
                "mackey_glass"
            }
            TaskConfig::MemoryCapacity {
                max_delay,
                train,
                test,
            } => {
                let t = Instant::now();
                let options = MemoryCapacityOptions {
                    max_delay: *max_delay,
                    train_len: *train,
                    test_len: *test,
                    washout: self.readout.washout.max(*max_delay),
                    ridge: self.readout.ridge,
                    ..Default::default()
                };
                let mc = memory_capacity(reservoir.as_mut(), &options)?;
                metrics.push(figure("memory_capacity", mc.total));
                timings.push(figure("run_and_fit_seconds", t.elapsed().as_secs_f64()));
                "memory_capacity"
            }
        };
        timings.push(figure("total_seconds", start.elapsed().as_secs_f64()));
        Ok(ExperimentReport {
            task: kind.to_string(),
            size: self.reservoir.size,
            metrics,
            timings,
        })
    }

    /// Fits on the first `train` rows, scores every following row (continuing in time);
    /// returns the readout and the reservoir state at the end of training.
    fn train_and_test(
        &self,
        reservoir: &mut dyn Reservoir,
        data: &TaskData,
        train: usize,
        metrics: &mut Vec<Figure>,
        timings: &mut Vec<Figure>,
    ) -> Result<(LinearReadout, Array1<f64>)> {
        let (train_data, test_data) = data.split(train)?;
        let t = Instant::now();
        let fit = fit_ridge(
            reservoir,
            train_data.inputs.view(),
            train_data.targets.view(),
            &self.readout,
        )?;
        let trained_state = reservoir.state();
        timings.push(figure("fit_seconds", t.elapsed().as_secs_f64()));
        let t = Instant::now();
        let states = reservoir.run(test_data.inputs.view())?;
        let predictions = fit.readout.predict(states.view())?;
        timings.push(figure("test_seconds", t.elapsed().as_secs_f64()));
        let target = test_data.targets.view();
        metrics.push(figure("train_nrmse", fit.train_nrmse));
        metrics.push(figure("test_nrmse", nrmse(predictions.view(), target)?));
        metrics.push(figure("test_rmse", rmse(predictions.view(), target)?));
        metrics.push(figure("test_r2", r2(predictions.view(), target)?));
        Ok((fit.readout, trained_state))
    }
}
