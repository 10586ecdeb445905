//! The time-series tasks of `reservoir run`: NARMA-10, Mackey–Glass, memory capacity.

use std::time::Instant;

use ndarray::{s, Array1, ArrayView2};

use reservoir_core::architecture::Architecture;
use reservoir_core::fit::fit_ridge_with_progress;
use reservoir_core::forecast::Continuation;
use reservoir_core::metrics::{nrmse, r2, rmse};
use reservoir_core::readout::LinearReadout;
use reservoir_core::{ConfigError, Reservoir, ReservoirError};

use super::{figure, ExperimentReport, Figure, RunHooks, RunOutcome, TestSeries, TrainedModel};
use crate::config::{ExperimentConfig, TaskConfig};
use crate::data::tasks::mackey_glass::{mackey_glass, one_step_task, MackeyGlassOptions};
use crate::data::tasks::memory::{memory_capacity, memory_capacity_data, MemoryCapacityOptions};
use crate::data::tasks::narma::narma10;
use crate::data::tasks::TaskData;
use crate::device::Dispatch;
use crate::error::Result;
use crate::model::Model;

/// What [`train_and_test`] leaves: the readout, the states (and last input and output) after
/// training and after the test rows, and the test predictions with their targets.
struct Trained {
    readout: LinearReadout,
    trained_state: Array1<f64>,
    trained_input: Array1<f64>,
    final_state: Array1<f64>,
    final_continuation: Continuation,
    test: TestSeries,
}

/// A time-series task's rows as `reservoir run` and `reservoir sweep` use them: one input
/// sequence in time order, rows `washout..train_rows` train the readout, rows `train_rows..`
/// are scored.
pub(crate) struct SeriesTask {
    /// `narma10`, `mackey_glass` or `memory_capacity`.
    pub(crate) kind: &'static str,
    /// Inputs (T × 1) and targets (T × M) of every row.
    pub(crate) data: TaskData,
    /// End of the training rows.
    pub(crate) train_rows: usize,
    /// Leading rows run but not fitted.
    pub(crate) washout: usize,
    /// Mackey–Glass: the series the rows come from (one row longer), for the forecast.
    pub(crate) series: Option<Array1<f64>>,
}

/// The protocol of the memory-capacity task: its washout covers the largest delay.
fn memory_capacity_options(
    config: &ExperimentConfig,
    max_delay: usize,
    train: usize,
    test: usize,
) -> MemoryCapacityOptions {
    MemoryCapacityOptions {
        max_delay,
        train_len: train,
        test_len: test,
        washout: config.readout().washout().max(max_delay),
        ridge: config.readout().ridge(),
        ..Default::default()
    }
}

/// The rows of a time-series task (NARMA-10, Mackey–Glass one-step, memory capacity).
///
/// # Errors
/// A config error naming `task.kind` for the spike task; any error of the generators.
pub(crate) fn series_task(config: &ExperimentConfig, task: &TaskConfig) -> Result<SeriesTask> {
    let washout = config.readout().washout();
    Ok(match task {
        TaskConfig::SpikeClassification(_) => {
            return Err(ConfigError::new(
                "task.kind",
                "is not a time-series task (narma10, mackey_glass, memory_capacity)",
                "spike_classification",
            )
            .into())
        }
        TaskConfig::Narma10 { train, test, seed } => SeriesTask {
            kind: "narma10",
            data: narma10(train + test, *seed)?,
            train_rows: *train,
            washout,
            series: None,
        },
        TaskConfig::MackeyGlass { train, test, .. } => {
            let series = mackey_glass(train + test + 1, MackeyGlassOptions::default())?;
            SeriesTask {
                kind: "mackey_glass",
                data: one_step_task(series.view()),
                train_rows: *train,
                washout,
                series: Some(series),
            }
        }
        TaskConfig::MemoryCapacity {
            max_delay,
            train,
            test,
        } => {
            let options = memory_capacity_options(config, *max_delay, *train, *test);
            SeriesTask {
                kind: "memory_capacity",
                data: memory_capacity_data(&options)?,
                train_rows: options.washout + train,
                washout: options.washout,
                series: None,
            }
        }
    })
}

