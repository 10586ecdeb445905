//! Launch plans for `esn_batch_tc.cu`: many sequences (or a sweep's lanes) through one
//! reservoir on the tensor cores, a whole chunk of steps in one cooperative launch.

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg};
use reservoir_core::ReservoirError;
use reservoir_kernels::esn_batch_tc::{
    self, GROUP, MAX_PADDED, PARTIAL_BYTES, ROWS, SLICE_BYTES, STATE_BYTES, THREADS,
};

use crate::driver::launch::{dim, fits};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, GpuError, Result};

/// Group counts per tile the kernel is built for, fewest first.
const GROUP_COUNTS: [usize; 3] = [1, 2, 4];

/// The kernels of `esn_batch_tc.cu`, one per group count of [`GROUP_COUNTS`].
#[derive(Debug)]
pub(crate) struct TensorCoreKernels {
    runs: [CudaFunction; 3],
}

impl KernelSet for TensorCoreKernels {
    const MODULE: reservoir_kernels::Module = esn_batch_tc::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            runs: [
                module.function(esn_batch_tc::RUN_1)?,
                module.function(esn_batch_tc::RUN_2)?,
                module.function(esn_batch_tc::RUN_4)?,
            ],
        })
    }
}

/// N padded to the kernel's shape: whole row blocks in each of the four k quarters (a multiple
/// of 256), or `None` beyond [`MAX_PADDED`].
fn padded(n: usize) -> Option<usize> {
    let padded = n.max(1).next_multiple_of(4 * ROWS);
    (padded <= MAX_PADDED).then_some(padded)
}

/// One launch's shape: `count` sequences from `first`, in tiles of
/// `GROUP_COUNTS[variant]` groups of [`GROUP`] sequences, each tile spread over the row blocks
/// of W (a block per SM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Launch {
    first: usize,
    count: usize,
    variant: usize,
    tiles: usize,
}

impl Launch {
    /// Groups per tile.
    fn groups(&self) -> usize {
        GROUP_COUNTS[self.variant]
    }

    /// Blocks of the launch.
    fn blocks(&self, row_blocks: usize) -> usize {
        self.tiles * row_blocks
    }

    /// Panel slices (16 sequences × 64 rows) of one step.
    fn slices(&self, row_blocks: usize) -> usize {
        self.tiles * self.groups() * row_blocks
    }
}

/// The launches that step `batch` sequences with `row_blocks` row blocks of W on `sms` SMs:
/// full launches of the most sequences that fit, then the rest. Each launch takes the fewest
/// groups per tile that fit: a block steps its groups one after another, so fewer groups a
/// tile (and more tiles) make a shorter step. `None` when not even one tile fits.
fn launches(batch: usize, row_blocks: usize, sms: usize) -> Option<Vec<Launch>> {
    let max_tiles = sms / row_blocks.max(1);
    let most_groups = GROUP_COUNTS[GROUP_COUNTS.len() - 1];
    let capacity = max_tiles * most_groups * GROUP;
    if capacity == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut first = 0;
    while first < batch {
        let count = capacity.min(batch - first);
        let (variant, tiles) = GROUP_COUNTS
            .iter()
            .map(|&g| count.div_ceil(g * GROUP))
            .enumerate()
            .find(|&(_, tiles)| tiles <= max_tiles)?;
        out.push(Launch {
            first,
            count,
            variant,
            tiles,
        });
        first += count;
    }
    Some(out)
}

/// Whether the tensor-core run takes `batch` sequences of `n` units in one launch on `sms` SMs.
/// Beyond one launch it was measured slower than the GEMM path (docs/decisions.md, "Other thresholds").
pub(crate) fn one_launch(n: usize, batch: usize, sms: usize) -> bool {
    padded(n)
        .and_then(|p| launches(batch, p / ROWS, sms))
        .is_some_and(|plan| plan.len() == 1)
}

/// Dynamic shared memory of a block with `groups` groups of `row_blocks` row blocks: the
/// groups' panels and f32 states, the warps' partial sums and a transaction barrier per group.
fn shared_bytes(groups: usize, row_blocks: usize) -> usize {
    groups * row_blocks * SLICE_BYTES + groups * STATE_BYTES + PARTIAL_BYTES + 8 * groups
}

