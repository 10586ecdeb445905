//! The checks the fuzz targets run on every input, one `check` per target: the CSV readers,
//! the config parser, the model loaders and the NumPy readers. The stable test
//! `crates/reservoir-runtime/tests/fuzz_corpus.rs` includes this file and replays the seed corpus
//! and every regression through the same functions.
//!
//! A check returns for any bytes: a malformed file must be an error, never a panic, an abort
//! or an allocation out of proportion to the file. What is read must also be what the reader
//! promises (shapes that agree, finite numbers), and a model that loads must save again to a
//! file that loads to the same bytes. Each `check` returns whether some reader accepted the
//! input (the replay test asserts it for the corpus files named `valid-*`).

use std::path::PathBuf;

/// Writes `bytes` as the file `name` in a folder of this thread's own (the same folder on
/// every call, so a fuzz run does not create one per input) and returns its path.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::tempdir().expect("a scratch folder");
    }
    DIR.with(|dir| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write a scratch file");
        path
    })
}

/// Every value is finite (what every reader promises of the numbers it returns).
fn all_finite<'a>(values: impl IntoIterator<Item = &'a f64>) -> bool {
    values.into_iter().all(|v| v.is_finite())
}

/// The CSV readers of the command line: wide files (`read_inputs_targets`, `read_inputs`)
/// and long-form sequence files (`read_sequences`), with column names taken from the
/// input's own first line so that well-formed inputs get past the header checks.
pub mod csv {
    use reservoir_runtime::data::{
        read_inputs, read_inputs_targets, read_sequences, SequenceColumns,
    };

    use super::{all_finite, scratch, sequences};

    /// Most names taken from the first line.
    const MAX_NAMES: usize = 8;

    /// Runs every CSV reader on `bytes`; true when one of them accepted the file.
    pub fn check(bytes: &[u8]) -> bool {
        let path = scratch("data.csv", bytes);
        let names = header_names(bytes);
        let mut accepted = false;

        let (inputs, targets) = names.split_at(names.len().div_ceil(2));
        if let Ok((x, y)) = read_inputs_targets("train file", &path, inputs, targets) {
            assert!(x.nrows() > 0, "no rows read without an error");
            assert_eq!(x.dim(), (y.nrows(), inputs.len()));
            assert_eq!(y.ncols(), targets.len());
            assert!(
                all_finite(&x) && all_finite(&y),
                "a non-finite value was read"
            );
            accepted = true;
        }
        if let Ok(x) = read_inputs("input file", &path, &names) {
            assert!(x.nrows() > 0, "no rows read without an error");
            assert_eq!(x.ncols(), names.len());
            assert!(all_finite(&x), "a non-finite value was read");
            accepted = true;
        }

        let none = SequenceColumns {
            inputs: &[],
            targets: None,
            label: None,
            sequence: None,
            time: None,
            lengths: None,
        };
        let mut layouts = vec![SequenceColumns {
            inputs: &names,
            ..none
        }];
        if let [sequence, rest @ ..] = names.as_slice() {
            layouts.push(SequenceColumns {
                inputs: rest,
                sequence: Some(sequence),
                ..none
            });
        }
        if let [sequence, time, input, middle @ .., label] = names.as_slice() {
            layouts.push(SequenceColumns {
                inputs: std::slice::from_ref(input),
                targets: Some(middle),
                label: Some(label),
                sequence: Some(sequence),
                time: Some(time),
                lengths: None,
            });
        }
        for columns in &layouts {
            if let Ok(file) = read_sequences("train file", &path, columns) {
                sequences::check_file(&file, columns);
                accepted = true;
            }
        }
        accepted
    }

    /// The trimmed, comma-separated names of the first line (at most [`MAX_NAMES`]).
    fn header_names(bytes: &[u8]) -> Vec<String> {
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(first);
        // The reader skips a byte-order mark.
        let line = text.trim_start_matches('\u{feff}').trim_end_matches('\r');
        if line.is_empty() {
            return Vec::new();
        }
        line.split(',')
            .take(MAX_NAMES)
            .map(|name| name.trim().to_string())
            .collect()
    }
}

