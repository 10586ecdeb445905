//! `reservoir generate`: write a benchmark task as CSV (inputs and one-step-ahead targets).

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use ndarray::{s, ArrayView2};
use reservoir_core::memory::{bytes_of, ensure_available};
use reservoir_runtime::data::tasks::SeriesTask;

use crate::error::{CliError, CoreContext, Result};
use crate::output::{check_outputs, commit, stage_output};
use crate::progress;
use reservoir_runtime::data::write::{csv_bytes, csv_bytes_with_progress};

/// Longest series `generate` writes; longer is almost certainly a typo (and would exhaust memory).
pub const MAX_LENGTH: usize = 100_000_000;
/// From this many rows on (about a second of work), `generate` shows progress on a terminal.
const LONG_SERIES: usize = 500_000;

/// The tasks `generate` knows, by name (`narma10`, `mackey-glass`, `lorenz`).
fn task_parser() -> impl TypedValueParser<Value = SeriesTask> {
    PossibleValuesParser::new(SeriesTask::ALL.map(SeriesTask::name))
        .try_map(|name| name.parse::<SeriesTask>())
}

/// Arguments of `reservoir generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The task to generate.
    #[arg(value_parser = task_parser())]
    pub task: SeriesTask,
    /// Number of rows.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub length: usize,
    /// Seed of the task's random draws: NARMA inputs (default 42), Lorenz start (default 42),
    /// a perturbation of the Mackey–Glass history (default: none, the canonical constant
    /// history that `reservoir run` uses).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Where to write the CSV (written atomically).
    #[arg(long, value_name = "FILE.csv")]
    pub output: PathBuf,
    /// Write only the first ROWS rows to --output and the rest to --test-output, so the test
    /// file continues the training file in time.
    #[arg(
        long,
        value_name = "ROWS",
        requires = "test_output",
        allow_negative_numbers = true
    )]
    pub split: Option<usize>,
    /// Where the rows after --split go.
    #[arg(long, value_name = "FILE.csv", requires = "split")]
    pub test_output: Option<PathBuf>,
}

/// Runs `reservoir generate`.
pub fn run(args: &GenerateArgs) -> Result<()> {
    if !(1..=MAX_LENGTH).contains(&args.length) {
        return Err(CliError::Argument {
            flag: "--length",
            message: format!("must be in 1..={MAX_LENGTH}, got {}", args.length),
        });
    }
    let mut outputs = vec![("--output", args.output.as_path())];
    outputs.extend(args.test_output.as_deref().map(|p| ("--test-output", p)));
    check_outputs(&outputs, &[])?;
    if let Some(split) = args.split {
        if split == 0 || split >= args.length {
            return Err(CliError::Argument {
                flag: "--split",
                message: format!("must be in 1..{} (the --length), got {split}", args.length),
            });
        }
    }
    let task = args.task;
    // The task's arrays and the table made of them (three copies of 8-byte values), and the CSV
    // text (at most 25 bytes a value: `-0.00012345678901234567,`).
    let values = bytes_of(args.length, task.columns().len());
    ensure_available(
        &format!("{} rows of {}", args.length, task.name()),
        values.saturating_mul(3 * 8 + 25),
    )
    .map_err(|e| CliError::core("generating", e))?;
    let long = args.length >= LONG_SERIES;
    let spinner = long.then(|| progress::spinner("generating"));
    let table = task.table(args.length, args.seed);
    if let Some(spinner) = spinner {
        spinner.finish_and_clear();
    }
    let table = table.context(|| match args.seed {
        Some(seed) => format!("generating {} with seed {seed}", task.name()),
        None => format!("generating {} with its default seed", task.name()),
    })?;
    let header: Vec<String> = task.columns().iter().map(|c| c.to_string()).collect();
    let split = args.split.unwrap_or(args.length);
    // Both files staged, then put in place together: a failure leaves both as they were.
    let bytes = csv_rows(long, &header, table.slice(s![..split, ..]))?;
    let mut outputs = vec![stage_output("output file", &args.output, &bytes)?];
    drop(bytes);
    if let Some(test_output) = &args.test_output {
        let bytes = csv_rows(long, &header, table.slice(s![split.., ..]))?;
        outputs.push(stage_output("test output file", test_output, &bytes)?);
    }
    commit(outputs)
}

/// The CSV text of `rows`, with a progress bar over the rows for a long series.
fn csv_rows(long: bool, header: &[String], rows: ArrayView2<'_, f64>) -> Result<Vec<u8>> {
    if !long {
        return Ok(csv_bytes(header, rows)?);
    }
    let bar = progress::bar("writing", rows.nrows(), "rows");
    let bytes = csv_bytes_with_progress(header, rows, &mut |done, total| {
        progress::advance(&bar, done, total)
    });
    bar.finish_and_clear();
    Ok(bytes?)
}
