//! W rounded to 16-bit formats (`HalfFormat`): rounding, range errors, the spectral radius,
//! and the accuracy cost on NARMA-10 and Mackey–Glass that the README quotes.

use crate::common;

use common::train_test_nrmse;
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::{cpu_reservoir, HalfFormat, ReadoutParams, ReservoirParams, ReservoirWeights};
use reservoir_runtime::data::tasks::mackey_glass::{
    mackey_glass, one_step_task, MackeyGlassOptions,
};
use reservoir_runtime::data::tasks::narma::narma10;

#[test]
fn rounding_is_to_nearest_even_within_the_range() {
    assert_eq!(HalfFormat::F16.round(0.1), Some(0.0999755859375));
    assert_eq!(HalfFormat::Bf16.round(0.1), Some(0.10009765625));
    // Halfway between 1 and the next f16 (1 + 2^-10): ties to the even neighbour, 1.
    assert_eq!(HalfFormat::F16.round(1.0 + 2f64.powi(-11)), Some(1.0));
    assert_eq!(HalfFormat::F16.round(65504.0), Some(65504.0));
    assert_eq!(HalfFormat::F16.round(70000.0), None);
    assert_eq!(HalfFormat::Bf16.round(70000.0), Some(70144.0));
    assert_eq!(HalfFormat::Bf16.round(f64::NAN), None);
    assert_eq!(HalfFormat::F16.to_bits(0.1), Some(0x2E66));
    assert_eq!(HalfFormat::Bf16.to_bits(-1.0), Some(0xBF80));
    assert_eq!(HalfFormat::F16.to_bits(f64::INFINITY), None);
    assert!(HalfFormat::Bf16.holds(0.10009765625));
    assert!(!HalfFormat::Bf16.holds(0.1));
}

#[test]
fn rounded_weights_hold_their_format_and_keep_w_in_and_b() {
    let config = ReservoirParams::new()
        .size(400)
        .spectral_radius(0.9)
        .bias_scaling(0.5)
        .seed(7)
        .check()
        .unwrap();
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let options = SpectralOptions::default();
    let radius = weights
        .recurrent()
        .spectral_radius(&options)
        .unwrap()
        .radius;
    // (format, half a unit in the last place relative, smallest normal value): below that,
    // subnormals are spaced evenly, so the error bound is absolute there.
    let formats = [
        (HalfFormat::F16, 2f64.powi(-11), 2f64.powi(-14)),
        (HalfFormat::Bf16, 2f64.powi(-8), 2f64.powi(-126)),
    ];
    for (format, unit, smallest_normal) in formats {
        let rounded = weights.with_recurrent_rounded(format).unwrap();
        assert_eq!(rounded.input(), weights.input());
        assert_eq!(rounded.bias(), weights.bias());
        let (old, new) = (weights.recurrent(), rounded.recurrent());
        assert_eq!(old.col_idx(), new.col_idx());
        for (&a, &b) in old.values().iter().zip(new.values()) {
            assert!(format.holds(b), "{b} is not a {format:?} value");
            assert!(
                (a - b).abs() <= unit * a.abs().max(smallest_normal),
                "{a} -> {b}"
            );
        }
        let moved = new.spectral_radius(&options).unwrap().radius / radius - 1.0;
        println!("{format:?}: spectral radius {radius:.6} -> relative change {moved:.1e}");
        assert!(moved.abs() < 4.0 * unit, "{format:?}: {moved:.1e}");
    }
    let huge = config.to_params().spectral_radius(1e6).check().unwrap();
    let (weights, _) = ReservoirWeights::generate(&huge).unwrap();
    let message = weights
        .with_recurrent_rounded(HalfFormat::F16)
        .unwrap_err()
        .to_string();
    assert!(message.contains("F16"), "{message}");
    assert!(weights.with_recurrent_rounded(HalfFormat::Bf16).is_ok());
}

/// NARMA-10 (`configs/narma10.toml`) and Mackey–Glass one-step (`configs/mackey_glass.toml` in
/// f32, as the GPU computes) with W in f32, f16 and bf16, three weight seeds each.
#[test]
fn accuracy_cost_of_half_precision_w_on_narma10_and_mackey_glass() {
    let narma = narma10(3000, 1).unwrap();
    let glass = one_step_task(
        mackey_glass(6001, MackeyGlassOptions::default())
            .unwrap()
            .view(),
    );
    let cases = [
        ("NARMA-10", &narma, 2000, 0.9, 1e-6),
        ("Mackey-Glass one-step", &glass, 5000, 1.0, 1e-8),
    ];
    for (name, task, train, spectral_radius, ridge) in cases {
        let readout = ReadoutParams::new()
            .ridge(ridge)
            .washout(100)
            .check()
            .unwrap();
        for seed in [1, 2, 3] {
            let config = ReservoirParams::new()
                .size(500)
                .spectral_radius(spectral_radius)
                .leak_rate(1.0)
                .seed(seed)
                .check()
                .unwrap();
            let (weights, _) = ReservoirWeights::generate(&config).unwrap();
            let nrmse_on = |weights: ReservoirWeights| {
                let mut reservoir =
                    cpu_reservoir(&config, weights, reservoir_core::Par::all()).unwrap();
                train_test_nrmse(reservoir.as_mut(), &readout, task, train)
            };
            let full = nrmse_on(weights.clone());
            let mut line = format!("{name}, seed {seed}: f32 W {full:.4e}");
            for (format, bound) in [(HalfFormat::F16, 1.02), (HalfFormat::Bf16, 1.05)] {
                let rounded = weights.with_recurrent_rounded(format).unwrap();
                let e = nrmse_on(rounded);
                line += &format!(
                    ", {format:?} W {e:.4e} ({:+.1} %)",
                    100.0 * (e / full - 1.0)
                );
                assert!(
                    e <= bound * full,
                    "{name} seed {seed} {format:?}: {e} vs {full}"
                );
            }
            println!("{line}");
        }
    }
}
