//! `fit`, `sweep` and `predict` on sequence datasets: many sequences read from a long-form CSV
//! file (`--sequence-column`) or a NumPy file, classified as wholes (`--label-column`) or
//! regressed row by row over many series (`--targets`), each sequence from the zero state.

use std::path::{Path, PathBuf};

use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::config::Validation;
use reservoir_runtime::error::{quoted, DataError};
use reservoir_runtime::jobs::sequences::sweep::{
    sweep_classifier, sweep_series, SequenceSweepReport,
};
use reservoir_runtime::jobs::sequences::{
    fit_classifier, fit_series, ClassScores, ClassifierOutcome, Labelled, Series, SeriesOutcome,
};
use reservoir_runtime::jobs::sweep::SweepScore;
use reservoir_runtime::Dispatch;
use serde::Serialize;

use crate::device;
use crate::error::{CliError, Result};
use crate::output::{commit, write_stdout};
use crate::plot;
use crate::progress::Stages;
use crate::report::{aligned, columns, json_line, lane_cells, lane_header, number, ridge};
use reservoir_runtime::data::{read_sequences, SequenceColumns, SequenceFile};

/// The flags that say how a file holds many sequences (shared by `fit`, `sweep`, `predict`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SequenceArgs {
    /// CSV: the column naming each row's sequence (rows of a sequence need not be adjacent).
    /// Each sequence runs from the zero state. NumPy files need none.
    #[arg(long, value_name = "COL")]
    pub sequence_column: Option<String>,
    /// CSV: a numeric column ordering the rows within each sequence (file order without it).
    #[arg(long, value_name = "COL", requires = "sequence_column")]
    pub time_column: Option<String>,
    /// `.npz`: the 1-D integer array of each sequence's length, for ragged 3-D inputs.
    #[arg(long, value_name = "ARRAY")]
    pub lengths: Option<String>,
}

impl SequenceArgs {
    /// Whether `path` is read as many sequences: a sequence column, or a NumPy file.
    pub fn applies_to(&self, path: &Path) -> bool {
        self.sequence_column.is_some() || is_numpy(path)
    }
}

/// Whether `path` ends in `.npy` or `.npz` (any case).
pub fn is_numpy(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("npy") || e.eq_ignore_ascii_case("npz"))
}

/// What the readout learns: a class per sequence, or target columns per row.
#[derive(Debug, Clone, Copy)]
pub enum Goal<'a> {
    /// `--label-column`: the column (CSV) or array (`.npz`) of each sequence's label.
    Classes(&'a str),
    /// `--targets`: the target columns (CSV) or array (`.npz`).
    Targets(&'a [String]),
}

impl<'a> Goal<'a> {
    /// The goal `--targets` or `--label-column` names: exactly one of them.
    pub fn from_flags(targets: Option<&'a [String]>, label: Option<&'a str>) -> Result<Self> {
        match (targets, label) {
            (Some(targets), None) => Ok(Goal::Targets(targets)),
            (None, Some(label)) => Ok(Goal::Classes(label)),
            _ => Err(CliError::Argument {
                flag: "--targets",
                message: "give --targets (regression) or --label-column (classification of \
                          whole sequences)"
                    .into(),
            }),
        }
    }
}

/// Everything a sequence `fit` or `sweep` reads: the files and what to read from them.
pub struct Job<'a> {
    /// The config file.
    pub config_path: &'a Path,
    /// The checked config.
    pub config: &'a ExperimentConfig,
    /// The training file.
    pub train: &'a Path,
    /// The test file, if any.
    pub test: Option<&'a Path>,
    /// The input columns (CSV) or array (`.npz`).
    pub inputs: &'a [String],
    /// Labels or targets.
    pub goal: Goal<'a>,
    /// How the files hold sequences.
    pub sequences: &'a SequenceArgs,
    /// Where to save the model.
    pub model: Option<&'a Path>,
    /// Where to draw the confusion matrix or the predictions.
    pub plot: Option<&'a Path>,
    /// Print JSON.
    pub json: bool,
}

/// The files of a job, read.
struct Files {
    train: SequenceFile,
    test: Option<SequenceFile>,
    /// Wall seconds reading them.
    read_seconds: f64,
}

