//! Many independent sequences through one echo-state reservoir at once: the GPU's
//! `Reservoir::run_many`, one GEMM per step for all of them.

use cudarc::cublas::sys::{cublasMath_t, cublasSetMathMode};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use ndarray::{s, Array2, ArrayView2};
use rand_chacha::ChaCha8Rng;
use reservoir_core::{Activation, HalfFormat, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::driver::blas::{blas_error, product_row_major, product_row_major_f16};
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::noise::noise_values;
use crate::ops::esn::{activation_code, elementwise, input_drive, to_f16, EsnKernels, Update};

/// Most bytes of one time chunk's drive and states (all sequences of a batch).
const CHUNK_BYTES: usize = 1 << 28;

/// Most bytes of a batch's states on the host (they are handed out once the batch is done).
const HOST_BATCH_BYTES: usize = 1 << 29;

/// Arithmetic of the per-step GEMM of [`crate::ManySequences::Batched`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GemmMath {
    /// Plain f32 SGEMM (states agree with the CPU to f32 rounding). The default.
    #[default]
    F32,
    /// TF32 tensor cores: f32 storage, 10-bit-mantissa products, f32 accumulation. Faster;
    /// the states drift from the f32 CPU reference by about 3e-4 relative over 1,000 steps
    /// (`tests/batched_parity.rs`).
    Tf32,
    /// f16 tensor cores: W and each step's X rounded to f16 (TF32's 10-bit mantissa, a range
    /// of ±65504), products accumulated in f32, the states kept and updated in f32. The
    /// fastest, at TF32's drift; `tanh` reservoirs only (their states stay in (−1, 1)), and
    /// every weight of W must be within f16's range.
    F16,
}

/// Sets the shared handle's math mode for `math` and puts the default back when dropped, so
/// other users of the device's cuBLAS handle never see TF32 by surprise.
pub(crate) struct MathModeGuard<'a> {
    blas: &'a CudaBlas,
}

impl<'a> MathModeGuard<'a> {
    pub(crate) fn set(blas: &'a CudaBlas, math: GemmMath) -> Result<Self> {
        let mode = match math {
            GemmMath::F32 | GemmMath::F16 => cublasMath_t::CUBLAS_DEFAULT_MATH,
            GemmMath::Tf32 => cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        };
        // SAFETY: the handle is the device's; the mode applies to the calls that follow.
        unsafe { cublasSetMathMode(*blas.handle(), mode) }
            .result()
            .map_err(|e| blas_error("setting the GEMM math mode", e))?;
        Ok(Self { blas })
    }
}

impl Drop for MathModeGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `set`. A failure here leaves TF32 on, which only changes rounding.
        let _ =
            unsafe { cublasSetMathMode(*self.blas.handle(), cublasMath_t::CUBLAS_DEFAULT_MATH) };
    }
}

/// W on the device in the GEMM's operand type.
#[derive(Debug)]
enum DeviceW {
    F32(CudaSlice<f32>),
    /// f16 bit patterns.
    F16(CudaSlice<u16>),
}

/// `W` in f16 bit patterns, rounded to nearest even; an error if a weight is beyond f16's range.
fn weights_to_f16(w: &Array2<f64>) -> Result<Vec<u16>> {
    w.iter()
        .map(|&v| {
            HalfFormat::F16.to_bits(v).ok_or_else(|| {
                ReservoirError::invalid(
                    "batched reservoir",
                    format!(
                        "W has a weight ({v}) beyond f16's range (±65504): use GemmMath::F32 or \
                         Tf32"
                    ),
                )
                .into()
            })
        })
        .collect()
}

/// The many-sequence engine of one reservoir: its W dense in the GEMM's operand type. The
/// states of B sequences are an N × B matrix X (column j = sequence j), and each step is
/// `X ← (1 − a)·X + a·f(W·X + D_t)` with one cuBLAS GEMM for W·X and one elementwise launch;
/// the drive D_t = b + W_in·u_t (+ noise) of every sequence and step of a time chunk is
/// computed up front.
#[derive(Debug)]
pub(crate) struct BatchEngine {
    w: DeviceW,
    math: GemmMath,
}

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
    u: CudaSlice<f32>,
    drive: CudaSlice<f32>,
    noise: Option<CudaSlice<f32>>,
    states: CudaSlice<f32>,
    /// X after the last step of the previous chunk (zero before the first).
    state: CudaSlice<f32>,
    pre: CudaSlice<f32>,
    halves: Option<[CudaSlice<u16>; 2]>,
}

impl BatchEngine {
    /// Uploads W (densified) for `math`.
    ///
    /// # Errors
    /// [`GemmMath::F16`] for a linear reservoir (its states can leave f16's range) or a W
    /// beyond f16's range; any upload error.
    pub(crate) fn new(
        device: &GpuDevice,
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
    ) -> Result<Self> {
        Self::check(config, weights, math)?;
        let dense = weights.recurrent().to_dense();
        let w = match math {
            GemmMath::F32 | GemmMath::Tf32 => {
                DeviceW::F32(device.upload_f32(&dense, "uploading the dense W")?)
            }
            GemmMath::F16 => {
                let half = weights_to_f16(&dense)?;
                DeviceW::F16(
                    device
                        .stream()
                        .clone_htod(&half)
                        .context("uploading W in f16")?,
                )
            }
        };
        Ok(Self { w, math })
    }

