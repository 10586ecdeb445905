//! Hyper-parameter sweeps over sequence datasets: every lane of the `[sweep]` grid runs the
//! training sequences once, and every ridge value is validated on folds (or a held-out part)
//! of the training sequences only. A sweep returns the ranking and the config of the best
//! (lane, ridge), for [`super::fit_classifier`] or [`super::fit_series`] to fit on every
//! training sequence and, only then, score on the test sequences.

use std::time::Instant;

use gpu_reservoir::GemmMath;
use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;
use serde::Serialize;

use reservoir_core::lanes::Lane;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::reservoir::fit_features;
use reservoir_core::{ConfigError, Reservoir, ReservoirError, ReservoirWeights};

use super::{
    add_series, check_lengths, check_series, class_scores, fit_class_readout, workload, Labelled,
    Series, StageProgress,
};
use crate::config::{ExperimentConfig, Validation};
use crate::device::{Dispatch, Workload};
use crate::error::Result;
use crate::jobs::sweep::{SweepFailure, SweepScore};
use crate::model::{predict_classes, Classes};

/// One (lane, ridge) scored on the validation folds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoldedResult {
    /// Index of the lane in grid order.
    pub lane: usize,
    /// The lane's hyper-parameters.
    #[serde(flatten)]
    pub params: Lane,
    /// Ridge penalty.
    pub ridge: f64,
    /// The mean validation score over the scored folds.
    pub score: f64,
}

/// What a sequence sweep measured, before the best (lane, ridge) is fitted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequenceSweepReport {
    /// `sequence_classification` or `series_regression`.
    pub task: &'static str,
    /// Reservoir units N.
    pub size: usize,
    /// Where the lanes ran: `cpu`, `cuda` or `cuda:N`.
    pub backend: String,
    /// What `score` is: validation accuracy (higher is better) or NRMSE (lower is better).
    pub score: SweepScore,
    /// How the training sequences were split for validation.
    pub validation: Validation,
    /// Number of lanes.
    pub lanes: usize,
    /// Ridge values solved for on every lane.
    pub ridges: usize,
    /// Training sequences (all of them are run by every lane).
    pub n_train_sequences: usize,
    /// Number of best results to show.
    pub top: usize,
    /// Every (lane, ridge), best first; ties keep grid order.
    pub results: Vec<FoldedResult>,
    /// The (lane, ridge) pairs that failed, in grid order.
    pub failures: Vec<SweepFailure>,
    /// Seconds of the whole search (the final fit not included).
    pub sweep_seconds: f64,
}

impl SequenceSweepReport {
    /// The `top` best results.
    pub fn best(&self) -> &[FoldedResult] {
        &self.results[..self.top.min(self.results.len())]
    }
}

/// The grid of a config's `[sweep]` table (the base config alone without one).
struct Grid {
    lanes: Vec<Lane>,
    ridges: Vec<f64>,
    validation: Validation,
    top: usize,
}

impl Grid {
    /// The grid of `config` with the reservoir set to `k` inputs.
    fn of(config: &ExperimentConfig, k: usize) -> Result<Self> {
        let sweep = config.sweep().cloned().unwrap_or_default();
        if sweep.gpu_matmul() != GemmMath::F32 {
            return Err(ConfigError::new(
                "sweep.gpu_matmul",
                "applies to the lanes of a config's [task] sweep; a sweep of sequences runs in \
                 f32",
                sweep.gpu_matmul(),
            )
            .into());
        }
        let base = config.lanes_base(k)?;
        Ok(Self {
            lanes: sweep.lanes(&base).map_err(|e| e.prefixed("sweep"))?,
            ridges: sweep.ridges(config.readout()),
            validation: sweep.validation(),
            top: sweep.top(),
        })
    }

    /// An error unless every validation group of `groups` holds a sequence (so training keeps
    /// one too).
    fn check_groups(&self, groups: &[usize]) -> Result<()> {
        let wanted = self.validation.groups();
        if (0..wanted).all(|g| groups.contains(&g)) {
            return Ok(());
        }
        let (field, value) = match self.validation {
            Validation::Folds(k) => ("sweep.folds", k.to_string()),
            Validation::Holdout(fraction) => ("sweep.validation", fraction.to_string()),
        };
        Err(ConfigError::new(
            field,
            format!(
                "leaves a validation group empty: {} training sequences are too few",
                groups.len()
            ),
            value,
        )
        .into())
    }
}