impl Job<'_> {
    fn columns(&self) -> SequenceColumns<'_> {
        let (targets, label) = match self.goal {
            Goal::Classes(label) => (None, Some(label)),
            Goal::Targets(targets) => (Some(targets), None),
        };
        SequenceColumns {
            inputs: self.inputs,
            targets,
            label,
            sequence: self.sequences.sequence_column.as_deref(),
            time: self.sequences.time_column.as_deref(),
            lengths: self.sequences.lengths.as_deref(),
        }
    }

    fn read(&self) -> Result<Files> {
        let started = std::time::Instant::now();
        let columns = self.columns();
        let train = read_sequences("train file", self.train, &columns)?;
        let test = self
            .test
            .map(|path| read_sequences("test file", path, &columns))
            .transpose()?;
        if let Some(test) = &test {
            if test.input_names.len() != train.input_names.len() {
                return Err(CliError::Argument {
                    flag: "--test",
                    message: format!(
                        "the test file has {} input channels, the training file {}",
                        test.input_names.len(),
                        train.input_names.len()
                    ),
                });
            }
        }
        Ok(Files {
            train,
            test,
            read_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The labels of a file, or an error naming the file.
fn labels<'a>(file: &'a SequenceFile, path: &Path) -> Result<&'a [String]> {
    file.labels.as_deref().ok_or_else(|| {
        DataError::TooFewRows {
            path: path.to_path_buf(),
            message: "no labels were read".into(),
        }
        .into()
    })
}

/// The file name of `path`, for titles.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// The report of a sequence classifier's fit (`--json` prints it as one object).
#[derive(Debug, Serialize)]
struct ClassifierReport {
    task: &'static str,
    train: String,
    test: Option<String>,
    inputs: Vec<String>,
    classes: Vec<String>,
    size: usize,
    backend: String,
    features: reservoir_core::features::FeatureParams,
    n_train_sequences: usize,
    n_test_sequences: Option<usize>,
    train_accuracy: f64,
    train_balanced_accuracy: f64,
    test_accuracy: Option<f64>,
    /// Of the test sequences.
    balanced_accuracy: Option<f64>,
    /// Of the test sequences, per class (`null` for a class with none).
    per_class_recall: Option<Vec<Option<f64>>>,
    /// Of the test sequences: row = true class, column = predicted class.
    confusion_matrix: Option<Vec<Vec<usize>>>,
    fit_seconds: f64,
    /// `fit_seconds` phase by phase; the files were read before, in `read_seconds`.
    phases: Vec<reservoir_runtime::jobs::Phase>,
    read_seconds: f64,
    device_choice: Option<String>,
    startup: Option<gpu_reservoir::Startup>,
    model: Option<String>,
    plot: Option<String>,
}

/// The report of a multi-series regression's fit.
#[derive(Debug, Serialize)]
struct SeriesReport {
    task: &'static str,
    train: String,
    test: Option<String>,
    inputs: Vec<String>,
    targets: Vec<String>,
    size: usize,
    backend: String,
    washout: usize,
    n_train_sequences: usize,
    n_test_sequences: Option<usize>,
    n_fit: usize,
    train_nrmse: f64,
    n_test: Option<usize>,
    test_nrmse: Option<f64>,
    test_rmse: Option<f64>,
    test_r2: Option<f64>,
    fit_seconds: f64,
    device_choice: Option<String>,
    startup: Option<gpu_reservoir::Startup>,
    model: Option<String>,
    plot: Option<String>,
}

/// Either report, as printed.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum FitReport {
    Classifier(ClassifierReport),
    Series(SeriesReport),
}

/// `reservoir fit` on a sequence dataset; the report is printed where `print` says so (every
/// process but rank 0 of a launch fits without printing).
pub fn fit(job: &Job<'_>, dispatch: &mut Dispatch, print: bool) -> Result<()> {
    let files = job.read()?;
    let report = fit_files(job, &files, dispatch, None)?;
    if !print {
        return Ok(());
    }
    let text = if job.json {
        json_line(&report)?
    } else {
        fit_table(&report)
    };
    write_stdout(text.as_bytes())
}

/// `reservoir sweep --train` on a sequence dataset: the ranking, then the best fit.
pub fn sweep(job: &Job<'_>, dispatch: &mut Dispatch) -> Result<()> {
    let files = job.read()?;
    let mut ranking = None;
    let report = fit_files(job, &files, dispatch, Some(&mut ranking))?;
    let Some(ranking) = ranking else {
        return Err(DataError::Format {
            what: "the sweep report",
            message: "the sweep produced no ranking".into(),
        }
        .into());
    };
    let text = if job.json {
        #[derive(Serialize)]
        struct Both<'a> {
            sweep: &'a SequenceSweepReport,
            fit: &'a FitReport,
        }
        json_line(&Both {
            sweep: &ranking,
            fit: &report,
        })?
    } else {
        format!(
            "{}\nbest, fitted on every training sequence:\n{}",
            sweep_table(&ranking),
            fit_table(&report)
        )
    };
    write_stdout(text.as_bytes())
}

