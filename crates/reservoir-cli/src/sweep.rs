//! `reservoir sweep CONFIG`: run a config's hyper-parameter lanes and report the best; with
//! `--train`, on a sequence dataset, validated on folds of the training sequences, the best
//! then fitted on all of them and scored on `--test` ([`crate::sequence_tasks`]).

use std::path::PathBuf;

use reservoir_runtime::jobs::sweep::{run_sweep, SweepReport, SweepScore};
use reservoir_runtime::{Devices, Dispatch, GemmMath, Launch};

use crate::columns::parse_column_list;
use crate::device::{self, DeviceArg};
use crate::error::{CliError, Result};
use crate::output::check_outputs;
use crate::output::write_stdout;
use crate::report::{aligned, columns, json_line, lane_cells, lane_header, number, ridge};
use crate::run::read_config;
use crate::sequence_tasks::{self, Goal, Job, SequenceArgs};

/// Arguments of `reservoir sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// A config with a `[task]` table (narma10, mackey_glass or memory_capacity) and a
    /// `[sweep]` table of lists: `spectral_radius`, `leak_rate`, `input_scaling` (their
    /// Cartesian product gives the lanes), `ridge`, and `top`. Without a `[sweep]` table the
    /// base config is the only lane.
    #[arg(value_name = "CONFIG.toml")]
    pub config: PathBuf,
    /// Print one JSON object (every result, the failures, timings) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Show the K best results (default: the config's `[sweep] top`, itself 10 by default).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub top: Option<usize>,
    /// The GPUs the lanes spread over when the sweep runs on a GPU: `all`, or ordinals such
    /// as `0,1` (the GPU of `--device` among them). Overrides the config's `devices`; the
    /// default is the config's (one GPU without it).
    #[arg(long, value_name = "LIST", value_parser = device::parse_devices)]
    pub devices: Option<Devices>,
    /// The arithmetic of the lanes' GEMM on GPUs: `f32`, `tf32` or `f16` (tensor cores:
    /// faster, with a small drift from the f32 states; f16 needs a tanh reservoir). Overrides
    /// the config's `[sweep] gpu_matmul` (default f32).
    #[arg(long, value_name = "MATH", conflicts_with = "train")]
    pub gpu_matmul: Option<GemmMath>,
    /// Sweep on a sequence dataset instead of the config's `[task]`: its training file (CSV
    /// with a header row, or `.npy`/`.npz`). Hyper-parameters are validated on folds of these
    /// sequences only (`[sweep] folds`, default 5, or `validation`, a fraction held out).
    #[arg(long, value_name = "TRAIN", requires = "inputs")]
    pub train: Option<PathBuf>,
    /// The test file the best (lane, ridge) is scored on, once fitted on every training
    /// sequence; never seen by the search.
    #[arg(long, value_name = "TEST", requires = "train")]
    pub test: Option<PathBuf>,
    /// Input columns (or the `.npz` inputs array), comma-separated.
    #[arg(long, value_name = "COLS", requires = "train")]
    pub inputs: Option<String>,
    /// Target columns (or array): regression over many series.
    #[arg(long, value_name = "COLS", requires = "train")]
    pub targets: Option<String>,
    /// The label column (or array): classification of whole sequences.
    #[arg(
        long,
        value_name = "COL",
        requires = "train",
        conflicts_with = "targets"
    )]
    pub label_column: Option<String>,
    #[command(flatten)]
    pub sequences: SequenceArgs,
    /// Save the best model, fitted on every training sequence, here (written atomically).
    #[arg(long, value_name = "OUT.bin", requires = "train")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArg,
}

/// A sweep's JSON report: the report's fields, then what starting its first GPU cost.
#[derive(serde::Serialize)]
struct WithStartup<'a> {
    #[serde(flatten)]
    report: &'a SweepReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup: Option<gpu_reservoir::Startup>,
}

