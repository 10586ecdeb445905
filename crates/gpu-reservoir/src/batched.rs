//! Many independent sequences through one echo-state reservoir at once: the GPU's
//! `Reservoir::run_many`, one GEMM per step for all of them.

use std::sync::{Mutex, PoisonError};

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaEvent, CudaSlice, CudaView, CudaViewMut, PinnedHostSlice};
use ndarray::{s, Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use reservoir_core::features::SequenceFeatures;
use reservoir_core::{ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::driver::staging::Staging;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::features::SummaryRows;
use crate::gemm::{BatchKernel, BatchW, GemmMath};
use crate::ops::esn::{
    activation_code, add_features, elementwise, input_drive, to_f16, EsnKernels, FeatureChunk,
    Update,
};
use crate::ops::tensor_core::{TensorCoreDrive, TensorCoreRun, TensorCoreScratch};

mod batches;
mod summarized;

use batches::{features_limit, for_each_batch, BatchLimit, PADDED_BATCH_BYTES};
pub(crate) use summarized::DevicePlan;

/// Most bytes of one time chunk's drive and states (all sequences of a batch).
const CHUNK_BYTES: usize = 1 << 28;

/// The many-sequence engine of one reservoir: its W dense in the GEMM's operand type. The
/// states of B sequences are an N × B matrix X (column j = sequence j), and each step is
/// `X ← (1 − a)·X + a·f(W·X + D_t)`: one cuBLAS GEMM for W·X and one elementwise launch, or,
/// on the tensor cores ([`BatchKernel::TensorCore`]), a whole time chunk in one launch. The
/// drive D_t = b + W_in·u_t (+ noise) of every sequence and step of a time chunk is computed
/// up front.
#[derive(Debug)]
pub(crate) struct BatchEngine {
    w: BatchW,
    math: GemmMath,
    /// The host memory [`BatchEngine::run`] brings states back through, kept from run to run
    /// (page-locking memory costs about as much as copying it).
    host: Mutex<HostStates>,
    /// The device buffers of the last batch, with the shape they were made for: the next
    /// batch of that shape (every batch of a run but the last) reuses them rather than
    /// allocating hundreds of megabytes again.
    chunk_buffers: Mutex<Option<(ChunkShape, ChunkBuffers)>>,
}

/// What a batch's [`ChunkBuffers`] are sized by: N, K, B, the steps of a chunk, and whether
/// there is noise.
type ChunkShape = (usize, usize, usize, usize, bool);

/// What [`BatchEngine::step_batch`] does with each time chunk's states (on the device):
/// `(states, first step, steps)`.
type ChunkTaker<'a> = dyn FnMut(CudaView<'_, f32>, usize, usize) -> Result<()> + 'a;

/// The reservoir parts the engine shares with its single-sequence runs.
pub(crate) struct Shared<'a> {
    pub device: &'a GpuDevice,
    pub kernels: &'a EsnKernels,
    pub config: &'a ReservoirConfig,
    pub input: &'a CudaSlice<f32>,
    pub bias: &'a CudaSlice<f32>,
}

/// The buffers of one batch's time chunks, reused chunk after chunk.
struct ChunkBuffers {
    /// Two page-locked buffers the chunks' inputs are laid out in, in turn, each with the
    /// event recorded after its upload: the host fills one while the device reads the other.
    staged_inputs: [(PinnedHostSlice<f32>, CudaEvent); 2],
    /// The chunks run so far (which staged buffer is next).
    chunks: usize,
    u: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    noise: Option<CudaSlice<f32>>,
    states: CudaSlice<f32>,
    /// X after the last step of the previous chunk (zero before the first).
    state: CudaSlice<f32>,
    /// The GEMM's product W·X and, with f16 operands, X in f16 (step t reads `halves[t % 2]`).
    pre: Option<CudaSlice<f32>>,
    halves: Option<[CudaSlice<u16>; 2]>,
    /// The tensor-core run's scratch.
    tensor_core: Option<TensorCoreScratch>,
}

impl std::fmt::Debug for ChunkBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkBuffers")
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

impl BatchEngine {
    /// Uploads W for `math` and the kernel `kernel` resolves to ([`BatchW::upload`]).
    ///
    /// # Errors
    /// As [`BatchW::upload`].
    pub(crate) fn new(
        device: &GpuDevice,
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
        kernel: BatchKernel,
    ) -> Result<Self> {
        Ok(Self {
            w: BatchW::upload(device, config, weights, math, kernel, "batched reservoir")?,
            math,
            host: Mutex::new(HostStates::default()),
            chunk_buffers: Mutex::new(None),
        })
    }

