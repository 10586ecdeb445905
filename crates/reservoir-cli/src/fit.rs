//! `reservoir fit`: train a ridge readout on a CSV file, score it on a test file that continues
//! the training data in time, and save the model; or, on a sequence dataset (a sequence
//! column, or a NumPy file), classify whole sequences or regress over many series
//! ([`crate::sequence_tasks`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use reservoir_core::ReservoirError;
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::data::read_inputs_targets;
use reservoir_runtime::jobs::fit::{fit_one_series, OneSeries, SeriesPart};
use reservoir_runtime::{Devices, Dispatch, GemmMath, Launch, RuntimeError};

use crate::columns::parse_column_list;
use crate::device::{self, DeviceArg};
use crate::error::{CliError, Result};
use crate::output::{check_outputs, commit};
use crate::plot;
use crate::progress::Stages;
use crate::report::{print_fit, FitReport};
use crate::run::{read_config, read_config_text};
use crate::sequence_tasks::{self, Goal, Job, SequenceArgs};

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
            fit_series_file(args, inputs, targets.to_vec())
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
                    message: "a launch of several processes (torchrun, srun or mpirun) fits \
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
            // The GPU opens while the files are read.
            let data_bytes = [Some(&args.train), args.test.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|path| std::fs::metadata(path).ok())
                .map(|m| m.len())
                .sum();
            let _opening = dispatch.open_early(data_bytes);
            sequence_tasks::fit(&job, &mut dispatch, writes)
        }
    }
}

/// `reservoir fit` on one series: the test file continues the training data in time.
fn fit_series_file(args: &FitArgs, inputs: Vec<String>, targets: Vec<String>) -> Result<()> {
    let config_text = read_config_text(&args.config)?;

    // Timed: config parse, then (after the untimed data reads) the fit.
    let parse_started = Instant::now();
    let origin = args.config.display().to_string();
    let config = ExperimentConfig::from_toml(&config_text, &origin)
        .map_err(|e| CliError::config(&args.config, e))?;
    let parse_seconds = parse_started.elapsed().as_secs_f64();

    let (train_inputs, train_targets) =
        read_inputs_targets("train file", &args.train, &inputs, &targets)?;
    let test = args
        .test
        .as_deref()
        .map(|path| read_inputs_targets("test file", path, &inputs, &targets).map(|t| (path, t)))
        .transpose()?;
    let job = OneSeries {
        config: &config,
        origin: &origin,
        input_columns: &inputs,
        target_columns: &targets,
        train: SeriesPart {
            source: &args.train,
            inputs: train_inputs.view(),
            targets: train_targets.view(),
        },
        test: test.as_ref().map(|(path, (inputs, targets))| SeriesPart {
            source: path,
            inputs: inputs.view(),
            targets: targets.view(),
        }),
    };
    let devices = args.devices.clone().or_else(|| config.devices().cloned());
    let mut dispatch = Dispatch::new(args.device.or(config.device())).with_devices(devices);
    let mut stages = Stages::default();
    let outcome = fit_one_series(&job, &mut dispatch, &mut |stage, done, total| {
        stages.update(stage, done, total)
    });
    stages.clear();
    let outcome = outcome.map_err(|e| match e {
        RuntimeError::Core(ReservoirError::Config(source)) => CliError::Config {
            path: args.config.clone(),
            source,
        },
        other => CliError::core(
            format!("fitting the readout on {}", args.train.display()),
            other,
        ),
    })?;

    // Every output is staged only now, once the fit and its scores have succeeded, and put in
    // place together once all are staged.
    let mut outputs = Vec::new();
    if let (Some(plot), Some(predictions), Some((path, (_, test_targets)))) =
        (&args.plot, &outcome.test_predictions, &test)
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
    if let Some(path) = &args.model {
        let staged = outcome
            .model
            .stage(path)
            .map_err(|e| CliError::writing("model file", e))?;
        outputs.push(("model file", staged));
    }
    commit(outputs)?;

    let scores = outcome.test.as_ref();
    let report = FitReport {
        train: args.train.display().to_string(),
        test: args.test.as_ref().map(|p| p.display().to_string()),
        inputs,
        targets,
        size: outcome.model.architecture.reservoir().state_size(),
        backend: device::only_placement(&dispatch),
        washout: config.readout().washout(),
        n_train: train_inputs.nrows(),
        n_fit: outcome.fit_rows,
        n_test: scores.map(|s| s.rows),
        train_nrmse: outcome.train_nrmse,
        test_nrmse: scores.map(|s| s.nrmse),
        test_rmse: scores.map(|s| s.rmse),
        test_r2: scores.map(|s| s.r2),
        fit_seconds: parse_seconds + outcome.fit_seconds,
        device_choice: device::choices(&dispatch),
        startup: device::startup(&dispatch),
        model: args.model.as_ref().map(|p| p.display().to_string()),
        plot: args.plot.as_ref().map(|p| p.display().to_string()),
    };
    print_fit(&report, args.json)
}
