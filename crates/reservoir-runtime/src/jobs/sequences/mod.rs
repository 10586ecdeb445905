//! Many independent sequences, end to end: classifying whole sequences (a one-hot ridge
//! readout on summaries of each sequence's states) and regression over many series (per-row
//! targets, a washout in each series). Every sequence runs from the zero state through one
//! [`reservoir_core::Reservoir::sequence_features`] or
//! [`reservoir_core::Reservoir::run_many`] call: on every core on the
//! CPU, batched on a GPU. [`sweep`] chooses hyper-parameters on folds of the training
//! sequences.

mod classify;
mod series;
mod spread;
pub mod sweep;

use std::time::Instant;

use ndarray::{Array2, ArrayView2};
use serde::Serialize;

pub use classify::{class_scores, fit_class_readout, ClassScores};
pub use series::{add_series, check_series, rows_after_washout};

use reservoir_core::architecture::ArchitectureWeights;
use reservoir_core::features::SequenceFeatures;
use reservoir_core::forecast::Continuation;
use reservoir_core::metrics::{nrmse, r2, rmse};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::reservoir::fit_features;
use reservoir_core::ReservoirError;

use crate::config::ExperimentConfig;
use crate::device::{Built, Dispatch, Workload};
use crate::error::Result;
use crate::jobs::{Phase, Phases};
use crate::memory::ensure_fit_fits;
use crate::model::{predict_classes, Classes, Model, SequenceClassifier};

/// One split of a labelled dataset: each sequence's id, inputs (Tᵢ × K) and label text.
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a> {
    /// Sequence ids, for messages.
    pub ids: &'a [String],
    /// The inputs of each sequence.
    pub inputs: &'a [ArrayView2<'a, f64>],
    /// The label of each sequence.
    pub labels: &'a [String],
}

/// One split of a multi-series regression dataset: each series' id, inputs (Tᵢ × K) and
/// targets (Tᵢ × M).
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// Series ids, for messages.
    pub ids: &'a [String],
    /// The inputs of each series.
    pub inputs: &'a [ArrayView2<'a, f64>],
    /// The targets of each series.
    pub targets: &'a [ArrayView2<'a, f64>],
}

/// Reports `(stage, done, total)`: stage `train` or `test`, sequences done of the stage's.
pub type StageProgress<'a> = dyn FnMut(&'static str, usize, usize) + 'a;

/// What [`fit_classifier`] trained and measured.
#[derive(Debug, Clone)]
pub struct ClassifierOutcome {
    /// The trained classifier.
    pub model: SequenceClassifier,
    /// Scores on the training sequences.
    pub train: ClassScores,
    /// Scores on the test sequences, when given.
    pub test: Option<ClassScores>,
    /// The predicted class index of each test sequence, when given.
    pub test_predictions: Option<Vec<usize>>,
    /// Seconds from the weights to the last test prediction (the files read before).
    pub fit_seconds: f64,
    /// Those seconds phase by phase.
    pub phases: Vec<Phase>,
}

/// Scores of a multi-series regression on the rows after each series' washout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeriesScores {
    /// Rows scored.
    pub rows: usize,
    /// NRMSE (RMSE / population standard deviation of the targets, averaged over columns).
    pub nrmse: f64,
    /// Root mean squared error.
    pub rmse: f64,
    /// Coefficient of determination.
    pub r2: f64,
}

/// What [`fit_series`] trained and measured.
#[derive(Debug, Clone)]
pub struct SeriesOutcome {
    /// The trained model; its state is the last training series' end state (every series
    /// starts from zero), so a series that continues it is predicted without a transient.
    pub model: Model,
    /// Rows fitted (after each series' washout).
    pub fit_rows: usize,
    /// NRMSE on the fitted rows.
    pub train_nrmse: f64,
    /// Scores on the test series, when given.
    pub test: Option<SeriesScores>,
    /// The predictions for every row of every test series, when given.
    pub test_predictions: Option<Vec<Array2<f64>>>,
    /// Seconds from the weights to the last test prediction (the files read before).
    pub fit_seconds: f64,
}

/// An error unless every sequence has the steps `features` needs; `what` names the split.
fn check_lengths(
    features: &SequenceFeatures,
    inputs: &[ArrayView2<f64>],
    ids: &[String],
    what: &str,
) -> Result<()> {
    for (i, u) in inputs.iter().enumerate() {
        if let Some(why) = features.shortfall(u.nrows()) {
            let id = ids.get(i).map_or_else(|| i.to_string(), String::clone);
            return Err(ReservoirError::invalid(
                "sequence features",
                format!("{what} sequence `{id}` {why}"),
            )
            .into());
        }
    }
    Ok(())
}

