//! `reservoir run [CONFIG]`: run a task config end to end, report scores and timings, and
//! optionally save the trained model and draw a plot.

use std::path::{Path, PathBuf};

use reservoir_core::detection::PatternDetector;
use reservoir_runtime::config::{ExperimentConfig, TaskConfig};
use reservoir_runtime::error::DataError;
use reservoir_runtime::files::Staged;
use reservoir_runtime::jobs::run::{run_full, RunHooks, RunOutcome, TrainedModel};
use reservoir_runtime::{Dispatch, Launch};

use crate::device::{self, DeviceArg};
use crate::error::{CliError, CoreContext, Result};
use crate::output::{check_outputs, commit};
use crate::plot;
use crate::progress::Stages;
use crate::report::print_run;

/// The config `reservoir run` uses when none is given (`default.toml` beside this crate's
/// sources; `configs/default.toml` in the repository links to it).
pub const DEFAULT_CONFIG: &str = include_str!("../default.toml");

/// Arguments of `reservoir run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A config with a `[task]` table (see `configs/`); the embedded default when omitted.
    #[arg(value_name = "CONFIG.toml")]
    pub config: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub device: DeviceArg,
    /// Save the trained model here (written atomically). Without it the model goes to
    /// `<config name>-model.bin` (`reservoir-model.bin` for the embedded default) in the current
    /// directory, unless --no-save. narma10 and mackey_glass save the echo-state readout as `reservoir fit` does (input
    /// column `u` or `x`, target `y` or `x_next`, as `reservoir generate` names them; state
    /// after the test rows), ready for `reservoir predict`; spike_classification saves the
    /// echo-state classifier (reservoir with input_size = channels, weights, readout, state,
    /// task options); memory_capacity trains no single model (nothing is saved; asking for
    /// one is an error).
    #[arg(long, value_name = "OUT.bin", conflicts_with = "no_save")]
    pub model: Option<PathBuf>,
    /// Do not save the trained model.
    #[arg(long)]
    pub no_save: bool,
    /// Draw a 1200×600 PNG (written atomically): prediction vs target over the first 500 test
    /// rows (narma10, mackey_glass), or a spike raster of test sample 0 with its planted
    /// template's spikes and the detections (spike_classification).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
}

/// Largest config file read: far above any real config, and a bound on what a wrong path
/// (`/dev/zero`, a data file) can make the command read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads and checks the config file at `path`: a read error names the file, a rule broken
/// names the file and the field.
pub fn read_config(path: &Path) -> Result<ExperimentConfig> {
    let text = read_config_text(path)?;
    ExperimentConfig::from_toml(&text, &path.display().to_string())
        .map_err(|e| CliError::config(path, e))
}

/// The text of the config file at `path`, at most [`MAX_CONFIG_BYTES`].
///
/// # Errors
/// The file cannot be read, is not UTF-8, or is larger than the bound.
pub fn read_config_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let read_error = |source| DataError::Read {
        what: "config file",
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: a FIFO without a writer would block, a directory reads as an
    // I/O error.
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_file() {
        return Err(read_error(std::io::Error::other(if metadata.is_dir() {
            "is a directory, not a TOML file"
        } else {
            "not a regular file (a config is a TOML file)"
        }))
        .into());
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text))
        .map_err(read_error)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(read_error(std::io::Error::other(format!(
            "larger than {} KiB, which no config is",
            MAX_CONFIG_BYTES / 1024
        )))
        .into());
    }
    Ok(text)
}

