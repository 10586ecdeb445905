//! `reservoir sweep`: the shipped sweep ranks its 48 lanes × 3 ridges and holds the lane of
//! `configs/narma10.toml` with `reservoir run`'s score; the table shows the best; bad requests
//! are one `error:` line.

use crate::common;

use common::*;

/// Writes `text` to `name` in `dir` and returns the path.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write a config");
    path.display().to_string()
}

/// A small NARMA-10 config with the given base values, followed by `sweep`.
fn small(leak_rate: f64, input_scaling: f64, ridge: f64, sweep: &str) -> String {
    format!(
        "[task]\nkind = \"narma10\"\ntrain = 600\ntest = 300\nseed = 2\n\n\
         [reservoir]\nsize = 40\nspectral_radius = 0.9\nleak_rate = {leak_rate:?}\n\
         input_scaling = {input_scaling:?}\nseed = 3\n\n\
         [readout]\nridge = {ridge:?}\nwashout = 50\n\n{sweep}"
    )
}

const SWEEP: &str = "[sweep]
leak_rate = [0.3, 0.6, 1.0]
input_scaling = [0.5, 1.0]
ridge = [1e-7, 1e-5]
top = 4
";

#[test]
fn the_shipped_sweep_ranks_every_lane_and_holds_the_run_of_narma10_toml() {
    let report = json(&["sweep", &config("sweep_narma10.toml")]);
    assert_eq!(report["task"], "narma10");
    assert_eq!(report["score"], "validation_nrmse");
    assert_eq!(
        (number(&report, "lanes"), number(&report, "ridges")),
        (48.0, 3.0)
    );
    assert_eq!(number(&report, "steps"), 3000.0);
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 144);
    let scores: Vec<f64> = results.iter().map(|r| number(r, "score")).collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    // The base lane (ρ 0.9, a 1, input scaling 1, ridge 1e-6) is configs/narma10.toml.
    let base = results
        .iter()
        .find(|r| {
            (number(r, "spectral_radius"), number(r, "leak_rate")) == (0.9, 1.0)
                && (number(r, "input_scaling"), number(r, "ridge")) == (1.0, 1e-6)
        })
        .expect("the base lane");
    let run = json(&["run", &config("narma10.toml"), "--no-save"]);
    let test_nrmse = number(&run, "test_nrmse");
    assert!(
        (number(base, "score") - test_nrmse).abs() <= 1e-9 * test_nrmse,
        "sweep {base} vs run {test_nrmse}"
    );
    assert!(scores[0] < test_nrmse, "the sweep finds no better lane");
    let timings = &report["timings"];
    assert!(number(timings, "total_seconds") >= number(timings, "run_seconds"));
    assert!(number(&report, "lane_steps_per_second") > 0.0);
}

#[test]
fn the_table_shows_the_best_results_and_top_overrides_the_config() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(&dir, "small.toml", &small(1.0, 1.0, 1e-5, SWEEP));
    let table = succeeds(&["sweep", &path]).stdout;
    let ranked: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("rank"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(ranked.len(), 4, "{table}");
    assert!(ranked[0].trim_start().starts_with("1 "), "{table}");
    for needle in [
        "lanes",
        "6 × 2 ridge values = 12 readouts",
        "val NRMSE",
        "run time",
    ] {
        assert!(table.contains(needle), "`{needle}` not in {table}");
    }
    let two = json(&["sweep", &path, "--top", "2"]);
    assert_eq!(number(&two, "top"), 2.0);
    assert_eq!(two["results"].as_array().map(Vec::len), Some(12));
    // The best lane, run on its own, scores what the sweep says.
    let best = &two["results"][0];
    let alone = small(
        number(best, "leak_rate"),
        number(best, "input_scaling"),
        number(best, "ridge"),
        "",
    );
    let alone = write(&dir, "alone.toml", &alone);
    let run = json(&["run", &alone, "--no-save"]);
    let test_nrmse = number(&run, "test_nrmse");
    assert!(
        (number(best, "score") - test_nrmse).abs() <= 1e-9 * test_nrmse,
        "sweep {best} vs run {test_nrmse}"
    );
}