/// What every sequence reader promises of a file it returns.
mod sequences {
    use reservoir_runtime::data::{SequenceColumns, SequenceFile};

    use super::all_finite;

    /// One id, one non-empty finite input matrix of the asked width, and the targets and
    /// labels asked for, per sequence.
    pub fn check_file(file: &SequenceFile, columns: &SequenceColumns<'_>) {
        let b = file.ids.len();
        assert!(b > 0, "no sequences read without an error");
        assert_eq!(file.inputs.len(), b);
        let k = file.input_names.len();
        for x in &file.inputs {
            assert!(x.nrows() > 0, "an empty sequence was read");
            assert_eq!(x.ncols(), k);
            assert!(all_finite(x), "a non-finite input was read");
        }
        assert_eq!(file.targets.is_some(), columns.targets.is_some());
        if let Some(targets) = &file.targets {
            assert_eq!(targets.len(), b);
            for (x, y) in file.inputs.iter().zip(targets) {
                assert_eq!(y.nrows(), x.nrows());
                assert_eq!(y.ncols(), file.target_names.len());
                assert!(all_finite(y), "a non-finite target was read");
            }
        }
        assert_eq!(file.labels.is_some(), columns.label.is_some());
        if let Some(labels) = &file.labels {
            assert_eq!(labels.len(), b);
        }
    }
}

/// The NumPy readers: the bytes as a `.npy` file (the inputs array) and as a `.npz` archive
/// read with the array names of the seed corpus (`x`, `y`, `label`, `len`).
pub mod npy {
    use reservoir_runtime::data::{read_sequences, SequenceColumns};

    use super::{scratch, sequences};

    /// Runs the `.npy` and `.npz` readers on `bytes`; true when one of them accepted them.
    pub fn check(bytes: &[u8]) -> bool {
        let mut accepted = false;
        let none = SequenceColumns {
            inputs: &[],
            targets: None,
            label: None,
            sequence: None,
            time: None,
            lengths: None,
        };
        let path = scratch("x.npy", bytes);
        if let Ok(file) = read_sequences("train file", &path, &none) {
            sequences::check_file(&file, &none);
            accepted = true;
        }

        let path = scratch("data.npz", bytes);
        let x = ["x".to_string()];
        let y = ["y".to_string()];
        let layouts = [
            SequenceColumns { inputs: &x, ..none },
            SequenceColumns {
                inputs: &x,
                label: Some("label"),
                lengths: Some("len"),
                ..none
            },
            SequenceColumns {
                inputs: &x,
                targets: Some(&y),
                label: Some("label"),
                lengths: Some("len"),
                ..none
            },
            SequenceColumns {
                inputs: &x,
                targets: Some(&y),
                ..none
            },
        ];
        for columns in &layouts {
            if let Ok(file) = read_sequences("train file", &path, columns) {
                sequences::check_file(&file, columns);
                accepted = true;
            }
        }
        accepted
    }
}

/// The config parser: TOML text parsed and checked as `reservoir run`, `fit` and `sweep` do;
/// a config that passes its checks must write itself as TOML and read back the same.
pub mod config {
    use reservoir_runtime::config::{ExperimentConfig, ExperimentParams};

    /// The bound the command line puts on a config file's size.
    const MAX_CONFIG_BYTES: usize = 1 << 20;

    /// Parses and checks `bytes` as a config file; true when it is a valid config.
    pub fn check(bytes: &[u8]) -> bool {
        if bytes.len() > MAX_CONFIG_BYTES {
            return false;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return false;
        };
        let Ok(params) = ExperimentParams::from_toml(text, "fuzz.toml") else {
            return false;
        };
        let Ok(config) = params.check() else {
            return false;
        };
        let written = toml::to_string(&config).expect("a valid config writes itself as TOML");
        let again = ExperimentConfig::from_toml(&written, "written.toml")
            .expect("the TOML a valid config writes reads back");
        assert_eq!(again, config, "the config changed through TOML:\n{written}");
        true
    }
}

/// The model loaders (series model, spike classifier, sequence classifier): the bytes as they
/// are and, so that mutated payloads get past the checksum, with the header's length and
/// CRC-32 made to match the payload.
pub mod model {
    use std::path::Path;

