//! Fitting a ridge readout on one series: the reservoir runs over the training rows (the
//! washout dropped), and the test rows, when given, continue the training run in time and are
//! every one scored.

use std::path::Path;
use std::time::Instant;

use ndarray::{s, Array2, ArrayView2};

use reservoir_core::fit::fit_ridge_with_progress;
use reservoir_core::forecast::Continuation;
use reservoir_core::metrics::{nrmse, r2, rmse};

use super::sequences::{SeriesScores, StageProgress};
use crate::config::ExperimentConfig;
use crate::device::{Dispatch, Workload};
use crate::error::{DataError, Result, RuntimeError};
use crate::memory::ensure_fit_fits;
use crate::model::Model;

/// Fewest test rows that can be scored (NRMSE and R² need a target that varies).
const MIN_SCORED_ROWS: usize = 2;

/// Smallest largest magnitude a target column may have: below it the squares the readout and
/// its scores sum underflow f64 (1e-150² = 1e-300, near the smallest normal f64), and a column
/// that varies would be reported as constant, or scored wrongly.
const MIN_TARGET_SCALE: f64 = 1e-150;

/// One part of a series: its inputs (T × K) and targets (T × M), and the file they were read
/// from, which messages name.
#[derive(Debug, Clone, Copy)]
pub struct SeriesPart<'a> {
    /// The file (or, for data from memory, a name) the rows came from.
    pub source: &'a Path,
    /// The inputs, one row per time step.
    pub inputs: ArrayView2<'a, f64>,
    /// The targets, one row per time step.
    pub targets: ArrayView2<'a, f64>,
}

/// What to fit: the config (`[reservoir]`, `[readout]`), the data's column names and the
/// training rows, and the test rows that continue them in time.
#[derive(Debug, Clone, Copy)]
pub struct OneSeries<'a> {
    /// The checked config.
    pub config: &'a ExperimentConfig,
    /// Where the config came from (a path), for messages.
    pub origin: &'a str,
    /// The input columns' names.
    pub input_columns: &'a [String],
    /// The target columns' names.
    pub target_columns: &'a [String],
    /// The training rows.
    pub train: SeriesPart<'a>,
    /// The test rows, continuing the training rows in time.
    pub test: Option<SeriesPart<'a>>,
}

/// What [`fit_one_series`] trained and measured.
#[derive(Debug, Clone)]
pub struct OneSeriesOutcome {
    /// The trained model; its state (and last input and output) is the one after the last row
    /// run (the test rows when given), so a prediction from it continues the series.
    pub model: Model,
    /// Rows fitted (after the washout).
    pub fit_rows: usize,
    /// NRMSE on the fitted rows.
    pub train_nrmse: f64,
    /// Scores on every test row, when given.
    pub test: Option<SeriesScores>,
    /// The predictions for every test row, when given.
    pub test_predictions: Option<Array2<f64>>,
    /// Seconds from the weights to the last test prediction (the data read before).
    pub fit_seconds: f64,
}

