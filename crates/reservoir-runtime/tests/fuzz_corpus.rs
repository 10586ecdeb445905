//! Replays the fuzz targets' seed corpus (`fuzz/corpus/<target>/`) and every input a fuzz run
//! found a bug with (`fuzz/regressions/<target>/`) through the same checks the targets run
//! (`fuzz/src/lib.rs`), on the stable toolchain: no input may panic or take long, and every
//! corpus file named `valid-*` must be accepted by a reader.

#[allow(dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod checks;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest a check may take on one input (generous: a debug build on a loaded machine).
const TIME_LIMIT: Duration = Duration::from_secs(20);

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none when the folder does not exist).
fn files(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("list the folder").path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Runs `check` on every corpus and regression file of `target`; fails naming every file
/// that panicked, took too long, or (named `valid-*`) was refused.
fn replay(target: &str, check: fn(&[u8]) -> bool) {
    let corpus = files("corpus", target);
    assert!(
        corpus.len() >= 3,
        "the seed corpus of `{target}` has {} files",
        corpus.len()
    );
    let regressions = files("regressions", target);
    let mut failures = Vec::new();
    let mut valid = 0;
    for path in corpus.iter().chain(&regressions) {
        let bytes = std::fs::read(path).expect("read a corpus file");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let must_accept =
            name.as_deref().is_some_and(|n| n.starts_with("valid-")) && corpus.contains(path);
        let start = Instant::now();
        match catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
            Err(_) => failures.push(format!("{}: panicked", path.display())),
            Ok(false) if must_accept => {
                failures.push(format!("{}: a valid file was refused", path.display()))
            }
            Ok(_) => {}
        }
        let took = start.elapsed();
        if took > TIME_LIMIT {
            failures.push(format!("{}: took {took:?}", path.display()));
        }
        valid += usize::from(must_accept);
    }
    assert!(valid >= 2, "`{target}` has {valid} valid-* corpus files");
    assert!(
        failures.is_empty(),
        "{} of {} inputs of `{target}` failed:\n{}",
        failures.len(),
        corpus.len() + regressions.len(),
        failures.join("\n")
    );
}

#[test]
fn csv_corpus_and_regressions() {
    replay("csv", checks::csv::check);
}

#[test]
fn config_corpus_and_regressions() {
    replay("config", checks::config::check);
}

#[test]
fn model_corpus_and_regressions() {
    replay("model", checks::model::check);
}

#[test]
fn npy_corpus_and_regressions() {
    replay("npy", checks::npy::check);
}

/// The NumPy files that made the reader abort (allocating what a header declared) or hang
/// (parsing a deeply nested header) are refused with an error saying why.
#[test]
fn numpy_files_that_ask_for_too_much_are_errors() {
    use reservoir_runtime::data::{read_sequences, SequenceColumns};
    let x = ["x".to_string()];
    let columns = SequenceColumns {
        inputs: &x,
        targets: None,
        label: None,
        sequence: None,
        time: None,
        lengths: None,
    };
    let dir = fuzz_dir().join("regressions/npy");
    for (name, expected) in [
        (
            "shape-larger-than-file.npy",
            "array `x`: cannot read it: the header's shape (1099511627776, 2) has more values \
             than the file's 144 bytes can hold",
        ),
        (
            "sequences-without-channels.npy",
            "array `x`: shape (1000000000000, 1, 0) holds no input channels",
        ),
        (
            "header-length-4gib.npy",
            "array `x`: cannot read it: a header of 4294967295 bytes, longer than 13",
        ),
        (
            "header-nested-brackets.npy",
            "array `x`: cannot read it: a header with brackets nested more than 4 deep",
        ),
        (
            "archive-shape-larger-than-entry.npz",
            "array `x`: cannot read it: the header's shape (1099511627776, 2) has more values \
             than the file's 144 bytes can hold",
        ),
        (
            "archive-deflated-shape-larger-than-entry.npz",
            "array `x`: cannot read it: the header's shape (1099511627776, 2) has more values \
             than the file's 144 bytes can hold",
        ),
    ] {
        let path = dir.join(name);
        let started = Instant::now();
        match read_sequences("input file", &path, &columns) {
            Ok(_) => panic!("{name} was read"),
            Err(e) => assert!(e.to_string().contains(expected), "{name}: {e}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{name} took long"
        );
    }
}

/// The model files whose strings declared lengths of gigabytes (which the decoder allocated
/// before reading, aborting) are refused as undecodable, with their checksums fixed so that
/// the decoder is reached.
#[test]
fn model_files_declaring_huge_strings_are_errors() {
    use reservoir_runtime::model::{Model, SpikeModel};
    let dir = tempfile::tempdir().expect("dir");
    fn series(p: &Path) -> reservoir_runtime::Result<()> {
        Model::load(p).map(drop)
    }
    fn spike(p: &Path) -> reservoir_runtime::Result<()> {
        SpikeModel::load(p).map(drop)
    }
    type Load = fn(&Path) -> reservoir_runtime::Result<()>;
    let cases: [(&str, Load); 2] = [
        ("series-column-name-length-1tib.bin", series),
        ("spike-v1-options-length-2gib.bin", spike),
    ];
    for (name, load) in cases {
        let bytes = std::fs::read(fuzz_dir().join("regressions/model").join(name)).expect("read");
        let fixed = checks::model::with_matching_header(&bytes).expect("a header");
        let path = dir.path().join(name);
        std::fs::write(&path, fixed).expect("write");
        match load(&path) {
            Ok(()) => panic!("{name} loaded"),
            Err(e) => assert!(
                e.to_string().contains("cannot decode the model"),
                "{name}: {e}"
            ),
        }
    }
}
