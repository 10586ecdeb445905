//! Picks the CPU or GPU reservoir for a config (`backend = "auto" | "cpu" | "cuda"`).

use std::sync::Once;

use gpu_reservoir::{build_reservoir, Chosen};
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirWeights};

use crate::error::{CliError, Result};

/// Builds the reservoir on the configured backend and returns it with the backend's name
/// (`cpu` or `cuda`). When `auto` falls back to the CPU, the reason is printed once on
/// standard error as a `note:` line.
pub fn build(
    config: &ReservoirConfig,
    weights: ReservoirWeights,
) -> Result<(Box<dyn Reservoir + Send>, &'static str)> {
    let (reservoir, chosen) = build_reservoir(config, weights)
        .map_err(|e| CliError::core("choosing the backend (reservoir.backend)", e.into()))?;
    if let Chosen::Cpu {
        fallback: Some(reason),
    } = &chosen
    {
        note_cpu_fallback(reason);
    }
    Ok((reservoir, chosen.name()))
}

/// Where each reservoir of a run went (`esn: cuda, lif: cpu`), saying first why `auto` fell
/// back to the CPU when it did.
pub fn describe(chosen: &[(&'static str, Chosen)]) -> String {
    let mut names = Vec::with_capacity(chosen.len());
    for (kind, chosen) in chosen {
        if let Chosen::Cpu {
            fallback: Some(reason),
        } = chosen
        {
            note_cpu_fallback(reason);
        }
        names.push(format!("{kind}: {}", chosen.name()));
    }
    names.join(", ")
}

/// Says once per process, as a `note:` line on standard error, why `auto` ran on the CPU.
pub fn note_cpu_fallback(reason: &str) {
    static SAID: Once = Once::new();
    SAID.call_once(|| eprintln!("note: running on the CPU: {reason}"));
}
