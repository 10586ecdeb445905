//! Page-locked host buffers that states are copied back through: a copy from device memory
//! into page-locked memory runs at the link's speed and does not block the host, so the host
//! reads one buffer while the device fills the other.

use cudarc::driver::{CudaEvent, CudaView, PinnedHostSlice};

use super::GpuDevice;
use crate::error::{DriverContext, Result};

/// Two page-locked buffers of f32, grown on demand and kept for the next run, each with the
/// event recorded after the copy into it (the device's buffers do not track their own work:
/// event tracking is off, so cudarc records nothing for them).
#[derive(Default)]
pub(crate) struct Staging {
    buffers: Option<[(PinnedHostSlice<f32>, CudaEvent); 2]>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging")
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl Staging {
    /// Values each buffer holds (0 before the first use).
    fn capacity(&self) -> usize {
        self.buffers.as_ref().map_or(0, |[(a, _), _]| a.len())
    }

    /// Makes each buffer hold at least `len` values.
    pub(crate) fn reserve(&mut self, device: &GpuDevice, len: usize) -> Result<()> {
        if self.capacity() >= len {
            return Ok(());
        }
        self.buffers = None;
        let alloc = || {
            // SAFETY: the buffer is only read after a copy into it (any bits are a valid f32);
            // flags 0: cached memory, which the host reads fast (write-combined memory it
            // does not).
            let buffer = unsafe {
                device
                    .context()
                    .alloc_pinned_with_flags::<f32>(len.max(1), 0)
            }
            .context("allocating page-locked host memory")?;
            let event = device
                .context()
                .new_event(None)
                .context("creating a copy event")?;
            Ok::<_, crate::GpuError>((buffer, event))
        };
        self.buffers = Some([alloc()?, alloc()?]);
        Ok(())
    }

    /// Queues the copy of `states` into buffer `slot` (0 or 1) on the device's stream.
    pub(crate) fn copy_back(
        &mut self,
        device: &GpuDevice,
        slot: usize,
        states: &CudaView<'_, f32>,
    ) -> Result<()> {
        let len = states.len();
        let (buffer, event) = self.slot(slot, len)?;
        let stream = device.stream();
        // Exactly the states' values: cudarc copies as many values as the destination holds,
        // and a buffer kept from a longer run (or grown by a run that then failed for want of
        // device memory) is longer than the states. The page-locked memory is the same, so
        // the copy is as asynchronous as one into the whole buffer.
        let host = buffer
            .as_mut_slice()
            .context("reaching a page-locked buffer")?;
        stream
            .memcpy_dtoh(states, &mut host[..len])
            .context("copying the states back")?;
        event
            .record(stream)
            .context("recording the end of the copy")
    }

    /// The first `len` values of buffer `slot`, once its copy has landed.
    pub(crate) fn read(&mut self, slot: usize, len: usize) -> Result<&[f32]> {
        let (buffer, event) = self.slot(slot, len)?;
        event
            .synchronize()
            .context("waiting for the states to arrive")?;
        let values = buffer
            .as_slice()
            .context("reading the page-locked buffer")?;
        Ok(&values[..len])
    }

    /// Buffer `slot` and its event, if it holds `len` values.
    fn slot(&mut self, slot: usize, len: usize) -> Result<&mut (PinnedHostSlice<f32>, CudaEvent)> {
        match self.buffers.as_mut().and_then(|b| b.get_mut(slot)) {
            Some(entry) if entry.0.len() >= len => Ok(entry),
            _ => Err(reservoir_core::ReservoirError::invalid(
                "copying states back",
                format!("no page-locked buffer {slot} of {len} values was reserved"),
            )
            .into()),
        }
    }
}
