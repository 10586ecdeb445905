//! Helpers shared by the end-to-end tests: running the binary, checking error lines, and a
//! temp dir with NARMA-10 train/test files and a small config.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

pub const TRAIN_ROWS: usize = 2000;
pub const TEST_ROWS: usize = 1000;

pub const CONFIG: &str = "\
[reservoir]
size = 200
spectral_radius = 0.9
leak_rate = 1.0
input_scaling = 0.5
bias_scaling = 0.1
seed = 1

[readout]
ridge = 1e-6
washout = 100
";

pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn reservoir<S: AsRef<OsStr>>(args: &[S]) -> Output {
    // Runs save their model in the current directory by default: keep that out of the tree.
    let out = Command::new(env!("CARGO_BIN_EXE_reservoir"))
        .current_dir(std::env::temp_dir())
        .args(args)
        .output()
        .expect("the reservoir binary runs");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts exit code 0 and nothing on stderr but `note:` lines (e.g. the CPU fallback note).
pub fn succeeds<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let out = reservoir(args);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr.lines().all(|l| l.starts_with("note: ")),
        "stderr: {}",
        out.stderr
    );
    out
}

/// Asserts exit code 1 and exactly one `error:` line on stderr mentioning every needle.
pub fn fails_with<S: AsRef<OsStr>>(args: &[S], needles: &[&str]) -> String {
    let out = reservoir(args);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr is not one line: {:?}", out.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    for needle in needles {
        assert!(lines[0].contains(needle), "`{needle}` not in: {}", lines[0]);
    }
    lines[0].to_string()
}

/// A temp dir with NARMA-10 split into train.csv (2000 rows) and test.csv (1000 rows), and a config.
pub struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let fixture = Fixture { dir };
        let all = fixture.path("all.csv");
        let length = (TRAIN_ROWS + TEST_ROWS).to_string();
        succeeds(&[
            "generate".as_ref(),
            "narma10".as_ref(),
            "--length".as_ref(),
            OsStr::new(&length),
            "--seed".as_ref(),
            "7".as_ref(),
            "--output".as_ref(),
            all.as_os_str(),
        ]);
        let text = fs::read_to_string(&all).expect("generated CSV");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "u,y");
        assert_eq!(lines.len(), 1 + TRAIN_ROWS + TEST_ROWS);
        fixture.write_rows("train.csv", lines[0], &lines[1..=TRAIN_ROWS]);
        fixture.write_rows("test.csv", lines[0], &lines[1 + TRAIN_ROWS..]);
        fixture.write("config.toml", CONFIG);
        fixture
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub fn write(&self, name: &str, text: &str) -> String {
        fs::write(self.path(name), text).expect("write fixture file");
        self.p(name)
    }

    pub fn write_rows(&self, name: &str, header: &str, rows: &[&str]) -> String {
        let mut text = format!("{header}\n");
        for row in rows {
            text.push_str(row);
            text.push('\n');
        }
        self.write(name, &text)
    }

    /// `fit` arguments on train.csv with `u` → `y` and the given config and extras.
    pub fn fit_args(&self, config: &str, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["fit", "--config", config, "--inputs", "u", "--targets", "y"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        args.extend(["--train".to_string(), self.p("train.csv")]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// `fit` arguments on `train` with the given input columns → `y` and config.toml.
    pub fn fit_on(&self, train: impl AsRef<str>, inputs: &str) -> Vec<String> {
        let config = self.p("config.toml");
        [
            "fit",
            "--config",
            &config,
            "--train",
            train.as_ref(),
            "--inputs",
            inputs,
            "--targets",
            "y",
        ]
        .map(String::from)
        .to_vec()
    }

    /// Fits on train.csv and returns the parsed JSON report.
    pub fn fit_json(&self, extra: &[&str]) -> Value {
        let mut extra = extra.to_vec();
        extra.push("--json");
        let out = succeeds(&self.fit_args(&self.p("config.toml"), &extra));
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        serde_json::from_str(&out.stdout).expect("stdout is JSON")
    }

    /// Saves a model fitted on train.csv (state at the end of training) as `name`.
    pub fn model(&self, name: &str) -> String {
        let path = self.p(name);
        self.fit_json(&["--model", &path]);
        path
    }
}

/// Parses a predictions CSV: header and one value per row of a single column.
pub fn column(text: &str) -> (String, Vec<f64>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_string();
    let values = lines
        .map(|l| l.parse::<f64>().expect("numeric prediction"))
        .collect();
    (header, values)
}

pub fn rmse(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    (a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64).sqrt()
}

/// The path of a shipped config, `configs/<name>`.
pub fn config(name: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    root.join(name).display().to_string()
}

/// Runs `args` with `--json`, asserts success and one line of output, and parses it.
pub fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = succeeds(&args);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    serde_json::from_str(&out.stdout).expect("stdout is JSON")
}

/// The number at `key` of a JSON object.
pub fn number(value: &Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number `{key}` in {value}"))
}

/// Asserts that `predict` fails with one error line mentioning every needle.
pub fn predict_fails(model: &str, input: &str, needles: &[&str]) -> String {
    fails_with(&["predict", "--model", model, "--input", input], needles)
}

/// Writes train.csv with line 5 (the 4th data row) replaced, and returns the fit's error line.
pub fn fit_with_line_5(fx: &Fixture, name: &str, row: &str, needles: &[&str]) -> String {
    let text = fs::read_to_string(fx.path("train.csv")).expect("train.csv");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = row;
    fx.write_rows(name, lines[0], &lines[1..]);
    let args = fx.fit_on(fx.p(name), "u");
    fails_with(&args, needles)
}
