//! Property tests of model files: a model of each kind, fitted with generated
//! hyper-parameters and seed, saved and loaded, is the same model, predicts the same numbers
//! bit for bit, and saves again to the same bytes.

use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::forecast::Continuation;
use std::path::Path;

use ndarray::{Array1, Array2, ArrayView2};
use proptest::prelude::*;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::fit::fit_ridge;
use reservoir_core::readout::LinearReadout;
use reservoir_core::reservoir::fit_features;
use reservoir_core::{
    cpu_reservoir, Activation, Precision, ReadoutParams, Reservoir, ReservoirConfig,
    ReservoirParams, ReservoirWeights,
};
use reservoir_runtime::config::SpikeClassificationParams;
use reservoir_runtime::jobs::sequences::fit_class_readout;
use reservoir_runtime::model::Classes;
use reservoir_runtime::model::{Model, SequenceClassifier, SpikeModel};

/// Generated reservoir hyper-parameters: size, inputs, spectral radius, density, leak rate,
/// input scaling, bias, activation, precision, seed.
fn reservoir_params() -> impl Strategy<Value = ReservoirParams> {
    (
        (4usize..24, 1usize..4, 0.1f64..1.5, 0.2f64..1.0),
        (0.05f64..=1.0, 0.1f64..2.0, 0.0f64..0.5),
        (any::<bool>(), any::<bool>(), any::<u64>()),
    )
        .prop_map(
            |((size, k, rho, p), (leak, scaling, bias), (linear, f64s, seed))| {
                ReservoirParams::new()
                    .size(size)
                    .input_size(k)
                    .spectral_radius(rho)
                    .connection_prob(p)
                    .input_connectivity(1.0)
                    .leak_rate(leak)
                    .input_scaling(scaling)
                    .bias_scaling(bias)
                    .activation(if linear {
                        Activation::Identity
                    } else {
                        Activation::Tanh
                    })
                    .precision(if f64s { Precision::F64 } else { Precision::F32 })
                    .seed(seed)
            },
        )
}

/// The config and its weights, or `None` when this tiny reservoir cannot be built (a very
/// sparse random W can be nilpotent).
fn built(params: ReservoirParams) -> Option<(ReservoirConfig, ReservoirWeights)> {
    let config = params.check().ok()?;
    let (weights, _) = ReservoirWeights::generate(&config).ok()?;
    Some((config, weights))
}

/// A T × K input whose values follow `phase`.
fn signal(t: usize, k: usize, phase: f64) -> Array2<f64> {
    Array2::from_shape_fn((t, k), |(i, j)| {
        ((i as f64 + phase) * 0.37 + j as f64).sin()
    })
}

fn reservoir(config: &ReservoirConfig, weights: &ReservoirWeights) -> Box<dyn Reservoir> {
    cpu_reservoir(config, weights.clone(), reservoir_core::Par::all()).expect("reservoir")
}

/// Saves with `save`, loads with `load`, and saves the loaded model again: the loaded model
/// and the bytes of both saves.
fn round_trip<M>(
    dir: &Path,
    model: &M,
    save: fn(&M, &Path) -> reservoir_runtime::Result<()>,
    load: fn(&Path) -> reservoir_runtime::Result<M>,
) -> (M, Vec<u8>, Vec<u8>) {
    let first = dir.join("first.bin");
    save(model, &first).expect("save");
    let loaded = load(&first).expect("load");
    let second = dir.join("second.bin");
    save(&loaded, &second).expect("save again");
    let bytes = |p: &Path| std::fs::read(p).expect("read");
    (loaded, bytes(&first), bytes(&second))
}

