//! `reservoir info`: what this machine has for the GPU backend (exits 0 without a GPU).

use gpu_reservoir::probe;
use serde::Serialize;

use reservoir_runtime::error::DataError;

use crate::error::Result;
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
    cpu_threads: usize,
}

/// Runs `reservoir info`.
pub fn run(args: &InfoArgs) -> Result<()> {
    let info = Info {
        support: probe(),
        cpu_threads: reservoir_core::Par::all().threads(),
    };
    let text = if args.json {
        let mut line = serde_json::to_string(&info).map_err(|e| DataError::Format {
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
    lines.push(format!("CPU threads  {}", info.cpu_threads));
    lines.push(match &s.problem {
        None => "GPU backend  usable (device = \"auto\" runs on GPU 0)".to_string(),
        Some(problem) => {
            format!("GPU backend  not usable: {problem}; device = \"auto\" runs on the CPU")
        }
    });
    lines.join("\n") + "\n"
}