/// W on the device for the tensor-core run: f16 bit patterns, zero-padded to P × P (P = N
/// padded by [`padded`]), with the device's shape limits.
#[derive(Debug)]
pub(crate) struct TensorCoreW {
    kernels: Arc<TensorCoreKernels>,
    w: CudaSlice<u16>,
    n: usize,
    padded: usize,
    sms: usize,
}

/// The scratch of the runs of one batch size: the f16 panels of two steps (for its largest
/// launch) and the ready flags of their slices.
pub(crate) struct TensorCoreScratch {
    batch: usize,
    panels: CudaSlice<u16>,
    flags: CudaSlice<u32>,
}

/// Why the tensor-core run cannot step a reservoir of `n` units on `device`, or `None` when
/// it can (the shape, the device and the kernels' shared memory and residency are checked;
/// the module is compiled and loaded on the way).
pub(crate) fn unsupported(device: &GpuDevice, n: usize) -> Result<Option<String>> {
    let capability = device.info().compute_capability;
    if capability != (9, 0) {
        return Ok(Some(format!(
            "it is built for compute capability 9.0 (sm_90a); this device has {}.{}",
            capability.0, capability.1
        )));
    }
    let Some(padded) = padded(n) else {
        return Ok(Some(format!(
            "it holds W in registers up to N = {MAX_PADDED}; here N = {n}"
        )));
    };
    if device.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? == 0 {
        return Ok(Some("this device has no cooperative launch".into()));
    }
    let row_blocks = padded / ROWS;
    let sms = device.info().multiprocessors.max(0) as usize;
    if sms < row_blocks {
        return Ok(Some(format!(
            "a tile needs {row_blocks} SMs; this device has {sms}"
        )));
    }
    // A driver whose compiler does not take the sm_90a PTX leaves the GEMM path, not an error.
    let kernels = match device.kernels::<TensorCoreKernels>() {
        Ok(kernels) => kernels,
        Err(GpuError::Compile { log, .. }) => {
            return Ok(Some(format!("its kernels do not compile here: {log}")))
        }
        Err(e) => return Err(e),
    };
    for (&groups, function) in GROUP_COUNTS.iter().zip(&kernels.runs) {
        let shared = shared_bytes(groups, row_blocks);
        if shared > device.allow_shared_memory(function)? {
            return Ok(Some(format!(
                "{shared} bytes of shared memory a block do not fit this device"
            )));
        }
        let resident = function
            .occupancy_max_active_blocks_per_multiprocessor(THREADS, shared, None)
            .context("reading the occupancy")?;
        if resident < 1 {
            return Ok(Some("a block of 384 threads does not fit an SM".into()));
        }
    }
    Ok(None)
}

/// The arguments of one tensor-core run over a chunk of `steps` steps of `batch` sequences of
/// `n` units: `x0` (B × N, sequence j at [j·N, (j + 1)·N)) in, `states` (steps × B × N, step t
/// of sequence j at (t·B + j)·N) out.
pub(crate) struct TensorCoreRun<'a> {
    pub drive: TensorCoreDrive<'a>,
    pub x0: CudaView<'a, f32>,
    pub states: &'a mut CudaSlice<f32>,
    pub batch: usize,
    pub steps: usize,
}

/// The drive of a run.
pub(crate) enum TensorCoreDrive<'a> {
    /// The many-sequence step: `drive` (steps × B × N) added to W·x, leak `leak` for all.
    Sequences { drive: CudaView<'a, f32>, leak: f32 },
    /// A sweep's lanes: `ρ_j·(W₁x)_j + b + s_j·v_t (+ noise_t)`, leak `a_j` (`lanes.cu`'s
    /// order), with v and the noise steps × N and the lanes' parameters B each.
    Lanes {
        input: CudaView<'a, f32>,
        bias: &'a CudaSlice<f32>,
        noise: Option<CudaView<'a, f32>>,
        radius: &'a CudaSlice<f32>,
        scaling: &'a CudaSlice<f32>,
        leak: &'a CudaSlice<f32>,
    },
}

impl TensorCoreW {
    /// W (N × N, row-major f16 bits) padded and uploaded, or `None` where [`unsupported`]
    /// says why not.
    pub(crate) fn upload(device: &GpuDevice, half: &[u16], n: usize) -> Result<Option<Self>> {
        fits(half.len(), n * n, "the f16 W")?;
        let Some(padded) = padded(n).filter(|_| half.len() == n * n) else {
            return Ok(None);
        };
        if unsupported(device, n)?.is_some() {
            return Ok(None);
        }
        let mut bits = vec![0u16; padded * padded];
        for (row, values) in bits.chunks_exact_mut(padded).zip(half.chunks_exact(n)) {
            row[..n].copy_from_slice(values);
        }
        Ok(Some(Self {
            kernels: device.kernels::<TensorCoreKernels>()?,
            w: device
                .stream()
                .clone_htod(&bits)
                .alloc_context::<u16>("uploading the padded f16 W", bits.len())?,
            n,
            padded,
            sms: device.info().multiprocessors.max(0) as usize,
        }))
    }

