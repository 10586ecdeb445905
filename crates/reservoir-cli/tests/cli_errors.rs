//! End-to-end tests of bad input: every kind exits 1 with one `error:` line naming the file,
//! line, column or config field at fault, and never a panic message.

use crate::common;

use std::fs;
use std::path::Path;

use common::*;

#[test]
fn unknown_config_key_is_named() {
    let fx = Fixture::new();
    let config = fx.write("typo.toml", "[reservoir]\nsize = 200\nleek_rate = 0.5\n");
    fails_with(
        &fx.fit_args(&config, &[]),
        &["typo.toml", "leek_rate", "line 3"],
    );
}

#[test]
fn zero_leak_rate_is_named() {
    let fx = Fixture::new();
    let config = fx.write("leak.toml", "[reservoir]\nsize = 200\nleak_rate = 0.0\n");
    fails_with(
        &fx.fit_args(&config, &[]),
        &["leak.toml", "reservoir.leak_rate"],
    );
}

#[test]
fn missing_config_file_is_named() {
    let fx = Fixture::new();
    fails_with(
        &fx.fit_args(&fx.p("absent.toml"), &[]),
        &["absent.toml", "config file"],
    );
}

#[test]
fn missing_train_file_is_named() {
    let fx = Fixture::new();
    let args = fx.fit_on(fx.p("absent.csv"), "u");
    fails_with(&args, &["absent.csv", "train file"]);
}

#[test]
fn missing_column_is_named_with_the_columns_present() {
    let fx = Fixture::new();
    let args = fx.fit_on(fx.p("train.csv"), "u, w");
    fails_with(&args, &["train.csv", "`w`", "`u`", "`y`"]);
}

#[test]
fn test_file_without_the_train_columns_is_an_error() {
    let fx = Fixture::new();
    let other = fx.write("other.csv", "x,y\n0.1,0.2\n0.3,0.4\n0.5,0.7\n");
    fails_with(
        &fx.fit_args(&fx.p("config.toml"), &["--test", &other]),
        &["other.csv", "`u`"],
    );
}

#[test]
fn non_numeric_cell_is_named_by_file_line_and_column() {
    let fx = Fixture::new();
    fit_with_line_5(
        &fx,
        "text.csv",
        "0.25,abc",
        &["text.csv", "line 5", "`y`", "abc"],
    );
}

#[test]
fn nan_cell_is_rejected() {
    let fx = Fixture::new();
    fit_with_line_5(
        &fx,
        "nan.csv",
        "NaN,0.3",
        &["nan.csv", "line 5", "`u`", "NaN"],
    );
    fit_with_line_5(
        &fx,
        "inf.csv",
        "0.2,inf",
        &["inf.csv", "line 5", "`y`", "inf"],
    );
}

#[test]
fn ragged_row_is_named_by_line() {
    let fx = Fixture::new();
    fit_with_line_5(
        &fx,
        "ragged.csv",
        "0.2,0.3,0.4",
        &["ragged.csv", "line 5", "3 fields"],
    );
}

#[test]
fn header_only_csv_has_no_rows() {
    let fx = Fixture::new();
    let empty = fx.write("empty.csv", "u,y\n");
    let args = fx.fit_on(empty, "u");
    fails_with(&args, &["empty.csv", "no data rows"]);
    let blank = fx.write("blank.csv", "");
    let args = fx.fit_on(blank, "u");
    fails_with(&args, &["blank.csv", "empty"]);
}

#[test]
fn washout_longer_than_the_data_is_named() {
    let fx = Fixture::new();
    let config = fx.write(
        "long.toml",
        "[reservoir]\nsize = 50\n[readout]\nwashout = 5000\n",
    );
    fails_with(
        &fx.fit_args(&config, &[]),
        &["readout.washout", "5000", "train.csv"],
    );
}

#[test]
fn too_few_test_rows_are_an_error() {
    let fx = Fixture::new();
    let one = fx.write("one.csv", "u,y\n0.1,0.2\n");
    fails_with(
        &fx.fit_args(&fx.p("config.toml"), &["--test", &one]),
        &["one.csv", "test row"],
    );
}