/// The steps of every sequence: what the device choice weighs.
fn workload(splits: &[&[ArrayView2<f64>]]) -> Workload {
    Workload::many(
        splits.iter().map(|s| s.len()).sum(),
        splits
            .iter()
            .flat_map(|s| s.iter())
            .map(|u| u.nrows())
            .sum(),
    )
}

/// Trains a sequence classifier on `train` as `config` says (`[reservoir]`, `[readout]
/// ridge`, `[features]`), on the device `dispatch` picks, and scores it on `test`.
///
/// The classes are the training labels'. Every label, width and length is checked before
/// anything runs: a test label that is not a training class, or a sequence too short for the
/// features, is an error naming the sequence.
///
/// # Errors
/// As above; a config error for the reservoir; any error of the runs or the solve.
pub fn fit_classifier(
    config: &ExperimentConfig,
    input_columns: &[String],
    train: Labelled<'_>,
    test: Option<Labelled<'_>>,
    dispatch: &mut Dispatch,
    progress: &mut StageProgress<'_>,
) -> Result<ClassifierOutcome> {
    let architecture = config.architecture(input_columns.len(), None)?;
    let classes = Classes::from_labels(train.labels)?;
    let train_labels = classes.indices(train.labels, train.ids)?;
    let test_labels = test.map(|t| classes.indices(t.labels, t.ids)).transpose()?;
    let features = config.features();
    check_lengths(features, train.inputs, train.ids, "training")?;
    if let Some(t) = test {
        check_lengths(features, t.inputs, t.ids, "test")?;
    }

    let n_features = features.width(architecture.size());
    ensure_fit_fits(
        &architecture,
        n_features,
        classes.len(),
        train.inputs.len() + test.map_or(0, |t| t.inputs.len()),
    )?;
    let started = Instant::now();
    let mut phases = Phases::start();
    let weights = architecture.generate(train.inputs)?;
    phases.lap("weights");
    // Only each sequence's features come back.
    let work = workload(&[train.inputs, test.map_or(&[], |t| t.inputs)]).features_only();
    let ridge = config.readout().ridge();
    // One echo-state network alone may spread over GPUs; any other model is built whole.
    let built = match (&weights, architecture.echo_state()) {
        (ArchitectureWeights::EchoState(w), Some(esn)) if !architecture.input_to_readout() => {
            dispatch.echo_state_spread(esn, w.clone(), work)?
        }
        _ => Built::One(dispatch.build(&architecture, &weights, work)?),
    };
    phases.lap("reservoir built");
    let (readout, train_predicted, features, mut reservoir) = match built {
        Built::One(mut reservoir) => {
            let features = fit_features(reservoir.as_mut(), train.inputs, features)?;
            let train_x = reservoir
                .sequence_features(train.inputs, &features, &mut |d, t| progress("train", d, t))?;
            phases.lap("training features");
            let readout = fit_class_readout(train_x.view(), &train_labels, classes.len(), ridge)?;
            phases.lap("readout solved");
            let predicted = predict_classes(&readout, train_x.view())?;
            (readout, predicted, features, Built::One(reservoir))
        }
        Built::Spread(mut spread) => {
            // Every rank fits the projection on the same sample with the same weights.
            let features = match spread.reservoirs.first_mut() {
                Some(first) => fit_features(first, train.inputs, features)?,
                None => features.clone(),
            };
            let (readout, predicted) = spread::fit_spread(
                &mut spread,
                train.inputs,
                &train_labels,
                classes.len(),
                &features,
                ridge,
                &mut |d, t| progress("train", d, t),
            )?;
            progress("train", train.inputs.len(), train.inputs.len());
            phases.lap("training features and readout, spread");
            (readout, predicted, features, Built::Spread(spread))
        }
    };
    let train_scores = class_scores(&train_labels, &train_predicted, classes.len())?;
    let model = SequenceClassifier {
        architecture,
        weights,
        features,
        readout,
        classes,
        input_columns: input_columns.to_vec(),
        label_dtype: None,
    };
    let tested = match (test, test_labels) {
        (Some(t), Some(truth)) => {
            let predicted = match &mut reservoir {
                Built::One(reservoir) => {
                    model.classify(reservoir.as_mut(), t.inputs, &mut |d, n| {
                        progress("test", d, n)
                    })?
                }
                Built::Spread(spread) => {
                    let predicted = spread::classify_spread(
                        spread,
                        &model.readout,
                        t.inputs,
                        &model.features,
                        &mut |d, n| progress("test", d, n),
                    )?;
                    progress("test", t.inputs.len(), t.inputs.len());
                    predicted
                }
            };
            let scores = class_scores(&truth, &predicted, model.classes.len())?;
            Some((scores, predicted))
        }
        _ => None,
    };
    phases.lap("training scores and test");
    let fit_seconds = started.elapsed().as_secs_f64();
    let (test, test_predictions) = tested.unzip();
    Ok(ClassifierOutcome {
        model,
        train: train_scores,
        test,
        test_predictions,
        fit_seconds,
        phases: phases.into_vec(),
    })
}