/// Runs `reservoir sweep`.
pub fn run(args: &SweepArgs) -> Result<()> {
    let mut config = read_config(&args.config)?;
    if let Some(top) = args.top {
        config = config.with_sweep_top(top).map_err(|e| CliError::Argument {
            flag: "--top",
            message: format!("{}, got {top}", e.rule),
        })?;
    }
    if let Some(math) = args.gpu_matmul {
        config = config
            .with_sweep_gpu_matmul(math)
            .map_err(|e| CliError::Argument {
                flag: "--gpu-matmul",
                message: format!("{}, got {math}", e.rule),
            })?;
    }
    if let (Some(_), Some(_)) = (&args.devices, &args.train) {
        return Err(CliError::Argument {
            flag: "--devices",
            message: "spreads the lanes of a config's [task] sweep; a sweep of sequences \
                      (--train) runs on one GPU"
                .to_string(),
        });
    }
    let launch =
        Launch::from_env().map_err(|e| CliError::core("reading the launcher's environment", e))?;
    if launch.is_some() && args.train.is_some() {
        return Err(CliError::Argument {
            flag: "--train",
            message: "a launch of several processes (torchrun, srun or mpirun) sweeps a config's \
                      [task]; a sweep of sequences runs in one process"
                .to_string(),
        });
    }
    // Under a launch every rank holds the whole sweep; rank 0 alone prints it.
    let prints = launch.as_ref().is_none_or(|l| l.rank == 0);
    let devices = args.devices.clone().or_else(|| config.devices().cloned());
    let mut dispatch = Dispatch::new(args.device.or(config.device()))
        .with_devices(devices)
        .with_launch(launch)
        .with_batch_math(config.gpu_matmul());
    if let Some(train) = &args.train {
        return sweep_sequences(args, &config, train, &mut dispatch);
    }
    let result = run_sweep(&config, &mut dispatch);
    device::describe(&dispatch);
    let startup = device::startup(&dispatch);
    let report = result.map_err(|e| CliError::config(&args.config, e))?;
    if !prints {
        return Ok(());
    }
    let text = if args.json {
        json_line(&WithStartup {
            report: &report,
            startup,
        })?
    } else {
        table(&report)
    };
    write_stdout(text.as_bytes())
}

/// `reservoir sweep --train`: the sweep of a sequence dataset.
fn sweep_sequences(
    args: &SweepArgs,
    config: &reservoir_runtime::config::ExperimentConfig,
    train: &std::path::Path,
    dispatch: &mut Dispatch,
) -> Result<()> {
    let inputs = parse_column_list("--inputs", args.inputs.as_deref().unwrap_or_default())?;
    let targets = args
        .targets
        .as_deref()
        .map(|t| parse_column_list("--targets", t))
        .transpose()?;
    if let Some(model) = &args.model {
        let mut inputs = vec![
            ("config file", args.config.as_path()),
            ("train file", train),
        ];
        inputs.extend(args.test.as_deref().map(|t| ("test file", t)));
        check_outputs(&[("--model", model)], &inputs)?;
    }
    let goal = Goal::from_flags(targets.as_deref(), args.label_column.as_deref())?;
    let job = Job {
        config_path: &args.config,
        config,
        train,
        test: args.test.as_deref(),
        inputs: &inputs,
        goal,
        sequences: &args.sequences,
        model: args.model.as_deref(),
        plot: None,
        json: args.json,
    };
    sequence_tasks::sweep(&job, dispatch)
}

/// The header, the `top` best results as columns, the failures and the timings.
fn table(report: &SweepReport) -> String {
    let (score_name, direction) = match report.score {
        SweepScore::ValidationNrmse => ("val NRMSE", "validation NRMSE, lower is better"),
        SweepScore::MemoryCapacity => ("val MC", "memory capacity, higher is better"),
        SweepScore::ValidationAccuracy => ("val accuracy", "validation accuracy, higher is better"),
    };
    let mut text = aligned(&[
        ("task".into(), report.task.clone()),
        ("reservoir size".into(), report.size.to_string()),
        (
            "backend".into(),
            match report.gpu_matmul {
                Some(math) => format!("{} ({math} GEMM)", report.backend),
                None => report.backend.clone(),
            },
        ),
        (
            "lanes".into(),
            format!(
                "{} × {} ridge values = {} readouts",
                report.lanes,
                report.ridges,
                report.lanes * report.ridges
            ),
        ),
        (
            "rows per lane".into(),
            format!(
                "{} ({} fitted, {} scored)",
                report.steps, report.train_rows, report.validation_rows
            ),
        ),
        ("score".into(), direction.into()),
    ]);
    let mut rows = vec![lane_header(&["train NRMSE", score_name])];
    for (rank, r) in report.best().iter().enumerate() {
        let mut row = lane_cells(rank, r.lane, &r.params, r.ridge);
        row.extend([number(r.train_nrmse), number(r.score)]);
        rows.push(row);
    }
    text.push('\n');
    text.push_str(&columns(&rows));
    text.push('\n');
    let t = &report.timings;
    let mut footer = vec![(
        "failures".to_string(),
        match report.failures.first() {
            None => "0".into(),
            Some(first) => format!(
                "{} (first: lane {}, ridge {}: {})",
                report.failures.len(),
                first.lane,
                ridge(first.ridge),
                first.error
            ),
        },
    )];
    footer.extend([
        (
            "run time".to_string(),
            format!(
                "{:.3} s ({:.0} lane-steps/s)",
                t.run_seconds, report.lane_steps_per_second
            ),
        ),
        (
            "total time".to_string(),
            format!("{:.3} s", t.total_seconds),
        ),
    ]);
    text.push_str(&aligned(&footer));
    text
}