#[test]
fn bad_column_lists_are_rejected() {
    let fx = Fixture::new();
    let args = fx.fit_on(fx.p("train.csv"), "u,,");
    fails_with(&args, &["--inputs", "empty column name"]);
}

#[test]
fn model_of_random_bytes_is_not_a_model() {
    let fx = Fixture::new();
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(fx.path("random.bin"), bytes).expect("write");
    predict_fails(
        &fx.p("random.bin"),
        &fx.p("test.csv"),
        &["random.bin", "not a reservoir model"],
    );
}

#[test]
fn truncated_model_is_reported() {
    let fx = Fixture::new();
    let bytes = fs::read(fx.model("full.bin")).expect("model");
    fs::write(fx.path("half.bin"), &bytes[..bytes.len() / 2]).expect("write");
    predict_fails(
        &fx.p("half.bin"),
        &fx.p("test.csv"),
        &["half.bin", "truncated"],
    );
}

#[test]
fn model_with_a_flipped_byte_is_corrupted() {
    let fx = Fixture::new();
    let mut bytes = fs::read(fx.model("full.bin")).expect("model");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    fs::write(fx.path("flipped.bin"), &bytes).expect("write");
    predict_fails(
        &fx.p("flipped.bin"),
        &fx.p("test.csv"),
        &["flipped.bin", "corrupted"],
    );
}

#[test]
fn missing_model_file_is_named() {
    let fx = Fixture::new();
    predict_fails(
        &fx.p("absent.bin"),
        &fx.p("test.csv"),
        &["absent.bin", "model file"],
    );
}

#[test]
fn predict_input_without_the_model_columns_is_named() {
    let fx = Fixture::new();
    let model = fx.model("m.bin");
    let other = fx.write("other.csv", "x,y\n0.1,0.2\n");
    predict_fails(&model, &other, &["other.csv", "`u`", "`x`"]);
}

#[test]
fn generate_rejects_a_zero_length() {
    let fx = Fixture::new();
    let out = fx.p("zero.csv");
    fails_with(
        &["generate", "narma10", "--length", "0", "--output", &out],
        &["--length"],
    );
    assert!(!Path::new(&out).exists());
}

#[test]
fn file_text_in_messages_cannot_drive_the_terminal_or_flood_it() {
    let fx = Fixture::new();
    let config = fx.p("config.toml");
    // A header whose column names carry an escape sequence, a bidirectional override and a
    // very long name: each name is quoted cut short, every control character escaped.
    let long = "x".repeat(5000);
    let train = fx.write(
        "evil.csv",
        &format!("\u{1b}[31mred,{long},b\u{202e}c\n1,2,3\n"),
    );
    let line = fails_with(
        &[
            "fit",
            "--config",
            &config,
            "--train",
            &train,
            "--inputs",
            "u",
            "--targets",
            "y",
        ],
        &["\\u{1b}[31mred", "xxx…`", "b\\u{202e}c"],
    );
    assert!(
        !line.contains('\u{1b}') && !line.contains('\u{202e}'),
        "a raw control character reached the terminal"
    );
    assert!(
        line.chars().count() <= 307,
        "{} characters",
        line.chars().count()
    );
    // A cell of a megabyte: quoted cut short; the line still says what is wrong with it.
    let cell = "7".repeat(1 << 20);
    let train = fx.write("cell.csv", &format!("u,y\n0.1,0.2\n{cell}x,0.3\n"));
    let line = fails_with(
        &fx.fit_on(&train, "u"),
        &["cell.csv: line 3, column `u`: `7777", "…` is not a number"],
    );
    assert!(
        line.chars().count() <= 307,
        "{} characters",
        line.chars().count()
    );
    // A message longer than 300 characters for another reason (a long path) keeps its start
    // and its end.
    let deep = fx.path(&"d".repeat(250));
    fs::create_dir(&deep).expect("mkdir");
    let missing = deep.join("missing.csv").display().to_string();
    let line = fails_with(
        &fx.fit_on(&missing, "u"),
        &["characters left out", "(os error 2)"],
    );
    assert!(
        line.chars().count() <= 307,
        "{} characters",
        line.chars().count()
    );
}

