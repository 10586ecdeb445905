//! What `reservoir fit` prints: an aligned table for people, or one JSON object for programs.

use gpu_reservoir::Startup;
use reservoir_runtime::error::DataError;
use reservoir_runtime::jobs::run::ExperimentReport;
use serde::Serialize;

use crate::error::Result;
use crate::output::write_stdout;

/// The outcome of a fit; serialised as-is by `--json` (test fields `null` without a test file).
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// The training file.
    pub train: String,
    /// The test file, if any.
    pub test: Option<String>,
    /// Input column names.
    pub inputs: Vec<String>,
    /// Target column names.
    pub targets: Vec<String>,
    /// Reservoir size N.
    pub size: usize,
    /// Where the reservoir ran: `cpu` or `cuda`.
    pub backend: String,
    /// Leading training rows dropped before fitting.
    pub washout: usize,
    /// Rows in the training file.
    pub n_train: usize,
    /// Training rows the readout was fitted on (`n_train − washout`).
    pub n_fit: usize,
    /// Rows in the test file (all scored).
    pub n_test: Option<usize>,
    /// NRMSE on the fitted training rows.
    pub train_nrmse: f64,
    /// NRMSE on the test rows.
    pub test_nrmse: Option<f64>,
    /// RMSE on the test rows.
    pub test_rmse: Option<f64>,
    /// R² on the test rows.
    pub test_r2: Option<f64>,
    /// Seconds from config parse to fitted readout (weights, spectral radius, run, ridge),
    /// without the time spent reading the CSV files.
    pub fit_seconds: f64,
    /// Why `auto` chose the device (`null` when one was asked for).
    pub device_choice: Option<String>,
    /// What starting the GPU cost, phase by phase (`null` when no GPU was opened).
    pub startup: Option<Startup>,
    /// Where the model was saved, if it was.
    pub model: Option<String>,
    /// Where the plot was drawn, if it was (`--plot`).
    pub plot: Option<String>,
}

/// Prints the report on standard output: one JSON object (one line) or an aligned table.
pub fn print_fit(report: &FitReport, json: bool) -> Result<()> {
    let text = if json {
        json_line(report)?
    } else {
        table(report)
    };
    write_stdout(text.as_bytes())
}

/// Prints a task run: one flat JSON object (`task`, `size`, `backend`, then every metric and
/// timing by name, why `auto` chose the device (`device_choice`), the GPU's `startup` (phases
/// and notes) when a GPU was opened, then the
/// `files` written, e.g. `model`) or an aligned table.
pub fn print_run(
    report: &ExperimentReport,
    backend: &str,
    device_choice: Option<&str>,
    startup: Option<&Startup>,
    files: &[(&str, String)],
    json: bool,
) -> Result<()> {
    let figures = report.metrics.iter().chain(&report.timings);
    let text = if json {
        let mut object = serde_json::Map::new();
        object.insert("task".into(), report.task.clone().into());
        object.insert("size".into(), report.size.into());
        object.insert("backend".into(), backend.into());
        if let Some(choice) = device_choice {
            object.insert("device_choice".into(), choice.into());
        }
        for f in figures {
            object.insert(f.name.clone(), f.value.into());
        }
        if let Some(startup) = startup {
            let value = serde_json::to_value(startup).map_err(|e| DataError::Format {
                what: "the JSON report",
                message: e.to_string(),
            })?;
            object.insert("startup".into(), value);
        }
        for (key, path) in files {
            object.insert((*key).into(), path.clone().into());
        }
        json_line(&object)?
    } else {
        let mut rows = vec![
            ("task".to_string(), report.task.clone()),
            ("reservoir size".to_string(), report.size.to_string()),
            ("backend".to_string(), backend.to_string()),
        ];
        rows.extend(figures.map(|f| (f.name.replace('_', " "), number(f.value))));
        if let Some(startup) = startup {
            rows.push(("gpu startup seconds".into(), number(startup.seconds())));
        }
        rows.extend(files.iter().map(|(k, v)| (k.to_string(), v.clone())));
        aligned(&rows)
    };
    write_stdout(text.as_bytes())
}

/// `value` as one line of JSON.
pub fn json_line<T: Serialize>(value: &T) -> Result<String> {
    let mut line = serde_json::to_string(value).map_err(|e| DataError::Format {
        what: "the JSON report",
        message: e.to_string(),
    })?;
    line.push('\n');
    Ok(line)
}

