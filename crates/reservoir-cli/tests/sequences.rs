//! Sequence datasets end to end: classification of the bundled Japanese Vowels (fit, sweep on
//! training folds, predict from the saved model, on CSV and NumPy files), regression over many
//! series, and the errors a malformed dataset gets.

use crate::common;

use std::path::PathBuf;

use common::{fails_with, json, number, succeeds, Fixture};

/// A file of the bundled Japanese Vowels data.
fn vowels(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/data/japanese_vowels")
        .join(name)
        .display()
        .to_string()
}

const CHANNELS: &str = "c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12";

const SEQUENCE_FLAGS: [&str; 6] = [
    "--sequence-column",
    "sequence",
    "--time-column",
    "step",
    "--label-column",
    "label",
];

/// The grid's best lane on the training folds (of examples/data/japanese_vowels/sweep.toml)
/// among a few neighbours, so the test runs in seconds.
const VOWELS_SWEEP: &str = "\
[reservoir]
size = 500
connection_prob = 0.1
seed = 1

[features]
summaries = [\"last\", \"mean\"]

[sweep]
spectral_radius = [0.5, 0.9]
leak_rate = [0.3]
input_scaling = [1.0]
ridge = [1e-4, 1e-2]
folds = 5
";

#[test]
fn japanese_vowels_reach_98_percent_with_hyper_parameters_chosen_on_training_folds() {
    let fx = Fixture::new();
    let config = fx.write("vowels.toml", VOWELS_SWEEP);
    let model = fx.p("vowels.bin");
    let (train, test) = (vowels("train.csv"), vowels("test.csv"));
    let mut args = vec![
        "sweep", &config, "--train", &train, "--test", &test, "--inputs", CHANNELS, "--model",
        &model, "--device", "cpu",
    ];
    args.extend(SEQUENCE_FLAGS);
    let report = json(&args);
    let (sweep, fit) = (&report["sweep"], &report["fit"]);
    assert_eq!(sweep["score"], "validation_accuracy");
    assert_eq!(sweep["n_train_sequences"], 270);
    assert_eq!(sweep["results"].as_array().map(Vec::len), Some(4));
    assert_eq!(fit["n_train_sequences"], 270);
    assert_eq!(fit["n_test_sequences"], 370);
    let classes: Vec<&str> = fit["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert_eq!(classes, ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    let accuracy = number(fit, "test_accuracy");
    assert!(accuracy >= 0.98, "test accuracy {accuracy}");
    assert!(number(fit, "balanced_accuracy") >= 0.98);
    let confusion = fit["confusion_matrix"].as_array().expect("matrix");
    let total: u64 = confusion
        .iter()
        .flat_map(|row| row.as_array().expect("row"))
        .filter_map(|v| v.as_u64())
        .sum();
    assert_eq!(total, 370);

    // The saved classifier predicts the test file as the fit scored it.
    let out = succeeds(&[
        "predict",
        "--model",
        &model,
        "--input",
        &test,
        "--sequence-column",
        "sequence",
        "--time-column",
        "step",
        "--device",
        "cpu",
    ]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "sequence,label");
    assert_eq!(lines.len(), 371);
    let labels = std::fs::read_to_string(&test).expect("test file");
    let truth: std::collections::BTreeMap<&str, &str> = labels
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cells = l.split(',');
            Some((cells.next()?, cells.nth(1)?))
        })
        .collect();
    let correct = lines[1..]
        .iter()
        .filter(|l| {
            let (id, label) = l.split_once(',').expect("two cells");
            truth.get(id) == Some(&label)
        })
        .count();
    assert_eq!(correct, (accuracy * 370.0).round() as usize);
}

