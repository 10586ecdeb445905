//! Model files of older format versions still load: version 1 (written before `device` left
//! the config) predicts what the old binary predicted and is saved again in today's version;
//! a version 2 sequence classifier (before the labels' type) loads with none; version 2 and 3
//! sequence classifiers (before bidirectional, projected and model-space features) classify
//! as the old binaries did.
//!
//! Fixtures (in `tests/fixtures/`): `series-v1.bin`, a series model from `reservoir fit`
//! (columns `u` -> `y`, 12 units, spectral radius 0.9, leak rate 0.5, seed 5); `test.csv`, its
//! test rows; `predicted-v1.csv`, the old binary's predictions on them from the saved state;
//! `spike-v1.bin`, a spike classifier (8 units, 3 channels, 2 classes, 2 segments);
//! `sequence-v2.bin`, a sequence classifier from `reservoir fit --label-column` (columns `a`,
//! `b`, classes `down`, `up`, 20 units, seed 3); `sequences.csv`, its training sequences;
//! `classes-v2.csv`, the old binary's predictions on them; `sequence-v3.bin`, the same from a
//! version 3 binary (20 units, seed 4, summaries `mean_last` (last_k 3) and `last`, warm-up 1),
//! and `classes-v3.csv`, that binary's predictions; `series-v4.bin`, a version 4 series model
//! (a deep stack of 8 and 6 units with the input to the readout, fitted on `test.csv`, seed 6)
//! and `predicted-v4.csv`, that binary's predictions on `test.csv` from the saved state;
//! `sequence-v4.bin`, a version 4 classifier (20 units, seed 7, bidirectional `last` and
//! `mean` projected onto 4 components) and `classes-v4.csv`.

use std::fs;
use std::path::{Path, PathBuf};

