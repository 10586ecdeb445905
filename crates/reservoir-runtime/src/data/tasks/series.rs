//! The tasks written as one series of inputs and one-step-ahead targets (`reservoir
//! generate`), by name.

use std::fmt;
use std::str::FromStr;

use ndarray::{concatenate, Array2, Axis};

use reservoir_core::error::{ReservoirError, Result};

use super::lorenz::{lorenz, LorenzInit, LorenzOptions};
use super::mackey_glass::{mackey_glass, one_step_task, MackeyGlassOptions};
use super::narma::narma10;
use super::{next_step_task, TaskData};

/// Seed of a task generated without one.
const DEFAULT_SEED: u64 = 42;

/// A task generated as one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesTask {
    /// NARMA-10: columns `u` (input u(t)) and `y` (target y(t+1)).
    Narma10,
    /// Mackey–Glass (τ = 17, scaled to [−1, 1]): columns `x` and `x_next`.
    MackeyGlass,
    /// Lorenz-63 (dt = 0.01, unscaled): columns `x,y,z` and `x_next,y_next,z_next`.
    Lorenz,
}

impl SeriesTask {
    /// Every task, in the order their names are listed.
    pub const ALL: [SeriesTask; 3] = [
        SeriesTask::Narma10,
        SeriesTask::MackeyGlass,
        SeriesTask::Lorenz,
    ];

    /// The task's name as users write it: `narma10`, `mackey-glass`, `lorenz`.
    pub fn name(self) -> &'static str {
        match self {
            SeriesTask::Narma10 => "narma10",
            SeriesTask::MackeyGlass => "mackey-glass",
            SeriesTask::Lorenz => "lorenz",
        }
    }

    /// The names of the input columns, then of the target columns.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            SeriesTask::Narma10 => &["u", "y"],
            SeriesTask::MackeyGlass => &["x", "x_next"],
            SeriesTask::Lorenz => &["x", "y", "z", "x_next", "y_next", "z_next"],
        }
    }

    /// `length` rows of the task: inputs at time t, targets one step ahead; `seed` draws the
    /// NARMA inputs, the Mackey–Glass history or the Lorenz start (42 when `None`; Mackey–Glass
    /// then starts from its constant history).
    ///
    /// # Errors
    /// More rows than the memory available holds.
    pub fn generate(self, length: usize, seed: Option<u64>) -> Result<TaskData> {
        match self {
            SeriesTask::Narma10 => narma10(length, seed.unwrap_or(DEFAULT_SEED)),
            SeriesTask::MackeyGlass => {
                let options = MackeyGlassOptions {
                    history_seed: seed,
                    ..MackeyGlassOptions::default()
                };
                let series = mackey_glass(length + 1, options)?;
                Ok(one_step_task(series.view()))
            }
            SeriesTask::Lorenz => {
                let options = LorenzOptions {
                    init: LorenzInit::Random {
                        seed: seed.unwrap_or(DEFAULT_SEED),
                    },
                    ..LorenzOptions::default()
                };
                let trajectory: Array2<f64> = lorenz(length + 1, options)?;
                Ok(next_step_task(trajectory.view()))
            }
        }
    }

    /// [`SeriesTask::generate`] as one table: the input columns, then the target columns, in
    /// the order of [`SeriesTask::columns`].
    ///
    /// # Errors
    /// As [`SeriesTask::generate`].
    pub fn table(self, length: usize, seed: Option<u64>) -> Result<Array2<f64>> {
        let data = self.generate(length, seed)?;
        let table = concatenate(Axis(1), &[data.inputs.view(), data.targets.view()])
            .map_err(|e| ReservoirError::invalid("task table", e.to_string()))?;
        if table.dim() != (length, self.columns().len()) {
            return Err(ReservoirError::shape(
                "task table",
                format!("{length} x {}", self.columns().len()),
                format!("{} x {}", table.nrows(), table.ncols()),
            ));
        }
        Ok(table)
    }
}

impl fmt::Display for SeriesTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SeriesTask {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|task| task.name() == text)
            .ok_or_else(|| {
                format!("unknown task `{text}`: expected narma10, mackey-glass or lorenz")
            })
    }
}
