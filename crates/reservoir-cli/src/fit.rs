//! `reservoir fit`: train a ridge readout on a CSV file, score it on a test file that continues
//! the training data in time, and save the model; or, on a sequence dataset (a sequence
//! column, or a NumPy file), classify whole sequences or regress over many series
//! ([`crate::sequence_tasks`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::{s, ArrayView2};
use reservoir_core::fit::fit_ridge_with_progress;
use reservoir_core::metrics::{nrmse, r2, rmse};
use reservoir_core::ReservoirWeights;
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::memory::ensure_fit_fits;
use reservoir_runtime::model::Model;
use reservoir_runtime::{Devices, Dispatch, GemmMath, Launch, Workload};

use crate::data::{parse_column_list, read_inputs_targets};
use crate::device::{self, DeviceArg};
use crate::error::{CliError, CoreContext, Result};
use crate::output::{check_outputs, commit};
use crate::plot;
use crate::predict::predict_rows;
use crate::progress;
use crate::report::{print_fit, FitReport, TestScores};
use crate::run::{read_config, read_config_text};
use crate::sequence_tasks::{self, Goal, Job, SequenceArgs};

/// Fewest test rows that can be scored (NRMSE and R² need a target that varies).
const MIN_SCORED_ROWS: usize = 2;

/// Arguments of `reservoir fit`.
#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// TOML config with a `[reservoir]` and a `[readout]` table, and a `[features]` table for
    /// a sequence classifier (`input_size` comes from the data).
    #[arg(long, value_name = "CONFIG.toml")]
    pub config: PathBuf,
    /// Training data: CSV with a header row, or a NumPy `.npy`/`.npz` file of sequences.
    #[arg(long, value_name = "TRAIN")]
    pub train: PathBuf,
    /// Test data (same columns): for one series, rows continuing the training data in time,
    /// every row scored; for sequences, other sequences, each from the zero state.
    #[arg(long, value_name = "TEST")]
    pub test: Option<PathBuf>,
    /// Input columns, comma-separated (e.g. `u` or `x, y, z`); for a `.npz` file, the inputs
    /// array.
    #[arg(long, value_name = "COLS")]
    pub inputs: String,
    /// Target columns, comma-separated (regression); for a `.npz` file, the targets array.
    #[arg(long, value_name = "COLS")]
    pub targets: Option<String>,
    /// The column (CSV) or 1-D array (`.npz`) of each sequence's class: classify whole
    /// sequences instead of regressing targets.
    #[arg(long, value_name = "COL", conflicts_with = "targets")]
    pub label_column: Option<String>,
    #[command(flatten)]
    pub sequences: SequenceArgs,
    /// Save the fitted model here (written atomically).
    #[arg(long, value_name = "OUT.bin")]
    pub model: Option<PathBuf>,
    /// Draw a 1200×600 PNG, written atomically: prediction vs target over the first 500 rows
    /// of the test file (of its first series, for many series; one panel per target, at most
    /// 4), or the test confusion matrix of a classifier.
    #[arg(long, value_name = "OUT.png", requires = "test")]
    pub plot: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The GPUs a job on a GPU spreads over: a sequence classifier's sequences, or the rows of
    /// a large dense reservoir's W. `all`, or ordinals such as `0,1` (the GPU of `--device`
    /// among them). Overrides the config's `devices`; the default is the config's (one GPU
    /// without it).
    #[arg(long, value_name = "LIST", value_parser = device::parse_devices)]
    pub devices: Option<Devices>,
    /// The arithmetic of the product W·X where a GPU steps a batch of sequences together:
    /// `f32`, `tf32` or `f16` (tensor cores: faster, with a small drift from the f32 states;
    /// f16 needs a tanh reservoir). Overrides the config's `gpu_matmul` (default f32).
    #[arg(long, value_name = "MATH")]
    pub gpu_matmul: Option<GemmMath>,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// Runs `reservoir fit`.
