//! Outputs never cost the user a file: an output that is also an input (under any spelling,
//! hard links included), another output, a directory, or a path that cannot be written is
//! refused before any work; a link keeps being a link (its target is written); a device is
//! written through, not replaced; a failing command writes nothing, and a command's outputs
//! are put in place together, only once all of them could be written.

use crate::common;

use std::fs;

use common::{fails_with, succeeds, Fixture};

#[test]
fn an_output_that_is_an_input_or_another_output_is_refused_before_any_work() {
    let fx = Fixture::new();
    let train_before = fs::read(fx.path("train.csv")).expect("train.csv");
    let config = fx.p("config.toml");
    let train = fx.p("train.csv");
    // The train file through `..`: still the same file.
    fs::create_dir(fx.path("sub")).expect("mkdir");
    let same = fx.path("sub/../train.csv").display().to_string();
    let args = fx.fit_args(&config, &["--model", &same]);
    fails_with(&args, &["--model", "also the train file", "refusing"]);
    let args = fx.fit_args(&config, &["--model", &config]);
    fails_with(&args, &["--model", "also the config file"]);
    let test = fx.p("test.csv");
    let plot = fx.p("fit.png");
    let args = fx.fit_args(
        &config,
        &["--test", &test, "--model", &plot, "--plot", &plot],
    );
    fails_with(&args, &["--plot", "also the --model"]);
    let model = fx.model("model.bin");
    fails_with(
        &[
            "predict", "--model", &model, "--input", &train, "--output", &train,
        ],
        &["--output", "also the input file"],
    );
    fails_with(
        &[
            "generate",
            "narma10",
            "--length",
            "300",
            "--split",
            "200",
            "--output",
            &train,
            "--test-output",
            &train,
        ],
        &["--test-output", "also the --output"],
    );
    assert_eq!(
        fs::read(fx.path("train.csv")).expect("train.csv"),
        train_before
    );
    assert!(!fx.path("fit.png").exists());
}

#[test]
fn a_directory_as_output_is_refused_before_the_other_output_is_written() {
    let fx = Fixture::new();
    let kept = fx.write("a.csv", "keep me\n");
    let folder = fx.dir.path().display().to_string();
    fails_with(
        &[
            "generate",
            "narma10",
            "--length",
            "300",
            "--split",
            "200",
            "--output",
            &kept,
            "--test-output",
            &folder,
        ],
        &["--test-output", "is a directory"],
    );
    assert_eq!(fs::read_to_string(&kept).expect("a.csv"), "keep me\n");
}

