//! The `--device` flag, and what the command line says about where a job ran.

use std::sync::Once;

use gpu_reservoir::Startup;
use reservoir_runtime::{Device, Devices, Dispatch, Placement};

/// The `--device` argument: where to run (overrides the config's `device`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeviceArg {
    /// Where to run: `auto` (the device expected to finish the job first: a GPU only when one
    /// is usable and the job is large enough to repay its start-up), `cpu`, `cuda` (GPU 0) or
    /// `cuda:N`. Overrides the config's `device`; the default is the config's (`auto` without
    /// one).
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    pub device: Option<Device>,
}

fn parse_device(text: &str) -> Result<Device, String> {
    text.parse()
}

/// The value of a `--devices` flag: `all`, or ordinals such as `0,1`.
pub fn parse_devices(text: &str) -> Result<Devices, String> {
    text.parse()
}

impl DeviceArg {
    /// The device asked for: the flag, else `configured`.
    pub fn or(&self, configured: Device) -> Device {
        self.device.unwrap_or(configured)
    }
}

/// Where each reservoir of a job went (`esn: cuda, lif: cpu`), saying first, once, why `auto`
/// chose the device it chose.
pub fn describe(dispatch: &Dispatch) -> String {
    let mut names = Vec::with_capacity(dispatch.placements().len());
    for (what, placement) in dispatch.placements() {
        if let Some(reason) = choice_reason(placement) {
            note_choice(&placement.name(), reason);
        }
        names.push(format!("{what}: {}", placement.name()));
    }
    names.join(", ")
}

/// Why `auto` chose the devices of the job, one line per reservoir (`esn: ...`), if it chose.
pub fn choices(dispatch: &Dispatch) -> Option<String> {
    let lines: Vec<String> = dispatch
        .placements()
        .iter()
        .filter_map(|(what, placement)| {
            choice_reason(placement).map(|reason| format!("{what}: {}: {reason}", placement.name()))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// Why `auto` put a reservoir where it did (`None` when the device was asked for).
fn choice_reason(placement: &Placement) -> Option<&str> {
    match placement {
        Placement::Cpu { fallback } => fallback.as_deref(),
        Placement::Cuda { reason, .. } => reason.as_deref(),
    }
}

/// What starting the GPU cost (`None` when the job opened none), after saying its notes (a
/// kernel cache that could not be used) once on standard error.
pub fn startup(dispatch: &Dispatch) -> Option<Startup> {
    let startup = dispatch.startup()?;
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        for note in &startup.notes {
            eprintln!("note: {note}");
        }
    });
    Some(startup)
}

/// Where the one reservoir of a job went (`cpu`, `cuda`, `cuda:1`), saying why `auto` fell
/// back to the CPU when it did.
pub fn only_placement(dispatch: &Dispatch) -> String {
    describe(dispatch);
    dispatch
        .placements()
        .last()
        .map_or_else(|| "cpu".to_string(), |(_, placement)| placement.name())
}

/// Says once per process, as a `note:` line on standard error, where `auto` ran and why.
fn note_choice(device: &str, reason: &str) {
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        let place = if device == "cpu" { "the CPU" } else { device };
        eprintln!("note: running on {place}: {reason}");
    });
}