/// Fits `job` on the device `dispatch` picks; `progress(stage, done, total)` counts the rows
/// run in stage `train`, then `test`.
///
/// Every precondition is checked before anything runs: enough training rows after the
/// washout, at least two test rows, and target columns that vary over the
/// rows fitted and scored (each error names the file and column).
///
/// The training rows run teacher forced ([`reservoir_core::architecture::Architecture::teacher_inputs`]);
/// the test rows continue them as a prediction does, the model's own outputs fed back.
///
/// # Errors
/// As above; a config error for the reservoir; not enough memory; any error of the run, the
/// solve or the scores.
pub fn fit_one_series(
    job: &OneSeries<'_>,
    dispatch: &mut Dispatch,
    progress: &mut StageProgress<'_>,
) -> Result<OneSeriesOutcome> {
    let architecture = job
        .config
        .architecture(job.input_columns.len(), Some(job.target_columns.len()))
        .map_err(RuntimeError::from)?;
    check_rows(job)?;
    ensure_fit_fits(
        &architecture,
        architecture.size(),
        job.target_columns.len(),
        0,
    )?;
    let started = Instant::now();
    let (train, test) = (job.train, job.test);
    let teacher = architecture.teacher_inputs(train.inputs, train.targets)?;
    let weights = architecture.generate(&[teacher.view()])?;
    let rows = train.inputs.nrows() + test.map_or(0, |t| t.inputs.nrows());
    let work = Workload::single(rows);
    let mut reservoir = dispatch.build(&architecture, &weights, work)?;
    let fit = fit_ridge_with_progress(
        reservoir.as_mut(),
        teacher.view(),
        architecture
            .readout_targets(train.inputs, train.targets)?
            .view(),
        job.config.readout(),
        &mut |done, total| progress("train", done, total),
    )?;
    drop(teacher);
    let last_input = train.inputs.row(train.inputs.nrows() - 1);
    let mut continuation = Continuation {
        last_output: architecture.output_at(&fit.readout, reservoir.state()?.view(), last_input)?,
        last_input: last_input.to_owned(),
    };
    let tested = match test {
        Some(test) => {
            let predictions = architecture.predict(
                reservoir.as_mut(),
                &fit.readout,
                test.inputs,
                &mut continuation,
                &mut |d, t| progress("test", d, t),
            )?;
            let scores = SeriesScores {
                rows: test.inputs.nrows(),
                nrmse: nrmse(predictions.view(), test.targets)?,
                rmse: rmse(predictions.view(), test.targets)?,
                r2: r2(predictions.view(), test.targets)?,
            };
            Some((scores, predictions))
        }
        None => None,
    };
    let fit_seconds = started.elapsed().as_secs_f64();
    let state = reservoir.state()?;
    let (test, test_predictions) = tested.unzip();
    Ok(OneSeriesOutcome {
        model: Model {
            architecture,
            weights,
            readout: fit.readout,
            state,
            continuation,
            input_columns: job.input_columns.to_vec(),
            target_columns: job.target_columns.to_vec(),
        },
        fit_rows: fit.rows,
        train_nrmse: fit.train_nrmse,
        test,
        test_predictions,
        fit_seconds,
    })
}

/// An error, naming the file, unless the training rows leave two (`MIN_SCORED_ROWS`) after the
/// washout, the test rows number at least as many, and every target column varies over the
/// rows fitted and over the rows scored.
fn check_rows(job: &OneSeries<'_>) -> Result<()> {
    let train = job.train;
    let n_train = train.inputs.nrows();
    let washout = job.config.readout().washout();
    if washout.saturating_add(MIN_SCORED_ROWS) > n_train {
        return Err(DataError::TooFewRows {
            path: train.source.to_path_buf(),
            message: format!(
                "`readout.washout` = {washout} (in {}) leaves {} of the {n_train} training rows; \
                 at least {MIN_SCORED_ROWS} must remain",
                job.origin,
                n_train.saturating_sub(washout)
            ),
        }
        .into());
    }
    check_varies(
        train.source,
        job.target_columns,
        train.targets.slice(s![washout.., ..]),
        "the training rows after the washout",
        "the readout cannot be fitted",
    )?;
    if let Some(test) = job.test {
        if test.inputs.nrows() < MIN_SCORED_ROWS {
            return Err(DataError::TooFewRows {
                path: test.source.to_path_buf(),
                message: format!(
                    "{} test row(s); at least {MIN_SCORED_ROWS} are needed to score the fit",
                    test.inputs.nrows()
                ),
            }
            .into());
        }
        check_varies(
            test.source,
            job.target_columns,
            test.targets,
            "the test rows",
            "test NRMSE and R² are undefined",
        )?;
    }
    Ok(())
}

/// Fails, naming the column, when a target column holds one value over the given rows, or
/// values too small for their squares to be summed ([`MIN_TARGET_SCALE`]).
fn check_varies(
    path: &Path,
    names: &[String],
    targets: ArrayView2<'_, f64>,
    rows: &str,
    consequence: &'static str,
) -> Result<(), DataError> {
    for (name, column) in names.iter().zip(targets.columns()) {
        let first = column.first().copied();
        if column.iter().all(|&v| Some(v) == first) {
            return Err(DataError::ConstantTarget {
                path: path.to_path_buf(),
                column: name.clone(),
                rows: rows.to_string(),
                consequence,
            });
        }
        let scale = column.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if scale < MIN_TARGET_SCALE {
            return Err(DataError::TinyTarget {
                path: path.to_path_buf(),
                column: name.clone(),
                rows: rows.to_string(),
                scale,
                limit: MIN_TARGET_SCALE,
            });
        }
    }
    Ok(())
}