#[test]
fn endless_files_are_refused_not_read_forever() {
    fails_with(&["run", "/dev/zero"], &["/dev/zero", "not a regular file"]);
    let fx = Fixture::new();
    let config = fx.p("config.toml");
    fails_with(
        &[
            "fit",
            "--config",
            &config,
            "--train",
            "/dev/zero",
            "--inputs",
            "u",
            "--targets",
            "y",
        ],
        &["/dev/zero", "line 1 is longer than 16 MiB"],
    );
    let fx = Fixture::new();
    let input = fx.p("test.csv");
    fails_with(
        &["predict", "--model", "/dev/zero", "--input", &input],
        &["/dev/zero", "not a regular file"],
    );
}

#[test]
fn predict_refuses_an_input_beyond_f32_instead_of_writing_nan() {
    let fx = Fixture::new();
    let model = fx.model("model.bin");
    let input = fx.write("huge.csv", "u\n0.5\n1e39\n0.1\n");
    let out = fx.p("out.csv");
    fails_with(
        &[
            "predict", "--model", &model, "--input", &input, "--output", &out, "--device", "cpu",
        ],
        &["huge.csv: line 3, column `u`: `1e39` is beyond ±3.4028e38"],
    );
    assert!(!fx.path("out.csv").exists());
}

#[test]
fn targets_too_large_to_score_are_refused_with_their_line() {
    let fx = Fixture::new();
    let test = fx.write_rows("test.csv", "u,y", &["0.1,0.2", "0.3,1e200", "0.2,0.1"]);
    let config = fx.p("config.toml");
    let plot = fx.p("keep.png");
    fails_with(
        &fx.fit_args(&config, &["--test", &test, "--plot", &plot]),
        &["test.csv: line 3, column `y`: `1e200` is beyond ±1.0000e150"],
    );
    assert!(!fx.path("keep.png").exists());
}

#[test]
fn lines_are_counted_right_in_crlf_files() {
    let fx = Fixture::new();
    let train = fx.write("crlf.csv", "u,y\r\n0.1,0.2\r\n\r\nx,0.3\r\n");
    fails_with(
        &fx.fit_on(&train, "u"),
        &["crlf.csv: line 4, column `u`: `x` is not a number"],
    );
}

#[test]
fn configs_whose_job_cannot_fit_in_memory_name_the_size() {
    let fx = Fixture::new();
    let huge = narma_config(
        &fx,
        "huge.toml",
        "train = 2000",
        "size = 16777216\nconnection_prob = 1.0",
    );
    let message = fails_with(
        &["run", &huge, "--no-save"],
        &["not enough memory for this job (weights"],
    );
    assert!(message.contains("available"), "{message}");
    fails_with(
        &fx.fit_args(&huge, &[]),
        &["not enough memory for this job (weights", "ridge sums"],
    );
}

