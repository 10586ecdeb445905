//! `RidgeAccumulator::score`: NRMSE and r² from the sums alone against the same scores from
//! explicit predictions on CPU states.

use ndarray::{s, ArrayView1};
use reservoir_core::fit::accumulate_run;
use reservoir_core::metrics::nrmse;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::{
    cpu_reservoir, Precision, Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights,
};
use reservoir_runtime::data::tasks::memory::{memory_capacity_data, MemoryCapacityOptions};
use reservoir_runtime::data::tasks::narma::narma10;

/// The CPU reservoir of `config` on the weights its seed generates.
fn reservoir(config: &ReservoirConfig) -> Box<dyn Reservoir> {
    let (weights, _) = ReservoirWeights::generate(config).unwrap();
    cpu_reservoir(config, weights, reservoir_core::Par::all()).unwrap()
}

/// Squared Pearson correlation from the rows.
fn squared_correlation(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    let (ma, mb) = (a.mean().unwrap(), b.mean().unwrap());
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    sab * sab / (saa * sbb)
}

#[test]
fn validation_nrmse_from_sums_equals_nrmse_of_explicit_predictions() {
    // The NARMA-10 protocol of configs/narma10.toml: 500 units, train 2000, test 1000.
    let data = narma10(3000, 1).unwrap();
    let config = ReservoirParams::new()
        .size(500)
        .spectral_radius(0.9)
        .leak_rate(1.0)
        .seed(1)
        .check()
        .unwrap();
    let states = reservoir(&config).run(data.inputs.view()).unwrap();
    let (train, test) = (s![100..2000, ..], s![2000.., ..]);
    let mut fit_sums = RidgeAccumulator::new(500, 1, reservoir_core::Par::Seq).unwrap();
    fit_sums
        .add(states.slice(train), data.targets.slice(train))
        .unwrap();
    let mut test_sums = RidgeAccumulator::new(500, 1, reservoir_core::Par::Seq).unwrap();
    test_sums
        .add(states.slice(test), data.targets.slice(test))
        .unwrap();
    for ridge in [1e-6, 1e-4] {
        let fit = fit_sums.solve(ridge).unwrap();
        let predictions = fit.readout.predict(states.slice(test)).unwrap();
        let explicit = nrmse(predictions.view(), data.targets.slice(test)).unwrap();
        let scores = test_sums.score(&fit.readout).unwrap();
        assert_eq!(scores.rows, 1000);
        let closed = scores.mean_nrmse();
        // Measured: 2.5e-10 (ridge 1e-6) and 3.4e-11 (1e-4); the rounding of the sums,
        // amplified by the cancellation in ΣY² − 2Σyŷ + Σŷ², sets it.
        assert!(
            (closed - explicit).abs() <= 1e-9 * explicit,
            "ridge {ridge}: closed form {closed} vs explicit {explicit}"
        );
        assert!((0.1..0.2).contains(&closed), "NARMA-10 NRMSE {closed}");
    }
}

#[test]
fn squared_correlations_from_sums_equal_those_of_explicit_predictions() {
    // The memory-capacity protocol of configs/memory_capacity.toml, shortened.
    let options = MemoryCapacityOptions {
        max_delay: 40,
        train_len: 2000,
        test_len: 1000,
        washout: 200,
        ridge: 1e-10,
        seed: 7,
    };
    let data = memory_capacity_data(&options).unwrap();
    let config = ReservoirParams::new()
        .size(100)
        .spectral_radius(0.99)
        .input_scaling(0.01)
        .leak_rate(1.0)
        .precision(Precision::F64)
        .check()
        .unwrap();
    let mut reservoir = reservoir(&config);
    let mut fit_sums = RidgeAccumulator::new(100, 40, reservoir_core::Par::Seq).unwrap();
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![..2200, ..]),
        data.targets.slice(s![..2200, ..]),
        200,
        &mut fit_sums,
    )
    .unwrap();
    let fit = fit_sums.solve(options.ridge).unwrap();
    let test_states = reservoir.run(data.inputs.slice(s![2200.., ..])).unwrap();
    let predictions = fit.readout.predict(test_states.view()).unwrap();
    let mut test_sums = RidgeAccumulator::new(100, 40, reservoir_core::Par::Seq).unwrap();
    test_sums
        .add(test_states.view(), data.targets.slice(s![2200.., ..]))
        .unwrap();
    let scores = test_sums.score(&fit.readout).unwrap();
    let mut total = 0.0;
    for (k, &closed) in scores.squared_correlation.iter().enumerate() {
        let explicit =
            squared_correlation(predictions.column(k), data.targets.slice(s![2200.., k]));
        total += explicit;
        // Measured: at most 7e-9 (delay 40, where r² is smallest).
        assert!(
            (closed - explicit).abs() < 1e-7,
            "delay {}: r² {closed} from the sums, {explicit} from the predictions",
            k + 1
        );
    }
    let closed_total = scores.total_squared_correlation();
    assert!((closed_total - total).abs() < 1e-7 * total);
    assert!(total > 20.0, "MC over 40 delays {total}");
}

#[test]
fn score_checks_the_readout_shape_and_a_constant_target() {
    let x = ndarray::Array2::from_shape_fn((50, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64);
    let y = x.column(0).insert_axis(ndarray::Axis(1)).mapv(|v| v * 2.0);
    let mut acc = RidgeAccumulator::new(3, 1, reservoir_core::Par::Seq).unwrap();
    acc.add(x.view(), y.view()).unwrap();
    let fit = acc.solve(1e-9).unwrap();
    assert!(fit.train_nrmse < 1e-6, "{}", fit.train_nrmse);
    let mut wide = RidgeAccumulator::new(4, 1, reservoir_core::Par::Seq).unwrap();
    let x4 = ndarray::Array2::from_shape_fn((50, 4), |(i, j)| ((i + j) % 5) as f64);
    wide.add(x4.view(), y.view()).unwrap();
    let err = wide.score(&fit.readout).unwrap_err().to_string();
    assert!(err.contains("4 features"), "{err}");
    let mut flat = RidgeAccumulator::new(3, 1, reservoir_core::Par::Seq).unwrap();
    flat.add(x.view(), ndarray::Array2::ones((50, 1)).view())
        .unwrap();
    let err = flat.score(&fit.readout).unwrap_err().to_string();
    assert!(err.contains("target column 0 is constant"), "{err}");
    // A constant target is still fitted, by the intercept; its NRMSE is undefined.
    let constant = flat.solve(1e-6).unwrap();
    assert!(constant.train_nrmse.is_nan());
    let predicted = constant.readout.predict(x.view()).unwrap();
    assert!(
        predicted.iter().all(|v| (v - 1.0).abs() < 1e-6),
        "{predicted}"
    );
    let empty = RidgeAccumulator::new(3, 1, reservoir_core::Par::Seq).unwrap();
    assert!(empty.score(&fit.readout).is_err());
}
