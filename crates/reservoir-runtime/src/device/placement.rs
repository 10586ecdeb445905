//! Where each reservoir of a job goes: the device asked for, or under `auto` the one the cost
//! model expects to finish the job first, decided before any GPU is opened.

use gpu_reservoir::{DeviceInfo, GpuDevice, Startup};
use reservoir_core::{Par, Precision};

use super::cost::{cpu_seconds, gpu_seconds, Shape, Workload};
use super::name::Device;
use crate::error::{Result, RuntimeError};

/// Where a reservoir was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The CPU; with [`Device::Auto`], `fallback` says why no GPU was used.
    Cpu {
        /// Why `auto` did not pick a GPU (`None` when the CPU was asked for).
        fallback: Option<String>,
    },
    /// A GPU; with [`Device::Auto`], `reason` says why it was picked.
    Cuda {
        /// The GPU (the first, where the job spread over several).
        info: DeviceInfo,
        /// The ordinals of the other GPUs of this process the job spread over, if any.
        others: Vec<usize>,
        /// This process's rank and the number of processes, where it is one rank of a launch.
        rank: Option<(usize, usize)>,
        /// Why `auto` picked it (`None` when a GPU was asked for).
        reason: Option<String>,
    },
}

impl Placement {
    /// `cpu`, `cuda` / `cuda:N` for GPU N, `cuda:0,1` for a job spread over GPUs 0 and 1, and
    /// `cuda:1, rank 1 of 2` for the GPU of one rank of a launch.
    pub fn name(&self) -> String {
        match self {
            Placement::Cpu { .. } => "cpu".to_string(),
            Placement::Cuda {
                info, others, rank, ..
            } => {
                let gpus = if others.is_empty() {
                    Device::Cuda(info.ordinal).to_string()
                } else {
                    let all: Vec<String> = std::iter::once(info.ordinal)
                        .chain(others.iter().copied())
                        .map(|ordinal| ordinal.to_string())
                        .collect();
                    format!("cuda:{}", all.join(","))
                };
                match rank {
                    Some((rank, world)) => format!("{gpus}, rank {rank} of {world}"),
                    None => gpus,
                }
            }
        }
    }
}

/// Chooses the device of each reservoir and holds the GPU once opened (on first use).
#[derive(Debug, Default)]
pub(super) struct Chooser {
    gpu: Option<std::result::Result<GpuDevice, String>>,
}

impl Chooser {
    /// What starting the GPU cost, phase by phase (`None` when no GPU was opened).
    pub(super) fn startup(&self) -> Option<Startup> {
        match &self.gpu {
            Some(Ok(device)) => Some(device.startup()),
            _ => None,
        }
    }

    /// The GPU to build a reservoir of `shape` on for `work` as `device` asks (`None` for the
    /// CPU), and the placement to record. `runs_on_gpu` says why this reservoir cannot run on
    /// a GPU, if it cannot; under `auto` the cost model decides before any GPU is opened.
    ///
    /// # Errors
    /// A GPU asked for that cannot run the reservoir or cannot be opened.
    pub(super) fn choose(
        &mut self,
        device: Device,
        runs_on_gpu: std::result::Result<(), String>,
        shape: Shape,
        work: Workload,
    ) -> Result<(Option<GpuDevice>, Placement)> {
        let on_gpu = |device: GpuDevice, reason| {
            let info = device.info().clone();
            let placement = Placement::Cuda {
                info,
                others: Vec::new(),
                rank: None,
                reason,
            };
            (Some(device), placement)
        };
        Ok(match device {
            Device::Cpu => (None, Placement::Cpu { fallback: None }),
            Device::Cuda(ordinal) => {
                let unusable = |reason| RuntimeError::Device {
                    device: device.to_string(),
                    reason,
                };
                runs_on_gpu.map_err(unusable)?;
                on_gpu(self.open(ordinal).map_err(unusable)?, None)
            }
            Device::Auto => {
                let cores = Par::all().threads();
                let cpu = cpu_seconds(shape, work, cores);
                let gpu = gpu_seconds(shape, work, matches!(self.gpu, Some(Ok(_))));
                let estimate = format!(
                    "estimated {cpu:.3} s on the CPU ({cores} threads) against {gpu:.3} s on a \
                     GPU with its start-up"
                );
                let chosen = runs_on_gpu
                    .and_then(|()| {
                        if cpu <= gpu {
                            Err(format!("the CPU is faster for this job ({estimate})"))
                        } else {
                            Ok(())
                        }
                    })
                    .and_then(|()| self.open(0));
                match chosen {
                    Ok(device) => on_gpu(
                        device,
                        Some(format!("the GPU is faster for this job ({estimate})")),
                    ),
                    Err(reason) => (
                        None,
                        Placement::Cpu {
                            fallback: Some(reason),
                        },
                    ),
                }
            }
        })
    }

    /// GPU `ordinal`, opened on first use; the reason it is not usable otherwise.
    fn open(&mut self, ordinal: usize) -> std::result::Result<GpuDevice, String> {
        self.gpu
            .get_or_insert_with(|| {
                // Most GPU jobs fit their readouts with cuBLAS on the device: its library
                // loads while the GPU opens (a job that makes no handle spends a thread's
                // time on it, not its own).
                gpu_reservoir::driver::preload_cublas();
                GpuDevice::shared(ordinal).map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// Why a reservoir computing in `precision` cannot run on a GPU, if it cannot.
pub(super) fn gpu_precision(precision: Precision) -> std::result::Result<(), String> {
    match precision {
        Precision::F32 => Ok(()),
        Precision::F64 => {
            Err("precision = \"f64\" runs on the CPU only; a GPU computes in f32".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_names_its_gpus_and_its_rank() {
        let info = DeviceInfo {
            ordinal: 1,
            name: "GPU".to_string(),
            compute_capability: (9, 0),
            total_memory: 1,
            multiprocessors: 1,
        };
        let placement = |others: Vec<usize>, rank| Placement::Cuda {
            info: info.clone(),
            others,
            rank,
            reason: None,
        };
        assert_eq!(placement(Vec::new(), None).name(), "cuda:1");
        assert_eq!(placement(vec![0, 2], None).name(), "cuda:1,0,2");
        assert_eq!(
            placement(Vec::new(), Some((1, 2))).name(),
            "cuda:1, rank 1 of 2"
        );
    }
}