    /// Whether a run of `batch` sequences is one launch ([`one_launch`]).
    pub(crate) fn one_launch(&self, batch: usize) -> bool {
        one_launch(self.n, batch, self.sms)
    }

    /// The launches of a run of `batch` sequences.
    fn launches(&self, batch: usize) -> Result<Vec<Launch>> {
        launches(batch, self.padded / ROWS, self.sms).ok_or_else(|| {
            ReservoirError::invalid("tensor-core run", "no tile of W fits this device").into()
        })
    }

    /// The scratch of runs of `batch` sequences.
    pub(crate) fn scratch(&self, device: &GpuDevice, batch: usize) -> Result<TensorCoreScratch> {
        let row_blocks = self.padded / ROWS;
        let slices = self
            .launches(batch)?
            .iter()
            .map(|l| l.slices(row_blocks))
            .max()
            .unwrap_or(0)
            .max(1);
        let stream = device.stream();
        Ok(TensorCoreScratch {
            batch,
            panels: stream
                .alloc_zeros(2 * slices * GROUP * ROWS)
                .alloc_context::<u16>(
                    "allocating the tensor-core panels",
                    2 * slices * GROUP * ROWS,
                )?,
            flags: stream
                .alloc_zeros(slices)
                .alloc_context::<u32>("allocating the tensor-core flags", slices)?,
        })
    }