/// What a sweep searches: the task's name and score, and the training sequences it runs.
struct Search<'a> {
    task: &'static str,
    score: SweepScore,
    n_train: usize,
    work: Workload,
    config: &'a ExperimentConfig,
    grid: &'a Grid,
}

impl Search<'_> {
    /// Builds each lane's reservoir on the device `dispatch` picks, lets `score_lane(lane,
    /// reservoir)` score every ridge value on it, ranks the (lane, ridge) pairs best first
    /// (stably, so ties keep grid order), and returns the ranking with the config of the best.
    ///
    /// # Errors
    /// Any error of building a reservoir or of `score_lane`; no pair that could be scored.
    fn run(
        self,
        dispatch: &mut Dispatch,
        mut score_lane: impl FnMut(
            usize,
            &mut dyn Reservoir,
        ) -> Result<Vec<reservoir_core::Result<f64>>>,
    ) -> Result<(SequenceSweepReport, ExperimentConfig)> {
        let started = Instant::now();
        let (mut results, mut failures) = (Vec::new(), Vec::new());
        let mut backend = String::new();
        for (index, lane) in self.grid.lanes.iter().enumerate() {
            let (weights, _) = ReservoirWeights::generate(lane.config())?;
            let mut reservoir = dispatch.echo_state(lane.config(), weights, self.work)?;
            backend = dispatch
                .placements()
                .last()
                .map_or_else(|| "cpu".to_string(), |(_, placement)| placement.name());
            let outcomes = score_lane(index, reservoir.as_mut())?;
            for (&ridge, outcome) in self.grid.ridges.iter().zip(outcomes) {
                let params = lane.clone();
                match outcome {
                    Ok(score) => results.push(FoldedResult {
                        lane: index,
                        params,
                        ridge,
                        score,
                    }),
                    Err(e) => failures.push(SweepFailure {
                        lane: index,
                        params,
                        ridge,
                        error: e.to_string(),
                    }),
                }
            }
        }
        results.sort_by(|a, b| self.score.compare(a.score, b.score));
        let Some(best) = results.first() else {
            let first = failures.first().map_or("no lanes", |f| f.error.as_str());
            return Err(ReservoirError::numerical(
                "sweep",
                format!("no (lane, ridge) could be solved and scored; the first: {first}"),
            )
            .into());
        };
        let chosen = self
            .config
            .clone()
            .with_lane(best.params.config().clone(), best.ridge)?;
        let report = SequenceSweepReport {
            task: self.task,
            size: self.config.reservoir().size(),
            backend,
            score: self.score,
            validation: self.grid.validation,
            lanes: self.grid.lanes.len(),
            ridges: self.grid.ridges.len(),
            n_train_sequences: self.n_train,
            top: self.grid.top,
            results,
            failures,
            sweep_seconds: started.elapsed().as_secs_f64(),
        };
        Ok((report, chosen))
    }
}

/// The mean of `score(g)` over the scored groups of `validation`.
fn mean_over_folds(
    validation: Validation,
    mut score: impl FnMut(usize) -> reservoir_core::Result<f64>,
) -> reservoir_core::Result<f64> {
    let scored = validation.scored();
    let count = scored.len() as f64;
    let mut total = 0.0;
    for g in scored {
        total += score(g)?;
    }
    Ok(total / count)
}

/// Sweeps a sequence classifier's `[sweep]` grid on `train`, scoring each (lane, ridge) by
/// its validation accuracy on folds of `train`; returns the ranking and the config of the
/// best, for [`super::fit_classifier`]. `test` is checked (labels among the training
/// classes, lengths), never run, so a bad test file fails before the search.
///
/// # Errors
/// A label, width or length that [`super::fit_classifier`] would refuse; a grid whose folds
/// cannot all hold a sequence; no (lane, ridge) that could be scored; any error of the runs.
pub fn sweep_classifier(
    config: &ExperimentConfig,
    input_columns: &[String],
    train: Labelled<'_>,
    test: Option<Labelled<'_>>,
    dispatch: &mut Dispatch,
    progress: &mut StageProgress<'_>,
) -> Result<(SequenceSweepReport, ExperimentConfig)> {
    let grid = Grid::of(config, input_columns.len())?;
    let classes = Classes::from_labels(train.labels)?;
    let labels = classes.indices(train.labels, train.ids)?;
    check_lengths(config.features(), train.inputs, train.ids, "training")?;
    if let Some(t) = test {
        classes.indices(t.labels, t.ids)?;
        check_lengths(config.features(), t.inputs, t.ids, "test")?;
    }
    let groups = grid
        .validation
        .assign(labels.len(), Some(&labels), config.reservoir().seed());
    grid.check_groups(&groups)?;
    let lanes = grid.lanes.len();
    let search = Search {
        task: "sequence_classification",
        score: SweepScore::ValidationAccuracy,
        n_train: labels.len(),
        work: workload(&[train.inputs]),
        config,
        grid: &grid,
    };
    search.run(dispatch, |index, reservoir| {
        // A projection is fitted on every training sequence, unsupervised; the labels of the
        // held-out folds play no part in it.
        let fitted = fit_features(reservoir, train.inputs, config.features())?;
        let features = reservoir.sequence_features(train.inputs, &fitted, &mut |d, t| {
            progress("sweep", index * t + d, lanes * t)
        })?;
        Ok(grid
            .ridges
            .par_iter()
            .map(|&ridge| {
                mean_over_folds(grid.validation, |g| {
                    fold_accuracy(features.view(), &labels, &groups, g, classes.len(), ridge)
                })
            })
            .collect())
    })
}

