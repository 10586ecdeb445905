//! The time-series tasks of `reservoir run`: NARMA-10, Mackey–Glass, memory capacity.

use std::time::Instant;

use ndarray::{s, Array1};

use super::{figure, ExperimentConfig, ExperimentReport, Figure, ReservoirFactory, TaskConfig};
use crate::config::ReservoirConfig;
use crate::error::{ConfigError, Result};
use crate::forecast::closed_loop;
use crate::metrics::{nrmse, r2, rmse};
use crate::readout::{fit_ridge, LinearReadout};
use crate::reservoir::Reservoir;
use crate::tasks::mackey_glass::{mackey_glass, one_step_task, MackeyGlassOptions};
use crate::tasks::memory::{memory_capacity, MemoryCapacityOptions};
use crate::tasks::narma::narma10;
use crate::tasks::TaskData;

/// Runs a time-series task (NARMA-10, Mackey–Glass, memory capacity) on an echo-state
/// reservoir with one input channel.
pub(super) fn run(
    config: &ExperimentConfig,
    task: &TaskConfig,
    factory: &mut dyn ReservoirFactory,
) -> Result<ExperimentReport> {
    let start = Instant::now();
    let mut reservoir = factory.echo_state(&ReservoirConfig {
        input_size: 1,
        ..config.reservoir.clone()
    })?;
    let mut timings = vec![figure("setup_seconds", start.elapsed().as_secs_f64())];
    let mut metrics = Vec::new();
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
            train_and_test(
                config,
                reservoir.as_mut(),
                &data,
                *train,
                &mut metrics,
                &mut timings,
            )?;
            "narma10"
        }
        TaskConfig::MackeyGlass {
            train,
            test,
            forecast,
        } => {
            let series = mackey_glass(train + test + 1, MackeyGlassOptions::default())?;
            let data = one_step_task(series.view());
            let (readout, trained_state) = train_and_test(
                config,
                reservoir.as_mut(),
                &data,
                *train,
                &mut metrics,
                &mut timings,
            )?;
            if *forecast > 0 {
                // Run free from the end of training.
                let t = Instant::now();
                reservoir.set_state(trained_state.view())?;
                let steps = (*forecast).min(*test);
                let generated = closed_loop(
                    reservoir.as_mut(),
                    &readout,
                    series.slice(s![*train..*train + 1]),
                    steps,
                )?;
                let error =
                    (generated[(steps - 1, 0)] - series[*train + steps]).abs() / series.std(0.0);
                metrics.push(figure(&format!("closed_loop_nrmse{steps}"), error));
                timings.push(figure("forecast_seconds", t.elapsed().as_secs_f64()));
            }
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
    Ok(ExperimentReport {
        task: kind.to_string(),
        size: config.reservoir.size,
        metrics,
        timings,
    })
}

/// Fits on the first `train` rows, scores every following row (continuing in time);
/// returns the readout and the reservoir state at the end of training.
fn train_and_test(
    config: &ExperimentConfig,
    reservoir: &mut dyn Reservoir,
    data: &TaskData,
    train: usize,
    metrics: &mut Vec<Figure>,
    timings: &mut Vec<Figure>,
) -> Result<(LinearReadout, Array1<f64>)> {
    let (train_data, test_data) = data.split(train)?;
    let t = Instant::now();
    let fit = fit_ridge(
        reservoir,
        train_data.inputs.view(),
        train_data.targets.view(),
        &config.readout,
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
    Ok((fit.readout, trained_state))
}
