//! The core data flow, end to end, on NARMA-10 (a standard benchmark: predict a non-linear
//! system driven by random input, which needs about ten steps of memory):
//!
//! ```text
//! ReservoirParams::check ─► ReservoirWeights::generate ─► cpu_reservoir ─► fit::fit_ridge
//!     ─► reservoir.run(test inputs) ─► readout.predict ─► metrics::nrmse
//! ```
//!
//! `cargo run --release -p reservoir-examples --example 01_fit_and_predict`

use std::time::Instant;

use ndarray::s;
use reservoir_core::{
    cpu_reservoir, fit, metrics, ReadoutParams, ReservoirParams, ReservoirWeights,
};
use reservoir_runtime::data::tasks::narma::narma10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();

    // The task: 4000 rows of input u(t) and target y(t+1); the first 3000 train, the rest test.
    let data = narma10(4000, 1)?;
    let (train, test) = data.split(3000)?;

    // 1. A config is built unchecked, then checked once: `check()` names any bad field.
    //    NARMA-10 wants short memory and a strong input drive, so no leak (leak_rate 1).
    let config = ReservoirParams::new()
        .size(500)
        .spectral_radius(0.9)
        .leak_rate(1.0)
        .input_scaling(0.5)
        .bias_scaling(0.1)
        .seed(7)
        .check()?;

    // 2. Seeded weights (same config and seed: the same weights on every run), then the
    //    reservoir that runs on them, here the CPU echo-state network.
    let (weights, _spectral_estimate) = ReservoirWeights::generate(&config)?;
    let mut reservoir = cpu_reservoir(&config, weights, reservoir_core::Par::all())?;

    // 3. Train a ridge readout while the reservoir runs over the training inputs; the first
    //    `washout` states (still remembering the zero start) are left out.
    let readout = ReadoutParams::new().ridge(1e-6).washout(100).check()?;
    let fit = fit::fit_ridge(
        reservoir.as_mut(),
        train.inputs.view(),
        train.targets.view(),
        &readout,
    )?;

    // 4. The reservoir keeps its state, so the test inputs carry on where training stopped.
    let states = reservoir.run(test.inputs.view())?;
    let predicted = fit.readout.predict(states.view())?;

    // 5. Score: NRMSE = RMSE / std(target); 1.0 is as good as predicting the mean.
    let error = metrics::nrmse(predicted.view(), test.targets.view())?;
    println!(
        "NARMA-10, N = {}: train NRMSE {:.3}, test NRMSE {error:.3} on {} rows",
        config.size(),
        fit.train_nrmse,
        test.len()
    );
    println!(
        "first test rows: predicted {:.3?}, true {:.3?} ({:.2} s)",
        predicted.slice(s![..4, 0]).to_vec(),
        test.targets.slice(s![..4, 0]).to_vec(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