#[test]
fn outputs_are_put_in_place_together_or_not_at_all() {
    // `/dev/full` takes the second output and fails to write it (no space): the first, a
    // regular file, must still hold what it held.
    let fx = Fixture::new();
    let kept = fx.write("a.csv", "keep me\n");
    fails_with(
        &[
            "generate",
            "narma10",
            "--length",
            "300",
            "--split",
            "200",
            "--output",
            &kept,
            "--test-output",
            "/dev/full",
        ],
        &[
            "cannot write test output file `/dev/full`",
            "No space left on device",
        ],
    );
    assert_eq!(fs::read_to_string(&kept).expect("a.csv"), "keep me\n");
    let config = fx.p("config.toml");
    let test = fx.p("test.csv");
    let plot = fx.write("keep.png", "old plot");
    fails_with(
        &fx.fit_args(
            &config,
            &[
                "--test",
                &test,
                "--plot",
                &plot,
                "--model",
                "/dev/full",
                "--device",
                "cpu",
            ],
        ),
        &["cannot write model file `/dev/full`"],
    );
    assert_eq!(fs::read_to_string(&plot).expect("keep.png"), "old plot");
    let model = fx.write("keep.bin", "old model");
    let narma = fx.write(
        "narma.toml",
        "[task]\nkind = \"narma10\"\ntrain = 300\ntest = 100\nseed = 1\n\n[reservoir]\nsize = 20\n",
    );
    fails_with(
        &[
            "run",
            &narma,
            "--model",
            &model,
            "--plot",
            "/dev/full",
            "--device",
            "cpu",
        ],
        &["cannot write plot file `/dev/full`"],
    );
    assert_eq!(fs::read_to_string(&model).expect("keep.bin"), "old model");
    let left: Vec<_> = fs::read_dir(fx.dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

#[test]
fn paths_that_cannot_be_an_output_are_refused_before_any_work() {
    let fx = Fixture::new();
    let config = fx.p("config.toml");
    // A path ending in `/` names a folder, existing or not.
    let folder = format!("{}/", fx.p("nowhere"));
    fails_with(
        &fx.fit_args(&config, &["--model", &folder]),
        &["--model", "does not name a file (it names a folder)"],
    );
    // A link into a folder that does not exist.
    let link = fx.path("dangling.bin");
    std::os::unix::fs::symlink("no/such/dir/model.bin", &link).expect("symlink");
    fails_with(
        &fx.fit_args(&config, &["--model", &link.display().to_string()]),
        &[
            "--model",
            "no/such/dir/model.bin`, in a folder that does not exist",
        ],
    );
    // A second name (hard link) of the training file.
    let train_before = fs::read(fx.path("train.csv")).expect("train.csv");
    let hard = fx.path("hard.csv");
    fs::hard_link(fx.path("train.csv"), &hard).expect("hard link");
    fails_with(
        &fx.fit_args(&config, &["--model", &hard.display().to_string()]),
        &["--model", "also the train file", "refusing"],
    );
    assert_eq!(fs::read(&hard).expect("hard.csv"), train_before);
}

#[test]
fn a_link_stays_a_link_and_a_device_stays_a_device() {
    let fx = Fixture::new();
    let target = fx.write("real.bin", "old");
    let link = fx.path("link.bin");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let config = fx.p("config.toml");
    let link_text = link.display().to_string();
    succeeds(&fx.fit_args(&config, &["--model", &link_text]));
    assert!(fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    assert_ne!(fs::read(&target).expect("target"), b"old");

    let model = fx.model("model.bin");
    let input = fx.p("test.csv");
    succeeds(&[
        "predict",
        "--model",
        &model,
        "--input",
        &input,
        "--output",
        "/dev/null",
    ]);
    let meta = fs::metadata("/dev/null").expect("/dev/null");
    assert!(!meta.is_file(), "/dev/null was replaced by a regular file");
}

/// Interrupted while writing its output (SIGTERM, as `kill` sends; Ctrl-C's SIGINT takes the
/// same path), `generate` removes its temporary file and exits with 130, and the output it was
/// replacing is left as it was.
#[cfg(unix)]
#[test]
fn an_interrupted_write_removes_its_temporary_and_keeps_the_old_output() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let fx = Fixture::new();
    let output = fx.path("big.csv");
    fs::write(&output, "old contents\n").expect("write");
    // Lorenz rows of six columns: a few hundred MB of CSV, long enough to catch the write.
    for length in ["2000000", "4000000", "8000000"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_reservoir"))
            .args(["generate", "lorenz", "--length", length, "--output"])
            .arg(&output)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let temp = fx.path(&format!(".big.csv.tmp{}", child.id()));
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut caught = false;
        while Instant::now() < deadline {
            if temp.exists() {
                caught = true;
                break;
            }
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        if !caught {
            // The write ended before it was seen: try a longer one.
            let _ = child.kill();
            let _ = child.wait();
            fs::write(&output, "old contents\n").expect("write");
            continue;
        }
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(130), "{status:?}");
        assert!(!temp.exists(), "{} was left behind", temp.display());
        assert_eq!(fs::read_to_string(&output).expect("read"), "old contents\n");
        return;
    }
    panic!("never caught generate while it wrote its output");
}