use ndarray::Array2;
use reservoir_core::cpu_reservoir;
use reservoir_runtime::data::tasks::spikes::generate;
use reservoir_runtime::data::{read_sequences, SequenceColumns};
use reservoir_runtime::model::{
    Model, SequenceClassifier, SpikeModel, FORMAT_VERSION, MAGIC, SPIKE_MAGIC,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("reservoir-model-v1-{name}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The column `name` of a CSV fixture with a header line.
fn column(file: &str, name: &str) -> Vec<f64> {
    let text = fs::read_to_string(fixture(file)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let index = header.iter().position(|h| *h == name).unwrap();
    lines
        .filter(|line| !line.is_empty())
        .map(|line| line.split(',').nth(index).unwrap().parse::<f64>().unwrap())
        .collect()
}

/// The format version in a model file's header (bytes 8..12, little-endian).
fn version_of(path: &Path) -> u32 {
    let bytes = fs::read(path).unwrap();
    u32::from_le_bytes(bytes[8..12].try_into().unwrap())
}

#[test]
fn a_version_1_series_model_predicts_bit_for_bit_what_the_old_binary_did() {
    let path = fixture("series-v1.bin");
    assert_eq!(version_of(&path), 1);
    let model = Model::load(&path).unwrap();
    let config = model.architecture.echo_state().unwrap();
    assert_eq!(config.size(), 12);
    assert_eq!(config.input_size(), 1);
    assert_eq!(config.spectral_radius(), 0.9);
    assert_eq!(config.leak_rate(), 0.5);
    assert_eq!(config.seed(), 5);
    assert_eq!(model.input_columns, vec!["u".to_string()]);
    assert_eq!(model.target_columns, vec!["y".to_string()]);

    let u = column("test.csv", "u");
    let inputs = Array2::from_shape_vec((u.len(), 1), u).unwrap();
    let mut reservoir = model
        .architecture
        .cpu(&model.weights, reservoir_core::Par::all())
        .unwrap();
    reservoir.set_state(model.state.view()).unwrap();
    let states = reservoir.run(inputs.view()).unwrap();
    let predictions = model.readout.predict(states.view()).unwrap();

    let expected = column("predicted-v1.csv", "y");
    assert_eq!(expected.len(), 50);
    assert_eq!(predictions.dim(), (expected.len(), 1));
    for (row, (&got, &want)) in predictions.column(0).iter().zip(&expected).enumerate() {
        assert_eq!(got.to_bits(), want.to_bits(), "row {row}: {got} vs {want}");
    }
}

#[test]
fn a_version_4_series_model_predicts_bit_for_bit_what_the_old_binary_did() {
    let path = fixture("series-v4.bin");
    assert_eq!(version_of(&path), 4);
    let model = Model::load(&path).unwrap();
    assert_eq!(model.architecture.reservoir().name(), "deep_echo_state");
    assert!(model.architecture.input_to_readout());
    assert!(!model.architecture.links_outputs());
    // Its last output is the readout's at the saved state.
    let at_state = model
        .readout
        .predict(model.state.view().insert_axis(ndarray::Axis(0)))
        .unwrap();
    assert_eq!(model.continuation.last_output, at_state.row(0));

    let u = column("test.csv", "u");
    let inputs = Array2::from_shape_vec((u.len(), 1), u).unwrap();
    let predictions = reservoir_runtime::jobs::predict::predict_one_series(
        &model,
        inputs.view(),
        false,
        &mut reservoir_runtime::Dispatch::new(reservoir_runtime::Device::Cpu),
        &mut |_, _| {},
    )
    .unwrap();
    let expected = column("predicted-v4.csv", "y");
    assert_eq!(predictions.dim(), (expected.len(), 1));
    for (row, (&got, &want)) in predictions.column(0).iter().zip(&expected).enumerate() {
        assert_eq!(got.to_bits(), want.to_bits(), "row {row}: {got} vs {want}");
    }
    let dir = temp_dir("series-v4");
    let again = dir.join("series.bin");
    model.save(&again).unwrap();
    assert_eq!(version_of(&again), FORMAT_VERSION);
    assert_eq!(Model::load(&again).unwrap(), model);
}

#[test]
fn a_version_4_sequence_classifier_classifies_as_the_old_binary_did() {
    let model = classifies_as_the_old_binary("sequence-v4.bin", "classes-v4.csv", 4);
    assert!(model.features.bidirectional());
    assert_eq!(model.features.components(), 4);
}

#[test]
fn a_version_1_spike_model_loads_with_its_sizes() {
    let path = fixture("spike-v1.bin");
    assert_eq!(version_of(&path), 1);
    let model = SpikeModel::load(&path).unwrap();
    assert_eq!(model.config.size(), 8);
    assert_eq!(model.config.input_size(), 3);
    assert_eq!(model.config.seed(), 3);
    assert_eq!(model.task.channels, 3);
    assert_eq!(model.task.classes, 2);
    assert_eq!(model.task.segments, 2);
    assert_eq!(model.task.seed, 2);
    assert_eq!(model.readout.n_features(), 2 * 8);
    assert_eq!(model.readout.n_outputs(), 2);
    assert_eq!(model.state.len(), 8);
    // It classifies its task's patterns.
    let data = generate(&model.task).unwrap();
    let mut reservoir = cpu_reservoir(
        &model.config,
        model.weights.clone(),
        reservoir_core::Par::all(),
    )
    .unwrap();
    let patterns: Vec<_> = data.test.iter().map(|s| &s.pattern).collect();
    let classes = model.classify(reservoir.as_mut(), &patterns).unwrap();
    assert_eq!(classes.len(), 4);
    assert!(classes.iter().all(|&c| c < 2), "{classes:?}");
}

#[test]
fn saving_a_loaded_version_1_model_writes_todays_version_that_loads_back_equal() {
    assert_eq!(FORMAT_VERSION, 5);
    let dir = temp_dir("resave");

    let series = Model::load(&fixture("series-v1.bin")).unwrap();
    let path = dir.join("series.bin");
    series.save(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap()[..8], MAGIC);
    assert_eq!(version_of(&path), FORMAT_VERSION);
    assert_eq!(Model::load(&path).unwrap(), series);

    let spike = SpikeModel::load(&fixture("spike-v1.bin")).unwrap();
    let path = dir.join("spike.bin");
    spike.save(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap()[..8], SPIKE_MAGIC);
    assert_eq!(version_of(&path), FORMAT_VERSION);
    assert_eq!(SpikeModel::load(&path).unwrap(), spike);
}

#[test]
fn a_version_2_sequence_classifier_classifies_as_the_old_binary_did() {
    let model = classifies_as_the_old_binary("sequence-v2.bin", "classes-v2.csv", 2);
    assert_eq!(model.label_dtype, None);
}

#[test]
fn a_version_3_sequence_classifier_classifies_as_the_old_binary_did() {
    let model = classifies_as_the_old_binary("sequence-v3.bin", "classes-v3.csv", 3);
    assert_eq!(model.features.last_k(), 3);
    assert_eq!(model.features.warmup(), 1);
    assert!(!model.features.bidirectional() && model.features.components() == 0);
}

/// Loads the sequence classifier `file` of format `version`, checks that it classifies the
/// fixture's sequences as `classes` (the old binary's output) says, and that it saves again
/// in today's version.
fn classifies_as_the_old_binary(file: &str, classes: &str, version: u32) -> SequenceClassifier {
    let path = fixture(file);
    assert_eq!(version_of(&path), version);
    let model = SequenceClassifier::load(&path).unwrap();
    assert_eq!(model.classes.names(), ["down", "up"]);
    assert_eq!(model.input_columns, ["a", "b"]);
    let inputs = ["a".to_string(), "b".to_string()];
    let file = read_sequences(
        "test file",
        &fixture("sequences.csv"),
        &SequenceColumns {
            inputs: &inputs,
            sequence: Some("sequence"),
            time: Some("step"),
            ..SequenceColumns::default()
        },
    )
    .unwrap();
    let mut reservoir = model
        .architecture
        .cpu(&model.weights, reservoir_core::Par::all())
        .unwrap();
    let predicted = model
        .classify(reservoir.as_mut(), &file.input_views(), &mut |_, _| {})
        .unwrap();
    let text = fs::read_to_string(fixture(classes)).unwrap();
    let expected: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    let got: Vec<&str> = predicted
        .iter()
        .map(|&c| model.classes.names()[c].as_str())
        .collect();
    assert_eq!(got, expected);

    // Saved again, it is today's version and loads back equal.
    let dir = temp_dir(&format!("sequence-v{version}"));
    let again = dir.join("sequence.bin");
    model.save(&again).unwrap();
    assert_eq!(version_of(&again), FORMAT_VERSION);
    assert_eq!(SequenceClassifier::load(&again).unwrap(), model);
    model
}
