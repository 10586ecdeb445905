//! Training a ridge readout while the reservoir runs, without ever holding all the states.

use std::sync::mpsc;

use ndarray::{s, Array2, ArrayView2};

use super::ridge::{RidgeAccumulator, RidgeFit};
use crate::config::ReadoutConfig;
use crate::error::{ReservoirError, Result};
use crate::reservoir::Reservoir;

/// Rows of states produced per chunk while streaming into a [`RidgeAccumulator`].
pub const STREAM_CHUNK_ROWS: usize = 512;

/// Runs `reservoir` over `inputs` (T × K) from its current state and adds every (state, target)
/// row after the first `washout` rows to `acc`.
///
/// States are produced in chunks of [`STREAM_CHUNK_ROWS`]; a second thread adds chunk i to
/// the accumulator while this one computes chunk i + 1, so the cost is close to the larger of
/// the run and the XᵀX update, and memory stays O(chunk · N) whatever T is.
///
/// # Errors
/// Shape errors (T rows of targets, N features), a washout that leaves no rows, and any error
/// of the run or the accumulation.
pub fn accumulate_run(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    washout: usize,
    acc: &mut RidgeAccumulator,
) -> Result<()> {
    accumulate_run_with_progress(reservoir, inputs, targets, washout, acc, &mut |_, _| {})
}

/// [`accumulate_run`], calling `progress(rows_run, total_rows)` after each chunk of
/// [`STREAM_CHUNK_ROWS`] rows has run (for a progress bar; the result is the same).
pub fn accumulate_run_with_progress(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    washout: usize,
    acc: &mut RidgeAccumulator,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let total = inputs.nrows();
    if targets.nrows() != total {
        return Err(ReservoirError::shape(
            "training targets",
            format!("{total} rows"),
            format!("{} rows", targets.nrows()),
        ));
    }
    if acc.n_features() != reservoir.size() {
        return Err(ReservoirError::shape(
            "ridge accumulator features",
            reservoir.size(),
            acc.n_features(),
        ));
    }
    if acc.n_outputs() != targets.ncols() {
        return Err(ReservoirError::shape(
            "ridge accumulator outputs",
            targets.ncols(),
            acc.n_outputs(),
        ));
    }
    if washout >= total {
        return Err(ReservoirError::invalid(
            "training",
            format!("washout {washout} leaves no rows of the {total} training rows"),
        ));
    }
    if let Some(own) = reservoir.as_accumulator() {
        return own.accumulate_run(inputs, targets, washout, acc, progress);
    }
    let (sender, receiver) = mpsc::sync_channel::<(usize, Array2<f64>)>(1);
    std::thread::scope(|scope| {
        let consumer = scope.spawn(move || -> Result<()> {
            for (start, states) in receiver {
                let skip = washout.saturating_sub(start).min(states.nrows());
                let end = start + states.nrows();
                acc.add(
                    states.slice(s![skip.., ..]),
                    targets.slice(s![start + skip..end, ..]),
                )?;
            }
            Ok(())
        });
        let mut produced = Ok(());
        for start in (0..total).step_by(STREAM_CHUNK_ROWS) {
            let end = (start + STREAM_CHUNK_ROWS).min(total);
            match reservoir.run(inputs.slice(s![start..end, ..])) {
                Ok(states) => {
                    progress(end, total);
                    if sender.send((start, states)).is_err() {
                        break; // the consumer stopped on an error, reported below
                    }
                }
                Err(e) => {
                    produced = Err(e);
                    break;
                }
            }
        }
        drop(sender);
        let consumed = consumer.join().unwrap_or_else(|_| {
            Err(ReservoirError::numerical(
                "training",
                "the accumulation thread panicked",
            ))
        });
        produced.and(consumed)
    })
}

/// Trains a ridge readout on one sequence: runs `reservoir` from its current state over
/// `inputs`, drops `config.washout` rows, and solves with `config.ridge`.
pub fn fit_ridge(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    config: &ReadoutConfig,
) -> Result<RidgeFit> {
    fit_ridge_with_progress(reservoir, inputs, targets, config, &mut |_, _| {})
}

/// [`fit_ridge`], calling `progress(rows_run, total_rows)` as the reservoir runs (see
/// [`accumulate_run_with_progress`]).
pub fn fit_ridge_with_progress(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    config: &ReadoutConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RidgeFit> {
    config.validate()?;
    let mut acc = RidgeAccumulator::new(reservoir.size(), targets.ncols(), 1);
    accumulate_run_with_progress(
        reservoir,
        inputs,
        targets,
        config.washout,
        &mut acc,
        progress,
    )?;
    acc.solve(config.ridge)
}