#[test]
fn bad_sweeps_are_one_error_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let leak = write(
        &dir,
        "leak.toml",
        &small(1.0, 1.0, 1e-5, &SWEEP.replace("1.0]", "1.5]")),
    );
    fails_with(
        &["sweep", &leak],
        &[
            "leak.toml",
            "sweep.leak_rate[2]",
            "must be in (0, 1]",
            "1.5",
        ],
    );
    let empty = write(
        &dir,
        "empty.toml",
        &small(1.0, 1.0, 1e-5, &SWEEP.replace("[1e-7, 1e-5]", "[]")),
    );
    fails_with(
        &["sweep", &empty],
        &["empty.toml", "sweep.ridge", "must not be empty"],
    );
    let typo = write(
        &dir,
        "typo.toml",
        &small(1.0, 1.0, 1e-5, &SWEEP.replace("top", "tops")),
    );
    fails_with(&["sweep", &typo], &["typo.toml", "tops"]);
    fails_with(
        &["sweep", &config("spike_classification.toml")],
        &["spike_classification.toml", "task.kind", "cannot be swept"],
    );
    let no_task = write(&dir, "no_task.toml", "[reservoir]\nsize = 20\n");
    fails_with(&["sweep", &no_task], &["no_task.toml", "`task`"]);
    fails_with(
        &[
            "sweep",
            &dir.path().join("absent.toml").display().to_string(),
        ],
        &["absent.toml", "config file"],
    );
    let path = write(&dir, "small.toml", &small(1.0, 1.0, 1e-5, SWEEP));
    fails_with(&["sweep", &path, "--top", "0"], &["--top", "must be >= 1"]);
    // Usage errors (exit 2, clap's message with the parser's reason).
    for (list, reason) in [
        ("0,0", "GPU 0 is listed twice"),
        ("gpu", "all or GPU ordinals"),
    ] {
        let out = reservoir(&["sweep", &path, "--devices", list]);
        assert_eq!(out.code, Some(2), "{}", out.stderr);
        assert!(
            out.stderr.contains("--devices") && out.stderr.contains(reason),
            "{}",
            out.stderr
        );
    }
    fails_with(
        &[
            "sweep",
            &path,
            "--devices",
            "0",
            "--train",
            &path,
            "--inputs",
            "u",
        ],
        &["--devices", "--train", "one GPU"],
    );
    // f16 GEMM operands need a tanh reservoir, in the config and on the command line.
    let linear =
        small(1.0, 1.0, 1e-5, SWEEP).replace("seed = 3\n", "seed = 3\nactivation = \"identity\"\n");
    let f16 = write(&dir, "f16.toml", &format!("{linear}gpu_matmul = \"f16\"\n"));
    fails_with(
        &["sweep", &f16],
        &["f16.toml", "sweep.gpu_matmul", "tanh", "f16"],
    );
    let linear = write(&dir, "linear.toml", &linear);
    fails_with(
        &["sweep", &linear, "--gpu-matmul", "f16"],
        &["--gpu-matmul", "tanh"],
    );
    let out = reservoir(&["sweep", &path, "--gpu-matmul", "bf16"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("f32, tf32 or f16"), "{}", out.stderr);
    let repeated = write(
        &dir,
        "repeated.toml",
        &format!("devices = [1, 1]\n{}", small(1.0, 1.0, 1e-5, SWEEP)),
    );
    fails_with(
        &["sweep", &repeated],
        &["repeated.toml", "devices", "twice"],
    );
}

#[test]
fn devices_leave_a_sweep_on_the_cpu_where_the_cpu_was_asked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        &dir,
        "all.toml",
        &format!("devices = \"all\"\n{}", small(1.0, 1.0, 1e-5, SWEEP)),
    );
    for extra in [&[][..], &["--devices", "0,1"][..]] {
        let mut args = vec!["sweep", path.as_str(), "--device", "cpu"];
        args.extend_from_slice(extra);
        let report = json(&args);
        assert_eq!(report["backend"], "cpu", "{extra:?}");
        assert_eq!(number(&report, "lanes"), 6.0);
    }
    // The GEMM arithmetic is the GPU lanes'; CPU lanes compute as the config says and the
    // report names none.
    let report = json(&["sweep", &path, "--device", "cpu", "--gpu-matmul", "tf32"]);
    assert_eq!(report["backend"], "cpu");
    assert!(report.get("gpu_matmul").is_none(), "{report}");
}

/// Thousands of lanes on the CPU: each lane's run waits on a thread pool from inside the lane
/// pool, and a waiting worker runs other lanes on top of it; in one call of 2,000 lanes that
/// nesting overflowed a worker's stack and aborted the process (SIGABRT, no error line).
#[test]
fn a_sweep_of_thousands_of_lanes_runs_to_the_end() {
    let values = |count: usize, start: f64, step: f64| {
        (0..count)
            .map(|i| format!("{:.2}", start + step * i as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sweep = format!(
        "[sweep]\nspectral_radius = [{}]\nleak_rate = [{}]\ninput_scaling = [{}]\n\
         ridge = [1e-6]\ntop = 1\n",
        values(20, 0.5, 0.02),
        values(10, 0.1, 0.09),
        values(10, 0.1, 0.1)
    );
    let dir = tempfile::tempdir().expect("dir");
    let path = write(&dir, "lanes.toml", &small(0.5, 0.5, 1e-6, &sweep));
    let report = json(&["sweep", &path, "--device", "cpu"]);
    assert_eq!(number(&report, "lanes"), 2000.0);
    assert_eq!(report["failures"].as_array().map(Vec::len), Some(0));
}

#[test]
fn a_launched_sweep_is_checked_before_anything_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(&dir, "small.toml", &small(1.0, 1.0, 1e-5, SWEEP));
    let launched = |extra: &[&str], needle: &str| {
        let mut args = vec!["sweep", path.as_str()];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_reservoir"))
            .current_dir(std::env::temp_dir())
            .args(&args)
            .envs([
                ("WORLD_SIZE", "2"),
                ("RANK", "1"),
                ("LOCAL_RANK", "1"),
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29512"),
                ("TORCHELASTIC_RUN_ID", "test"),
            ])
            .output()
            .expect("the reservoir binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    };
    launched(&["--device", "cpu"], "runs on GPUs");
    launched(
        &["--train", path.as_str(), "--inputs", "u"],
        "sweep of sequences runs in one process",
    );
}
