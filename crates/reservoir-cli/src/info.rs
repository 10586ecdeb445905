//! `reservoir info`: what this machine has for the GPU backend (exits 0 without a GPU).

use gpu_reservoir::{probe, GpuDevice, KernelSource};
use serde::Serialize;

use crate::error::{CliError, Result};
use crate::output::write_stdout;

/// Arguments of `reservoir info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Info {
    #[serde(flatten)]
    support: gpu_reservoir::GpuSupport,
    /// Where device 0's echo-state kernels came from, when a device could be opened.
    kernels: Option<String>,
    cpu_threads: usize,
}

/// Runs `reservoir info`.
pub fn run(args: &InfoArgs) -> Result<()> {
    let support = probe();
    let kernels = support.usable().then(|| match GpuDevice::shared(0) {
        Ok(device) => match device.kernel_source() {
            KernelSource::Ptx => "prebuilt PTX (kernels/ptx/neuromorphic_gemv.ptx)".to_string(),
            KernelSource::NvrtcFallback { reason } => {
                format!("NVRTC (the PTX was rejected: {reason})")
            }
        },
        Err(e) => format!("device 0 could not be opened: {e}"),
    });
    let info = Info {
        support,
        kernels,
        cpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let text = if args.json {
        let mut line = serde_json::to_string(&info).map_err(|e| CliError::Format {
            what: "the JSON report",
            message: e.to_string(),
        })?;
        line.push('\n');
        line
    } else {
        describe(&info)
    };
    write_stdout(text.as_bytes())
}

fn describe(info: &Info) -> String {
    let s = &info.support;
    let yes_no = |present: bool| if present { "found" } else { "not found" };
    let mut lines = vec![
        format!(
            "CUDA driver  {}",
            s.driver_version.map_or_else(
                || "not available".to_string(),
                |(major, minor)| format!("{major}.{minor}")
            )
        ),
        format!("NVRTC        {}", yes_no(s.nvrtc)),
        format!("cuBLAS       {}", yes_no(s.cublas)),
        format!("devices      {}", s.devices.len()),
    ];
    for d in &s.devices {
        lines.push(format!(
            "  [{}] {}  compute capability {}.{}  {:.1} GiB  {} SMs",
            d.ordinal,
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.total_memory as f64 / (1u64 << 30) as f64,
            d.multiprocessors
        ));
    }
    if let Some(kernels) = &info.kernels {
        lines.push(format!("kernels      {kernels}"));
    }
    lines.push(format!("CPU threads  {}", info.cpu_threads));
    lines.push(match &s.problem {
        None => "GPU backend  usable (backend = \"auto\" runs on the GPU)".to_string(),
        Some(problem) => {
            format!("GPU backend  not usable: {problem}; backend = \"auto\" runs on the CPU")
        }
    });
    lines.join("\n") + "\n"
}
