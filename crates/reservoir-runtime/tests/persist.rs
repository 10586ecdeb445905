//! Model files: round trip, and clear errors for foreign, truncated and corrupted files.

use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::forecast::Continuation;
use std::fs;
use std::path::PathBuf;

use ndarray::Array2;
use reservoir_core::fit::fit_ridge;
use reservoir_core::{cpu_reservoir, ReadoutConfig, ReservoirParams, ReservoirWeights};
use reservoir_runtime::model::{Model, FORMAT_VERSION};
use reservoir_runtime::RuntimeError;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reservoir-persist-{name}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn trained_model() -> Model {
    let config = ReservoirParams::new().size(40).seed(11).check().unwrap();
    let (weights, _) = ReservoirWeights::generate(&config).unwrap();
    let mut r = cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all()).unwrap();
    let u = Array2::from_shape_fn((300, 1), |(t, _)| (t as f64 * 0.2).sin());
    let fit = fit_ridge(r.as_mut(), u.view(), u.view(), &ReadoutConfig::default()).unwrap();
    Model {
        architecture: Architecture::new(ReservoirKind::EchoState(config)),
        weights: ArchitectureWeights::EchoState(weights),
        readout: fit.readout,
        state: r.state().unwrap(),
        continuation: Continuation::zero(1, 1),
        input_columns: vec!["u".into()],
        target_columns: vec!["y".into()],
    }
}

fn format_message(path: &std::path::Path) -> String {
    match Model::load(path) {
        Err(RuntimeError::ModelFormat { message, .. }) => message,
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn save_then_load_gives_the_same_model_and_no_temporary_files() {
    let dir = temp_dir("roundtrip");
    let path = dir.join("model.bin");
    let model = trained_model();
    model.save(&path).unwrap();
    assert_eq!(Model::load(&path).unwrap(), model);
    model.save(&path).unwrap();
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        1,
        "only the model file remains"
    );
}

#[test]
fn foreign_truncated_and_corrupted_files_are_clear_errors() {
    let dir = temp_dir("corrupt");
    let good = dir.join("good.bin");
    trained_model().save(&good).unwrap();
    let bytes = fs::read(&good).unwrap();

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "not a reservoir model"),
        (
            "foreign",
            b"PK\x03\x04 this is a zip file".to_vec(),
            "not a reservoir model",
        ),
        ("header", bytes[..15].to_vec(), "truncated header"),
        ("half", bytes[..bytes.len() / 2].to_vec(), "truncated"),
        (
            "trailing",
            [bytes.clone(), vec![0u8; 9]].concat(),
            "trailing bytes",
        ),
        (
            "flipped",
            {
                let mut b = bytes.clone();
                let i = b.len() - 100;
                b[i] ^= 0x40;
                b
            },
            "checksum",
        ),
        (
            "version",
            {
                let mut b = bytes.clone();
                b[8] = 99;
                b
            },
            "version 99",
        ),
    ];
    for (name, content, needle) in cases {
        let path = dir.join(format!("{name}.bin"));
        fs::write(&path, content).unwrap();
        let message = format_message(&path);
        assert!(message.contains(needle), "{name}: {message}");
    }
    let missing = dir.join("missing.bin");
    assert!(matches!(
        Model::load(&missing),
        Err(RuntimeError::Io { .. })
    ));
}

#[test]
fn a_valid_checksum_over_a_hostile_payload_is_still_an_error() {
    // A payload that claims a gigantic vector must fail without allocating it, in the
    // current format and in every older one (still read, each with its own layout).
    let dir = temp_dir("hostile");
    let mut payload = vec![0xFFu8; 64];
    payload[0] = 0x28; // small config fields, then garbage lengths
    for version in 1..=FORMAT_VERSION {
        let mut bytes = b"RSVMODEL".to_vec();
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        let path = dir.join(format!("hostile-v{version}.bin"));
        fs::write(&path, bytes).unwrap();
        let message = format_message(&path);
        assert!(message.contains("decode"), "version {version}: {message}");
    }
}

#[test]
fn a_failed_save_leaves_the_existing_file_untouched() {
    let dir = temp_dir("atomic");
    let path = dir.join("model.bin");
    let model = trained_model();
    model.save(&path).unwrap();
    let before = fs::read(&path).unwrap();
    let mut broken = model.clone();
    broken.target_columns.push("extra".into()); // inconsistent: refused before writing
    assert!(broken.save(&path).is_err());
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(model.save(&dir.join("no-such-dir").join("m.bin")).is_err());
}

#[test]
fn a_models_bytes_are_its_files_and_load_back_with_the_same_checks() {
    let dir = temp_dir("bytes");
    let path = dir.join("model.bin");
    let model = trained_model();
    model.save(&path).unwrap();
    let bytes = model.to_bytes().unwrap();
    assert_eq!(bytes, fs::read(&path).unwrap());
    let origin = std::path::Path::new("(pickled)");
    assert_eq!(Model::from_bytes(&bytes, origin).unwrap(), model);
    for (bad, needle) in [
        (bytes[..10].to_vec(), "truncated header"),
        (bytes[..bytes.len() - 1].to_vec(), "truncated"),
        ([bytes.as_slice(), &[0]].concat(), "trailing bytes"),
        (b"RSVSEQCL".to_vec(), "sequence-classifier"),
        (Vec::new(), "bad magic"),
    ] {
        match Model::from_bytes(&bad, origin) {
            Err(RuntimeError::ModelFormat { path, message }) => {
                assert_eq!(path, origin);
                assert!(message.contains(needle), "{needle}: {message}");
            }
            other => panic!("expected a format error, got {other:?}"),
        }
    }
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(Model::from_bytes(&flipped, origin)
        .unwrap_err()
        .to_string()
        .contains("checksum"));
}
