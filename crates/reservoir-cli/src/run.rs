//! `reservoir run [CONFIG]`: run a task config end to end and report scores and timings.

use std::path::PathBuf;

use gpu_reservoir::{BackendFactory, Chosen};
use reservoir_core::ExperimentConfig;

use crate::backend;

use crate::error::{CliError, Result};
use crate::report::print_run;

/// The config `reservoir run` uses when none is given (the file `configs/default.toml`).
pub const DEFAULT_CONFIG: &str = include_str!("../../../configs/default.toml");

/// Arguments of `reservoir run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A config with a `[task]` table (see `configs/`); the embedded default when omitted.
    #[arg(value_name = "CONFIG.toml")]
    pub config: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `reservoir run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
                what: "config file",
                path: path.clone(),
                source,
            })?;
            ExperimentConfig::from_toml(&text, &path.display().to_string())
                .map_err(|e| CliError::config(path, e))?
        }
        None => ExperimentConfig::from_toml(DEFAULT_CONFIG, "<embedded default config>")
            .map_err(|e| CliError::core("the embedded default config", e))?,
    };
    let origin = args.config.as_ref().map_or_else(
        || "the embedded default config".to_string(),
        |p| p.display().to_string(),
    );
    let mut factory = BackendFactory::new(config.reservoir.backend);
    let result = config.run_with(&mut factory);
    let mut backends = Vec::new();
    for (kind, chosen) in &factory.chosen {
        if let Chosen::Cpu {
            fallback: Some(reason),
        } = chosen
        {
            backend::note_cpu_fallback(reason);
        }
        backends.push(format!("{kind}: {}", chosen.name()));
    }
    let backend_name = backends.join(", ");
    let report = result.map_err(|e| match &args.config {
        Some(path) => CliError::config(path, e),
        None => CliError::core(format!("running {origin}"), e),
    })?;
    print_run(&report, &backend_name, args.json)
}