/// Trains a ridge readout over many series as `config` says (`[reservoir]`, `[readout] ridge`
/// and `washout`, applied in each series), on the device `dispatch` picks, and scores it on
/// the rows after each test series' washout.
///
/// # Errors
/// A series no longer than the washout or with fewer target rows than input rows (naming
/// it, checked before anything runs); a config error; any error of the runs or the solve.
pub fn fit_series(
    config: &ExperimentConfig,
    input_columns: &[String],
    target_columns: &[String],
    train: Series<'_>,
    test: Option<Series<'_>>,
    dispatch: &mut Dispatch,
    progress: &mut StageProgress<'_>,
) -> Result<SeriesOutcome> {
    let architecture = config.architecture(input_columns.len(), Some(target_columns.len()))?;
    let washout = config.readout().washout();
    check_series(train.inputs, train.targets, washout, train.ids)?;
    if let Some(t) = test {
        check_series(t.inputs, t.targets, washout, t.ids)?;
    }
    let (n, m) = (architecture.size(), target_columns.len());

    ensure_fit_fits(&architecture, n, m, 0)?;
    let started = Instant::now();
    // Teacher forced, increments learned (each a copy only when the model asks for it).
    let teacher = train
        .inputs
        .iter()
        .zip(train.targets)
        .map(|(u, y)| architecture.teacher_inputs(*u, *y))
        .collect::<reservoir_core::Result<Vec<_>>>()?;
    let learned = train
        .inputs
        .iter()
        .zip(train.targets)
        .map(|(u, y)| architecture.readout_targets(*u, *y))
        .collect::<reservoir_core::Result<Vec<_>>>()?;
    let teacher: Vec<ArrayView2<f64>> = teacher.iter().map(|u| u.view()).collect();
    let learned: Vec<ArrayView2<f64>> = learned.iter().map(|y| y.view()).collect();
    let weights = architecture.generate(&teacher)?;
    let work = workload(&[train.inputs, test.map_or(&[], |t| t.inputs)]);
    let mut reservoir = dispatch.build(&architecture, &weights, work)?;
    // One series streams its sums beside its run (`add_series`), on a thread of their own.
    let sum_par = if train.inputs.len() == 1 {
        reservoir_core::Par::Seq
    } else {
        reservoir_core::Par::all()
    };
    let mut sums = [RidgeAccumulator::new(n, m, sum_par)?];
    let end_state = add_series(
        reservoir.as_mut(),
        &teacher,
        &learned,
        washout,
        &vec![0; train.inputs.len()],
        &mut sums,
        &mut |d, t| progress("train", d, t),
    )?;
    let fit = sums[0].solve(config.readout().ridge())?;
    let continuation = match train.inputs.last() {
        Some(last) if last.nrows() > 0 => {
            let last_input = last.row(last.nrows() - 1);
            Continuation {
                last_output: architecture.output_at(&fit.readout, end_state.view(), last_input)?,
                last_input: last_input.to_owned(),
            }
        }
        _ => Continuation::zero(architecture.input_size(), target_columns.len()),
    };
    let tested = match test {
        Some(t) => {
            let predictions = architecture.predict_series(
                reservoir.as_mut(),
                &fit.readout,
                t.inputs,
                &mut |d, n| progress("test", d, n),
            )?;
            let views: Vec<ArrayView2<f64>> = predictions.iter().map(|p| p.view()).collect();
            let predicted = rows_after_washout(&views, washout)?;
            let truth = rows_after_washout(t.targets, washout)?;
            let scores = SeriesScores {
                rows: truth.nrows(),
                nrmse: nrmse(predicted.view(), truth.view())?,
                rmse: rmse(predicted.view(), truth.view())?,
                r2: r2(predicted.view(), truth.view())?,
            };
            Some((scores, predictions))
        }
        None => None,
    };
    let fit_seconds = started.elapsed().as_secs_f64();
    let (test, test_predictions) = tested.unzip();
    Ok(SeriesOutcome {
        model: Model {
            architecture,
            weights,
            readout: fit.readout,
            state: end_state,
            continuation,
            input_columns: input_columns.to_vec(),
            target_columns: target_columns.to_vec(),
        },
        fit_rows: fit.rows,
        train_nrmse: fit.train_nrmse,
        test,
        test_predictions,
        fit_seconds,
    })
}
