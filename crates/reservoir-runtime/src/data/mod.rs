//! Data in and out: every reader and writer of series and sequence files, with their limits
//! (their messages are [`crate::error::DataError`]'s), and the benchmark tasks' generators
//! ([`tasks`]).
//!
//! - One series: named columns of a CSV file with a header row ([`read_columns`],
//!   [`read_inputs_targets`], [`read_inputs`]).
//! - Many sequences: long-form CSV (a sequence column, an optional time column) or NumPy
//!   `.npy`/`.npz` files (2-D or 3-D inputs, optional lengths, targets and labels), read into
//!   the same per-sequence arrays ([`read_sequences`]).
//! - Out: predictions as CSV or `.npy` bytes ([`write`](mod@write)), for the caller to write atomically.
//!
//! Every value read is finite and within the bounds the engine computes with; a file too large
//! for the memory available is refused with the line reached.

mod columns;
mod lines;
mod sequences;
pub mod tasks;
pub mod write;

use crate::error::DataError;

/// Result type of the data readers and writers.
type Result<T, E = DataError> = std::result::Result<T, E>;

pub use columns::{read_columns, read_inputs, read_inputs_targets, Group};
pub use sequences::{read_sequences, SequenceColumns, SequenceFile};