/// Fits (or, with `ranking`, sweeps then fits) on the files read, saves the model and draws
/// the plot, and returns the report.
fn fit_files(
    job: &Job<'_>,
    files: &Files,
    dispatch: &mut Dispatch,
    ranking: Option<&mut Option<SequenceSweepReport>>,
) -> Result<FitReport> {
    // Config rules name the config file; anything else happened fitting on the data.
    let config_error = |e: reservoir_runtime::RuntimeError| match e {
        reservoir_runtime::RuntimeError::Core(reservoir_core::ReservoirError::Config(source)) => {
            CliError::Config {
                path: job.config_path.to_path_buf(),
                source,
            }
        }
        other => CliError::core(format!("fitting on {}", job.train.display()), other),
    };
    let mut stages = Stages::default();
    let mut progress = |stage: &'static str, done: usize, total: usize| {
        stages.update(stage, done, total);
    };
    let (train_x, test_x) = (
        files.train.input_views(),
        files.test.as_ref().map(SequenceFile::input_views),
    );
    let input_names = &files.train.input_names;
    let report = match job.goal {
        Goal::Classes(_) => {
            let train = Labelled {
                ids: &files.train.ids,
                inputs: &train_x,
                labels: labels(&files.train, job.train)?,
            };
            let test = match (&files.test, &test_x, job.test) {
                (Some(file), Some(inputs), Some(path)) => Some(Labelled {
                    ids: &file.ids,
                    inputs,
                    labels: labels(file, path)?,
                }),
                _ => None,
            };
            let config = chosen_config(job.config, ranking, || {
                sweep_classifier(
                    job.config,
                    input_names,
                    train,
                    test,
                    dispatch,
                    &mut progress,
                )
            })
            .map_err(config_error)?;
            let outcome =
                fit_classifier(&config, input_names, train, test, dispatch, &mut progress)
                    .map_err(config_error)?;
            stages.clear();
            FitReport::Classifier(classifier_report(job, files, &outcome, dispatch)?)
        }
        Goal::Targets(_) => {
            let (train_y, test_y) = (
                files.train.target_views(),
                files.test.as_ref().map(SequenceFile::target_views),
            );
            let train = Series {
                ids: &files.train.ids,
                inputs: &train_x,
                targets: &train_y,
            };
            let test = match (&files.test, &test_x, &test_y) {
                (Some(file), Some(inputs), Some(targets)) => Some(Series {
                    ids: &file.ids,
                    inputs,
                    targets,
                }),
                _ => None,
            };
            let targets = &files.train.target_names;
            let config = chosen_config(job.config, ranking, || {
                sweep_series(
                    job.config,
                    input_names,
                    targets,
                    train,
                    test,
                    dispatch,
                    &mut progress,
                )
            })
            .map_err(config_error)?;
            let outcome = fit_series(
                &config,
                input_names,
                targets,
                train,
                test,
                dispatch,
                &mut progress,
            )
            .map_err(config_error)?;
            stages.clear();
            FitReport::Series(series_report(job, files, &outcome, dispatch)?)
        }
    };
    Ok(report)
}

/// The config to fit: the job's own, or, with `ranking` to fill, the best of `sweep`.
fn chosen_config(
    config: &ExperimentConfig,
    ranking: Option<&mut Option<SequenceSweepReport>>,
    sweep: impl FnOnce() -> reservoir_runtime::Result<(SequenceSweepReport, ExperimentConfig)>,
) -> reservoir_runtime::Result<ExperimentConfig> {
    match ranking {
        Some(slot) => {
            let (report, chosen) = sweep()?;
            *slot = Some(report);
            Ok(chosen)
        }
        None => Ok(config.clone()),
    }
}

