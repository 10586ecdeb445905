//! What `fit` and `run` leave behind: `--plot` PNGs of the stated size (every plot kind), and
//! `run --model` files that reload and reproduce the run.

use crate::common;

use std::path::Path;

use common::*;
use reservoir_runtime::data::tasks::spikes::generate;
use reservoir_runtime::model::Model;
use reservoir_runtime::model::SpikeModel;

/// The size every plot has (see `reservoir run --help`).
const PLOT_SIZE: (u32, u32) = (1200, 600);

/// Width and height from a PNG's IHDR chunk, after checking the signature and chunk header.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).expect("the plot file exists");
    assert!(
        bytes.len() > 33,
        "{} is too short for a PNG",
        path.display()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[8..12], &13u32.to_be_bytes(), "IHDR length");
    assert_eq!(&bytes[12..16], b"IHDR", "first chunk is IHDR");
    let be =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (be(16), be(20))
}

/// The names of the files in `dir` (to check that no temporary file is left).
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn fit_plot_is_a_png_of_the_stated_size() {
    let fx = Fixture::new();
    let plot = fx.p("fit.png");
    let report = fx.fit_json(&["--test", &fx.p("test.csv"), "--plot", &plot]);
    assert_eq!(report["plot"], plot.as_str());
    assert_eq!(png_size(Path::new(&plot)), PLOT_SIZE);
    // --plot needs the test rows: a usage error without --test.
    let out = reservoir(&fx.fit_args(&fx.p("config.toml"), &["--plot", &fx.p("x.png")]));
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--test"), "{}", out.stderr);
    assert!(!fx.path("x.png").exists());
}

#[test]
fn run_plots_series_tasks_and_the_spike_raster() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let narma = json(&["run", "--plot", &path("narma10.png")]);
    assert_eq!(narma["plot"], path("narma10.png").as_str());
    json(&[
        "run",
        &config("mackey_glass.toml"),
        "--plot",
        &path("mg.png"),
    ]);
    json(&[
        "run",
        &config("spike_classification.toml"),
        "--plot",
        &path("raster.png"),
    ]);
    for name in ["narma10.png", "mg.png", "raster.png"] {
        assert_eq!(png_size(&dir.path().join(name)), PLOT_SIZE, "{name}");
    }
    assert_eq!(
        files_in(dir.path()),
        ["mg.png", "narma10.png", "raster.png"]
    );
    // A missing folder is refused before any work; memory capacity has nothing to plot.
    fails_with(
        &["run", "--plot", "/no/such/dir/p.png"],
        &["--plot", "/no/such/dir"],
    );
    fails_with(
        &[
            "run",
            &config("memory_capacity.toml"),
            "--plot",
            &path("mc.png"),
        ],
        &["--plot", "memory_capacity"],
    );
}

#[test]
fn run_model_of_narma10_equals_the_fit_on_exported_csv() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let report = json(&["run", &config("narma10.toml"), "--model", &path("run.bin")]);
    assert_eq!(report["model"], path("run.bin").as_str());
    succeeds(&[
        "generate",
        "narma10",
        "--length",
        "3000",
        "--seed",
        "1",
        "--split",
        "2000",
        "--output",
        &path("train.csv"),
        "--test-output",
        &path("test.csv"),
    ]);
    json(&[
        "fit",
        "--config",
        &config("narma10.toml"),
        "--train",
        &path("train.csv"),
        "--test",
        &path("test.csv"),
        "--inputs",
        "u",
        "--targets",
        "y",
        "--model",
        &path("fit.bin"),
    ]);
    let run = Model::load(Path::new(&path("run.bin"))).expect("run's model loads");
    let fit = Model::load(Path::new(&path("fit.bin"))).expect("fit's model loads");
    assert_eq!(run.input_columns, ["u"]);
    assert_eq!(run.target_columns, ["y"]);
    assert_eq!(
        run, fit,
        "run --model and fit --model on the same data differ"
    );
    // The saved model predicts on a file with its input column; a spike model is refused.
    let predictions = succeeds(&[
        "predict",
        "--model",
        &path("run.bin"),
        "--input",
        &path("test.csv"),
    ]);
    assert_eq!(predictions.stdout.lines().count(), 1 + 1000);
}

#[test]
fn run_model_of_the_spike_task_reloads_and_classifies_as_the_run_did() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model_path = dir.path().join("spike.bin");
    let report = json(&[
        "run",
        &config("spike_classification.toml"),
        "--model",
        &model_path.display().to_string(),
    ]);
    let model = SpikeModel::load(&model_path).expect("the spike model loads");
    assert_eq!(model.config.input_size(), model.task.channels);
    let data = generate(&model.task).expect("the task's data");
    let mut reservoir = reservoir_core::cpu_reservoir(
        &model.config,
        model.weights.clone(),
        reservoir_core::Par::all(),
    )
    .expect("a CPU reservoir");
    let patterns: Vec<_> = data.test.iter().map(|s| &s.pattern).collect();
    let classes = model
        .classify(reservoir.as_mut(), &patterns)
        .expect("classify");
    let right = classes
        .iter()
        .zip(&data.test)
        .filter(|(c, s)| **c == s.label)
        .count();
    let accuracy = right as f64 / data.test.len() as f64;
    let reported = report["esn_test_accuracy"].as_f64().expect("accuracy");
    if report["backend"]
        .as_str()
        .is_some_and(|b| b.starts_with("esn: cpu"))
    {
        assert_eq!(accuracy, reported, "reloaded model vs the run");
    }
    assert!(accuracy >= 0.95, "reloaded model accuracy {accuracy}");
    // It is not a series model: predict says what it is.
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "u\n0.1\n0.2\n").expect("write");
    predict_fails(
        &model_path.display().to_string(),
        &input.display().to_string(),
        &["spike.bin", "spike-classifier model"],
    );
    fails_with(
        &[
            "run",
            &config("memory_capacity.toml"),
            "--model",
            &dir.path().join("mc.bin").display().to_string(),
        ],
        &["--model", "memory_capacity"],
    );
}
