//! Helpers shared by the accuracy tests.

use reservoir_core::fit::fit_ridge;
use reservoir_core::metrics::nrmse;
use reservoir_core::{ReadoutConfig, Reservoir};
use reservoir_runtime::data::tasks::TaskData;

/// Trains a ridge readout on the first `train` rows of `task` and returns the test NRMSE of
/// the rest, the reservoir continuing in time.
pub fn train_test_nrmse(
    reservoir: &mut dyn Reservoir,
    readout: &ReadoutConfig,
    task: &TaskData,
    train: usize,
) -> f64 {
    let (tr, te) = task.split(train).unwrap();
    let fit = fit_ridge(reservoir, tr.inputs.view(), tr.targets.view(), readout).unwrap();
    let states = reservoir.run(te.inputs.view()).unwrap();
    let pred = fit.readout.predict(states.view()).unwrap();
    nrmse(pred.view(), te.targets.view()).unwrap()
}