/// Draws the classifier's confusion matrix and saves it (both put in place together), then
/// builds its report.
fn classifier_report(
    job: &Job<'_>,
    files: &Files,
    outcome: &ClassifierOutcome,
    dispatch: &Dispatch,
) -> Result<ClassifierReport> {
    let classes = outcome.model.classes.names().to_vec();
    // Staged, then put in place together.
    let mut outputs = Vec::new();
    if let (Some(path), Some(test), Some(test_path)) = (job.plot, &outcome.test, job.test) {
        let title = format!(
            "trained on {}, tested on {}",
            file_name(job.train),
            file_name(test_path)
        );
        outputs.push((
            "plot file",
            plot::confusion(path, &title, &classes, &test.confusion_matrix)?,
        ));
    }
    if let Some(path) = job.model {
        let staged = outcome
            .model
            .stage(path)
            .map_err(|e| CliError::writing("model file", e))?;
        outputs.push(("model file", staged));
    }
    commit(outputs)?;
    let test: Option<&ClassScores> = outcome.test.as_ref();
    Ok(ClassifierReport {
        task: "sequence_classification",
        train: job.train.display().to_string(),
        test: job.test.map(|p| p.display().to_string()),
        inputs: files.train.input_names.clone(),
        classes,
        size: outcome.model.architecture.reservoir().state_size(),
        backend: device::only_placement(dispatch),
        features: outcome.model.features.clone().into(),
        n_train_sequences: files.train.ids.len(),
        n_test_sequences: files.test.as_ref().map(|f| f.ids.len()),
        train_accuracy: outcome.train.accuracy,
        train_balanced_accuracy: outcome.train.balanced_accuracy,
        test_accuracy: test.map(|s| s.accuracy),
        balanced_accuracy: test.map(|s| s.balanced_accuracy),
        per_class_recall: test.map(|s| s.recall.clone()),
        confusion_matrix: test.map(|s| s.confusion_matrix.clone()),
        fit_seconds: outcome.fit_seconds,
        phases: outcome.phases.clone(),
        read_seconds: files.read_seconds,
        device_choice: device::choices(dispatch),
        startup: device::startup(dispatch),
        model: job.model.map(|p| p.display().to_string()),
        plot: job
            .plot
            .filter(|_| test.is_some())
            .map(|p| p.display().to_string()),
    })
}

/// Draws the first test series and saves the series model (both put in place together), then
/// builds the report.
fn series_report(
    job: &Job<'_>,
    files: &Files,
    outcome: &SeriesOutcome,
    dispatch: &Dispatch,
) -> Result<SeriesReport> {
    let targets = files.train.target_names.clone();
    // Staged, then put in place together.
    let mut outputs = Vec::new();
    if let (Some(path), Some(predictions), Some(test), Some(test_path)) =
        (job.plot, &outcome.test_predictions, &files.test, job.test)
    {
        if let (Some(first), Some(truth)) = (
            predictions.first(),
            test.targets.as_ref().and_then(|t| t.first()),
        ) {
            let title = format!(
                "fit on {}, first series `{}` of {}",
                file_name(job.train),
                test.ids.first().map_or("", String::as_str),
                file_name(test_path)
            );
            outputs.push((
                "plot file",
                plot::series(path, &title, &targets, first.view(), truth.view())?,
            ));
        }
    }
    if let Some(path) = job.model {
        let staged = outcome
            .model
            .stage(path)
            .map_err(|e| CliError::writing("model file", e))?;
        outputs.push(("model file", staged));
    }
    commit(outputs)?;
    let test = outcome.test.as_ref();
    Ok(SeriesReport {
        task: "series_regression",
        train: job.train.display().to_string(),
        test: job.test.map(|p| p.display().to_string()),
        inputs: files.train.input_names.clone(),
        targets,
        size: outcome.model.architecture.reservoir().state_size(),
        backend: device::only_placement(dispatch),
        washout: job.config.readout().washout(),
        n_train_sequences: files.train.ids.len(),
        n_test_sequences: files.test.as_ref().map(|f| f.ids.len()),
        n_fit: outcome.fit_rows,
        train_nrmse: outcome.train_nrmse,
        n_test: test.map(|s| s.rows),
        test_nrmse: test.map(|s| s.nrmse),
        test_rmse: test.map(|s| s.rmse),
        test_r2: test.map(|s| s.r2),
        fit_seconds: outcome.fit_seconds,
        device_choice: device::choices(dispatch),
        startup: device::startup(dispatch),
        model: job.model.map(|p| p.display().to_string()),
        plot: job
            .plot
            .filter(|_| test.is_some())
            .map(|p| p.display().to_string()),
    })
}