/// Runs a time-series task (NARMA-10, Mackey–Glass, memory capacity) on an echo-state
/// reservoir with one input channel.
pub(super) fn run(
    config: &ExperimentConfig,
    task: &TaskConfig,
    dispatch: &mut Dispatch,
    hooks: &mut RunHooks<'_>,
) -> Result<RunOutcome> {
    let start = Instant::now();
    let architecture = config.architecture(1, Some(1))?;
    task.memory(&architecture, config.readout().washout())
        .ensure()?;
    let rows = match task {
        TaskConfig::MemoryCapacity { .. } => {
            let unapplied = if architecture.plasticity().is_some() {
                Some(("model.plasticity", "a [model.plasticity] table"))
            } else if architecture.links_outputs() {
                Some(("model", "feedback or increments"))
            } else {
                None
            };
            if let Some((field, value)) = unapplied {
                return Err(ConfigError::new(
                    field,
                    "is not applied by the memory_capacity task (its inputs are drawn as it \
                     runs, and each delay has its own readout)",
                    value,
                )
                .into());
            }
            None
        }
        task => Some(series_task(config, task)?),
    };
    let training = rows
        .iter()
        .map(|r| {
            architecture.teacher_inputs(
                r.data.inputs.slice(s![..r.train_rows, ..]),
                r.data.targets.slice(s![..r.train_rows, ..]),
            )
        })
        .collect::<reservoir_core::Result<Vec<_>>>()?;
    let training: Vec<ArrayView2<f64>> = training.iter().map(|u| u.view()).collect();
    let weights = architecture.generate(&training)?;
    let work = task.workload(config.readout().washout());
    let mut reservoir = dispatch.build(&architecture, &weights, work)?;
    let mut timings = vec![figure("setup_seconds", start.elapsed().as_secs_f64())];
    let mut metrics = Vec::new();
    let mut trained = None;
    let kind = match task {
        TaskConfig::MemoryCapacity {
            max_delay,
            train,
            test,
        } => {
            let t = Instant::now();
            let options = memory_capacity_options(config, *max_delay, *train, *test);
            let mc = memory_capacity(reservoir.as_mut(), &options)?;
            metrics.push(figure("memory_capacity", mc.total));
            timings.push(figure("run_and_fit_seconds", t.elapsed().as_secs_f64()));
            "memory_capacity"
        }
        task => {
            let rows = rows.ok_or_else(|| {
                ReservoirError::invalid("task", "the task's rows were not generated")
            })?;
            let fitted = train_and_test(
                config,
                &architecture,
                reservoir.as_mut(),
                &rows.data,
                rows.train_rows,
                (&mut metrics, &mut timings),
                hooks,
            )?;
            if let (TaskConfig::MackeyGlass { forecast, test, .. }, Some(series)) =
                (task, &rows.series)
            {
                if *forecast > 0 {
                    // Run free from the end of training, from the value that follows it.
                    let t = Instant::now();
                    let train = rows.train_rows;
                    reservoir.set_state(fitted.trained_state.view())?;
                    let steps = (*forecast).min(*test);
                    let mut from = Continuation {
                        last_input: fitted.trained_input.clone(),
                        last_output: series.slice(s![train..train + 1]).to_owned(),
                    };
                    let generated = architecture.closed_loop(
                        reservoir.as_mut(),
                        &fitted.readout,
                        &mut from,
                        steps,
                    )?;
                    let error =
                        (generated[(steps - 1, 0)] - series[train + steps]).abs() / series.std(0.0);
                    metrics.push(figure(&format!("closed_loop_nrmse{steps}"), error));
                    timings.push(figure("forecast_seconds", t.elapsed().as_secs_f64()));
                }
            }
            trained = Some(fitted);
            rows.kind
        }
    };
    let report = ExperimentReport {
        task: kind.to_string(),
        size: architecture.reservoir().state_size(),
        metrics,
        timings,
    };
    let Some(trained) = trained else {
        return Ok(RunOutcome {
            report,
            model: None,
            test_series: None,
            spike_data: None,
        });
    };
    let model = if hooks.keep_model {
        let (input, target) = if kind == "narma10" {
            ("u", "y")
        } else {
            ("x", "x_next")
        };
        Some(TrainedModel::Series(Model {
            architecture,
            weights,
            readout: trained.readout,
            state: trained.final_state,
            continuation: trained.final_continuation,
            input_columns: vec![input.to_string()],
            target_columns: vec![target.to_string()],
        }))
    } else {
        None
    };
    Ok(RunOutcome {
        report,
        model,
        test_series: Some(trained.test),
        spike_data: None,
    })
}

/// Fits on the first `train` rows (teacher forced), scores every following row (continuing in
/// time, as a prediction does), and pushes the scores and timings onto `figures` (metrics,
/// timings).
fn train_and_test(
    config: &ExperimentConfig,
    architecture: &Architecture,
    reservoir: &mut dyn Reservoir,
    data: &TaskData,
    train: usize,
    figures: (&mut Vec<Figure>, &mut Vec<Figure>),
    hooks: &mut RunHooks<'_>,
) -> Result<Trained> {
    let (metrics, timings) = figures;
    let (train_data, test_data) = data.split(train)?;
    let (inputs, targets) = (train_data.inputs.view(), train_data.targets.view());
    let t = Instant::now();
    let fit = fit_ridge_with_progress(
        reservoir,
        architecture.teacher_inputs(inputs, targets)?.view(),
        architecture.readout_targets(inputs, targets)?.view(),
        config.readout(),
        &mut |done, total| hooks.report("training", done, total),
    )?;
    let trained_state = reservoir.state()?;
    let trained_input = inputs.row(inputs.nrows().saturating_sub(1)).to_owned();
    timings.push(figure("fit_seconds", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let mut continuation = Continuation {
        last_output: architecture.output_at(
            &fit.readout,
            trained_state.view(),
            trained_input.view(),
        )?,
        last_input: trained_input.clone(),
    };
    let predictions = architecture.predict(
        reservoir,
        &fit.readout,
        test_data.inputs.view(),
        &mut continuation,
        &mut |_, _| {},
    )?;
    timings.push(figure("test_seconds", t.elapsed().as_secs_f64()));
    let target = test_data.targets.view();
    metrics.push(figure("train_nrmse", fit.train_nrmse));
    metrics.push(figure("test_nrmse", nrmse(predictions.view(), target)?));
    metrics.push(figure("test_rmse", rmse(predictions.view(), target)?));
    metrics.push(figure("test_r2", r2(predictions.view(), target)?));
    Ok(Trained {
        readout: fit.readout,
        trained_state,
        trained_input,
        final_state: reservoir.state()?,
        final_continuation: continuation,
        test: TestSeries {
            predictions,
            targets: test_data.targets,
        },
    })
}