    /// Runs `run` on the device's stream with `scratch` (made for `run.batch` sequences): one
    /// cooperative launch per [`launches`] entry.
    pub(crate) fn run(
        &self,
        device: &GpuDevice,
        scratch: &mut TensorCoreScratch,
        run: TensorCoreRun<'_>,
    ) -> Result<()> {
        const WHAT: &str = "tensor-core run";
        let (n, b, steps) = (self.n, run.batch, run.steps);
        if b == 0 || steps == 0 {
            return Ok(());
        }
        if scratch.batch != b {
            return Err(ReservoirError::invalid(
                WHAT,
                format!("scratch made for {} sequences, run of {b}", scratch.batch),
            )
            .into());
        }
        fits(run.x0.len(), n * b, WHAT)?;
        fits(run.states.len(), steps * b * n, WHAT)?;
        match &run.drive {
            TensorCoreDrive::Sequences { drive, .. } => fits(drive.len(), steps * b * n, WHAT)?,
            TensorCoreDrive::Lanes {
                input,
                bias,
                noise,
                radius,
                scaling,
                leak,
            } => {
                fits(input.len(), steps * n, WHAT)?;
                fits(bias.len(), n, WHAT)?;
                if let Some(noise) = noise {
                    fits(noise.len(), steps * n, WHAT)?;
                }
                for len in [radius.len(), scaling.len(), leak.len()] {
                    fits(len, b, WHAT)?;
                }
            }
        }
        let row_blocks = self.padded / ROWS;
        let plan = self.launches(b)?;
        let (padded_i, n_i, b_i, steps_i) = (
            dim(self.padded, WHAT)?,
            dim(n, WHAT)?,
            dim(b, WHAT)?,
            dim(steps, WHAT)?,
        );
        let stream = device.stream();
        let null: u64 = 0;
        for launch in plan {
            let slices = launch.slices(row_blocks);
            fits(scratch.flags.len(), slices, WHAT)?;
            fits(scratch.panels.len(), 2 * slices * GROUP * ROWS, WHAT)?;
            stream
                .memset_zeros(&mut scratch.flags)
                .context("zeroing the tensor-core flags")?;
            let function = &self.kernels.runs[launch.variant];
            let first_i = dim(launch.first, WHAT)?;
            let mut builder = stream.launch_builder(function);
            builder.arg(&self.w).arg(&padded_i);
            let uniform_leak = match &run.drive {
                TensorCoreDrive::Sequences { drive, leak } => {
                    builder
                        .arg(drive)
                        .arg(&null)
                        .arg(&null)
                        .arg(&null)
                        .arg(&null)
                        .arg(&null);
                    *leak
                }
                TensorCoreDrive::Lanes {
                    input,
                    bias,
                    noise,
                    radius,
                    scaling,
                    leak,
                } => {
                    builder.arg(input).arg(*bias);
                    match noise {
                        Some(noise) => builder.arg(noise),
                        None => builder.arg(&null),
                    };
                    builder.arg(*radius).arg(*scaling).arg(*leak);
                    0.0
                }
            };
            builder
                .arg(&uniform_leak)
                .arg(&run.x0)
                .arg(&mut *run.states)
                .arg(&mut scratch.panels)
                .arg(&mut scratch.flags)
                .arg(&n_i)
                .arg(&b_i)
                .arg(&first_i)
                .arg(&steps_i);
            let config = LaunchConfig {
                grid_dim: (launch.blocks(row_blocks) as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: shared_bytes(launch.groups(), row_blocks) as u32,
            };
            // SAFETY: the arguments follow esn_batch_tc_G's signature: W is padded × padded
            // f16 (padded a multiple of 256, at most 1024); x0 holds B·N values, states and a
            // sequence drive steps·B·N, a lane drive and noise steps·N, b N and the lanes'
            // parameters B (checked above); the unused pointers are null. The launch's
            // sequences [first, first + tiles·groups·16) are within the kernel's guard against
            // B; the panels hold two steps of its tiles·groups·row-blocks slices of 16 × 64
            // f16 values and the flags one u32 per slice, zeroed just above. The shared memory
            // is the kernel's layout, within the limit raised when W was uploaded
            // (`unsupported`), and blocks (tiles × row blocks) <= SMs with one block resident
            // per SM, which the cooperative launch checks and the kernel's waits on other
            // blocks need.
            unsafe { builder.launch_cooperative(config) }
                .context("launching the tensor-core run")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_pads_to_whole_quarters_of_row_blocks_up_to_1024() {
        assert_eq!(padded(1), Some(256));
        assert_eq!(padded(256), Some(256));
        assert_eq!(padded(300), Some(512));
        assert_eq!(padded(1000), Some(1024));
        assert_eq!(padded(1024), Some(1024));
        assert_eq!(padded(1025), None);
    }

    #[test]
    fn batches_take_the_fewest_groups_that_fit_and_split_beyond_the_device() {
        // N = 1000 on 132 SMs: 16 row blocks, 8 tiles.
        let shape = |b: usize| -> Vec<(usize, usize, usize, usize)> {
            launches(b, 16, 132)
                .expect("fits")
                .iter()
                .map(|l| (l.first, l.count, l.groups(), l.tiles))
                .collect()
        };
        assert_eq!(shape(5), [(0, 5, 1, 1)]);
        assert_eq!(shape(64), [(0, 64, 1, 4)]);
        assert_eq!(shape(128), [(0, 128, 1, 8)]);
        assert_eq!(shape(129), [(0, 129, 2, 5)]);
        assert_eq!(shape(256), [(0, 256, 2, 8)]);
        assert_eq!(shape(512), [(0, 512, 4, 8)]);
        assert_eq!(shape(600), [(0, 512, 4, 8), (512, 88, 1, 6)]);
        for b in [1, 100, 512, 1000, 4097] {
            let plan = launches(b, 16, 132).expect("fits");
            assert_eq!(plan.iter().map(|l| l.count).sum::<usize>(), b);
            for l in &plan {
                assert!(l.blocks(16) <= 132, "{l:?}");
                assert!(l.tiles * l.groups() * GROUP >= l.count, "{l:?}");
            }
        }
        // N <= 256 on the same device: 4 row blocks, 33 tiles.
        assert_eq!(launches(2112, 4, 132).expect("fits").len(), 1);
        // A device with fewer SMs than row blocks runs nothing.
        assert_eq!(launches(8, 16, 8), None);
        assert!(one_launch(1000, 512, 132) && !one_launch(1000, 513, 132));
        assert!(one_launch(100, 2112, 132) && !one_launch(100, 2113, 132));
        assert!(!one_launch(2000, 1, 132));
    }

    #[test]
    fn the_largest_block_fits_hoppers_shared_memory() {
        // 227 KiB a block on compute capability 9.0.
        assert_eq!(shared_bytes(4, 16), 4 * 16 * 2048 + 4 * 4096 + 18432 + 32);
        assert!(shared_bytes(4, 16) <= 227 * 1024);
    }
}
