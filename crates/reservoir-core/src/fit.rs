//! Training a ridge readout on a reservoir while it runs, without ever holding all the states.

use ndarray::ArrayView2;

use crate::config::ReadoutConfig;
use crate::error::{ReservoirError, Result};
use crate::par::Par;
use crate::readout::{RidgeAccumulator, RidgeFit};
use crate::reservoir::Reservoir;

/// Runs `reservoir` over `inputs` (T × K) from its current state and adds every (state, target)
/// row after the first `washout` rows to `acc`, through the reservoir's own
/// [`Reservoir::accumulate_ridge`] (on the CPU: chunks of states added on a second thread; on
/// the GPU: sums added on the device).
///
/// # Errors
/// Shape errors (T rows of targets, N features, the targets' columns), a washout that leaves
/// no rows, and any error of the run or the accumulation.
pub fn accumulate_run(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    washout: usize,
    acc: &mut RidgeAccumulator,
) -> Result<()> {
    accumulate_run_with_progress(reservoir, inputs, targets, washout, acc, &mut |_, _| {})
}

/// [`accumulate_run`], calling `progress(rows_run, total_rows)` as the reservoir runs (for a
/// progress bar; the result is the same).
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
    reservoir.accumulate_ridge(inputs, targets, washout, acc, progress)
}

/// Trains a ridge readout on one sequence: runs `reservoir` from its current state over
/// `inputs`, drops `config.washout()` rows, and solves with `config.ridge()`.
pub fn fit_ridge(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    config: &ReadoutConfig,
) -> Result<RidgeFit> {
    fit_ridge_with_progress(reservoir, inputs, targets, config, &mut |_, _| {})
}

/// [`fit_ridge`], calling `progress(rows_run, total_rows)` as the reservoir runs.
pub fn fit_ridge_with_progress(
    reservoir: &mut dyn Reservoir,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    config: &ReadoutConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<RidgeFit> {
    let mut acc = RidgeAccumulator::new(reservoir.size(), targets.ncols(), Par::Seq)?;
    accumulate_run_with_progress(
        reservoir,
        inputs,
        targets,
        config.washout(),
        &mut acc,
        progress,
    )?;
    acc.solve(config.ridge())
}
