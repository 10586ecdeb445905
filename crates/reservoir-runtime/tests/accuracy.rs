//! Accuracy at parity with ReservoirPy on the standard protocols (NARMA-10, Mackey–Glass, memory
//! capacity; fixed seeds; the protocols are in docs/config.md).

use crate::common;

use common::train_test_nrmse;
use reservoir_core::{
    cpu_reservoir, Precision, ReadoutParams, Reservoir, ReservoirConfig, ReservoirParams,
    ReservoirWeights,
};
use reservoir_runtime::data::tasks::mackey_glass::{
    mackey_glass, one_step_task, MackeyGlassOptions,
};
use reservoir_runtime::data::tasks::memory::{memory_capacity, MemoryCapacityOptions};
use reservoir_runtime::data::tasks::narma::narma10;

/// The CPU reservoir of `config` on the weights its seed generates.
fn reservoir(config: &ReservoirConfig) -> Box<dyn Reservoir> {
    let (weights, _) = ReservoirWeights::generate(config).unwrap();
    cpu_reservoir(config, weights, reservoir_core::Par::all()).unwrap()
}

#[test]
fn narma10_with_500_units_reaches_reservoirpy_parity() {
    let task = narma10(3000, 1).unwrap();
    let mut worst: f64 = 0.0;
    for seed in [1, 2, 3] {
        let config = ReservoirParams::new()
            .size(500)
            .spectral_radius(0.9)
            .leak_rate(1.0)
            .bias_scaling(0.0)
            .seed(seed)
            .check()
            .unwrap();
        let readout = ReadoutParams::new()
            .ridge(1e-6)
            .washout(100)
            .check()
            .unwrap();
        let e = train_test_nrmse(reservoir(&config).as_mut(), &readout, &task, 2000);
        println!("NARMA-10 seed {seed}: test NRMSE {e:.4}");
        worst = worst.max(e);
    }
    assert!(worst <= 0.25, "NARMA-10 test NRMSE {worst}");
}

#[test]
fn mackey_glass_one_step_with_500_units_is_below_1e_4() {
    // 6001 samples after the 500 discarded: 5000 training rows (100 washout), 1000 test rows.
    let series = mackey_glass(6001, MackeyGlassOptions::default()).unwrap();
    let task = one_step_task(series.view());
    for precision in [Precision::F32, Precision::F64] {
        let config = ReservoirParams::new()
            .size(500)
            .spectral_radius(1.0)
            .leak_rate(1.0)
            .input_scaling(1.0)
            .input_connectivity(0.1)
            .precision(precision)
            .check()
            .unwrap();
        let readout = ReadoutParams::new()
            .ridge(1e-8)
            .washout(100)
            .check()
            .unwrap();
        let e = train_test_nrmse(reservoir(&config).as_mut(), &readout, &task, 5000);
        println!("Mackey-Glass one-step, {precision:?}: test NRMSE {e:.3e}");
        assert!(e <= 1e-4, "Mackey-Glass one-step NRMSE {e} ({precision:?})");
    }
}

#[test]
fn memory_capacity_of_100_units_is_at_least_40() {
    let config = ReservoirParams::new()
        .size(100)
        .spectral_radius(0.99)
        .input_scaling(0.01)
        .leak_rate(1.0)
        .precision(Precision::F64)
        .check()
        .unwrap();
    let mut reservoir = reservoir(&config);
    let mc = memory_capacity(reservoir.as_mut(), &MemoryCapacityOptions::default()).unwrap();
    println!("memory capacity {:.2}", mc.total);
    assert!(mc.total >= 40.0 && mc.total <= 100.0, "MC {}", mc.total);
}
