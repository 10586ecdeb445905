//! `reservoir sweep CONFIG`: run a config's hyper-parameter lanes and report the best.

use std::path::PathBuf;

use reservoir_runtime::sweep::{run_sweep, SweepReport, SweepScore};
use reservoir_runtime::Dispatch;

use crate::device::{self, DeviceArg};
use crate::error::{CliError, Result};
use crate::output::write_stdout;
use crate::report::{aligned, json_line, number};
use crate::run::read_config;

/// Arguments of `reservoir sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// A config with a `[task]` table (narma10, mackey_glass or memory_capacity) and a
    /// `[sweep]` table of lists: `spectral_radius`, `leak_rate`, `input_scaling` (their
    /// Cartesian product gives the lanes), `ridge`, and `top`. Without a `[sweep]` table the
    /// base config is the only lane.
    #[arg(value_name = "CONFIG.toml")]
    pub config: PathBuf,
    /// Print one JSON object (every result, the failures, timings) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Show the K best results (default: the config's `[sweep] top`, itself 10 by default).
    #[arg(long, value_name = "K")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs `reservoir sweep`.
pub fn run(args: &SweepArgs) -> Result<()> {
    let mut config = read_config(&args.config)?;
    if let Some(top) = args.top {
        config = config.with_sweep_top(top).map_err(|e| CliError::Argument {
            flag: "--top",
            message: format!("{}, got {top}", e.rule),
        })?;
    }
    let mut dispatch = Dispatch::new(args.device.or(config.device()));
    let result = run_sweep(&config, &mut dispatch);
    device::describe(&dispatch);
    device::startup(&dispatch);
    let report = result.map_err(|e| CliError::config(&args.config, e))?;
    let text = if args.json {
        json_line(&report)?
    } else {
        table(&report)
    };
    write_stdout(text.as_bytes())
}

/// The header, the `top` best results as columns, the failures and the timings.
fn table(report: &SweepReport) -> String {
    let (score_name, direction) = match report.score {
        SweepScore::ValidationNrmse => ("val NRMSE", "validation NRMSE, lower is better"),
        SweepScore::MemoryCapacity => ("val MC", "memory capacity, higher is better"),
    };
    let mut text = aligned(&[
        ("task".into(), report.task.clone()),
        ("reservoir size".into(), report.size.to_string()),
        ("backend".into(), report.backend.clone()),
        (
            "lanes".into(),
            format!(
                "{} × {} ridge values = {} readouts",
                report.lanes,
                report.ridges,
                report.lanes * report.ridges
            ),
        ),
        (
            "rows per lane".into(),
            format!(
                "{} ({} fitted, {} scored)",
                report.steps, report.train_rows, report.validation_rows
            ),
        ),
        ("score".into(), direction.into()),
    ]);
    let header = [
        "rank",
        "lane",
        "spectral radius",
        "leak rate",
        "input scaling",
        "ridge",
        "train NRMSE",
        score_name,
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for (rank, r) in report.best().iter().enumerate() {
        rows.push(vec![
            (rank + 1).to_string(),
            r.lane.to_string(),
            r.params.spectral_radius().to_string(),
            r.params.leak_rate().to_string(),
            r.params.input_scaling().to_string(),
            ridge(r.ridge),
            number(r.train_nrmse),
            number(r.score),
        ]);
    }
    text.push('\n');
    text.push_str(&columns(&rows));
    text.push('\n');
    let t = &report.timings;
    let mut footer = vec![(
        "failures".to_string(),
        match report.failures.first() {
            None => "0".into(),
            Some(first) => format!(
                "{} (first: lane {}, ridge {}: {})",
                report.failures.len(),
                first.lane,
                ridge(first.ridge),
                first.error
            ),
        },
    )];
    footer.extend([
        (
            "run time".to_string(),
            format!(
                "{:.3} s ({:.0} lane-steps/s)",
                t.run_seconds, report.lane_steps_per_second
            ),
        ),
        (
            "solve time".to_string(),
            format!("{:.3} s", t.solve_seconds),
        ),
        (
            "total time".to_string(),
            format!("{:.3} s", t.total_seconds),
        ),
    ]);
    text.push_str(&aligned(&footer));
    text
}

/// A ridge value in scientific notation (`1e-6`), `0` for none.
fn ridge(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else {
        format!("{value:e}")
    }
}

/// Rows of cells as right-aligned columns two spaces apart.
fn columns(rows: &[Vec<String>]) -> String {
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| format!("{cell:>w$}"))
                .collect();
            cells.join("  ") + "\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_right_aligned() {
        let rows = vec![
            vec!["rank".to_string(), "ridge".to_string()],
            vec!["1".to_string(), "1e-8".to_string()],
        ];
        assert_eq!(columns(&rows), "rank  ridge\n   1   1e-8\n");
    }
}
