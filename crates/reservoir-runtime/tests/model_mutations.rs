//! A model file whose payload was changed and whose checksum was then fixed (so every check of
//! the header passes) is refused with an error or loads as a consistent model: it never
//! panics, whatever byte was changed.

use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::forecast::Continuation;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::readout::LinearReadout;
use reservoir_core::{ReservoirParams, ReservoirWeights};
use reservoir_runtime::model::Classes;
use reservoir_runtime::model::{Model, SequenceClassifier};

/// Bytes 8..24 of the header: version, payload length, CRC-32; the payload follows.
const HEADER: usize = 24;

fn series_model() -> Model {
    let config = ReservoirParams::new()
        .size(12)
        .input_size(2)
        .connection_prob(0.3)
        .seed(4)
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let readout = LinearReadout::new(Array2::from_elem((12, 1), 0.5), ndarray::arr1(&[0.1]))
        .expect("readout");
    Model {
        architecture: Architecture::new(ReservoirKind::EchoState(config)),
        weights: ArchitectureWeights::EchoState(weights),
        readout,
        state: ndarray::Array1::zeros(12),
        continuation: Continuation::zero(2, 1),
        input_columns: vec!["a".into(), "b".into()],
        target_columns: vec!["y".into()],
    }
}

fn classifier() -> SequenceClassifier {
    let Model {
        architecture,
        weights,
        ..
    } = series_model();
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::MeanLast])
        .check()
        .expect("features");
    let readout = LinearReadout::new(Array2::from_elem((24, 3), 0.5), ndarray::arr1(&[0.0; 3]))
        .expect("readout");
    SequenceClassifier {
        architecture,
        weights,
        features,
        readout,
        classes: Classes::from_names(vec!["x".into(), "y".into(), "z".into()]).expect("classes"),
        input_columns: vec!["a".into(), "b".into()],
        label_dtype: Some("<U1".into()),
    }
}

/// Mutates random payload bytes of the file at `path` (saved by `save`), fixes the checksum,
/// and calls `load` on each mutant: it must return, never panic. Returns how many loaded.
fn mutate_and_load(
    save: impl Fn(&std::path::Path),
    load: impl Fn(&std::path::Path) -> bool,
) -> usize {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("model.bin");
    save(&path);
    let original = std::fs::read(&path).expect("read");
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut loaded = 0;
    for trial in 0..1500 {
        let mut bytes = original.clone();
        for _ in 0..rng.random_range(1..=3) {
            let at = rng.random_range(HEADER..bytes.len());
            bytes[at] = rng.random();
        }
        let crc = crc32fast::hash(&bytes[HEADER..]).to_le_bytes();
        bytes[20..24].copy_from_slice(&crc);
        let mutant = dir.path().join("mutant.bin");
        std::fs::write(&mutant, &bytes).expect("write");
        match catch_unwind(AssertUnwindSafe(|| load(&mutant))) {
            Ok(true) => loaded += 1,
            Ok(false) => {}
            Err(_) => panic!("mutation {trial} of the model made its loader panic"),
        }
    }
    loaded
}

#[test]
fn mutated_series_models_never_panic() {
    let model = series_model();
    mutate_and_load(|p| model.save(p).expect("save"), |p| Model::load(p).is_ok());
}

#[test]
fn mutated_sequence_classifiers_never_panic() {
    let model = classifier();
    mutate_and_load(
        |p| model.save(p).expect("save"),
        |p| SequenceClassifier::load(p).is_ok(),
    );
}