    /// The arithmetic of the products.
    pub(crate) fn math(&self) -> GemmMath {
        self.math
    }

    /// The device's cuBLAS handle for this engine's arithmetic ([`GemmMath::blas`]).
    pub(crate) fn blas<'d>(&self, device: &'d GpuDevice) -> Result<&'d CudaBlas> {
        self.math.blas(device)
    }

    /// Runs `sequences` (checked: K columns, finite), each from the zero state, in batches of
    /// consecutive sequences, and hands each one's states to `visit` in order. With `noise`
    /// (the reservoir's noise stream), every sequence gets the draws a one-after-another run
    /// would give it.
    pub(crate) fn run(
        &self,
        shared: &Shared<'_>,
        sequences: &[ArrayView2<f64>],
        noise: Option<(&mut ChaCha8Rng, f64)>,
        visit: &mut dyn FnMut(usize, ArrayView2<f64>) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        let n = shared.config.size();
        // A batch's drive and states fit one time chunk on the device ([`CHUNK_BYTES`]), so that
        // it comes back whole (unless one sequence alone is longer).
        let limit = BatchLimit {
            max_sequences: usize::MAX,
            bytes_per_step: n * 8,
            padded_bytes_per_step: n * 8 * (PADDED_BATCH_BYTES / CHUNK_BYTES),
        };
        // A panic elsewhere while it was held leaves only buffers, refilled before each read.
        let mut host = self.host.lock().unwrap_or_else(PoisonError::into_inner);
        for_each_batch(sequences, limit, noise, n, |batch, first_index, noise| {
            self.run_batch(shared, batch, noise, first_index, &mut host, visit)
        })
    }

    /// The readout features of `sequences` (checked: K columns, finite, long enough for
    /// `features`), each run from the zero state: B × F rows, the features of each batch
    /// summed on the device chunk after chunk ([`crate::ops::esn::add_features`]) and only
    /// those sums copied back, then divided by their row counts in f64. `progress(done,
    /// total)` is called after each batch. Noise as in [`BatchEngine::run`].
    pub(crate) fn features(
        &self,
        shared: &Shared<'_>,
        sequences: &[ArrayView2<f64>],
        features: &SequenceFeatures,
        noise: Option<(&mut ChaCha8Rng, f64)>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        let n = shared.config.size();
        let total = sequences.len();
        let mut out = Array2::zeros((total, features.width(n)));
        let limit = features_limit(n, noise.is_some());
        for_each_batch(sequences, limit, noise, n, |batch, first_index, noise| {
            let rows = SummaryRows::new(
                features,
                features.summaries(),
                batch.iter().map(|s| s.nrows()),
                first_index,
            )?;
            let sums = self.batch_features(shared, batch, noise, &rows)?;
            let end = first_index + batch.len();
            rows.write(&sums, out.slice_mut(s![first_index..end, ..]))?;
            progress(end, total);
            Ok(())
        })?;
        Ok(out)
    }

    /// The device's sums of one batch's features (`rows` of its sequences): B × S × N values.
    fn batch_features(
        &self,
        shared: &Shared<'_>,
        batch: &[ArrayView2<f64>],
        noise: Option<&[Vec<f32>]>,
        rows: &SummaryRows,
    ) -> Result<Vec<f32>> {
        let (n, b, summaries) = (shared.config.size(), batch.len(), rows.summaries());
        let stream = shared.device.stream();
        let device_rows = stream
            .clone_htod(rows.pairs())
            .alloc_context::<i32>("uploading the summaries' rows", rows.pairs().len())?;
        let mut sums = stream
            .alloc_zeros::<f32>(b * summaries * n)
            .alloc_context::<f32>("allocating the feature sums", b * summaries * n)?;
        self.step_batch(shared, batch, noise, &mut |states, first, steps| {
            if !rows.touch(first, steps) {
                return Ok(());
            }
            let chunk = FeatureChunk {
                first,
                steps,
                batch: b,
                summaries,
                n,
            };
            add_features(
                shared.device,
                shared.kernels,
                &states,
                &device_rows.slice(..),
                &mut sums.slice_mut(..),
                chunk,
            )
        })?;
        stream
            .clone_dtoh(&sums)
            .context("copying the feature sums back")
    }

    /// One batch: time chunks of all its sequences stepped together; shorter sequences are
    /// padded with zero inputs, which cannot reach their earlier states. Each chunk's states
    /// come back through a page-locked buffer of `host` and are laid out per sequence (in f64)
    /// on rayon's threads; sequence j is handed to `visit` as `first_index + j`. A batch of one
    /// chunk is laid out a group of sequences at a time into the reused buffers of `host`
    /// (no fresh memory per sequence); a longer one keeps every sequence until its last chunk.
    fn run_batch(
        &self,
        shared: &Shared<'_>,
        batch: &[ArrayView2<f64>],
        noise: Option<&[Vec<f32>]>,
        first_index: usize,
        host: &mut HostStates,
        visit: &mut dyn FnMut(usize, ArrayView2<f64>) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        let (n, b) = (shared.config.size(), batch.len());
        let longest = batch.iter().map(|s| s.nrows()).max().unwrap_or(0);
        if longest == 0 {
            for j in 0..b {
                visit(first_index + j, Array2::zeros((0, n)).view())?;
            }
            return Ok(());
        }
        let one_chunk = chunk_steps(n, b, longest) == longest;
        let mut kept: Vec<Array2<f64>> = if one_chunk {
            Vec::new()
        } else {
            batch
                .iter()
                .map(|s| Array2::zeros((s.nrows(), n)))
                .collect()
        };
        let HostStates { staging, group } = host;
        self.step_batch(shared, batch, noise, &mut |states, first, steps| {
            staging.reserve(shared.device, states.len())?;
            staging.copy_back(shared.device, 0, &states)?;
            let chunk = staging.read(0, states.len())?;
            // Rows `first..end` of sequence j, at (t·B + j)·N in the chunk for step first + t.
            let lay_out = |j: usize, end: usize, out: &mut Array2<f64>| {
                for t in first..end.max(first) {
                    let row = &chunk[((t - first) * b + j) * n..][..n];
                    for (dst, &src) in out.row_mut(t).iter_mut().zip(row) {
                        *dst = f64::from(src);
                    }
                }
            };
            if !one_chunk {
                kept.par_iter_mut().enumerate().for_each(|(j, out)| {
                    let end = (first + steps).min(out.nrows());
                    lay_out(j, end, out)
                });
                return Ok(());
            }
            let size = rayon::current_num_threads().max(1);
            if group.len() < size || group.first().is_some_and(|g| g.nrows() < longest) {
                *group = (0..size).map(|_| Array2::zeros((longest, n))).collect();
            }
            for start in (0..b).step_by(size) {
                let members = start..(start + size).min(b);
                group
                    .par_iter_mut()
                    .zip(members.clone())
                    .for_each(|(out, j)| lay_out(j, batch[j].nrows(), out));
                for (out, j) in group.iter().zip(members) {
                    visit(first_index + j, out.slice(s![..batch[j].nrows(), ..]))?;
                }
            }
            Ok(())
        })?;
        for (j, states) in kept.iter().enumerate() {
            visit(first_index + j, states.view())?;
        }
        Ok(())
    }

    /// Steps every sequence of `batch` from the zero state over its longest length, in time
    /// chunks of [`chunk_steps`], and hands each chunk's states to `take` on the device with
    /// the chunk's first step and its steps: `steps × B × N` values, sequence j at step
    /// `first + t` at `(t·B + j)·N` (rows past a sequence's length are padding). `take` runs
    /// before the next chunk overwrites the states (anything it enqueues on the device's
    /// stream reads them first).
    fn step_batch(
        &self,
        shared: &Shared<'_>,
        batch: &[ArrayView2<f64>],
        noise: Option<&[Vec<f32>]>,
        take: &mut ChunkTaker<'_>,
    ) -> Result<()> {
        let (n, k, b) = (
            shared.config.size(),
            shared.config.input_size(),
            batch.len(),
        );
        let longest = batch.iter().map(|s| s.nrows()).max().unwrap_or(0);
        if longest == 0 {
            return Ok(());
        }
        let chunk = chunk_steps(n, b, longest);
        let shape = (n, k, b, chunk, noise.is_some());
        let cached = self
            .chunk_buffers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut buffers = match cached {
            // The tensor-core run's scratch is made per batch.
            Some((made_for, mut buffers)) if made_for == shape && buffers.tensor_core.is_none() => {
                // Every sequence starts from the zero state.
                shared
                    .device
                    .stream()
                    .memset_zeros(&mut buffers.state)
                    .context("clearing the batch's states")?;
                buffers
            }
            _ => self.buffers(shared, (n, k, b), chunk, noise.is_some())?,
        };
        for first in (0..longest).step_by(chunk) {
            let steps = chunk.min(longest - first);
            self.run_chunk(shared, &mut buffers, batch, noise, first, steps)?;
            take(buffers.states.slice(..steps * b * n), first, steps)?;
        }
        *self
            .chunk_buffers
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((shape, buffers));
        Ok(())
    }

    fn buffers(
        &self,
        shared: &Shared<'_>,
        (n, k, b): (usize, usize, usize),
        chunk: usize,
        noise: bool,
    ) -> Result<ChunkBuffers> {
        let s = shared.device.stream();
        let alloc = |len: usize, what| s.alloc_zeros::<f32>(len).alloc_context::<f32>(what, len);
        let state = alloc(n * b, "allocating the batch's states")?;
        let tensor_core = self.w.tensor_core_for(b);
        let gemm = tensor_core.is_none();
        let halves = match self.math {
            GemmMath::F16 if gemm => Some([
                s.alloc_zeros::<u16>(n * b)
                    .alloc_context::<u16>("allocating f16 states", n * b)?,
                s.alloc_zeros::<u16>(n * b)
                    .alloc_context::<u16>("allocating f16 states", n * b)?,
            ]),
            GemmMath::F16 | GemmMath::F32 | GemmMath::Tf32 => None,
        };
        let tensor_core = match tensor_core {
            Some(w) => Some(w.scratch(shared.device, b)?),
            None => None,
        };
        let context = shared.device.context();
        let staged = || -> Result<(PinnedHostSlice<f32>, CudaEvent)> {
            // SAFETY: a staged buffer is only read by a copy after its chunk was written.
            let buffer = unsafe { context.alloc_pinned::<f32>((chunk * b * k).max(1)) }
                .context("allocating page-locked input buffers")?;
            let event = context.new_event(None).context("creating a copy event")?;
            Ok((buffer, event))
        };
        Ok(ChunkBuffers {
            staged_inputs: [staged()?, staged()?],
            chunks: 0,
            u: alloc(chunk * b * k, "allocating the batch's inputs")?,
            drive: alloc(chunk * b * n, "allocating the batch's drive")?,
            noise: if noise {
                Some(alloc(chunk * b * n, "allocating the batch's noise")?)
            } else {
                None
            },
            states: alloc(chunk * b * n, "allocating the batch's states")?,
            state,
            pre: if gemm {
                Some(alloc(n * b, "allocating W·X")?)
            } else {
                None
            },
            halves,
            tensor_core,
        })
    }

    /// Steps `first..first + steps` of every sequence of the batch, from `buffers.state`.
    fn run_chunk(
        &self,
        shared: &Shared<'_>,
        buffers: &mut ChunkBuffers,
        batch: &[ArrayView2<f64>],
        noise: Option<&[Vec<f32>]>,
        first: usize,
        steps: usize,
    ) -> Result<()> {
        let (n, k, b) = (
            shared.config.size(),
            shared.config.input_size(),
            batch.len(),
        );
        let s = shared.device.stream();
        let (staged, uploaded) = &mut buffers.staged_inputs[buffers.chunks % 2];
        buffers.chunks += 1;
        // The device has read this buffer's previous chunk.
        uploaded
            .synchronize()
            .context("waiting for a page-locked input buffer")?;
        let u = &mut staged
            .as_mut_slice()
            .context("reaching a page-locked input buffer")?[..steps * b * k];
        // Row t·B + j of u (and of the drive) is sequence j at step first + t; past its end a
        // sequence's inputs are zero. Each step's rows are laid out on a thread of their own.
        u.par_chunks_mut((b * k).max(1))
            .enumerate()
            .for_each(|(t, rows)| {
                for (j, row) in rows.chunks_mut(k.max(1)).enumerate() {
                    match batch.get(j).filter(|s| first + t < s.nrows()) {
                        Some(sequence) => {
                            for (dst, &src) in row.iter_mut().zip(sequence.row(first + t)) {
                                *dst = src as f32;
                            }
                        }
                        None => row.fill(0.0),
                    }
                }
            });
        s.memcpy_htod(&*u, &mut buffers.u.slice_mut(..u.len()))
            .context("uploading inputs")?;
        uploaded
            .record(s)
            .context("recording the end of an input upload")?;
        if let (Some(noise), Some(device_noise)) = (noise, buffers.noise.as_mut()) {
            let mut host = vec![0.0f32; steps * b * n];
            for (j, drawn) in noise.iter().enumerate() {
                let rows = steps.min((drawn.len() / n).saturating_sub(first));
                for t in 0..rows {
                    host[(t * b + j) * n..][..n].copy_from_slice(&drawn[(first + t) * n..][..n]);
                }
            }
            s.memcpy_htod(&host, &mut device_noise.slice_mut(..host.len()))
                .context("uploading the noise")?;
        }
        input_drive(
            shared.device,
            shared.kernels,
            &buffers.u.slice(..steps * b * k),
            None,
            &shared.input.slice(..),
            &shared.bias.slice(..),
            buffers
                .noise
                .as_ref()
                .map(|noise| noise.slice(..steps * b * n))
                .as_ref(),
            &mut buffers.drive.slice_mut(..steps * b * n),
            (steps * b, n, k),
        )?;
        let width = n * b;
        match (self.w.tensor_core_for(b), buffers.tensor_core.as_mut()) {
            (Some(w), Some(scratch)) => w.run(
                shared.device,
                scratch,
                TensorCoreRun {
                    drive: TensorCoreDrive::Sequences {
                        drive: buffers.drive.slice(..steps * width),
                        leak: shared.config.leak_rate() as f32,
                    },
                    x0: buffers.state.slice(..),
                    states: &mut buffers.states,
                    batch: b,
                    steps,
                },
            )?,
            _ => self.gemm_chunk(shared, buffers, width, steps)?,
        }
        s.memcpy_dtod(
            &buffers.states.slice((steps - 1) * width..steps * width),
            &mut buffers.state,
        )
        .context("keeping the batch's last states")
    }

    /// The steps of a chunk on the GEMM path: a GEMM and an elementwise launch each.
    fn gemm_chunk(
        &self,
        shared: &Shared<'_>,
        buffers: &mut ChunkBuffers,
        width: usize,
        steps: usize,
    ) -> Result<()> {
        let blas = self.blas(shared.device)?;
        let Some(pre) = buffers.pre.as_mut() else {
            return Err(ReservoirError::invalid(
                "the batched step",
                "the chunk's buffers have no W·X",
            )
            .into());
        };
        if let Some([first_half, _]) = buffers.halves.as_mut() {
            to_f16(
                shared.device.stream(),
                shared.kernels,
                &buffers.state.slice(..),
                &mut first_half.slice_mut(..),
                width,
            )?;
        }
        for t in 0..steps {
            let (done, mut rest) = buffers.states.split_at_mut(t * width);
            let x = if t == 0 {
                buffers.state.slice(..)
            } else {
                done.slice((t - 1) * width..)
            };
            let half = buffers.halves.as_mut().map(|[even, odd]| {
                if t.is_multiple_of(2) {
                    (even.slice(..), odd)
                } else {
                    (odd.slice(..), even)
                }
            });
            self.step(
                shared,
                blas,
                &x,
                half,
                &buffers.drive.slice(t * width..(t + 1) * width),
                pre,
                &mut rest.slice_mut(..width),
            )?;
        }
        Ok(())
    }

    /// One step: `pre = W·x` (GEMM), then `next = (1 − a)·x + a·f(pre + drive)`; with `half`
    /// (an f16 W: this step's f16 operand and the buffer for the next one), the GEMM reads
    /// the operand and the step also writes the next.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step(
        &self,
        shared: &Shared<'_>,
        blas: &CudaBlas,
        x: &CudaView<'_, f32>,
        half: Option<(CudaView<'_, u16>, &mut CudaSlice<u16>)>,
        drive: &CudaView<'_, f32>,
        pre: &mut CudaSlice<f32>,
        next: &mut CudaViewMut<'_, f32>,
    ) -> Result<()> {
        let n = shared.config.size();
        let width = x.len();
        let b = width / n.max(1);
        let mut next_half = self.w.gemm()?.product(
            blas,
            shared.device.stream(),
            x,
            half,
            &mut pre.slice_mut(..width),
            (n, b),
            "the batched step GEMM",
        )?;
        let update = Update {
            leak: shared.config.leak_rate() as f32,
            activation: activation_code(shared.config.activation()),
        };
        elementwise(
            shared.device,
            shared.kernels,
            &pre.slice(..width),
            drive,
            x,
            next,
            next_half.as_mut(),
            width,
            update,
        )
    }
}

/// Host memory that [`BatchEngine::run`] reuses from batch to batch: the page-locked buffer
/// states come back through, and the f64 states of a group of sequences laid out at a time.
#[derive(Debug, Default)]
struct HostStates {
    staging: Staging,
    group: Vec<Array2<f64>>,
}

/// Steps of one time chunk of a batch of `b` sequences of `n` units whose longest has
/// `longest` steps: as many as keep its drive and states within [`CHUNK_BYTES`], at least one,
/// at most `longest`.
fn chunk_steps(n: usize, b: usize, longest: usize) -> usize {
    (CHUNK_BYTES / n.saturating_mul(b).saturating_mul(8).max(1))
        .max(1)
        .min(longest.max(1))
}
