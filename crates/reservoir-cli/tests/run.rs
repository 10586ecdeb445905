//! `reservoir run`: the embedded default and every shipped task config reach the accuracy of
//! ReservoirPy's published figures, and the same configs refit on exported CSV data.

use crate::common;

use common::*;

#[test]
fn the_embedded_default_runs_and_matches_configs_default_toml() {
    let embedded = json(&["run"]);
    let file = json(&["run", &config("default.toml")]);
    assert_eq!(embedded["task"], "spike_classification");
    assert_eq!(embedded["esn_test_accuracy"], file["esn_test_accuracy"]);
    for key in [
        "esn_test_accuracy",
        "lif_test_accuracy",
        "detection_recall",
        "detection_precision",
    ] {
        assert!(number(&embedded, key) >= 0.95, "{key} in {embedded}");
    }
    assert_eq!(embedded["model"], "reservoir-model.bin");
    let saved = std::env::temp_dir().join("reservoir-model.bin");
    if let Err(e) = reservoir_runtime::model::SpikeModel::load(&saved) {
        panic!("the default run saves its classifier: {e}");
    }
    let table = succeeds(&["run", "--no-save"]).stdout;
    assert!(
        table.contains("esn test accuracy") && table.contains("total seconds"),
        "{table}"
    );
    assert!(!table.contains("model"), "--no-save saves nothing: {table}");
}

#[test]
fn shipped_configs_reach_reservoirpy_parity() {
    let narma = json(&["run", &config("narma10.toml")]);
    assert!(number(&narma, "test_nrmse") <= 0.25, "{narma}");
    let mg = json(&["run", &config("mackey_glass.toml")]);
    assert!(number(&mg, "test_nrmse") <= 1e-4, "{mg}");
    assert!(number(&mg, "closed_loop_nrmse84") < 0.05, "{mg}");
    let mc = json(&["run", &config("memory_capacity.toml")]);
    assert!(
        (40.0..=100.0).contains(&number(&mc, "memory_capacity")),
        "{mc}"
    );
}

#[test]
fn fit_on_generated_csv_reproduces_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (train, test) = (dir.path().join("train.csv"), dir.path().join("test.csv"));
    let (train, test) = (train.display().to_string(), test.display().to_string());
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
        &train,
        "--test-output",
        &test,
    ]);
    let fit = json(&[
        "fit",
        "--config",
        &config("narma10.toml"),
        "--train",
        &train,
        "--test",
        &test,
        "--inputs",
        "u",
        "--targets",
        "y",
    ]);
    let run = json(&["run", &config("narma10.toml")]);
    assert_eq!(fit["n_train"], 2000);
    assert_eq!(fit["n_test"], 1000);
    let (a, b) = (number(&fit, "test_nrmse"), number(&run, "test_nrmse"));
    assert!((a - b).abs() < 1e-9, "fit on CSV {a} vs run {b}");
}

#[test]
fn run_errors_name_the_file_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let no_task = dir.path().join("no_task.toml");
    std::fs::write(&no_task, "[reservoir]\nsize = 10\n").expect("write");
    fails_with(
        &["run", &no_task.display().to_string()],
        &["no_task.toml", "task"],
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[task]\nkind = \"narma10\"\ntrain = 10\ntest = 5\nseed = 1\n",
    )
    .expect("write");
    fails_with(
        &["run", &bad.display().to_string()],
        &["bad.toml", "readout.washout"],
    );
    let unknown = dir.path().join("unknown.toml");
    std::fs::write(&unknown, "[task]\nkind = \"narma20\"\n").expect("write");
    fails_with(
        &["run", &unknown.display().to_string()],
        &["unknown.toml", "line 2", "narma20"],
    );
    fails_with(&["run", "/no/such/config.toml"], &["/no/such/config.toml"]);
    fails_with(
        &[
            "generate",
            "narma10",
            "--length",
            "10",
            "--split",
            "10",
            "--output",
            "/tmp/x.csv",
            "--test-output",
            "/tmp/y.csv",
        ],
        &["--split"],
    );
}

#[test]
fn info_exits_zero_and_names_what_the_gpu_backend_needs() {
    let text = succeeds(&["info"]).stdout;
    for needle in ["CUDA driver", "cuBLAS", "devices", "GPU backend"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    let json = json(&["info"]);
    assert!(
        json["devices"].is_array() && json.get("problem").is_some(),
        "{json}"
    );
    let usable = gpu_reservoir::probe().usable();
    assert_eq!(json["problem"].is_null(), usable);
}

#[test]
fn device_cuda_without_a_gpu_is_a_clear_error_and_auto_falls_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(config("narma10.toml")).expect("config");
    let small = text.replace("size = 500\n", "size = 100\n");
    // The old spelling, `backend` in [reservoir], and the new one, a top-level `device`.
    let old_cuda = dir.path().join("old.toml");
    std::fs::write(
        &old_cuda,
        small.replace("[reservoir]\n", "[reservoir]\nbackend = \"cuda\"\n"),
    )
    .expect("write");
    let new_cuda = dir.path().join("new.toml");
    std::fs::write(&new_cuda, format!("device = \"cuda\"\n{small}")).expect("write");
    let f64_cuda = dir.path().join("f64.toml");
    std::fs::write(
        &f64_cuda,
        text.replace("[reservoir]\n", "[reservoir]\nprecision = \"f64\"\n"),
    )
    .expect("write");
    fails_with(
        &["run", &f64_cuda.display().to_string(), "--device", "cuda"],
        &["device cuda", "f64"],
    );
    let cuda_runs = [
        vec!["run".to_string(), old_cuda.display().to_string()],
        vec!["run".to_string(), new_cuda.display().to_string()],
        vec![
            "run".to_string(),
            config("narma10.toml"),
            "--device".to_string(),
            "cuda:0".to_string(),
        ],
    ];
    for args in &cuda_runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if gpu_reservoir::probe().usable() {
            assert_eq!(json(&args)["backend"], "esn: cuda");
        } else {
            fails_with(&args, &["device cuda", "no usable GPU"]);
        }
    }
    // `--device` overrides the config: a cuda config runs on the CPU when asked.
    let on_cpu = json(&["run", &new_cuda.display().to_string(), "--device", "cpu"]);
    assert_eq!(on_cpu["backend"], "esn: cpu");
    if !gpu_reservoir::probe().usable() {
        let out = succeeds(&["run", &config("narma10.toml")]);
        assert!(
            out.stderr.starts_with("note: running on the CPU"),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "the fallback is said once");
    }
}

#[test]
fn spike_classification_config_classifies_with_both_reservoirs_and_detects_templates() {
    let report = json(&["run", &config("spike_classification.toml")]);
    for key in ["esn_test_accuracy", "lif_test_accuracy"] {
        assert!(number(&report, key) >= 0.95, "{key} in {report}");
    }
    assert!(
        number(&report, "detection_recall") >= 0.95
            && number(&report, "detection_precision") >= 0.95,
        "{report}"
    );
    assert!(number(&report, "total_seconds") > 0.0);
}

#[test]
fn a_launched_run_on_the_cpu_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("model.bin");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reservoir"))
        .current_dir(dir.path())
        .args(["run", "--device", "cpu", "--model"])
        .arg(&model)
        .envs([
            ("WORLD_SIZE", "2"),
            ("RANK", "0"),
            ("LOCAL_RANK", "0"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29513"),
            ("TORCHELASTIC_RUN_ID", "test"),
        ])
        .output()
        .expect("the reservoir binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("runs on GPUs"), "{stderr}");
    assert!(!model.exists());
}