    /// An error unless `math` can run this reservoir: f16 operands need a `tanh` reservoir
    /// (a linear one's states can leave f16's range) and every weight of W within f16's range.
    pub(crate) fn check(
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
    ) -> Result<()> {
        if math != GemmMath::F16 {
            return Ok(());
        }
        if config.activation() != Activation::Tanh {
            return Err(ReservoirError::invalid(
                "batched reservoir",
                "GemmMath::F16 needs activation = tanh: a linear reservoir's states can leave \
                 f16's range",
            )
            .into());
        }
        match weights
            .recurrent()
            .values()
            .iter()
            .find(|&&v| HalfFormat::F16.to_bits(v).is_none())
        {
            Some(v) => Err(ReservoirError::invalid(
                "batched reservoir",
                format!(
                    "W has a weight ({v}) beyond f16's range (±65504): use GemmMath::F32 or Tf32"
                ),
            )
            .into()),
            None => Ok(()),
        }
    }

    /// The arithmetic of the GEMM.
    pub(crate) fn math(&self) -> GemmMath {
        self.math
    }

    /// Runs `sequences` (checked: K columns, finite), each from the zero state, in batches of
    /// consecutive sequences, and hands each one's states to `visit` in order. With `noise`
    /// (the reservoir's noise stream), every sequence gets the draws a one-after-another run
    /// would give it.
    pub(crate) fn run(
        &self,
        shared: &Shared<'_>,
        sequences: &[ArrayView2<f64>],
        mut noise: Option<(&mut ChaCha8Rng, f64)>,
        visit: &mut dyn FnMut(usize, ArrayView2<f64>) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        let n = shared.config.size();
        let mut start = 0;
        while start < sequences.len() {
            // Consecutive sequences whose states fit the host budget (at least one).
            let mut end = start + 1;
            let mut bytes = sequences[start].nrows() * n * 8;
            while end < sequences.len() {
                let more = sequences[end].nrows() * n * 8;
                if bytes + more > HOST_BATCH_BYTES {
                    break;
                }
                bytes += more;
                end += 1;
            }
            let batch = &sequences[start..end];
            let noise = noise
                .as_mut()
                .map(|(rng, level)| draw_batch_noise(rng, *level, batch, n));
            self.run_batch(shared, batch, noise.as_deref(), start, visit)?;
            start = end;
        }
        Ok(())
    }

    /// One batch: time chunks of all its sequences stepped together; shorter sequences are
    /// padded with zero inputs, which cannot reach their earlier states. Sequence j is handed
    /// to `visit` as `first_index + j`: straight from the copied-back chunk when the batch fits
    /// in one, else once its last chunk is back.
    fn run_batch(
        &self,
        shared: &Shared<'_>,
        batch: &[ArrayView2<f64>],
        noise: Option<&[Vec<f32>]>,
        first_index: usize,
        visit: &mut dyn FnMut(usize, ArrayView2<f64>) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        let (n, k, b) = (
            shared.config.size(),
            shared.config.input_size(),
            batch.len(),
        );
        let longest = batch.iter().map(|s| s.nrows()).max().unwrap_or(0);
        if longest == 0 {
            for j in 0..b {
                visit(first_index + j, Array2::zeros((0, n)).view())?;
            }
            return Ok(());
        }
        let chunk = (CHUNK_BYTES / (8 * n * b).max(1)).clamp(1, longest);
        let one_chunk = chunk == longest;
        let mut kept: Vec<Array2<f64>> = if one_chunk {
            Vec::new()
        } else {
            batch
                .iter()
                .map(|s| Array2::zeros((s.nrows(), n)))
                .collect()
        };
        let mut buffers = self.buffers(shared, (n, k, b), chunk, noise.is_some())?;
        let blas = shared.device.blas()?;
        let _math = MathModeGuard::set(blas, self.math)?;
        for first in (0..longest).step_by(chunk) {
            let steps = chunk.min(longest - first);
            self.run_chunk(shared, blas, &mut buffers, batch, noise, first, steps)?;
            let host = shared
                .device
                .stream()
                .clone_dtoh(&buffers.states.slice(..steps * b * n))
                .context("copying the states back")?;
            // Row t of sequence j is at (t·B + j)·N in the chunk.
            let copy_rows = |j: usize, rows: std::ops::Range<usize>, out: &mut Array2<f64>| {
                for t in rows {
                    let row = &host[((t - first) * b + j) * n..][..n];
                    for (dst, &src) in out.row_mut(t).iter_mut().zip(row) {
                        *dst = f64::from(src);
                    }
                }
            };
            if one_chunk {
                let mut states = Array2::zeros((longest, n));
                for (j, sequence) in batch.iter().enumerate() {
                    let rows = sequence.nrows();
                    copy_rows(j, 0..rows, &mut states);
                    visit(first_index + j, states.slice(s![..rows, ..]))?;
                }
            } else {
                for (j, states) in kept.iter_mut().enumerate() {
                    let end = (first + steps).min(states.nrows());
                    copy_rows(j, first..end.max(first), states);
                }
            }
        }
        for (j, states) in kept.iter().enumerate() {
            visit(first_index + j, states.view())?;
        }
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
        let alloc = |len: usize, what| s.alloc_zeros::<f32>(len).context(what);
        let state = alloc(n * b, "allocating the batch's states")?;
        let halves = match self.w {
            DeviceW::F32(_) => None,
            DeviceW::F16(_) => Some([
                s.alloc_zeros::<u16>(n * b)
                    .context("allocating f16 states")?,
                s.alloc_zeros::<u16>(n * b)
                    .context("allocating f16 states")?,
            ]),
        };
        Ok(ChunkBuffers {
            u: alloc(chunk * b * k, "allocating the batch's inputs")?,
            drive: alloc(chunk * b * n, "allocating the batch's drive")?,
            noise: if noise {
                Some(alloc(chunk * b * n, "allocating the batch's noise")?)
            } else {
                None
            },
            states: alloc(chunk * b * n, "allocating the batch's states")?,
            state,
            pre: alloc(n * b, "allocating W·X")?,
            halves,
        })
    }

