//! What the benchmarks share: the JSON lines of their figures, their inputs, and timing on
//! the GPU with CUDA events (medians after a warm-up, start-up excluded).

use std::path::Path;

use cudarc::driver::sys::CUevent_flags;
use gpu_reservoir::{GpuDevice, GpuError, Result};
use ndarray::Array2;
use reservoir_core::lif::{LifConfig, LifWeights};
use reservoir_core::spectral::{Phases, SpectralOptions};
use reservoir_core::CsrMatrix;
use std::time::Duration;

/// A parameter of a measured case: a count, a real number or a label.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A whole number (N, B, steps, threads, …).
    Count(u64),
    /// A real number (a density, a connection probability).
    Real(f64),
    /// A word or phrase (a path, a kernel, an arithmetic).
    Label(String),
}

impl From<usize> for Param {
    fn from(count: usize) -> Self {
        Param::Count(count as u64)
    }
}

impl From<f64> for Param {
    fn from(real: f64) -> Self {
        Param::Real(real)
    }
}

impl From<&str> for Param {
    fn from(label: &str) -> Self {
        Param::Label(label.to_string())
    }
}

impl From<String> for Param {
    fn from(label: String) -> Self {
        Param::Label(label)
    }
}

impl Param {
    fn json(&self) -> String {
        match self {
            Param::Count(count) => count.to_string(),
            Param::Real(real) if real.is_finite() => real.to_string(),
            Param::Real(real) => quoted(&real.to_string()),
            Param::Label(label) => quoted(label),
        }
    }
}

/// Prints a benchmark program's figures as JSON lines, one per figure, beside its tables.
/// The format, and how the lines become `docs/benchmarks.md`, is documented in
/// `benches/report.py`.
pub struct Recorder {
    bench: &'static str,
    gpu: Option<String>,
    cpu: String,
    command: String,
}

impl Recorder {
    /// The recorder of the program `bench` running on `gpu` (the model name the driver reports;
    /// `None` when the program uses no GPU). The CPU and the command line are this process's.
    pub fn new(bench: &'static str, gpu: Option<String>) -> Self {
        Recorder {
            bench,
            gpu,
            cpu: host_cpu(),
            command: command_line(bench),
        }
    }

    /// Prints `value` (rounded to 4 significant digits) of `metric` in `unit` for `case`. A value
    /// that is not finite (a mode the device does not have) is left out.
    pub fn figure(&self, case: &[(&str, Param)], metric: &str, value: f64, unit: &str) {
        if !value.is_finite() {
            return;
        }
        let case: Vec<String> = case
            .iter()
            .map(|(key, param)| format!("{}: {}", quoted(key), param.json()))
            .collect();
        let gpu = self
            .gpu
            .as_deref()
            .map_or_else(|| "null".to_string(), quoted);
        println!(
            "{{\"bench\": {}, \"case\": {{{}}}, \"metric\": {}, \"value\": {}, \"unit\": {}, \
             \"gpu\": {gpu}, \"cpu\": {}, \"command\": {}}}",
            quoted(self.bench),
            case.join(", "),
            quoted(metric),
            significant(value),
            quoted(unit),
            quoted(&self.cpu),
            quoted(&self.command),
        );
    }
}

/// `value` rounded to 4 significant digits: what a figure in a table needs, and no noise.
fn significant(value: f64) -> f64 {
    format!("{value:.3e}").parse().unwrap_or(value)
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The CPU as the kernel reports it (`/proc/cpuinfo`): its model name and how many logical
/// CPUs it has, e.g. `Intel(R) Xeon(R) Processor @ 2.50GHz, 2 cores`.
fn host_cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map_or("unknown CPU", |v| {
            v.trim_start_matches([' ', '\t', ':']).trim()
        });
    let listed = info.lines().filter(|l| l.starts_with("processor")).count();
    let cores = if listed > 0 {
        listed
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    format!("{model}, {cores} cores")
}

/// The command that repeats this run: the program as `cargo build --release` leaves it, and
/// this process's arguments, quoted for a POSIX shell where they need it.
fn command_line(bench: &str) -> String {
    let mut args = std::env::args();
    let program = args
        .next()
        .and_then(|path| {
            Path::new(&path)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| bench.to_string());
    let mut words = vec![format!("target/release/{program}")];
    words.extend(args.map(|arg| shell_word(&arg)));
    words.join(" ")
}

/// `word` as one word of a POSIX shell command.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `LifWeights::generate` (the spectral estimate on the CPU), with each phase's time.
///
/// # Errors
/// As `LifWeights::generate`.
pub fn lif_weights_phased(
    config: &LifConfig,
) -> reservoir_core::Result<(LifWeights, Vec<(&'static str, Duration)>)> {
    let mut phases = Vec::new();
    let estimate = |w: &CsrMatrix<f64>, options: &SpectralOptions, phases: &mut dyn Phases| {
        w.spectral_radius_with(options, phases)
    };
    let weights = LifWeights::generate_with(config, estimate, &mut phases)?;
    Ok((weights, phases))
}

/// Phases as a `reservoir_core::spectral::Phases` hook records them, on one line in the order
/// each first ended, a phase that ended more than once summed: `draw 1.234 s, checks 0.123 s, …`.
pub fn phase_line(phases: &[(&'static str, Duration)]) -> String {
    let mut summed: Vec<(&str, Duration)> = Vec::new();
    for &(name, spent) in phases {
        match summed.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, total)) => *total += spent,
            None => summed.push((name, spent)),
        }
    }
    let phases: Vec<String> = summed
        .iter()
        .map(|(name, spent)| format!("{name} {:.3} s", spent.as_secs_f64()))
        .collect();
    phases.join(", ")
}

/// A smooth deterministic 1-D input of `len` steps.
pub fn sine_input(len: usize) -> Array2<f64> {
    Array2::from_shape_fn((len, 1), |(t, _)| (t as f64 * 0.1).sin() * 0.5)
}

fn driver(context: &'static str) -> impl Fn(cudarc::driver::DriverError) -> GpuError {
    move |source| GpuError::Driver { context, source }
}

/// Median µs per step of `enqueue` (which queues `steps` steps on the device's stream), timed
/// with CUDA events over `repeats` runs after one untimed warm-up run.
pub fn median_micros_per_step(
    device: &GpuDevice,
    steps: usize,
    repeats: usize,
    mut enqueue: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let (ctx, stream) = (device.context(), device.stream());
    enqueue()?;
    let mut samples = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("creating an event"))?;
        start.record(stream).map_err(driver("recording an event"))?;
        enqueue()?;
        end.record(stream).map_err(driver("recording an event"))?;
        end.synchronize()
            .map_err(driver("waiting for the timed run"))?;
        let ms = start.elapsed_ms(&end).map_err(driver("reading an event"))?;
        samples.push(f64::from(ms) * 1e3 / steps.max(1) as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// Device-to-device copy bandwidth in GB/s (bytes read plus written), median of 5, over a
/// buffer of `bytes`: the floor a step that streams W from memory is compared with.
pub fn copy_bandwidth(device: &GpuDevice, bytes: usize) -> Result<f64> {
    let s = device.stream();
    let count = bytes / 4;
    let src = s
        .alloc_zeros::<f32>(count)
        .map_err(driver("allocating the copy source"))?;
    let mut dst = s
        .alloc_zeros::<f32>(count)
        .map_err(driver("allocating the copy target"))?;
    let micros = median_micros_per_step(device, 1, 5, || {
        s.memcpy_dtod(&src, &mut dst).map_err(driver("copying"))
    })?;
    Ok(2.0 * (count * 4) as f64 / (micros * 1e-6) / 1e9)
}
