//! Property tests of config files: parameters written as TOML read back unchanged (every
//! finite float bit for bit), and a checked config written as TOML reads back as the same
//! checked config.

use proptest::prelude::*;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::{Activation, Precision, ReadoutParams, ReservoirParams, WeightDistribution};
use reservoir_runtime::config::{
    ExperimentConfig, ExperimentParams, SpikeClassificationParams, SweepParams, TaskParams,
};
use reservoir_runtime::{Device, GemmMath};

/// Seeds a TOML file can hold (its integers are 64-bit signed).
fn seed() -> impl Strategy<Value = u64> {
    0u64..=i64::MAX as u64
}

/// Any finite float (the parameters are not checked here).
fn finite() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |v| v.is_finite())
}

fn device() -> impl Strategy<Value = Option<Device>> {
    prop_oneof![
        Just(None),
        Just(Some(Device::Auto)),
        Just(Some(Device::Cpu)),
        (0usize..4).prop_map(|n| Some(Device::Cuda(n))),
    ]
}

/// Reservoir parameters: in their valid ranges when `valid`, any finite values otherwise.
fn reservoir(valid: bool) -> BoxedStrategy<ReservoirParams> {
    let unit = |valid: bool| {
        if valid {
            (1e-3f64..=1.0).boxed()
        } else {
            finite().boxed()
        }
    };
    let positive = |valid: bool| {
        if valid {
            (1e-6f64..10.0).boxed()
        } else {
            finite().boxed()
        }
    };
    (
        (1usize..5000, 1usize..16, positive(valid), unit(valid)),
        (unit(valid), unit(valid), positive(valid), positive(valid)),
        (positive(valid), any::<bool>(), any::<bool>(), any::<bool>()),
        seed(),
    )
        .prop_map(
            |(
                (size, k, rho, p),
                (p_in, leak, scaling, bias),
                (noise, linear, normal, f64s),
                seed,
            )| {
                ReservoirParams::new()
                    .size(size)
                    .input_size(k)
                    .spectral_radius(rho)
                    .connection_prob(p)
                    .input_connectivity(p_in)
                    .leak_rate(leak)
                    .input_scaling(scaling)
                    .bias_scaling(bias)
                    .noise_level(noise)
                    .activation(if linear {
                        Activation::Identity
                    } else {
                        Activation::Tanh
                    })
                    .weight_distribution(if normal {
                        WeightDistribution::Normal
                    } else {
                        WeightDistribution::Uniform
                    })
                    .precision(if f64s { Precision::F64 } else { Precision::F32 })
                    .seed(seed)
            },
        )
        .boxed()
}

fn features() -> impl Strategy<Value = FeatureParams> {
    (
        prop::sample::subsequence(vec![Summary::Last, Summary::Mean, Summary::MeanLast], 1..=3)
            .prop_shuffle(),
        1usize..50,
        0usize..50,
    )
        .prop_map(|(summaries, last_k, warmup)| {
            FeatureParams::new()
                .summaries(summaries)
                .last_k(last_k)
                .warmup(warmup)
        })
}

/// A series task with `train` above `washout`.
fn task(washout: usize) -> impl Strategy<Value = Option<TaskParams>> {
    let train = (washout + 1)..(washout + 5000);
    prop_oneof![
        Just(None),
        (train.clone(), 2usize..5000, seed())
            .prop_map(|(train, test, seed)| Some(TaskParams::Narma10 { train, test, seed })),
        // The forecast is scored on the test rows, so it is no longer than them.
        (train.clone(), 2usize..5000)
            .prop_flat_map(|(train, test)| (Just(train), Just(test), 0..=test))
            .prop_map(|(train, test, forecast)| Some(TaskParams::MackeyGlass {
                train,
                test,
                forecast
            })),
        (1usize..200, train, 2usize..5000).prop_map(|(max_delay, train, test)| Some(
            TaskParams::MemoryCapacity {
                max_delay,
                train,
                test
            }
        )),
    ]
}

/// A `[sweep]` table of valid lists (each absent or 1 to 4 values).
fn sweep() -> impl Strategy<Value = Option<SweepParams>> {
    let list = |low: f64, high: f64| prop::option::of(prop::collection::vec(low..high, 1..4));
    prop::option::of(
        (
            list(1e-3, 3.0),
            list(1e-3, 1.0),
            list(0.0, 5.0),
            list(0.0, 1.0),
            1usize..20,
            prop_oneof![
                Just((None, None)),
                (2usize..10).prop_map(|k| (Some(k), None)),
                (0.05f64..0.95).prop_map(|f| (None, Some(f))),
            ],
            // f32 is the default and written as absent; f16 needs a tanh reservoir.
            prop_oneof![Just(None), Just(Some(GemmMath::Tf32))],
        )
            .prop_map(
                |(
                    spectral_radius,
                    leak_rate,
                    input_scaling,
                    ridge,
                    top,
                    (folds, validation),
                    gpu_matmul,
                )| {
                    SweepParams {
                        spectral_radius,
                        leak_rate,
                        input_scaling,
                        ridge,
                        top,
                        folds,
                        validation,
                        gpu_matmul,
                    }
                },
            ),
    )
}

/// A config whose every table obeys its rules.
fn valid_params() -> impl Strategy<Value = ExperimentParams> {
    (0usize..200, 0.0f64..1.0)
        .prop_flat_map(|(washout, ridge)| {
            (
                device(),
                task(washout),
                reservoir(true),
                features(),
                sweep(),
                Just(ReadoutParams::new().ridge(ridge).washout(washout)),
            )
        })
        .prop_map(
            |(device, task, reservoir, features, sweep, readout)| ExperimentParams {
                device,
                task,
                reservoir,
                readout,
                features,
                sweep,
                ..ExperimentParams::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn params_round_trip_through_toml(
        device in device(),
        reservoir in reservoir(false),
        ridge in finite(),
        washout in 0usize..=i64::MAX as usize,
        features in features(),
        spike_seed in seed(),
        pattern_ms in finite(),
        spike in any::<bool>(),
    ) {
        let task = spike.then(|| TaskParams::SpikeClassification(SpikeClassificationParams {
            seed: spike_seed,
            pattern_ms,
            ..SpikeClassificationParams::default()
        }));
        let params = ExperimentParams {
            device,
            task,
            reservoir,
            readout: ReadoutParams::new().ridge(ridge).washout(washout),
            features,
            ..ExperimentParams::default()
        };
        let text = toml::to_string(&params).expect("write TOML");
        let back = ExperimentParams::from_toml(&text, "written.toml").expect("read TOML");
        // Bit for bit: `==` on the parameters would let -0 pass for 0.
        prop_assert_eq!(format!("{back:?}"), format!("{params:?}"));
        prop_assert_eq!(toml::to_string(&back).expect("write again"), text);
    }

    #[test]
    fn checked_configs_round_trip_through_toml(params in valid_params()) {
        let config = params.check().expect("generated configs are valid");
        let text = toml::to_string(&config).expect("write TOML");
        let back = ExperimentConfig::from_toml(&text, "written.toml").expect("read TOML");
        prop_assert_eq!(&back, &config);
        prop_assert_eq!(format!("{back:?}"), format!("{config:?}"));
        prop_assert_eq!(toml::to_string(&back).expect("write again"), text);
    }
}