/// The report as `key  value` lines with the values aligned.
fn table(r: &FitReport) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        (
            "train",
            format!(
                "{} ({} rows, washout {}, {} fitted)",
                r.train, r.n_train, r.washout, r.n_fit
            ),
        ),
        ("inputs", r.inputs.join(", ")),
        ("targets", r.targets.join(", ")),
        ("reservoir size", r.size.to_string()),
        ("backend", r.backend.to_string()),
        ("train NRMSE", number(r.train_nrmse)),
    ];
    if let (Some(test), Some(n_test)) = (&r.test, r.n_test) {
        rows.push(("test", format!("{test} ({n_test} rows)")));
    }
    let optional = [
        ("test NRMSE", r.test_nrmse),
        ("test RMSE", r.test_rmse),
        ("test R²", r.test_r2),
    ];
    rows.extend(
        optional
            .iter()
            .filter_map(|(k, v)| v.map(|v| (*k, number(v)))),
    );
    rows.push(("fit time", format!("{:.3} s", r.fit_seconds)));
    rows.push((
        "model",
        r.model.clone().unwrap_or_else(|| "(not saved)".into()),
    ));
    if let Some(plot) = &r.plot {
        rows.push(("plot", plot.clone()));
    }

    let rows: Vec<(String, String)> = rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    aligned(&rows)
}

/// `text` with every control character (escape codes, line breaks, ...) and every invisible
/// formatting character (bidirectional overrides and isolates, zero-width characters, the byte
/// order mark) written as an escape (`\u{1b}`, `\u{202e}`), so text from a file cannot drive
/// the terminal, break a line, or reorder what is shown.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            let invisible = matches!(
                c,
                '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}'
            );
            if c.is_control() || invisible {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `key  value` lines with the values aligned, control characters escaped.
pub fn aligned(rows: &[(String, String)]) -> String {
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(k, v)| {
            let padding = " ".repeat(width - k.chars().count());
            format!("{}{padding}  {}\n", printable(k), printable(v))
        })
        .collect()
}

/// Six decimals, or scientific notation for values too small for that to show.
pub fn number(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-3 {
        format!("{v:.4e}")
    } else {
        format!("{v:.6}")
    }
}

/// The header of a ranking: rank, lane, its three values and ridge, then `scores`.
pub fn lane_header(scores: &[&str]) -> Vec<String> {
    [
        "rank",
        "lane",
        "spectral radius",
        "leak rate",
        "input scaling",
        "ridge",
    ]
    .iter()
    .chain(scores)
    .map(|h| h.to_string())
    .collect()
}

/// The first cells of a ranking's row (see [`lane_header`]); `rank` counts from 0.
pub fn lane_cells(
    rank: usize,
    lane: usize,
    params: &reservoir_core::lanes::Lane,
    value: f64,
) -> Vec<String> {
    vec![
        (rank + 1).to_string(),
        lane.to_string(),
        params.spectral_radius().to_string(),
        params.leak_rate().to_string(),
        params.input_scaling().to_string(),
        ridge(value),
    ]
}

/// A ridge value in scientific notation (`1e-6`), `0` for none.
pub fn ridge(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else {
        format!("{value:e}")
    }
}

/// Rows of cells as right-aligned columns two spaces apart.
pub fn columns(rows: &[Vec<String>]) -> String {
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

    fn report(test: bool) -> FitReport {
        FitReport {
            train: "train.csv".into(),
            test: test.then(|| "test.csv".into()),
            inputs: vec!["u".into()],
            targets: vec!["y".into()],
            size: 200,
            backend: "cpu".into(),
            washout: 100,
            n_train: 1000,
            n_fit: 900,
            n_test: test.then_some(500),
            train_nrmse: 0.1,
            test_nrmse: test.then_some(0.2),
            test_rmse: test.then_some(0.01),
            test_r2: test.then_some(0.95),
            fit_seconds: 0.5,
            device_choice: None,
            startup: None,
            model: None,
            plot: None,
        }
    }

    #[test]
    fn table_values_are_aligned() {
        let text = table(&report(true));
        let width = "reservoir size".len();
        for line in text.lines() {
            let chars: Vec<char> = line.chars().collect();
            assert!(chars.len() > width + 2, "{line}");
            assert!(
                chars[width] == ' ' && chars[width + 1] == ' ' && chars[width + 2] != ' ',
                "{text}"
            );
        }
        assert!(text.contains("test R²") && text.contains("0.950000"));
    }

    #[test]
    fn table_leaves_out_test_rows_without_a_test_file() {
        let text = table(&report(false));
        assert!(!text.contains("test"), "{text}");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
        assert_eq!(printable("µ é ∞"), "µ é ∞");
        assert_eq!(
            printable("a\u{202e}b\u{200b}c\u{9b}"),
            "a\\u{202e}b\\u{200b}c\\u{9b}"
        );
    }

    #[test]
    fn small_numbers_stay_visible() {
        assert_eq!(number(1.234e-5), "1.2340e-5");
        assert_eq!(number(0.5), "0.500000");
    }

    #[test]
    fn columns_are_right_aligned() {
        let rows = vec![
            vec!["rank".to_string(), "ridge".to_string()],
            vec!["1".to_string(), "1e-8".to_string()],
        ];
        assert_eq!(columns(&rows), "rank  ridge\n   1   1e-8\n");
    }
}