/// Runs `reservoir run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let launch =
        Launch::from_env().map_err(|e| CliError::core("reading the launcher's environment", e))?;
    // Under a launch every rank runs the job (a large reservoir split over them); rank 0 alone
    // writes and prints.
    let writes = launch.as_ref().is_none_or(|l| l.rank == 0);
    let model_path = model_path(args).filter(|_| writes);
    let plot = args.plot.as_ref().filter(|_| writes);
    let outputs: Vec<(&'static str, &Path)> = [("--model", model_path.as_ref()), ("--plot", plot)]
        .into_iter()
        .filter_map(|(flag, p)| p.map(|p| (flag, p.as_path())))
        .collect();
    let inputs: Vec<(&str, &Path)> = args
        .config
        .iter()
        .map(|c| ("config file", c.as_path()))
        .collect();
    check_outputs(&outputs, &inputs)?;
    let config = match &args.config {
        Some(path) => read_config(path)?,
        None => ExperimentConfig::from_toml(DEFAULT_CONFIG, "<embedded default config>")
            .map_err(|e| CliError::core("the embedded default config", e))?,
    };
    let memory_capacity = matches!(config.task(), Some(TaskConfig::MemoryCapacity { .. }));
    if memory_capacity {
        for (flag, given) in [
            ("--model", args.model.is_some()),
            ("--plot", args.plot.is_some()),
        ] {
            if given {
                return Err(CliError::Argument {
                    flag,
                    message: "memory_capacity fits one readout per delay: it has no single \
                              model to save or prediction to plot"
                        .into(),
                });
            }
        }
    }
    let origin = args.config.as_ref().map_or_else(
        || "the embedded default config".to_string(),
        |p| p.display().to_string(),
    );
    let mut dispatch = Dispatch::new(args.device.or(config.device()))
        .with_devices(config.devices().cloned())
        .with_launch(launch)
        .with_batch_math(config.gpu_matmul());
    let mut stages = Stages::default();
    let result = {
        let mut progress = |stage: &str, done, total| {
            if writes {
                stages.update(stage, done, total);
            }
        };
        let mut hooks = RunHooks {
            progress: Some(&mut progress),
            keep_model: model_path.is_some() && !memory_capacity,
        };
        run_full(&config, &mut dispatch, &mut hooks)
    };
    stages.clear();
    let backend_name = device::describe(&dispatch);
    let startup = device::startup(&dispatch);
    let device_choice = device::choices(&dispatch);
    let outcome = result.map_err(|e| match &args.config {
        Some(path) => CliError::config(path, e),
        None => CliError::core(format!("running {origin}"), e),
    })?;
    if !writes {
        return Ok(());
    }
    // Staged once the run has succeeded, put in place together once all are staged.
    let (mut saved, mut outputs) = (Vec::new(), Vec::new());
    if let (Some(path), false) = (&model_path, memory_capacity) {
        outputs.push(("model file", stage_model(path, outcome.model.as_ref())?));
        saved.push(("model", path.display().to_string()));
    }
    if let Some(path) = plot {
        outputs.push(("plot file", draw(path, &config, &outcome)?));
        saved.push(("plot", path.display().to_string()));
    }
    commit(outputs)?;
    print_run(
        &outcome.report,
        &backend_name,
        device_choice.as_deref(),
        startup.as_ref(),
        &saved,
        args.json,
    )
}

/// Where the model goes: `--model`, else `<config stem>-model.bin` (`reservoir-model.bin` for
/// the embedded default) in the current directory, else nowhere with `--no-save`.
fn model_path(args: &RunArgs) -> Option<PathBuf> {
    if args.no_save {
        return None;
    }
    if let Some(path) = &args.model {
        return Some(path.clone());
    }
    let stem = args
        .config
        .as_ref()
        .and_then(|p| p.file_stem())
        .map_or_else(
            || "reservoir".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
    Some(PathBuf::from(format!("{stem}-model.bin")))
}

/// The run's model, staged for `path`.
fn stage_model(path: &Path, model: Option<&TrainedModel>) -> Result<Staged> {
    match model {
        Some(TrainedModel::Series(model)) => model.stage(path),
        Some(TrainedModel::SpikeClassifier(model)) => model.stage(path),
        None => {
            return Err(CliError::Argument {
                flag: "--model",
                message: "this task trained no model to save".into(),
            })
        }
    }
    .map_err(|e| CliError::writing("model file", e))
}

/// Draws the run's plot (staged for `path`): prediction vs target for a series task, a raster
/// for the spike task.
fn draw(path: &Path, config: &ExperimentConfig, outcome: &RunOutcome) -> Result<Staged> {
    let nothing = || CliError::Argument {
        flag: "--plot",
        message: format!("task {} left nothing to plot", outcome.report.task),
    };
    if let Some(series) = &outcome.test_series {
        let column = if outcome.report.task == "narma10" {
            "y"
        } else {
            "x_next"
        };
        return plot::series(
            path,
            &outcome.report.task,
            &[column.to_string()],
            series.predictions.view(),
            series.targets.view(),
        );
    }
    let (Some(data), Some(TaskConfig::SpikeClassification(options))) =
        (&outcome.spike_data, config.task())
    else {
        return Err(nothing());
    };
    let (index, sample) = (0, data.test.first().ok_or_else(nothing)?);
    let template = data.templates.get(sample.label).ok_or_else(nothing)?;
    let detections = PatternDetector::new(data.templates.clone(), *config.detector())
        .and_then(|detector| detector.detect(&sample.pattern))
        .context(|| format!("detecting the templates in test sample {index}"))?;
    plot::raster(path, index, sample, template, options, &detections)
}
