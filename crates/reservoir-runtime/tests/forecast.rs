//! Closed-loop generation on Mackey–Glass.

use ndarray::s;
use reservoir_core::architecture::{Architecture, ReservoirKind};
use reservoir_core::fit::fit_ridge;
use reservoir_core::forecast::Continuation;
use reservoir_core::{cpu_reservoir, Precision, ReadoutParams, ReservoirParams, ReservoirWeights};
use reservoir_runtime::data::tasks::mackey_glass::{
    mackey_glass, one_step_task, MackeyGlassOptions,
};

#[test]
fn closed_loop_forecast_follows_mackey_glass_for_84_steps() {
    let series = mackey_glass(3200, MackeyGlassOptions::default()).unwrap();
    let task = one_step_task(series.view());
    let (train, _) = task.split(3000).unwrap();
    let config = ReservoirParams::new()
        .size(500)
        .spectral_radius(1.0)
        .leak_rate(0.3)
        .seed(2)
        .precision(Precision::F64)
        .check()
        .unwrap();
    let architecture = Architecture::new(ReservoirKind::EchoState(config.clone()));
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let mut r = cpu_reservoir(&config, weights, reservoir_core::Par::all()).unwrap();
    let fit = fit_ridge(
        r.as_mut(),
        train.inputs.view(),
        train.targets.view(),
        &ReadoutParams::new()
            .ridge(1e-8)
            .washout(100)
            .check()
            .unwrap(),
    )
    .unwrap();
    // Training ended after input x(2999); the next true input is x(3000).
    let mut from = Continuation {
        last_input: series.slice(s![2999..3000]).to_owned(),
        last_output: series.slice(s![3000..3001]).to_owned(),
    };
    let forecast = architecture
        .closed_loop(r.as_mut(), &fit.readout, &mut from, 84)
        .unwrap();
    assert_eq!(forecast.dim(), (84, 1));
    // Row i predicts x(3001 + i); NRMSE84 is the error at step 84 over std(x).
    let std = series.std(0.0);
    let nrmse84 = (forecast[(83, 0)] - series[3084]).abs() / std;
    println!("closed-loop NRMSE84 = {nrmse84:.2e}");
    assert!(nrmse84 < 0.05, "NRMSE84 {nrmse84}");
    let mut wrong = Continuation {
        last_input: series.slice(s![0..1]).to_owned(),
        last_output: series.slice(s![0..2]).to_owned(),
    };
    let refused = architecture.closed_loop(r.as_mut(), &fit.readout, &mut wrong, 3);
    assert!(refused.is_err());
}
