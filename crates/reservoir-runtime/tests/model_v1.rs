//! Model files of format version 1 (written before `device` left the config) still load,
//! predict what the old binary predicted, and are saved again as version 2.
//!
//! Fixtures (in `tests/fixtures/`): `series-v1.bin`, a series model from `reservoir fit`
//! (columns `u` -> `y`, 12 units, spectral radius 0.9, leak rate 0.5, seed 5); `test.csv`, its
//! test rows; `predicted-v1.csv`, the old binary's predictions on them from the saved state;
//! `spike-v1.bin`, a spike classifier (8 units, 3 channels, 2 classes, 2 segments).

use std::fs;
use std::path::{Path, PathBuf};

use ndarray::Array2;
use reservoir_core::cpu_reservoir;
use reservoir_runtime::data::tasks::spikes::generate;
use reservoir_runtime::model::{Model, SpikeModel, FORMAT_VERSION, MAGIC, SPIKE_MAGIC};

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
    assert_eq!(model.config.size(), 12);
    assert_eq!(model.config.input_size(), 1);
    assert_eq!(model.config.spectral_radius(), 0.9);
    assert_eq!(model.config.leak_rate(), 0.5);
    assert_eq!(model.config.seed(), 5);
    assert_eq!(model.input_columns, vec!["u".to_string()]);
    assert_eq!(model.target_columns, vec!["y".to_string()]);

    let u = column("test.csv", "u");
    let inputs = Array2::from_shape_vec((u.len(), 1), u).unwrap();
    let mut reservoir = cpu_reservoir(
        &model.config,
        model.weights.clone(),
        reservoir_core::Par::all(),
    )
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
fn saving_a_loaded_version_1_model_writes_version_2_that_loads_back_equal() {
    assert_eq!(FORMAT_VERSION, 2);
    let dir = temp_dir("resave");

    let series = Model::load(&fixture("series-v1.bin")).unwrap();
    let path = dir.join("series-v2.bin");
    series.save(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap()[..8], MAGIC);
    assert_eq!(version_of(&path), 2);
    assert_eq!(Model::load(&path).unwrap(), series);

    let spike = SpikeModel::load(&fixture("spike-v1.bin")).unwrap();
    let path = dir.join("spike-v2.bin");
    spike.save(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap()[..8], SPIKE_MAGIC);
    assert_eq!(version_of(&path), 2);
    assert_eq!(SpikeModel::load(&path).unwrap(), spike);
}
