//! End-to-end tests of the `reservoir` binary: generate → fit → predict, determinism, usage
//! errors, and a failed fit leaving an existing model alone.

use crate::common;

use std::fs;

use common::*;

#[test]
fn fit_then_predict_reproduces_the_test_scores() {
    let fx = Fixture::new();
    let tested_model = fx.p("tested.bin");
    let report = fx.fit_json(&["--test", &fx.p("test.csv"), "--model", &tested_model]);
    for field in [
        "train_nrmse",
        "test_nrmse",
        "test_rmse",
        "test_r2",
        "n_train",
        "n_fit",
        "n_test",
        "fit_seconds",
        "size",
        "washout",
        "inputs",
        "targets",
        "model",
        "train",
        "test",
    ] {
        assert!(report.get(field).is_some(), "missing `{field}` in {report}");
    }
    assert_eq!(report["n_train"], TRAIN_ROWS);
    assert_eq!(report["n_fit"], TRAIN_ROWS - 100);
    assert_eq!(report["n_test"], TEST_ROWS);
    assert_eq!(report["size"], 200);
    assert_eq!(report["inputs"], serde_json::json!(["u"]));
    assert_eq!(report["targets"], serde_json::json!(["y"]));
    assert_eq!(report["model"], tested_model.as_str());
    let test_nrmse = report["test_nrmse"]
        .as_f64()
        .expect("test_nrmse is a number");
    let test_rmse = report["test_rmse"].as_f64().expect("test_rmse is a number");
    assert!(test_nrmse < 0.5, "test NRMSE {test_nrmse}");
    assert!(
        report["test_r2"].as_f64().is_some_and(|r2| r2 > 0.75),
        "{report}"
    );
    assert!(report["train_nrmse"]
        .as_f64()
        .is_some_and(|v| v > 0.0 && v < 0.5));
    assert!(report["fit_seconds"].as_f64().is_some_and(|s| s > 0.0));

    // Without a test file the test fields are null and the state is the one after training.
    let model = fx.p("trained.bin");
    let report = fx.fit_json(&["--model", &model]);
    for field in ["test_nrmse", "test_rmse", "test_r2", "n_test", "test"] {
        assert!(report[field].is_null(), "`{field}` not null in {report}");
    }

    let test_text = fs::read_to_string(fx.path("test.csv")).expect("test.csv");
    let y: Vec<f64> = test_text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).and_then(|v| v.parse().ok()).expect("y"))
        .collect();

    // Continuing from the end of training reproduces the fit's test predictions.
    let out = succeeds(&["predict", "--model", &model, "--input", &fx.p("test.csv")]);
    let (header, continued) = column(&out.stdout);
    assert_eq!(header, "y");
    assert_eq!(continued.len(), TEST_ROWS);
    assert!((rmse(&continued, &y) - test_rmse).abs() < 1e-9);

    // --output writes the same CSV as standard output.
    let written = fx.p("pred.csv");
    succeeds(&[
        "predict",
        "--model",
        &model,
        "--input",
        &fx.p("test.csv"),
        "--output",
        &written,
    ]);
    assert_eq!(fs::read_to_string(&written).expect("pred.csv"), out.stdout);

    // --reset starts from zero: same shape, different (transient) predictions.
    let reset = fx.p("reset.csv");
    succeeds(&[
        "predict",
        "--model",
        &model,
        "--input",
        &fx.p("test.csv"),
        "--output",
        &reset,
        "--reset",
    ]);
    let (header, from_zero) = column(&fs::read_to_string(&reset).expect("reset.csv"));
    assert_eq!(header, "y");
    assert_eq!(from_zero.len(), TEST_ROWS);
    assert_ne!(from_zero, continued);

    // The model fitted with --test continues after the test rows: also runs, differently.
    let out = succeeds(&[
        "predict",
        "--model",
        &tested_model,
        "--input",
        &fx.p("test.csv"),
    ]);
    let (_, after_test) = column(&out.stdout);
    assert_eq!(after_test.len(), TEST_ROWS);
    assert_ne!(after_test, continued);
}