    /// Steps `first..first + steps` of every sequence of the batch, from `buffers.state`.
    #[allow(clippy::too_many_arguments)]
    fn run_chunk(
        &self,
        shared: &Shared<'_>,
        blas: &CudaBlas,
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
        // Row t·B + j of u (and of the drive) is sequence j at step first + t.
        let mut u = vec![0.0f32; steps * b * k];
        for (j, sequence) in batch.iter().enumerate() {
            for t in 0..steps.min(sequence.nrows().saturating_sub(first)) {
                let row = &mut u[(t * b + j) * k..][..k];
                for (dst, &src) in row.iter_mut().zip(sequence.row(first + t)) {
                    *dst = src as f32;
                }
            }
        }
        s.memcpy_htod(&u, &mut buffers.u.slice_mut(..u.len()))
            .context("uploading inputs")?;
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
        if let Some([first_half, _]) = buffers.halves.as_mut() {
            to_f16(
                shared.device,
                shared.kernels,
                &buffers.state.slice(..),
                &mut first_half.slice_mut(..),
                n * b,
            )?;
        }
        let width = n * b;
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
                &mut buffers.pre,
                &mut rest.slice_mut(..width),
            )?;
        }
        s.memcpy_dtod(
            &buffers.states.slice((steps - 1) * width..steps * width),
            &mut buffers.state,
        )
        .context("keeping the batch's last states")
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
        let context = "the batched step GEMM";
        let mut next_half = match (&self.w, half) {
            (DeviceW::F32(w), None) => {
                product_row_major(
                    blas,
                    &w.slice(..),
                    x,
                    &mut pre.slice_mut(..width),
                    (n, n, b),
                    context,
                )?;
                None
            }
            (DeviceW::F16(w), Some((x_half, next_half))) => {
                product_row_major_f16(
                    blas,
                    shared.device.stream(),
                    &w.slice(..),
                    &x_half,
                    &mut pre.slice_mut(..width),
                    (n, n, b),
                    context,
                )?;
                Some(next_half.slice_mut(..width))
            }
            _ => {
                return Err(ReservoirError::invalid(
                    context,
                    "f16 states go with an f16 W, and only with it",
                )
                .into())
            }
        };
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

/// Each sequence's noise (Tᵢ × N values), drawn from `rng` sequence after sequence, step after
/// step, unit after unit: what the CPU reservoir draws running them one after another.
fn draw_batch_noise(
    rng: &mut ChaCha8Rng,
    level: f64,
    batch: &[ArrayView2<f64>],
    n: usize,
) -> Vec<Vec<f32>> {
    batch
        .iter()
        .map(|sequence| noise_values(rng, level, sequence.nrows() * n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_to_the_nearest_f16_and_refuse_its_overflow() {
        let w = Array2::from_shape_vec((1, 4), vec![0.1, -1.0 / 3.0, 65504.0, 0.0]).expect("shape");
        let bits = weights_to_f16(&w).expect("in range");
        // 0.1 and -1/3 to nearest even (f16 bits 0x2E66 and 0xB555), the largest finite f16.
        assert_eq!(bits, vec![0x2E66, 0xB555, 0x7BFF, 0]);
        let big = Array2::from_shape_vec((1, 2), vec![0.5, 70000.0]).expect("shape");
        let message = weights_to_f16(&big).expect_err("beyond f16").to_string();
        assert!(message.contains("70000"), "{message}");
    }
}