/// The predictions of a series model over `inputs`, from its saved state, as bits.
fn predicted_bits(model: &Model, inputs: ArrayView2<'_, f64>) -> Vec<u64> {
    let mut r = model
        .architecture
        .cpu(&model.weights, reservoir_core::Par::all())
        .expect("reservoir");
    r.set_state(model.state.view()).expect("state");
    let states = r.run(inputs).expect("run");
    let predictions = model.readout.predict(states.view()).expect("predict");
    predictions.iter().map(|v| v.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn series_models_round_trip_bit_for_bit(
        params in reservoir_params(),
        rows in 30usize..90,
        washout in 0usize..10,
        ridge in 1e-6f64..1.0,
        outputs in 1usize..3,
        phase in 0.0f64..10.0,
    ) {
        let Some((config, weights)) = built(params) else { return Ok(()) };
        let k = config.input_size();
        let mut r = reservoir(&config, &weights);
        let inputs = signal(rows, k, phase);
        let targets = signal(rows, outputs, phase + 1.0);
        let readout_config = ReadoutParams::new().ridge(ridge).washout(washout).check().expect("readout");
        // A fit can fail on a degenerate tiny reservoir; the round trip is what is tested.
        let Ok(fit) = fit_ridge(r.as_mut(), inputs.view(), targets.view(), &readout_config) else {
            return Ok(());
        };
        let model = Model {
            architecture: Architecture::new(ReservoirKind::EchoState(config)),
            weights: ArchitectureWeights::EchoState(weights),
            readout: fit.readout,
            state: r.state().expect("state"),
            continuation: Continuation::zero(k, outputs),
            input_columns: (0..k).map(|j| format!("u{j}")).collect(),
            target_columns: (0..outputs).map(|j| format!("y {j}")).collect(),
        };
        let dir = tempfile::tempdir().expect("dir");
        let (loaded, first, second) = round_trip(dir.path(), &model, Model::save, Model::load);
        prop_assert_eq!(&loaded, &model);
        prop_assert_eq!(first, second);
        let test = signal(12, k, phase + 3.0);
        prop_assert_eq!(predicted_bits(&loaded, test.view()), predicted_bits(&model, test.view()));
    }

    #[test]
    fn sequence_classifiers_round_trip_bit_for_bit(
        params in reservoir_params(),
        sequences in 4usize..10,
        classes in 2usize..4,
        summaries in prop::sample::subsequence(vec![Summary::Last, Summary::Mean, Summary::MeanLast, Summary::ModelSpace], 1..=4),
        last_k in 1usize..4,
        warmup in 0usize..3,
        bidirectional: bool,
        components in 0usize..3,
        ridge in 1e-6f64..1.0,
    ) {
        let Some((config, weights)) = built(params) else { return Ok(()) };
        let k = config.input_size();
        let unfitted = FeatureParams::new()
            .summaries(summaries)
            .last_k(last_k)
            .warmup(warmup)
            .bidirectional(bidirectional)
            .components(components)
            .check()
            .expect("features");
        let inputs: Vec<Array2<f64>> = (0..sequences).map(|i| signal(5 + i % 4, k, i as f64)).collect();
        let views: Vec<ArrayView2<f64>> = inputs.iter().map(|u| u.view()).collect();
        let labels: Vec<usize> = (0..sequences).map(|i| i % classes).collect();
        let mut r = reservoir(&config, &weights);
        let features = fit_features(r.as_mut(), &views, &unfitted).expect("projection");
        let x = r.sequence_features(&views, &features, &mut |_, _| {}).expect("features");
        let Ok(readout) = fit_class_readout(x.view(), &labels, classes, ridge) else {
            return Ok(());
        };
        let model = SequenceClassifier {
            architecture: Architecture::new(ReservoirKind::EchoState(config)),
            weights: ArchitectureWeights::EchoState(weights),
            features,
            readout,
            classes: Classes::from_names((0..classes).map(|c| format!("class {c}")).collect()).expect("classes"),
            input_columns: (0..k).map(|j| format!("u{j}")).collect(),
            label_dtype: Some("<i8".into()),
        };
        let dir = tempfile::tempdir().expect("dir");
        let (loaded, first, second) = round_trip(dir.path(), &model, SequenceClassifier::save, SequenceClassifier::load);
        prop_assert_eq!(&loaded, &model);
        prop_assert_eq!(first, second);
        let scores = |m: &SequenceClassifier| -> Vec<u64> {
            let mut r = m.architecture.cpu(&m.weights, reservoir_core::Par::all()).expect("reservoir");
            let x = r.sequence_features(&views, &m.features, &mut |_, _| {}).expect("features");
            let y = m.readout.predict(x.view()).expect("predict");
            y.iter().map(|v| v.to_bits()).collect()
        };
        prop_assert_eq!(scores(&loaded), scores(&model));
        let classify = |m: &SequenceClassifier| {
            let mut r = m.architecture.cpu(&m.weights, reservoir_core::Par::all()).expect("reservoir");
            m.classify(r.as_mut(), &views, &mut |_, _| {}).expect("classify")
        };
        prop_assert_eq!(classify(&loaded), classify(&model));
    }

    #[test]
    fn spike_models_round_trip(
        params in reservoir_params(),
        classes in 2usize..5,
        segments in 1usize..4,
        seed in 0u64..=i64::MAX as u64,
        scale in -2.0f64..2.0,
    ) {
        let Some((config, weights)) = built(params) else { return Ok(()) };
        let n = config.size();
        let task = SpikeClassificationParams {
            classes,
            channels: config.input_size(),
            segments,
            seed,
            ..SpikeClassificationParams::default()
        }
        .check()
        .expect("options");
        let readout = LinearReadout::new(
            Array2::from_shape_fn((segments * n, classes), |(i, c)| scale * ((i * 7 + c) as f64).cos()),
            Array1::from_elem(classes, scale / 3.0),
        ).expect("readout");
        let model = SpikeModel {
            config,
            weights,
            readout,
            state: Array1::from_shape_fn(n, |i| (i as f64 * scale).tanh()),
            task,
        };
        let dir = tempfile::tempdir().expect("dir");
        let (loaded, first, second) = round_trip(dir.path(), &model, SpikeModel::save, SpikeModel::load);
        prop_assert_eq!(&loaded, &model);
        prop_assert_eq!(first, second);
    }
}