#[test]
fn task_sizes_that_would_overflow_are_config_errors() {
    let fx = Fixture::new();
    let config = narma_config(
        &fx,
        "rows.toml",
        "train = 18446744073709551615",
        "size = 50",
    );
    fails_with(
        &["run", &config, "--no-save"],
        &["`task.train`: must be in 1..=1000000000000"],
    );
    let config = fx.write(
        "forecast.toml",
        "[task]\nkind = \"mackey_glass\"\ntrain = 500\ntest = 100\nforecast = 200\n\n\
         [reservoir]\nsize = 50\n",
    );
    fails_with(
        &["run", &config, "--no-save"],
        &["`task.forecast`: must be <= task.test (100)"],
    );
    let config = narma_config(
        &fx,
        "radius.toml",
        "train = 500",
        "size = 50\nspectral_radius = 1e300",
    );
    fails_with(
        &["run", &config, "--no-save"],
        &["`reservoir.spectral_radius`: must be in (0, 1e6]"],
    );
    // A usage error (exit 2, clap's own message), without the tip `'-- -5'` that does not work.
    let out = reservoir(&[
        "generate",
        "narma10",
        "--length",
        "-5",
        "--output",
        &fx.p("g.csv"),
    ]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("invalid value '-5' for '--length <N>'"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("-- -5"), "{}", out.stderr);
}

#[test]
fn numbers_beyond_f64_are_called_too_large_not_infinite() {
    let fx = Fixture::new();
    let train = fx.write_rows("overflow.csv", "u,y", &["0.1,0.2", "1e309,0.3", "0.2,0.1"]);
    fails_with(
        &fx.fit_on(&train, "u"),
        &["overflow.csv: line 3, column `u`: `1e309` is beyond ±3.4028e38"],
    );
    let train = fx.write_rows("inf.csv", "u,y", &["0.1,0.2", "-Infinity,0.3"]);
    fails_with(
        &fx.fit_on(&train, "u"),
        &["inf.csv: line 3, column `u`: `-Infinity` is not a finite number"],
    );
}

#[test]
fn targets_too_small_to_square_are_named_not_called_constant() {
    let fx = Fixture::new();
    let text = fs::read_to_string(fx.path("train.csv")).expect("train.csv");
    let rows: Vec<String> = text
        .lines()
        .skip(1)
        .map(|line| {
            let (u, y) = line.split_once(',').expect("two columns");
            format!("{u},{}", y.parse::<f64>().expect("a number") * 1e-300)
        })
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let train = fx.write_rows("tiny.csv", "u,y", &rows);
    fails_with(
        &fx.fit_on(&train, "u"),
        &[
            "tiny.csv: target column `y` is below 1e-150 in magnitude over the training rows \
             after the washout",
            "rescale the column",
        ],
    );
}

#[test]
fn errors_inside_the_task_table_name_their_line_and_field() {
    let fx = Fixture::new();
    let cases = [
        (
            "[reservoir]\nsize = 10\n\n[task]\nkind = \"narma10\"\ntrain = 100\ntest = 100\n",
            "line 4, column 1: missing field `task.seed`",
        ),
        (
            "[task]\nkind = \"narma10\"\ntrain = \"100\"\ntest = 100\nseed = 1\n",
            "line 3, column 9: invalid type: string \"100\", expected usize",
        ),
        (
            "[task]\nkind = \"narma10\"\ntrain = 100\ntest = 100\nseed = 1\nfoo = 2\n",
            "line 6, column 1: unknown field `task.foo`",
        ),
        (
            "[task]\ntrain = 100\n",
            "line 1, column 1: missing field `task.kind`",
        ),
        (
            "[task]\nkind = \"narma11\"\n",
            "line 2, column 8: unknown variant `narma11`",
        ),
        ("task = 5\n", "line 1, column 8: `task` must be a table"),
    ];
    for (i, (text, needle)) in cases.into_iter().enumerate() {
        let config = fx.write(&format!("task{i}.toml"), text);
        fails_with(
            &["run", &config, "--no-save"],
            &[&format!("task{i}.toml: {needle}")],
        );
    }
    let spike = fs::read_to_string(config("spike_classification.toml"))
        .expect("the shipped config")
        .replace("sample_ms = 80.0", "sample_ms = nan");
    let spike = fx.write("spike.toml", &spike);
    fails_with(
        &["run", &spike, "--no-save"],
        &["`task.sample_ms`: must be finite and >= onset_ms + pattern_ms (= 60 ms) (got NaN)"],
    );
}

/// Writes a NARMA-10 job config (1000 test rows, seed 1) with the given `train` line and
/// `[reservoir]` lines.
fn narma_config(fx: &Fixture, name: &str, train: &str, reservoir: &str) -> String {
    fx.write(
        name,
        &format!(
            "[task]\nkind = \"narma10\"\n{train}\ntest = 1000\nseed = 1\n\n[reservoir]\n{reservoir}\n"
        ),
    )
}