pub fn run(args: &FitArgs) -> Result<()> {
    let inputs = parse_column_list("--inputs", &args.inputs)?;
    let targets = args
        .targets
        .as_deref()
        .map(|t| parse_column_list("--targets", t))
        .transpose()?;
    let mut files = vec![
        ("config file", args.config.as_path()),
        ("train file", &args.train),
    ];
    files.extend(args.test.as_deref().map(|t| ("test file", t)));
    let outputs: Vec<(&'static str, &Path)> = [("--model", &args.model), ("--plot", &args.plot)]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect();
    check_outputs(&outputs, &files)?;
    let goal = Goal::from_flags(targets.as_deref(), args.label_column.as_deref())?;
    match (goal, targets.as_deref()) {
        (Goal::Targets(_), Some(targets)) if !args.sequences.applies_to(&args.train) => {
            fit_one_series(args, inputs, targets.to_vec())
        }
        _ => {
            let mut config = read_config(&args.config)?;
            if let Some(math) = args.gpu_matmul {
                config = config
                    .with_gpu_matmul(math)
                    .map_err(|e| CliError::Argument {
                        flag: "--gpu-matmul",
                        message: format!("{}, got {math}", e.rule),
                    })?;
            }
            let launch = Launch::from_env()
                .map_err(|e| CliError::core("reading the launcher's environment", e))?;
            if launch.is_some() && !matches!(goal, Goal::Classes(_)) {
                return Err(CliError::Argument {
                    flag: "--label-column",
                    message: "a launch of several processes (WORLD_SIZE above 1) fits \
                              sequence classifiers only"
                        .to_string(),
                });
            }
            // Under a launch only rank 0 writes files and prints the report.
            let writes = launch.as_ref().is_none_or(|l| l.rank == 0);
            let devices = args.devices.clone().or_else(|| config.devices().cloned());
            let mut dispatch = Dispatch::new(args.device.or(config.device()))
                .with_devices(devices)
                .with_launch(launch)
                .with_batch_math(config.gpu_matmul());
            let job = Job {
                config_path: &args.config,
                config: &config,
                train: &args.train,
                test: args.test.as_deref(),
                inputs: &inputs,
                goal,
                sequences: &args.sequences,
                model: args.model.as_deref().filter(|_| writes),
                plot: args.plot.as_deref().filter(|_| writes),
                json: args.json,
            };
            sequence_tasks::fit(&job, &mut dispatch, writes)
        }
    }
}

/// `reservoir fit` on one series: the test file continues the training data in time.
fn fit_one_series(args: &FitArgs, inputs: Vec<String>, targets: Vec<String>) -> Result<()> {
    let config_text = read_config_text(&args.config)?;

    // Timed: config parse, then (after the untimed data reads) weights, run and ridge.
    let parse_started = Instant::now();
    let origin = args.config.display().to_string();
    let config = ExperimentConfig::from_toml(&config_text, &origin)
        .map_err(|e| CliError::config(&args.config, e))?;
    let reservoir_config = config
        .reservoir()
        .to_params()
        .input_size(inputs.len())
        .check()
        .map_err(|e| CliError::config(&args.config, e.prefixed("reservoir")))?;
    let parse_seconds = parse_started.elapsed().as_secs_f64();

    let (train_inputs, train_targets) =
        read_inputs_targets("train file", &args.train, &inputs, &targets)?;
    let test = match &args.test {
        Some(path) => Some((
            path,
            read_inputs_targets("test file", path, &inputs, &targets)?,
        )),
        None => None,
    };
    let n_train = train_inputs.nrows();
    let washout = config.readout().washout();
    if washout.saturating_add(MIN_SCORED_ROWS) > n_train {
        return Err(CliError::TooFewRows {
            path: args.train.clone(),
            message: format!(
                "`readout.washout` = {washout} (in {origin}) leaves {} of the {n_train} training rows; \
                 at least {MIN_SCORED_ROWS} must remain",
                n_train.saturating_sub(washout)
            ),
        });
    }
    check_varies(
        &args.train,
        &targets,
        train_targets.slice(s![washout.., ..]),
        "the training rows after the washout",
        "the readout cannot be fitted",
    )?;
    if let Some((path, (test_inputs, test_targets))) = &test {
        if test_inputs.nrows() < MIN_SCORED_ROWS {
            return Err(CliError::TooFewRows {
                path: path.to_path_buf(),
                message: format!(
                    "{} test row(s); at least {MIN_SCORED_ROWS} are needed to score the fit",
                    test_inputs.nrows()
                ),
            });
        }
        check_varies(
            path,
            &targets,
            test_targets.view(),
            "the test rows",
            "test NRMSE and R² are undefined",
        )?;
    }

    ensure_fit_fits(&reservoir_config, reservoir_config.size(), targets.len(), 0)
        .map_err(|e| CliError::config(&args.config, e))?;
    let fit_started = Instant::now();
    let (weights, _) = ReservoirWeights::generate(&reservoir_config)
        .map_err(|e| CliError::config(&args.config, e))?;
    let devices = args.devices.clone().or_else(|| config.devices().cloned());
    let mut dispatch = Dispatch::new(args.device.or(config.device())).with_devices(devices);
    let test_rows = test.as_ref().map_or(0, |(_, (inputs, _))| inputs.nrows());
    let mut reservoir = dispatch
        .echo_state(
            &reservoir_config,
            weights.clone(),
            Workload::single(n_train + test_rows),
        )
        .map_err(|e| CliError::core("building the reservoir", e))?;
    let backend = device::only_placement(&dispatch);
    let bar = progress::bar("training", n_train, "rows");
    let fit = fit_ridge_with_progress(
        reservoir.as_mut(),
        train_inputs.view(),
        train_targets.view(),
        config.readout(),
        &mut |done, total| progress::advance(&bar, done, total),
    );
    bar.finish_and_clear();
    let fit = fit.context(|| format!("fitting the readout on {}", args.train.display()))?;
    let fit_seconds = parse_seconds + fit_started.elapsed().as_secs_f64();

    let scores = match &test {
        Some((path, (test_inputs, test_targets))) => {
            let bar = progress::bar("testing", test_inputs.nrows(), "rows");
            let predictions = predict_rows(
                reservoir.as_mut(),
                &fit.readout,
                test_inputs.view(),
                &mut |done, total| progress::advance(&bar, done, total),
            );
            bar.finish_and_clear();
            let predictions = predictions.context(|| format!("predicting {}", path.display()))?;
            let scoring = || format!("scoring {}", path.display());
            let scores = TestScores {
                rows: test_inputs.nrows(),
                nrmse: nrmse(predictions.view(), test_targets.view()).context(scoring)?,
                rmse: rmse(predictions.view(), test_targets.view()).context(scoring)?,
                r2: r2(predictions.view(), test_targets.view()).context(scoring)?,
            };
            Some((scores, predictions))
        }
        None => None,
    };

    // Every output is staged only now, once the fit and its scores have succeeded, and put in
    // place together once all are staged.
    let mut outputs = Vec::new();
    if let (Some(plot), Some((_, predictions)), Some((path, (_, test_targets)))) =
        (&args.plot, &scores, &test)
    {
        let file = |p: &Path| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
        };
        let title = format!("fit on {}, tested on {}", file(&args.train), file(path));
        let staged = plot::series(
            plot,
            &title,
            &targets,
            predictions.view(),
            test_targets.view(),
        )?;
        outputs.push(("plot file", staged));
    }
    let scores = scores.map(|(scores, _)| scores);
    if let Some(path) = &args.model {
        let state = reservoir
            .state()
            .context(|| "reading the reservoir's final state".to_string())?;
        let model = Model {
            config: reservoir_config.clone(),
            weights,
            readout: fit.readout.clone(),
            state,
            input_columns: inputs.clone(),
            target_columns: targets.clone(),
        };
        let staged = model
            .stage(path)
            .map_err(|e| CliError::writing("model file", e))?;
        outputs.push(("model file", staged));
    }
    commit(outputs)?;

    let report = FitReport {
        train: args.train.display().to_string(),
        test: args.test.as_ref().map(|p| p.display().to_string()),
        inputs,
        targets,
        size: reservoir_config.size(),
        backend,
        washout,
        n_train,
        n_fit: fit.rows,
        n_test: scores.as_ref().map(|s| s.rows),
        train_nrmse: fit.train_nrmse,
        test_nrmse: scores.as_ref().map(|s| s.nrmse),
        test_rmse: scores.as_ref().map(|s| s.rmse),
        test_r2: scores.as_ref().map(|s| s.r2),
        fit_seconds,
        device_choice: device::choices(&dispatch),
        startup: device::startup(&dispatch),
        model: args.model.as_ref().map(|p| p.display().to_string()),
        plot: args.plot.as_ref().map(|p| p.display().to_string()),
    };
    print_fit(&report, args.json)
}

/// Smallest largest magnitude a target column may have: below it the squares the readout and
/// its scores sum underflow f64 (1e-150² = 1e-300, near the smallest normal f64), and a column
/// that varies would be reported as constant, or scored wrongly.
const MIN_TARGET_SCALE: f64 = 1e-150;

/// Fails, naming the column, when a target column holds one value over the given rows, or
/// values too small for their squares to be summed ([`MIN_TARGET_SCALE`]).
fn check_varies(
    path: &Path,
    names: &[String],
    targets: ArrayView2<'_, f64>,
    rows: &str,
    consequence: &'static str,
) -> Result<()> {
    for (name, column) in names.iter().zip(targets.columns()) {
        let first = column.first().copied();
        if column.iter().all(|&v| Some(v) == first) {
            return Err(CliError::ConstantTarget {
                path: path.to_path_buf(),
                column: name.clone(),
                rows: rows.to_string(),
                consequence,
            });
        }
        let scale = column.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if scale < MIN_TARGET_SCALE {
            return Err(CliError::TinyTarget {
                path: path.to_path_buf(),
                column: name.clone(),
                rows: rows.to_string(),
                scale,
                limit: MIN_TARGET_SCALE,
            });
        }
    }
    Ok(())
}
