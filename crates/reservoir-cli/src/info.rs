//! `reservoir info`: what this machine has for the GPU backend (exits 0 without a GPU), or,
//! with `--meet`, whether the ranks of a launch can meet (no GPU needed).

use std::time::Instant;

use gpu_reservoir::probe;
use serde::Serialize;

use reservoir_runtime::{Launch, RuntimeError};

use crate::error::{CliError, Result};
use crate::output::write_stdout;
use crate::report::json_line;

/// Arguments of `reservoir info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Under torchrun, srun or mpirun, meet the other ranks as a job would (without GPUs)
    /// and say where and how fast.
    #[arg(long)]
    pub meet: bool,
}

#[derive(Serialize)]
struct Info {
    #[serde(flatten)]
    support: gpu_reservoir::GpuSupport,
    cpu_threads: usize,
}

/// Runs `reservoir info`.
pub fn run(args: &InfoArgs) -> Result<()> {
    if args.meet {
        return meet(args.json);
    }
    let info = Info {
        support: probe(),
        cpu_threads: reservoir_core::Par::all().threads(),
    };
    let text = if args.json {
        json_line(&info)?
    } else {
        describe(&info)
    };
    write_stdout(text.as_bytes())
}

/// What `reservoir info --meet` found: `null` fields without a launch.
#[derive(Default, Serialize)]
struct Met {
    launcher: Option<String>,
    rank: Option<usize>,
    world: Option<usize>,
    local_rank: Option<usize>,
    address: Option<String>,
    seconds: Option<f64>,
}

/// What rank 0 hands out in `reservoir info --meet`, checked by every rank.
const MEET_PAYLOAD: &[u8] = b"reservoir info --meet";

/// `reservoir info --meet`: meets the other ranks of the launch with [`MEET_PAYLOAD`] in place
/// of NCCL's unique id, and says where and in how long.
fn meet(json: bool) -> Result<()> {
    let launch =
        Launch::from_env().map_err(|e| CliError::core("reading the launcher's environment", e))?;
    let Some(launch) = launch else {
        let text = if json {
            json_line(&Met::default())?
        } else {
            "no launch: this process was not started as one of several by torchrun, srun or \
             mpirun\n"
                .to_string()
        };
        return write_stdout(text.as_bytes());
    };
    let started = Instant::now();
    let payload = launch
        .meet(|| Ok(MEET_PAYLOAD.to_vec()))
        .map_err(|e| CliError::core(format!("meeting the ranks under {}", launch.launcher), e))?;
    if payload != MEET_PAYLOAD {
        return Err(CliError::core(
            format!("meeting the ranks under {}", launch.launcher),
            RuntimeError::Meeting {
                address: launch.address.clone(),
                reason: "rank 0 handed out something other than `reservoir info --meet`'s payload"
                    .to_string(),
            },
        ));
    }
    let seconds = started.elapsed().as_secs_f64();
    let text = if json {
        json_line(&Met {
            launcher: Some(launch.launcher.to_string()),
            rank: Some(launch.rank),
            world: Some(launch.world),
            local_rank: Some(launch.local_rank),
            address: Some(launch.address.clone()),
            seconds: Some(seconds),
        })?
    } else {
        format!(
            "rank {} of {} ({}) met at {} in {seconds:.2} s\n",
            launch.rank, launch.world, launch.launcher, launch.address
        )
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