/// Accuracy on group `g` of the readout fitted on the other groups' rows.
fn fold_accuracy(
    features: ArrayView2<f64>,
    labels: &[usize],
    groups: &[usize],
    g: usize,
    classes: usize,
    ridge: f64,
) -> reservoir_core::Result<f64> {
    let pick = |held: bool| -> (Array2<f64>, Vec<usize>) {
        let rows: Vec<usize> = (0..labels.len())
            .filter(|&i| (groups[i] == g) == held)
            .collect();
        (
            features.select(Axis(0), &rows),
            rows.iter().map(|&i| labels[i]).collect(),
        )
    };
    let ((fit_x, fit_y), (held_x, held_y)) = (pick(false), pick(true));
    let readout = fit_class_readout(fit_x.view(), &fit_y, classes, ridge)?;
    let predicted = predict_classes(&readout, held_x.view())?;
    Ok(class_scores(&held_y, &predicted, classes)?.accuracy)
}

/// Sweeps a multi-series regression's `[sweep]` grid on `train`, scoring each (lane, ridge) by
/// its validation NRMSE on folds of `train` (each series in one fold); returns the ranking and
/// the config of the best, for [`super::fit_series`]. `test` is checked, never run.
///
/// # Errors
/// A series that [`super::fit_series`] would refuse; a grid whose folds cannot all hold a
/// series; no (lane, ridge) that could be scored; any error of the runs.
pub fn sweep_series(
    config: &ExperimentConfig,
    input_columns: &[String],
    target_columns: &[String],
    train: Series<'_>,
    test: Option<Series<'_>>,
    dispatch: &mut Dispatch,
    progress: &mut StageProgress<'_>,
) -> Result<(SequenceSweepReport, ExperimentConfig)> {
    let grid = Grid::of(config, input_columns.len())?;
    let washout = config.readout().washout();
    check_series(train.inputs, train.targets, washout, train.ids)?;
    if let Some(t) = test {
        check_series(t.inputs, t.targets, washout, t.ids)?;
    }
    let total = train.inputs.len();
    let groups = grid
        .validation
        .assign(total, None, config.reservoir().seed());
    grid.check_groups(&groups)?;
    let (n, m, lanes) = (
        config.reservoir().size(),
        target_columns.len(),
        grid.lanes.len(),
    );
    let search = Search {
        task: "series_regression",
        score: SweepScore::ValidationNrmse,
        n_train: total,
        work: workload(&[train.inputs]),
        config,
        grid: &grid,
    };
    search.run(dispatch, |index, reservoir| {
        let mut sums: Vec<RidgeAccumulator> = (0..grid.validation.groups())
            .map(|_| RidgeAccumulator::new(n, m, reservoir_core::Par::Seq))
            .collect::<Result<_, _>>()?;
        add_series(
            reservoir,
            train.inputs,
            train.targets,
            washout,
            &groups,
            &mut sums,
            &mut |d, _| progress("sweep", index * total + d, lanes * total),
        )?;
        Ok(grid
            .ridges
            .par_iter()
            .map(|&ridge| {
                mean_over_folds(grid.validation, |g| {
                    let mut others = RidgeAccumulator::new(n, m, reservoir_core::Par::Seq)?;
                    for (h, part) in sums.iter().enumerate() {
                        if h != g {
                            others.merge(part)?;
                        }
                    }
                    let fit = others.solve(ridge)?;
                    Ok(sums[g].score(&fit.readout)?.mean_nrmse())
                })
            })
            .collect())
    })
}
