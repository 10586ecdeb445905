//! Benchmark tasks: seeded, portable generators of input/target sequences and of the spike
//! task's labelled patterns.
//!
//! Every generator is deterministic: the same arguments (and seed) give bit-identical arrays on
//! every run and platform (random numbers come from `rand_chacha::ChaCha8Rng::seed_from_u64`).
//!
//! - [`narma::narma10`]: canonical NARMA-10 (Atiya & Parlos 2000; the form used by the reservoir-computing literature).
//! - [`mackey_glass::mackey_glass`]: the Mackey–Glass τ = 17 series, plus
//!   [`mackey_glass::one_step_task`].
//! - [`lorenz::lorenz`]: the Lorenz-63 system sampled every `dt`, plus
//!   [`lorenz::standardize`].
//!
//! A task is a [`TaskData`]: `inputs` (T × K) and `targets` (T × M) aligned row by row, so that
//! a readout trained on the reservoir state after feeding `inputs` row `t` predicts `targets`
//! row `t`.

pub mod lorenz;
pub mod mackey_glass;
pub mod memory;
pub mod narma;
mod series;
pub mod spikes;

pub use series::SeriesTask;

use ndarray::{s, Array2, ArrayView2};

use reservoir_core::error::{ReservoirError, Result};
use reservoir_core::memory::{bytes_of, ensure_available};

/// An out-of-memory error, before anything is generated, when `task`'s `rows` rows of `values`
/// f64 values each (its arrays and working copies) do not fit in the machine's memory.
pub(crate) fn ensure_rows_fit(task: &str, rows: usize, values: usize) -> Result<()> {
    ensure_available(
        &format!("the {task} data ({rows} rows)"),
        bytes_of(rows, values).saturating_mul(8),
    )
}

/// Inputs (T × K) and targets (T × M) of a task, aligned row by row: `targets` row `t` is what a
/// readout should output once the reservoir has seen `inputs` rows `0..=t`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskData {
    /// One input vector per time step, T × K.
    pub inputs: Array2<f64>,
    /// One target vector per time step, T × M.
    pub targets: Array2<f64>,
}

impl TaskData {
    /// Pairs `inputs` with `targets`; an error if their row counts differ.
    pub fn new(inputs: Array2<f64>, targets: Array2<f64>) -> Result<Self> {
        if inputs.nrows() != targets.nrows() {
            return Err(ReservoirError::shape(
                "TaskData targets (rows must match the inputs)",
                format!("{} rows", inputs.nrows()),
                format!("{} rows", targets.nrows()),
            ));
        }
        Ok(Self { inputs, targets })
    }

    /// Number of time steps T (rows).
    pub fn len(&self) -> usize {
        self.inputs.nrows()
    }

    /// Whether there are no time steps.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Splits in time into rows `0..train_len` and `train_len..T` (in that order).
    ///
    /// Both parts must be non-empty: `1 <= train_len < T`, otherwise an
    /// [`ReservoirError::InvalidInput`] error. Also an error if `inputs` and `targets` have
    /// different row counts (possible since the fields are public).
    pub fn split(&self, train_len: usize) -> Result<(TaskData, TaskData)> {
        let total = self.inputs.nrows();
        if self.targets.nrows() != total {
            return Err(ReservoirError::shape(
                "TaskData::split targets (rows must match the inputs)",
                format!("{total} rows"),
                format!("{} rows", self.targets.nrows()),
            ));
        }
        if train_len == 0 || train_len >= total {
            return Err(ReservoirError::invalid(
                "TaskData::split",
                format!("train_len must be in 1..{total} (both parts non-empty), got {train_len}"),
            ));
        }
        let part = |rows: std::ops::Range<usize>| TaskData {
            inputs: self.inputs.slice(s![rows.clone(), ..]).to_owned(),
            targets: self.targets.slice(s![rows, ..]).to_owned(),
        };
        Ok((part(0..train_len), part(train_len..total)))
    }
}

/// Next-step prediction on a multivariate series (L × D): input row `t` is `series` row `t`,
/// target row `t` is `series` row `t + 1`, for `t = 0..L−2` (so L − 1 rows; none if L < 2).
pub fn next_step_task(series: ArrayView2<'_, f64>) -> TaskData {
    let rows = series.nrows().saturating_sub(1);
    TaskData {
        inputs: series.slice(s![..rows, ..]).to_owned(),
        targets: series.slice(s![series.nrows().min(1).., ..]).to_owned(),
    }
}