#[test]
fn the_gpu_arithmetic_of_batches_leaves_a_cpu_fit_alone_and_f16_needs_tanh() {
    let fx = Fixture::new();
    let config = fx.write(
        "small.toml",
        "[reservoir]\nsize = 60\nseed = 5\n[readout]\nridge = 1e-3\n",
    );
    let (train, test) = (vowels("train.csv"), vowels("test.csv"));
    let fit = |extra: &[&str]| {
        let mut args = vec![
            "fit", "--config", &config, "--train", &train, "--test", &test, "--inputs", CHANNELS,
            "--device", "cpu",
        ];
        args.extend(SEQUENCE_FLAGS);
        args.extend(extra);
        json(&args)
    };
    let plain = fit(&[]);
    let f16 = fit(&["--gpu-matmul", "f16"]);
    for key in ["test_accuracy", "train_accuracy", "balanced_accuracy"] {
        assert_eq!(number(&plain, key), number(&f16, key), "{key}");
    }
    let linear = fx.write(
        "linear.toml",
        "gpu_matmul = \"tf32\"\n[reservoir]\nsize = 60\nactivation = \"identity\"\n",
    );
    let mut args = vec![
        "fit",
        "--config",
        &linear,
        "--train",
        &train,
        "--inputs",
        CHANNELS,
        "--gpu-matmul",
        "f16",
    ];
    args.extend(SEQUENCE_FLAGS);
    fails_with(&args, &["--gpu-matmul", "tanh", "f16"]);
}

#[test]
fn classification_fits_the_same_from_interleaved_rows_ordered_by_the_time_column() {
    let fx = Fixture::new();
    let config = fx.write(
        "last.toml",
        "[reservoir]\nsize = 100\nseed = 3\n[readout]\nridge = 1e-3\n",
    );
    let (train, test) = (vowels("train.csv"), vowels("test.csv"));
    let fit = |train: &str| {
        let mut args = vec![
            "fit", "--config", &config, "--train", train, "--test", &test, "--inputs", CHANNELS,
            "--device", "cpu",
        ];
        args.extend(SEQUENCE_FLAGS);
        json(&args)
    };
    // The same rows reversed: sequences interleave backwards, the time column restores them.
    let text = std::fs::read_to_string(&train).expect("train");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].reverse();
    let reversed = fx.write_rows("reversed.csv", lines[0], &lines[1..]);
    let (a, b) = (fit(&train), fit(&reversed));
    assert_eq!(a["test_accuracy"], b["test_accuracy"]);
    assert_eq!(a["confusion_matrix"], b["confusion_matrix"]);
    assert_eq!(a["task"], "sequence_classification");
}

#[test]
fn many_series_regress_each_from_zero_and_predict_per_row() {
    let fx = Fixture::new();
    // Series of a damped sine; the target is the next value. Ids interleave with no time column.
    let mut train = String::from("id,u,y\n");
    let mut test = String::from("id,u,y\n");
    for s in 0..12 {
        let rows: Vec<(f64, f64)> = (0..60)
            .map(|t| {
                let x = |t: f64| (0.3 * t + s as f64).sin() * (-0.01 * t).exp();
                (x(t as f64), x(t as f64 + 1.0))
            })
            .collect();
        let out = if s < 9 { &mut train } else { &mut test };
        for (u, y) in rows {
            out.push_str(&format!("s{s},{u},{y}\n"));
        }
    }
    let (train, test) = (
        fx.write("train_series.csv", &train),
        fx.write("test_series.csv", &test),
    );
    let config = fx.write(
        "series.toml",
        "[reservoir]\nsize = 100\nseed = 1\n[readout]\nridge = 1e-8\nwashout = 10\n",
    );
    let model = fx.p("series.bin");
    let report = json(&[
        "fit",
        "--config",
        &config,
        "--train",
        &train,
        "--test",
        &test,
        "--inputs",
        "u",
        "--targets",
        "y",
        "--sequence-column",
        "id",
        "--model",
        &model,
        "--device",
        "cpu",
    ]);
    assert_eq!(report["task"], "series_regression");
    assert_eq!(report["n_train_sequences"], 9);
    assert_eq!(report["n_fit"], 9 * 50);
    assert_eq!(report["n_test"], 3 * 50);
    assert!(number(&report, "test_nrmse") < 0.05, "{report}");

    let out = succeeds(&[
        "predict",
        "--model",
        &model,
        "--input",
        &test,
        "--sequence-column",
        "id",
        "--device",
        "cpu",
    ]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "sequence,y");
    assert_eq!(lines.len(), 1 + 3 * 60);
    assert!(lines[1].starts_with("s9,") && lines[180].starts_with("s11,"));
}