    use ndarray::Array2;
    use reservoir_core::{cpu_reservoir, Par, Reservoir};
    use reservoir_runtime::model::{Model, SequenceClassifier, SpikeModel};
    use reservoir_runtime::Result;

    use super::scratch;

    /// Magic, version, payload length, CRC-32.
    const HEADER_LEN: usize = 24;

    /// Longest sequence run through a loaded sequence classifier.
    const MAX_STEPS: usize = 64;

    /// Loads `bytes` with every loader, as they are and with the header fixed; true when one
    /// of them loaded a model.
    pub fn check(bytes: &[u8]) -> bool {
        let mut accepted = load_all(bytes);
        if let Some(fixed) = with_matching_header(bytes) {
            if fixed != bytes {
                accepted |= load_all(&fixed);
            }
        }
        accepted
    }

    /// `bytes` with the payload length and CRC-32 of the header set to match the payload.
    pub fn with_matching_header(bytes: &[u8]) -> Option<Vec<u8>> {
        let payload = bytes.get(HEADER_LEN..)?;
        let mut fixed = bytes.to_vec();
        fixed[12..20].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        fixed[20..24].copy_from_slice(&crc32(payload).to_le_bytes());
        Some(fixed)
    }

    /// CRC-32 (IEEE), as the model header holds it.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }

    fn load_all(bytes: &[u8]) -> bool {
        let path = scratch("model.bin", bytes);
        let mut accepted = false;
        if let Ok(model) = Model::load(&path) {
            resaves_the_same(&model, Model::save, Model::load);
            if let Ok(mut reservoir) = model.architecture.cpu(&model.weights, Par::Seq) {
                let _ = reservoir.set_state(model.state.view());
                let inputs = Array2::from_elem((3, model.architecture.input_size()), 0.5);
                if let Ok(states) = reservoir.run(inputs.view()) {
                    let _ = model.readout.predict(states.view());
                }
            }
            accepted = true;
        }
        if let Ok(model) = SpikeModel::load(&path) {
            resaves_the_same(&model, SpikeModel::save, SpikeModel::load);
            if let Some(mut reservoir) = reservoir_of(&model.config, &model.weights) {
                let inputs = Array2::from_elem((3, model.config.input_size()), 1.0);
                let _ = reservoir.run(inputs.view());
            }
            accepted = true;
        }
        if let Ok(model) = SequenceClassifier::load(&path) {
            resaves_the_same(&model, SequenceClassifier::save, SequenceClassifier::load);
            let steps = model.features.min_steps().max(1);
            if steps <= MAX_STEPS {
                if let Ok(mut reservoir) = model.architecture.cpu(&model.weights, Par::Seq) {
                    let inputs = Array2::from_elem((steps, model.architecture.input_size()), 0.25);
                    let _ = model.classify(reservoir.as_mut(), &[inputs.view()], &mut |_, _| {});
                }
            }
            accepted = true;
        }
        accepted
    }

    /// The CPU reservoir of a loaded model, when it can be built.
    fn reservoir_of(
        config: &reservoir_core::ReservoirConfig,
        weights: &reservoir_core::ReservoirWeights,
    ) -> Option<Box<dyn Reservoir>> {
        cpu_reservoir(config, weights.clone(), Par::Seq).ok()
    }

    /// A loaded model saves, the saved file loads, and saving that gives the same bytes
    /// (bytes, not `==`, so that a NaN compares equal to itself).
    fn resaves_the_same<M>(
        model: &M,
        save: fn(&M, &Path) -> Result<()>,
        load: fn(&Path) -> Result<M>,
    ) {
        let first = scratch("first.bin", b"");
        save(model, &first).expect("a loaded model saves");
        let again = load(&first).expect("a saved model loads");
        let second = scratch("second.bin", b"");
        save(&again, &second).expect("a reloaded model saves");
        let first = std::fs::read(&first).expect("read the first save");
        let second = std::fs::read(&second).expect("read the second save");
        assert!(first == second, "a model changed through save and load");
    }
}