#[test]
fn fit_prints_an_aligned_table_by_default() {
    let fx = Fixture::new();
    let out = succeeds(&fx.fit_args(&fx.p("config.toml"), &["--test", &fx.p("test.csv")]));
    for key in [
        "train NRMSE",
        "test NRMSE",
        "test RMSE",
        "test R²",
        "fit time",
    ] {
        assert!(out.stdout.contains(key), "`{key}` missing:\n{}", out.stdout);
    }
}

#[test]
fn the_same_fit_gives_bit_identical_model_files() {
    let fx = Fixture::new();
    let a = fx.model("a.bin");
    let b = fx.model("b.bin");
    let (a, b) = (fs::read(a).expect("a.bin"), fs::read(b).expect("b.bin"));
    assert!(!a.is_empty());
    assert!(a == b, "two fits of the same config and data differ");
}

#[test]
fn generate_writes_each_task_with_its_columns() {
    let fx = Fixture::new();
    for (task, header) in [
        ("narma10", "u,y"),
        ("mackey-glass", "x,x_next"),
        ("lorenz", "x,y,z,x_next,y_next,z_next"),
    ] {
        let path = fx.p(&format!("{task}.csv"));
        succeeds(&[
            "generate", task, "--length", "50", "--seed", "3", "--output", &path,
        ]);
        let text = fs::read_to_string(&path).expect("task CSV");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], header, "{task}");
        assert_eq!(lines.len(), 51, "{task}");
        let width = header.split(',').count();
        for line in &lines[1..] {
            let cells: Vec<f64> = line
                .split(',')
                .map(|c| c.parse().expect("number"))
                .collect();
            assert_eq!(cells.len(), width);
            assert!(cells.iter().all(|v| v.is_finite()));
        }
        // One-step targets: the target of row t is the input of row t + 1.
        let first: Vec<&str> = lines[1].split(',').collect();
        let second: Vec<&str> = lines[2].split(',').collect();
        if task != "narma10" {
            assert_eq!(first[width / 2..], second[..width / 2], "{task}");
        }
        let again = fx.p(&format!("{task}-again.csv"));
        succeeds(&[
            "generate", task, "--length", "50", "--seed", "3", "--output", &again,
        ]);
        assert_eq!(
            fs::read(&path).ok(),
            fs::read(&again).ok(),
            "{task} is not deterministic"
        );
    }
}

#[test]
fn usage_errors_keep_clap_exit_code_2() {
    let out = reservoir(&["generate", "sine", "--length", "10", "--output", "x.csv"]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("sine") && !out.stderr.contains("panicked"));
}

#[test]
fn failed_fit_leaves_an_existing_model_untouched() {
    let fx = Fixture::new();
    let model = fx.model("keep.bin");
    let before = fs::read(&model).expect("model");
    let bad = fx.write("bad.toml", "[reservoir]\nsize = 200\nleak_rate = 0.0\n");
    fails_with(
        &fx.fit_args(&bad, &["--model", &model]),
        &["reservoir.leak_rate"],
    );
    let long = fx.write(
        "long.toml",
        "[reservoir]\nsize = 30\n[readout]\nwashout = 1999\n",
    );
    fails_with(
        &fx.fit_args(&long, &["--model", &model]),
        &["readout.washout"],
    );
    let one = fx.write("one.csv", "u,y\n0.1,0.2\n");
    let args = fx.fit_args(&fx.p("config.toml"), &["--model", &model, "--test", &one]);
    fails_with(&args, &["one.csv"]);
    assert!(
        fs::read(&model).expect("model") == before,
        "the model file changed"
    );
    let stray: Vec<_> = fs::read_dir(fx.dir.path())
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
}