/// The fit report as aligned `key  value` lines.
fn fit_table(report: &FitReport) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| rows.push((k.to_string(), v));
    match report {
        FitReport::Classifier(r) => {
            push("task", "sequence classification".into());
            push(
                "train",
                format!("{} ({} sequences)", r.train, r.n_train_sequences),
            );
            if let (Some(test), Some(n)) = (&r.test, r.n_test_sequences) {
                push("test", format!("{test} ({n} sequences)"));
            }
            push("classes", class_list(&r.classes));
            push("reservoir size", r.size.to_string());
            push("backend", r.backend.clone());
            push("train accuracy", number(r.train_accuracy));
            if let (Some(acc), Some(bal)) = (r.test_accuracy, r.balanced_accuracy) {
                push("test accuracy", number(acc));
                push("balanced accuracy", number(bal));
            }
            push("fit time", format!("{:.3} s", r.fit_seconds));
            push(
                "model",
                r.model.clone().unwrap_or_else(|| "(not saved)".into()),
            );
            if let Some(plot) = &r.plot {
                push("plot", plot.clone());
            }
        }
        FitReport::Series(r) => {
            push("task", "regression over many series".into());
            push(
                "train",
                format!(
                    "{} ({} series, washout {} each, {} rows fitted)",
                    r.train, r.n_train_sequences, r.washout, r.n_fit
                ),
            );
            if let (Some(test), Some(n), Some(rows)) = (&r.test, r.n_test_sequences, r.n_test) {
                push("test", format!("{test} ({n} series, {rows} rows scored)"));
            }
            push("targets", r.targets.join(", "));
            push("reservoir size", r.size.to_string());
            push("backend", r.backend.clone());
            push("train NRMSE", number(r.train_nrmse));
            for (k, v) in [
                ("test NRMSE", r.test_nrmse),
                ("test RMSE", r.test_rmse),
                ("test R²", r.test_r2),
            ] {
                if let Some(v) = v {
                    push(k, number(v));
                }
            }
            push("fit time", format!("{:.3} s", r.fit_seconds));
            push(
                "model",
                r.model.clone().unwrap_or_else(|| "(not saved)".into()),
            );
            if let Some(plot) = &r.plot {
                push("plot", plot.clone());
            }
        }
    }
    aligned(&rows)
}

/// The sweep's header and best results as right-aligned columns.
fn sweep_table(report: &SequenceSweepReport) -> String {
    let score = match report.score {
        SweepScore::ValidationAccuracy => "val accuracy",
        _ => "val NRMSE",
    };
    let how = match report.validation {
        Validation::Folds(k) => format!("{k} folds of"),
        Validation::Holdout(f) => format!("a held-out {f} of"),
    };
    let mut text = aligned(&[
        ("task".into(), report.task.replace('_', " ")),
        ("reservoir size".into(), report.size.to_string()),
        ("backend".into(), report.backend.clone()),
        (
            "grid".into(),
            format!(
                "{} lanes × {} ridge values, validated on {how} the {} training sequences",
                report.lanes, report.ridges, report.n_train_sequences
            ),
        ),
        (
            "sweep time".into(),
            format!("{:.3} s", report.sweep_seconds),
        ),
    ]);
    let mut rows = vec![lane_header(&[score])];
    for (rank, r) in report.best().iter().enumerate() {
        let mut row = lane_cells(rank, r.lane, &r.params, r.ridge);
        row.push(number(r.score));
        rows.push(row);
    }
    text.push('\n');
    text.push_str(&columns(&rows));
    if let Some(first) = report.failures.first() {
        text.push_str(&format!(
            "failures: {} (first: lane {}, ridge {}: {})\n",
            report.failures.len(),
            first.lane,
            ridge(first.ridge),
            first.error
        ));
    }
    text
}

/// Where a prediction goes: CSV, or `.npy` by the output's extension.
pub fn writes_npy(output: Option<&PathBuf>) -> bool {
    output.is_some_and(|p| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    })
}

/// Most class names a report lists; the rest are counted.
const LISTED_CLASSES: usize = 20;

/// `N (a, b, …)`: the number of classes and the first [`LISTED_CLASSES`] names, each cut as
/// errors cut a file's text, so a report line stays short whatever the labels.
fn class_list(classes: &[String]) -> String {
    let mut names: Vec<String> = classes
        .iter()
        .take(LISTED_CLASSES)
        .map(|c| quoted(c).into_owned())
        .collect();
    if classes.len() > LISTED_CLASSES {
        names.push(format!("… {} more", classes.len() - LISTED_CLASSES));
    }
    format!("{} ({})", classes.len(), names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_lists_few_class_names_each_cut_short() {
        let classes = vec!["a".to_string(), "b".repeat(1_000_000)];
        let line = class_list(&classes);
        assert!(
            line.starts_with("2 (a, bbb") && line.ends_with("…)"),
            "{line}"
        );
        assert!(line.len() < 100, "{} bytes", line.len());
        let many: Vec<String> = (0..25).map(|i| format!("c{i}")).collect();
        assert!(class_list(&many).ends_with("c19, … 5 more)"));
    }
}
