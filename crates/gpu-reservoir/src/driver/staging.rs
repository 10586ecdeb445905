//! Page-locked host buffers that states are copied back through, and that large uploads go
//! through: a copy between device memory and page-locked memory runs at the link's speed and
//! does not block the host, so the host reads (or fills) one buffer while the device fills (or
//! reads) the other.

use cudarc::driver::{
    CudaEvent, CudaSlice, CudaView, DeviceRepr, PinnedHostSlice, ValidAsZeroBits,
};
use rayon::prelude::*;

use super::GpuDevice;
use crate::error::{DriverContext, Result};

/// Bytes of each of the two page-locked buffers of [`upload`] (8 MiB): page-locking memory
/// costs about as much as copying it, so the buffers are small and the pieces many.
const UPLOAD_PIECE_BYTES: usize = 1 << 23;

/// `host` in a new device buffer. From two pieces of [`UPLOAD_PIECE_BYTES`] on it goes through
/// two page-locked buffers in turn, rayon's threads copying a piece into one while the device
/// reads the other: a copy from pageable memory is staged by the driver through small buffers
/// on one thread, at a fraction of the link's speed (a LIF network's W is gigabytes).
pub(crate) fn upload<T>(device: &GpuDevice, host: &[T], what: &'static str) -> Result<CudaSlice<T>>
where
    T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync,
{
    let stream = device.stream();
    let piece = (UPLOAD_PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    if host.len() < 2 * piece {
        return stream.clone_htod(host).alloc_context::<T>(what, host.len());
    }
    let mut uploaded = stream
        .alloc_zeros::<T>(host.len())
        .alloc_context::<T>(what, host.len())?;
    let context = device.context();
    let mut buffers = Vec::with_capacity(2);
    for _ in 0..2 {
        // SAFETY: a buffer is only read by a copy after a piece of `host` was written into it
        // (every bit pattern of T that `host` holds is valid).
        let buffer = unsafe { context.alloc_pinned::<T>(piece) }
            .context("allocating page-locked host memory")?;
        let event = context.new_event(None).context("creating a copy event")?;
        buffers.push((buffer, event));
    }
    for (k, source) in host.chunks(piece).enumerate() {
        let (buffer, event) = &mut buffers[k % 2];
        // The device has finished reading this buffer's previous piece.
        event
            .synchronize()
            .context("waiting for a page-locked buffer")?;
        let staged = &mut buffer
            .as_mut_slice()
            .context("reaching a page-locked buffer")?[..source.len()];
        staged
            .par_chunks_mut(1 << 16)
            .zip(source.par_chunks(1 << 16))
            .for_each(|(to, from)| to.copy_from_slice(from));
        let start = k * piece;
        stream
            .memcpy_htod(
                &*staged,
                &mut uploaded.slice_mut(start..start + source.len()),
            )
            .context(what)?;
        event
            .record(stream)
            .context("recording the end of a copy")?;
    }
    // The buffers are freed on return: their last copies must have landed.
    for (_, event) in &buffers {
        event.synchronize().context("waiting for the last copies")?;
    }
    Ok(uploaded)
}

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

impl GpuDevice {
    /// Uploads `values` (weights, generated in f64) rounded to f32; `what` names the copy in
    /// an error.
    pub(crate) fn upload_f32<'a>(
        &self,
        values: impl IntoIterator<Item = &'a f64>,
        what: &'static str,
    ) -> Result<CudaSlice<f32>> {
        let host: Vec<f32> = values.into_iter().map(|&v| v as f32).collect();
        upload(self, &host, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::test_gpu;

    /// Arrays of two and a half pieces (the staged path, with a partial last piece) and of less
    /// than two (the plain copy) arrive whole, in u32 and f64.
    #[test]
    fn staged_uploads_arrive_whole() {
        let Some(device) = test_gpu() else { return };
        let words = UPLOAD_PIECE_BYTES / 4;
        for len in [5 * words / 2, words + 3] {
            let host: Vec<u32> = (0..len as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let uploaded = upload(&device, &host, "test upload").expect("upload");
            let back = device.stream().clone_dtoh(&uploaded).expect("download");
            assert!(back == host, "{len} u32");
            let host: Vec<f64> = host.iter().map(|&v| f64::from(v) / 7.0).collect();
            let uploaded = upload(&device, &host[..len / 2], "test upload").expect("upload");
            let back = device.stream().clone_dtoh(&uploaded).expect("download");
            assert!(back == host[..len / 2], "{} f64", len / 2);
        }
    }
}