#[test]
fn malformed_sequence_datasets_get_one_line_naming_the_problem() {
    let fx = Fixture::new();
    let config = fx.write("c.toml", "[reservoir]\nsize = 20\n");
    let good = "seq,t,label,a\nx,0,p,1.0\nx,1,p,2.0\ny,0,q,1.5\ny,1,q,0.5\n";
    let train = fx.write("train.csv", good);
    let run = |test: &str, needles: &[&str]| {
        let test = fx.write("bad.csv", test);
        fails_with(
            &[
                "fit",
                "--config",
                &config,
                "--train",
                &train,
                "--test",
                &test,
                "--inputs",
                "a",
                "--sequence-column",
                "seq",
                "--time-column",
                "t",
                "--label-column",
                "label",
            ],
            needles,
        )
    };
    run("seq,t,label,a\nz,0,r,1.0\n", &["`z`", "`r`", "p, q"]);
    run(
        "seq,t,label,a\nz,0,p,1.0\nz,1,q,1.0\n",
        &["bad.csv", "line 3", "`z`"],
    );
    run(
        "seq,t,label,a\nz,0,p,1.0\nz,0,p,2.0\n",
        &["bad.csv", "line 3"],
    );
    run("seq,t,label,a\nz,0,p,inf\n", &["bad.csv", "line 2", "`a`"]);
    run("seq,t,label,a\nz,0,p\n", &["bad.csv", "line 2"]);
    let one_class = fx.write("one.csv", "seq,label,a\nx,p,1\ny,p,2\n");
    fails_with(
        &[
            "fit",
            "--config",
            &config,
            "--train",
            &one_class,
            "--inputs",
            "a",
            "--sequence-column",
            "seq",
            "--label-column",
            "label",
        ],
        &["at least two classes"],
    );
    fails_with(
        &[
            "fit", "--config", &config, "--train", &train, "--inputs", "a",
        ],
        &["--targets", "--label-column"],
    );
}

#[test]
fn a_sequence_too_short_for_the_features_is_named_once() {
    let fx = Fixture::new();
    let config = fx.write(
        "warmup.toml",
        "[reservoir]\nsize = 20\n[features]\nsummaries = [\"mean\"]\nwarmup = 8\n",
    );
    let train = vowels("train.csv");
    let mut args = vec![
        "fit", "--config", &config, "--train", &train, "--inputs", "c1",
    ];
    args.extend(["--sequence-column", "sequence", "--label-column", "label"]);
    let line = fails_with(
        &args,
        &["training sequence `train-0069` has 7 step(s)", "at least 9"],
    );
    assert_eq!(line.matches("invalid input").count(), 1, "{line}");
}

/// `reservoir fit` under a launcher's environment, with a one-line error expected.
fn launched_fit_fails(vars: &[(&str, &str)], extra: &[&str], needle: &str) {
    let (train, config) = (vowels("train.csv"), vowels("sweep.toml"));
    let mut args = vec![
        "fit", "--config", &config, "--train", &train, "--inputs", CHANNELS,
    ];
    args.extend_from_slice(extra);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reservoir"))
        .current_dir(std::env::temp_dir())
        .args(&args)
        .envs(vars.iter().copied())
        .output()
        .expect("the reservoir binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(needle),
        "{stderr}"
    );
}

#[test]
fn a_launch_of_several_processes_is_checked_before_anything_runs() {
    let classify = SEQUENCE_FLAGS;
    let full = [
        ("WORLD_SIZE", "2"),
        ("RANK", "0"),
        ("LOCAL_RANK", "0"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29511"),
        ("TORCHELASTIC_RUN_ID", "test"),
    ];
    launched_fit_fails(&[("WORLD_SIZE", "2")], &classify, "RANK is not set");
    launched_fit_fails(
        &[("WORLD_SIZE", "2"), ("RANK", "x")],
        &classify,
        "RANK `x` is not a whole number",
    );
    launched_fit_fails(
        &full,
        &["--sequence-column", "sequence", "--targets", "c1"],
        "sequence classifiers only",
    );
    let mut on_cpu = classify.to_vec();
    on_cpu.extend(["--device", "cpu"]);
    launched_fit_fails(&full, &on_cpu, "runs on GPUs");
}
