//! Hostile inputs, one test per class: jobs too large for the process's limits, the spike
//! task's encoder and background, a sweep lane that diverges, and files that are not what
//! they claim to be. Each gives a correct result or one clear `error:` line, nothing written.

use crate::common;

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// The spike task of `configs/default.toml` shrunk to 3 classes, 10 channels and reservoirs of
/// 50, with `change` applied to its text.
fn spike_task(dir: &std::path::Path, name: &str, change: impl Fn(String) -> String) -> String {
    let text = fs::read_to_string(config("default.toml"))
        .expect("default config")
        .replace("classes = 10", "classes = 3")
        .replace("channels = 40", "channels = 10")
        .replace("size = 400", "size = 50");
    let path = dir.join(name);
    fs::write(&path, change(text)).expect("config");
    path.display().to_string()
}

/// Runs the binary with `args` under `ulimit -v kib` (a POSIX shell applies the limit and
/// `exec`s it), returning the exit code, stderr and the seconds it took.
fn under_address_limit(kib: u64, args: &[&str]) -> (Option<i32>, String, f64) {
    let started = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_reservoir"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("sh runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed().as_secs_f64(),
    )
}

#[test]
fn a_job_beyond_the_process_limit_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().expect("dir");
    let csv = dir.path().join("lorenz30m.csv");
    let csv_text = csv.display().to_string();
    let generate = [
        "generate", "lorenz", "--length", "30000000", "--output", &csv_text,
    ];
    let (code, stderr, seconds) = under_address_limit(4_000_000, &generate);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("not enough memory"), "{stderr}");
    assert!(seconds < 5.0, "refused after {seconds:.1} s");
    assert!(!csv.exists());

    let config = dir.path().join("mg.toml");
    fs::write(
        &config,
        "[task]\nkind = \"mackey_glass\"\ntrain = 300000000\ntest = 1000\nforecast = 0\n\
         [reservoir]\nsize = 50\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let (code, stderr, _) = under_address_limit(4_000_000, &["run", &config, "--no-save"]);
    assert_eq!(code, Some(1), "{stderr}");
    // The estimate and the limit agree: what is available is below what is needed.
    assert!(
        stderr.contains("not enough memory") && stderr.contains("task data"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn the_spike_tasks_encoder_and_background_are_counted_as_allocated() {
    let dir = tempfile::tempdir().expect("dir");
    let steps = spike_task(dir.path(), "steps.toml", |t| {
        t.replace("steps = 1\n", "steps = 1000000000\n")
    });
    fails_with(
        &["run", &steps, "--no-save"],
        &["steps.toml", "task.encoder.steps", "must be 1"],
    );
    // The rate encoder clamps the spike probability to 1: a huge rate needs a few MB.
    let clamped = spike_task(dir.path(), "clamped.toml", |t| {
        t.replace("background_hz = 5.0", "background_hz = 1e12")
    });
    succeeds(&["run", &clamped, "--no-save"]);
    // Without an encoder every background spike is kept: refused under the limit.
    let poisson = spike_task(dir.path(), "poisson.toml", |t| {
        let start = t.find("[task.encoder]").expect("encoder table");
        let end = t.find("[reservoir]").expect("reservoir table");
        format!("{}{}", &t[..start], &t[end..])
            .replace("background_hz = 5.0", "background_hz = 1e7")
    });
    let (code, stderr, _) = under_address_limit(4_000_000, &["run", &poisson, "--no-save"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("not enough memory") && stderr.contains("task data"),
        "{stderr}"
    );
}

#[test]
fn a_sweep_keeps_the_lanes_that_ran_and_names_the_one_that_diverged() {
    let dir = tempfile::tempdir().expect("dir");
    let text = fs::read_to_string(config("narma10.toml"))
        .expect("narma10")
        .replace("size = 500", "size = 50\nactivation = \"identity\"");
    let path = dir.path().join("sweep.toml");
    fs::write(
        &path,
        format!("{text}\n[sweep]\nspectral_radius = [0.8, 0.9, 1.5]\n"),
    )
    .expect("config");
    let report = json(&["sweep", &path.display().to_string()]);
    let results = report["results"].as_array().expect("results");
    let failures = report["failures"].as_array().expect("failures");
    assert!(!results.is_empty(), "{report}");
    assert!(failures.iter().all(|f| f["lane"] == 2), "{report}");
    assert!(!failures.is_empty(), "{report}");
    assert!(
        failures[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not finite")),
        "{report}"
    );
    let table = succeeds(&["sweep", &path.display().to_string()]);
    assert!(table.stdout.contains("(first: lane 2,"), "{}", table.stdout);
}

#[test]
fn files_that_are_not_what_they_claim_are_named_without_blocking() {
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("dir.npz");
    fs::create_dir(&folder).expect("dir");
    let config = dir.path().join("c.toml");
    fs::write(
        &config,
        "[reservoir]\nsize = 10\n[features]\nsummaries = [\"last\"]\n",
    )
    .expect("config");
    fails_with(
        &[
            "fit",
            "--config",
            &config.display().to_string(),
            "--train",
            &folder.display().to_string(),
            "--inputs",
            "x",
            "--label-column",
            "y",
        ],
        &["dir.npz", "is a directory"],
    );
    let fifo = dir.path().join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let started = Instant::now();
        fails_with(
            &["run", &fifo.display().to_string(), "--no-save"],
            &["fifo.toml", "not a regular file"],
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn a_label_that_changes_within_a_file_hints_at_the_sequence_column() {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("long.csv");
    fs::write(
        &data,
        "seq,x,label\na,0.1,alpha\na,0.2,alpha\nb,0.3,beta\nb,0.4,beta\n",
    )
    .expect("data");
    let config = dir.path().join("c.toml");
    fs::write(
        &config,
        "[reservoir]\nsize = 10\n[features]\nsummaries = [\"last\"]\n",
    )
    .expect("config");
    fails_with(
        &[
            "fit",
            "--config",
            &config.display().to_string(),
            "--train",
            &data.display().to_string(),
            "--inputs",
            "x",
            "--label-column",
            "label",
        ],
        &["long.csv", "differs from label", "--sequence-column"],
    );
}

#[test]
fn two_processes_writing_the_same_outputs_leave_one_set() {
    let dir = tempfile::tempdir().expect("dir");
    let (train, test) = (dir.path().join("tr.csv"), dir.path().join("te.csv"));
    let args = |seed: &str, train: &std::path::Path, test: &std::path::Path| -> Vec<String> {
        [
            "generate",
            "mackey-glass",
            "--length",
            "40000",
            "--split",
            "20000",
            "--seed",
            seed,
            "--output",
            &train.display().to_string(),
            "--test-output",
            &test.display().to_string(),
        ]
        .map(String::from)
        .to_vec()
    };
    // Each seed's pair, written alone.
    let mut sets = Vec::new();
    for seed in ["1", "2"] {
        let (a, b) = (
            dir.path().join(format!("a{seed}")),
            dir.path().join(format!("b{seed}")),
        );
        succeeds(&args(seed, &a, &b));
        sets.push((fs::read(&a).expect("train"), fs::read(&b).expect("test")));
    }
    for round in 0..100 {
        let children: Vec<_> = ["1", "2"]
            .iter()
            .map(|seed| {
                Command::new(env!("CARGO_BIN_EXE_reservoir"))
                    .args(args(seed, &train, &test))
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for mut child in children {
            assert!(child.wait().expect("wait").success(), "round {round}");
        }
        let landed = (
            fs::read(&train).expect("train"),
            fs::read(&test).expect("test"),
        );
        assert!(
            sets.contains(&landed),
            "round {round}: a file from each process"
        );
    }
}

#[test]
fn a_config_larger_than_any_config_is_refused_unread() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("big.toml");
    fs::write(&path, format!("# {}\n", "x".repeat(2 << 20))).expect("config");
    fails_with(
        &["run", &path.display().to_string(), "--no-save"],
        &["big.toml", "larger than"],
    );
}

#[test]
fn tables_nested_beyond_the_parser_are_named_by_line() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("nested.toml");
    let key = vec!["a"; 199].join(".");
    fs::write(&path, format!("[reservoir]\nsize = 10\n\n[{key}]\nb = 1\n")).expect("config");
    fails_with(
        &["run", &path.display().to_string(), "--no-save"],
        &["nested.toml", "line 4", "199 dotted parts", "fewer than 80"],
    );
}

/// Whether a usable GPU is here; without one a GPU test prints why it skips, and fails
/// instead when `RESERVOIR_REQUIRE_GPU=1`.
fn gpu_here(test: &str) -> bool {
    let support = gpu_reservoir::probe();
    if let Some(problem) = &support.problem {
        let required = std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "RESERVOIR_REQUIRE_GPU=1 but no usable GPU: {problem}"
        );
        eprintln!("skipping {test}: {problem}");
        return false;
    }
    true
}

/// A NARMA-10 config of `size` units (`connection_prob` as given), as narma10.toml otherwise.
fn narma(dir: &std::path::Path, name: &str, size: usize, connection_prob: f64) -> String {
    let text = fs::read_to_string(config("narma10.toml"))
        .expect("narma10")
        .replace("size = 500", &format!("size = {size}"))
        .replace(
            "connection_prob = 0.1",
            &format!("connection_prob = {connection_prob}"),
        );
    let path = dir.join(name);
    fs::write(&path, text).expect("config");
    path.display().to_string()
}

#[test]
fn a_gpu_that_is_not_there_is_named() {
    if !gpu_here("a_gpu_that_is_not_there_is_named") {
        return;
    }
    let count = gpu_reservoir::probe().devices.len();
    let device = format!("cuda:{count}");
    fails_with(
        &[
            "run",
            &config("narma10.toml"),
            "--device",
            &device,
            "--no-save",
        ],
        &[&format!("no CUDA device {count}")],
    );
}

#[test]
fn a_gpu_filled_by_another_process_gives_typed_errors_and_writes_nothing() {
    if !gpu_here("a_gpu_filled_by_another_process_gives_typed_errors_and_writes_nothing") {
        return;
    }
    // The other process: PyTorch holding all but 256 MiB of GPU 0 (where it is installed).
    let hog = "import sys, time, torch\n\
               free, _ = torch.cuda.mem_get_info(0)\n\
               held = torch.empty(free - (256 << 20), dtype=torch.uint8, device='cuda:0')\n\
               print('full', flush=True)\n\
               sys.stdin.read()\n";
    let Ok(mut other) = Command::new("python3")
        .args(["-c", hog])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        eprintln!("skipping: no python3 to fill the GPU from another process");
        return;
    };
    let mut line = String::new();
    let stdout = other.stdout.take().expect("piped");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("read");
    if line.trim() != "full" {
        let _ = other.kill();
        eprintln!("skipping: PyTorch could not fill the GPU from another process");
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    // A dense W of 10,000² f32 (400 MB) cannot be uploaded into the 256 MiB left.
    let dense = narma(dir.path(), "dense.toml", 10_000, 1.0);
    let model = dir.path().join("model.bin").display().to_string();
    let message = fails_with(
        &["run", &dense, "--device", "cuda", "--model", &model],
        &["GPU", "memory"],
    );
    assert!(!std::path::Path::new(&model).exists(), "{message}");
    // A sweep's lanes on the full device: refused the same way.
    let sweep_text =
        fs::read_to_string(&dense).expect("config") + "\n[sweep]\nspectral_radius = [0.8, 0.9]\n";
    let sweep = dir.path().join("sweep.toml");
    fs::write(&sweep, sweep_text).expect("config");
    fails_with(
        &["sweep", &sweep.display().to_string(), "--device", "cuda"],
        &["GPU", "memory"],
    );
    drop(other.stdin.take());
    let _ = other.wait();
}

#[test]
fn a_run_killed_while_compiling_kernels_leaves_a_cache_the_next_run_uses() {
    if !gpu_here("a_run_killed_while_compiling_kernels_leaves_a_cache_the_next_run_uses") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("kernels");
    let small = narma(dir.path(), "small.toml", 200, 0.1);
    let run = |cache: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_reservoir"))
            .args(["run", &small, "--device", "cuda", "--no-save", "--json"])
            .env("RESERVOIR_KERNEL_CACHE", cache)
            // Compiled from the PTX even where a shipped cubin would run.
            .env("RESERVOIR_KERNELS", "ptx")
            .current_dir(dir.path())
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    // Killed at several points of its start-up, the kernels compiling and being stored.
    for millis in [20u64, 80, 200, 400, 800, 1500] {
        let mut child = run(&cache);
        std::thread::sleep(Duration::from_millis(millis));
        let _ = child.kill();
        let _ = child.wait();
    }
    let report = |child: std::process::Child| -> serde_json::Value {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let after = report(run(&cache));
    let uncached = report(run(std::path::Path::new("off")));
    assert_eq!(after["test_nrmse"], uncached["test_nrmse"], "{after}");
    // And once more from the cache the run left.
    assert_eq!(report(run(&cache))["test_nrmse"], uncached["test_nrmse"]);
}

/// `fit` of narma10's train.csv rows (`u` → `y`) with `config` text, saving `model`.
fn fit_narma(fx: &Fixture, name: &str, config: &str, model: &str) -> Vec<String> {
    let path = fx.write(name, config);
    fx.fit_args(&path, &["--model", model])
}

#[test]
fn mistakes_in_the_model_tables_name_their_key() {
    let fx = Fixture::new();
    let base = "[reservoir]\nsize = 40\nseed = 1\n[readout]\nwashout = 10\n";
    let cases = [
        ("[model]\nfeedback = 1e300\n", "model.feedback"),
        (
            "[model]\nreservoir = \"nvar\"\n[model.nvar]\ndelay = 4294967297\norder = 1\n",
            "model.nvar.delay",
        ),
        ("[model]\nreadout_layers = [0]\n", "model.readout_layers"),
        ("[model]\ninput_to_all = true\n", "model.input_to_all"),
        (
            "[model.plasticity]\nwarmup = 100000\n",
            "model.plasticity.warmup",
        ),
    ];
    for (i, (table, key)) in cases.iter().enumerate() {
        let model = fx.p(&format!("m{i}.bin"));
        let args = fit_narma(
            &fx,
            &format!("c{i}.toml"),
            &format!("{base}{table}"),
            &model,
        );
        fails_with(&args, &[key]);
        assert!(!std::path::Path::new(&model).exists());
    }
    // A deep stack that reads out one layer of two: its state cannot be continued, and the
    // error says how to predict anyway.
    let deep = "[model]\nreservoir = \"deep_echo_state\"\nreadout_layers = [1]\n\
                [[model.layers]]\nsize = 20\n[[model.layers]]\nsize = 20\n";
    let model = fx.p("deep.bin");
    succeeds(&fit_narma(
        &fx,
        "deep.toml",
        &format!("{base}{deep}"),
        &model,
    ));
    let input = fx.p("test.csv");
    fails_with(
        &[
            "predict", "--model", &model, "--input", &input, "--device", "cpu",
        ],
        &["saved state", "--reset"],
    );
    succeeds(&["predict", "--model", &model, "--input", &input, "--reset"]);
    // A FIFO as the model is refused, not waited on.
    let fifo = fx.path("fifo.bin");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        predict_fails(&fifo.display().to_string(), &input, &["not a regular file"]);
    }
}

#[test]
fn a_projection_or_a_holdout_too_large_for_the_sequences_names_its_key() {
    let dir = tempfile::tempdir().expect("dir");
    let mut rows = String::from("seq,t,x,label\n");
    for s in 0..10 {
        for t in 0..8 {
            rows.push_str(&format!(
                "s{s},{t},{},{}\n",
                (s * t) as f64 * 0.1,
                ["p", "q"][s % 2]
            ));
        }
    }
    let data = dir.path().join("seq.csv");
    fs::write(&data, rows).expect("data");
    let data = data.display().to_string();
    let args = |config: &str| -> Vec<String> {
        let path = dir.path().join("c.toml");
        fs::write(&path, config).expect("config");
        [
            "fit",
            "--config",
            &path.display().to_string(),
            "--train",
            &data,
            "--inputs",
            "x",
            "--label-column",
            "label",
            "--sequence-column",
            "seq",
            "--time-column",
            "t",
        ]
        .map(String::from)
        .to_vec()
    };
    fails_with(
        &args("[reservoir]\nsize = 10\n[features]\nwarmup = 100\ncomponents = 2\n"),
        &["features.warmup"],
    );
    let mut sweep = args("[reservoir]\nsize = 10\n[sweep]\nvalidation = 0.01\nridge = [1e-6]\n");
    sweep[0] = "sweep".into();
    sweep.remove(1);
    fails_with(&sweep, &["sweep.validation"]);
}
