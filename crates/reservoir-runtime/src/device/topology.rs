//! The GPUs and processes a job spreads over: the GPUs `devices` lists beside the one the job
//! was placed on, and, under a launch, this process's GPU and its meeting with the other
//! ranks.

use gpu_reservoir::collective::{new_unique_id, UNIQUE_ID_BYTES};
use gpu_reservoir::{Collective, GpuDevice};

use super::launch::Launch;
use super::name::{Device, Devices};
use crate::error::{Result, RuntimeError};

/// The GPUs a job may spread over and the launch this process is a rank of.
#[derive(Debug, Default)]
pub(super) struct Topology {
    /// The GPUs listed (`None`: only the GPU the job is placed on).
    pub(super) devices: Option<Devices>,
    /// This process's launch (`None`: the only process).
    pub(super) launch: Option<Launch>,
}

impl Topology {
    /// The device a job asked for `device` runs on: under a launch, this process's GPU
    /// (`LOCAL_RANK`).
    ///
    /// # Errors
    /// A launch with the CPU asked for.
    pub(super) fn device(&self, device: Device) -> Result<Device> {
        let Some(launch) = &self.launch else {
            return Ok(device);
        };
        if device == Device::Cpu {
            return Err(RuntimeError::Device {
                device: device.to_string(),
                reason: "a launch of several processes runs on GPUs; use --device cuda".to_string(),
            });
        }
        Ok(Device::Cuda(launch.local_rank))
    }

    /// Meets the other ranks of the launch (NCCL's unique id from rank 0) and joins them in a
    /// collective of one GPU per process, `device` this process's.
    ///
    /// # Errors
    /// No launch; any error of the meeting or of NCCL.
    pub(super) fn join_launch(&self, device: &GpuDevice) -> Result<Collective> {
        let Some(launch) = &self.launch else {
            return Err(RuntimeError::from(reservoir_core::ReservoirError::invalid(
                "launch",
                "this process is not a rank of a launch",
            )));
        };
        let id = launch.meet(|| Ok(new_unique_id()?.to_vec()))?;
        let id: [u8; UNIQUE_ID_BYTES] =
            id.try_into().map_err(|id: Vec<u8>| RuntimeError::Meeting {
                address: launch.address.clone(),
                reason: format!("rank 0 sent {} bytes, not NCCL's unique id", id.len()),
            })?;
        Ok(Collective::process(device, launch.rank, launch.world, id)?)
    }

    /// The GPUs a job asked for `asked` and placed on `first` spreads over: `first`, then the
    /// others of `devices` (none without `devices`).
    ///
    /// # Errors
    /// A list that is empty, repeats a GPU or leaves out `first`.
    pub(super) fn listed_gpus(&self, asked: Device, first: &GpuDevice) -> Result<Vec<usize>> {
        let primary = first.info().ordinal;
        let mut ordinals = vec![primary];
        if let Some(devices) = &self.devices {
            let count = gpu_reservoir::probe().devices.len();
            let unusable = |reason| RuntimeError::Device {
                device: asked.to_string(),
                reason,
            };
            let listed = devices
                .ordinals(count)
                .map_err(|reason| unusable(format!("devices = {devices}: {reason}")))?;
            if !listed.contains(&primary) {
                return Err(unusable(format!(
                    "devices = {devices} leaves out GPU {primary}, where the job was placed; \
                     list it, or set device = \"cuda:N\" to one of the listed GPUs"
                )));
            }
            ordinals.extend(listed.into_iter().filter(|&o| o != primary));
        }
        Ok(ordinals)
    }
}
