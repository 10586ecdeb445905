//! The time-series tasks of `reservoir run`: NARMA-10, Mackey–Glass, memory capacity.

use std::time::Instant;

use ndarray::{s, Array1};

use super::{
    figure, ExperimentConfig, ExperimentReport, Figure, ReservoirFactory, RunHooks, RunOutcome,
    TaskConfig, TestSeries, TrainedModel,
};
use crate::config::ReservoirConfig;
use crate::error::{ConfigError, Result};
use crate::forecast::closed_loop;
use crate::metrics::{nrmse, r2, rmse};
use crate::persist::Model;
use crate::readout::{fit_ridge_with_progress, LinearReadout};
use crate::reservoir::Reservoir;
use crate::tasks::mackey_glass::{mackey_glass, one_step_task, MackeyGlassOptions};
use crate::tasks::memory::{memory_capacity, MemoryCapacityOptions};
use crate::tasks::narma::narma10;
use crate::tasks::TaskData;
use crate::weights::ReservoirWeights;

/// What [`train_and_test`] leaves: the readout, the states after training and after the
/// test rows, and the test predictions with their targets.
struct Trained {
    readout: LinearReadout,
    trained_state: Array1<f64>,
    final_state: Array1<f64>,
    test: TestSeries,
}

/// Runs a time-series task (NARMA-10, Mackey–Glass, memory capacity) on an echo-state
/// reservoir with one input channel.
pub(super) fn run(
    config: &ExperimentConfig,
    task: &TaskConfig,
    factory: &mut dyn ReservoirFactory,
    hooks: &mut RunHooks<'_>,
) -> Result<RunOutcome> {
    let start = Instant::now();
    let esn_config = ReservoirConfig {
        input_size: 1,
        ..config.reservoir.clone()
    };
    let mut reservoir = factory.echo_state(&esn_config)?;
    let mut timings = vec![figure("setup_seconds", start.elapsed().as_secs_f64())];
    let mut metrics = Vec::new();
    let mut trained = None;
    let kind = match task {
        TaskConfig::SpikeClassification(_) => {
            return Err(ConfigError::new(
                "task.kind",
                "is not a time-series task",
                "spike_classification",
            )
            .into())
        }
        TaskConfig::Narma10 { train, test, seed } => {
            let data = narma10(train + test, *seed)?;
            trained = Some(train_and_test(
                config,
                reservoir.as_mut(),
                &data,
                *train,
                (&mut metrics, &mut timings),
                hooks,
            )?);
            "narma10"
        }
        TaskConfig::MackeyGlass {
            train,
            test,
            forecast,
        } => {
            let series = mackey_glass(train + test + 1, MackeyGlassOptions::default())?;
            let data = one_step_task(series.view());
            let fitted = train_and_test(
                config,
                reservoir.as_mut(),
                &data,
                *train,
                (&mut metrics, &mut timings),
                hooks,
            )?;
            if *forecast > 0 {
                // Run free from the end of training.
                let t = Instant::now();
                reservoir.set_state(fitted.trained_state.view())?;
                let steps = (*forecast).min(*test);
                let generated = closed_loop(
                    reservoir.as_mut(),
                    &fitted.readout,
                    series.slice(s![*train..*train + 1]),
                    steps,
                )?;
                let error =
                    (generated[(steps - 1, 0)] - series[*train + steps]).abs() / series.std(0.0);
                metrics.push(figure(&format!("closed_loop_nrmse{steps}"), error));
                timings.push(figure("forecast_seconds", t.elapsed().as_secs_f64()));
            }
            trained = Some(fitted);
            "mackey_glass"
        }
        TaskConfig::MemoryCapacity {
            max_delay,
            train,
            test,
        } => {
            let t = Instant::now();
            let options = MemoryCapacityOptions {
                max_delay: *max_delay,
                train_len: *train,
                test_len: *test,
                washout: config.readout.washout.max(*max_delay),
                ridge: config.readout.ridge,
                ..Default::default()
            };
            let mc = memory_capacity(reservoir.as_mut(), &options)?;
            metrics.push(figure("memory_capacity", mc.total));
            timings.push(figure("run_and_fit_seconds", t.elapsed().as_secs_f64()));
            "memory_capacity"
        }
    };
    let report = ExperimentReport {
        task: kind.to_string(),
        size: config.reservoir.size,
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
        let (weights, _) = ReservoirWeights::generate(&esn_config)?;
        Some(TrainedModel::Series(Model {
            config: esn_config,
            weights,
            readout: trained.readout,
            state: trained.final_state,
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

/// Fits on the first `train` rows, scores every following row (continuing in time), and
/// pushes the scores and timings onto `figures` (metrics, timings).
fn train_and_test(
    config: &ExperimentConfig,
    reservoir: &mut dyn Reservoir,
    data: &TaskData,
    train: usize,
    figures: (&mut Vec<Figure>, &mut Vec<Figure>),
    hooks: &mut RunHooks<'_>,
) -> Result<Trained> {
    let (metrics, timings) = figures;
    let (train_data, test_data) = data.split(train)?;
    let t = Instant::now();
    let fit = fit_ridge_with_progress(
        reservoir,
        train_data.inputs.view(),
        train_data.targets.view(),
        &config.readout,
        &mut |done, total| hooks.report("training", done, total),
    )?;
    let trained_state = reservoir.state();
    timings.push(figure("fit_seconds", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let states = reservoir.run(test_data.inputs.view())?;
    let predictions = fit.readout.predict(states.view())?;
    timings.push(figure("test_seconds", t.elapsed().as_secs_f64()));
    let target = test_data.targets.view();
    metrics.push(figure("train_nrmse", fit.train_nrmse));
    metrics.push(figure("test_nrmse", nrmse(predictions.view(), target)?));
    metrics.push(figure("test_rmse", rmse(predictions.view(), target)?));
    metrics.push(figure("test_r2", r2(predictions.view(), target)?));
    Ok(Trained {
        readout: fit.readout,
        trained_state,
        final_state: reservoir.state(),
        test: TestSeries {
            predictions,
            targets: test_data.targets,
        },
    })
}
