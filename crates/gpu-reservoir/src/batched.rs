//! B independent sequences through one echo-state reservoir: one GEMM per step.

use cudarc::cublas::sys::{cublasMath_t, cublasSetMathMode};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use ndarray::{Array2, ArrayView2};
use reservoir_core::{Activation, HalfFormat, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::bench::median_micros_per_step;
use crate::blas::{blas_error, product_row_major, product_row_major_f16};
use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

/// Sets the shared handle's math mode for `math` and puts the default back when dropped, so
/// other users of the device's cuBLAS handle never see TF32 by surprise.
struct MathModeGuard<'a> {
    blas: &'a CudaBlas,
}

impl<'a> MathModeGuard<'a> {
    fn set(blas: &'a CudaBlas, math: GemmMath) -> Result<Self> {
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

/// Arithmetic of the per-step GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmMath {
    /// Plain f32 SGEMM (states agree with the CPU to f32 rounding).
    F32,
    /// TF32 tensor cores: f32 storage, 10-bit-mantissa products, f32 accumulation. Faster;
    /// over 1,000 steps the states drift from the f32 CPU reference by 3e-4 relative
    /// (`tests/batched_parity.rs`, H200).
    Tf32,
    /// f16 tensor cores: W and each step's X rounded to f16 (TF32's 10-bit mantissa, a range
    /// of ±65504), products accumulated in f32, the states kept and updated in f32. The
    /// fastest (N = 1000, B = 512: 8.1 µs/step in a CUDA graph against TF32's 12.9, H200) at
    /// TF32's drift; `tanh` reservoirs only (their states stay in (−1, 1)), and every weight
    /// of W must be within f16's range.
    F16,
}

/// W on the device in the GEMM's operand type.
#[derive(Debug)]
enum DeviceW {
    F32(CudaSlice<f32>),
    /// f16 bit patterns.
    F16(CudaSlice<u16>),
}

/// The f16 copies of this step's states (the GEMM operand) and of the next step's (written
/// by the elementwise kernel), for [`GemmMath::F16`].
struct HalfStates<'a, 'b> {
    x: CudaView<'a, u16>,
    next: &'b mut CudaSlice<u16>,
}

/// `W` in f16 bit patterns, rounded to nearest even; an error if a weight is beyond f16's range.
fn weights_to_f16(w: &Array2<f64>) -> Result<Vec<u16>> {
    w.iter()
        .map(|&v| {
            HalfFormat::F16.to_bits(v).ok_or_else(|| {
                ReservoirError::invalid(
                    "batched reservoir",
                    format!("W has a weight ({v}) beyond f16's range (±65504): use GemmMath::F32 or Tf32"),
                )
                .into()
            })
        })
        .collect()
}

/// An echo-state reservoir that runs B sequences at once: the states are an N × B matrix X
/// (column b = sequence b), and each step is `X ← (1 − a)·X + a·f(W·X + D_t)` with one cuBLAS
/// GEMM for W·X and one elementwise launch. W is the reservoir's W, dense, in f32 (f16 for
/// [`GemmMath::F16`]); the drive D_t = b + W_in·u_t of every sequence and step is computed up
/// front with the input kernel.
#[derive(Debug)]
pub struct GpuBatchedReservoir {
    device: GpuDevice,
    config: ReservoirConfig,
    batch: usize,
    w: DeviceW,
    input: CudaSlice<f32>,
    bias: CudaSlice<f32>,
    state: CudaSlice<f32>,
    elementwise: CudaFunction,
    to_f16: CudaFunction,
    math: GemmMath,
}

impl GpuBatchedReservoir {
    /// Generates `config`'s weights (as the CPU reservoir does) for `batch` sequences.
    pub fn new_shared(
        config: &ReservoirConfig,
        batch: usize,
        math: GemmMath,
        device: &GpuDevice,
    ) -> Result<Self> {
        let (weights, _) = ReservoirWeights::generate(config)?;
        Self::from_weights(config, &weights, batch, math, device)
    }

    /// Uploads `weights` (W densified) for `batch` sequences.
    pub fn from_weights(
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        batch: usize,
        math: GemmMath,
        device: &GpuDevice,
    ) -> Result<Self> {
        config.validate().map_err(ReservoirError::from)?;
        if batch == 0 || weights.size() != config.size || weights.input_size() != config.input_size
        {
            return Err(ReservoirError::invalid(
                "batched reservoir",
                "batch must be >= 1 and the weights must fit the config",
            )
            .into());
        }
        let dense = weights.recurrent().to_dense();
        let w = match math {
            GemmMath::F32 | GemmMath::Tf32 => {
                DeviceW::F32(device.upload_f32(&dense, "uploading W")?)
            }
            GemmMath::F16 => {
                if config.activation != Activation::Tanh {
                    return Err(ReservoirError::invalid(
                        "batched reservoir",
                        "GemmMath::F16 needs activation = tanh: a linear reservoir's states can leave f16's range",
                    )
                    .into());
                }
                let half = weights_to_f16(&dense)?;
                DeviceW::F16(
                    device
                        .stream()
                        .clone_htod(&half)
                        .context("uploading W in f16")?,
                )
            }
        };
        let n = config.size;
        Ok(Self {
            w,
            input: device.upload_f32(weights.input(), "uploading W_in")?,
            bias: device.upload_f32(weights.bias(), "uploading b")?,
            state: device
                .stream()
                .alloc_zeros(n * batch)
                .context("allocating the states")?,
            elementwise: device
                .nvrtc_function(&kernels::PERSISTENT, kernels::persistent::ELEMENTWISE)?,
            to_f16: device.nvrtc_function(&kernels::PERSISTENT, kernels::persistent::TO_F16)?,
            device: device.clone(),
            config: config.clone(),
            batch,
            math,
        })
    }

    /// Runs B sequences of equal length (each T × K) from the current states; returns each
    /// sequence's states (T × N).
    pub fn run(&mut self, sequences: &[ArrayView2<f64>]) -> Result<Vec<Array2<f64>>> {
        let (n, k, b) = (self.config.size, self.config.input_size, self.batch);
        let steps = sequences.first().map_or(0, |s| s.nrows());
        if sequences.len() != b || sequences.iter().any(|s| s.dim() != (steps, k)) {
            return Err(ReservoirError::shape(
                "batched inputs",
                format!("{b} sequences of T x {k}"),
                format!("{} sequences", sequences.len()),
            )
            .into());
        }
        if sequences.iter().any(|s| s.iter().any(|v| !v.is_finite())) {
            return Err(ReservoirError::invalid("batched inputs", "values must be finite").into());
        }
        if steps == 0 {
            return Ok(vec![Array2::zeros((0, n)); b]);
        }
        // Row t·B + j of u is sequence j at step t, so drive row t·B + j is column j of D_t.
        let mut u = Vec::with_capacity(steps * b * k);
        for t in 0..steps {
            for seq in sequences {
                u.extend(seq.row(t).iter().map(|&v| v as f32));
            }
        }
        let s = self.device.stream().clone();
        let u = s.clone_htod(&u).context("uploading inputs")?;
        let mut drive = s
            .alloc_zeros::<f32>(steps * b * n)
            .context("allocating the drive")?;
        let mut states = s
            .alloc_zeros::<f32>(steps * b * n)
            .context("allocating the states")?;
        let rows = i32::try_from(steps * b)
            .map_err(|_| ReservoirError::invalid("batched inputs", "T·B exceeds 2^31 - 1"))?;
        let mut launch = s.launch_builder(&self.device.gemv().matvec_input);
        let (null, n_i, k_i): (u64, i32, i32) = (0, n as i32, k as i32);
        launch
            .arg(&u)
            .arg(&self.input)
            .arg(&self.bias)
            .arg(&null)
            .arg(&mut drive)
            .arg(&rows)
            .arg(&n_i)
            .arg(&k_i);
        // SAFETY: u is (T·B)×k, input n×k, bias n, drive (T·B)×n; no noise (null); the kernel
        // guards idx < T·B·n.
        unsafe { launch.launch(LaunchConfig::for_num_elems((steps * b * n) as u32)) }
            .context("launching matvec_input_kernel")?;
        let mut pre = s.alloc_zeros::<f32>(n * b).context("allocating W·X")?;
        let mut halves = self.half_states(&self.state)?;
        let blas = self.device.blas()?;
        let _math = MathModeGuard::set(blas, self.math)?;
        for t in 0..steps {
            let (done, mut rest) = states.split_at_mut(t * n * b);
            let mut next = rest.slice_mut(..n * b);
            let x = if t == 0 {
                self.state.slice(..)
            } else {
                done.slice((t - 1) * n * b..)
            };
            self.step(
                blas,
                &x,
                half_pair(&mut halves, t),
                &drive.slice(t * n * b..(t + 1) * n * b),
                &mut pre,
                &mut next,
            )?;
        }
        s.memcpy_dtod(&states.slice((steps - 1) * n * b..), &mut self.state)
            .context("keeping the final states")?;
        let host = s.clone_dtoh(&states).context("copying the states back")?;
        Ok((0..b)
            .map(|j| {
                Array2::from_shape_fn((steps, n), |(t, i)| f64::from(host[(t * b + j) * n + i]))
            })
            .collect())
    }

    /// For [`GemmMath::F16`], two f16 state buffers, the first holding `x` rounded to f16
    /// (the first step's operand); `None` for the f32 GEMMs.
    fn half_states(&self, x: &CudaSlice<f32>) -> Result<Option<[CudaSlice<u16>; 2]>> {
        if !matches!(self.w, DeviceW::F16(_)) {
            return Ok(None);
        }
        let s = self.device.stream();
        let len = self.config.size * self.batch;
        let mut first = s.alloc_zeros::<u16>(len).context("allocating f16 states")?;
        let second = s.alloc_zeros::<u16>(len).context("allocating f16 states")?;
        let len_i = len as i32;
        let mut launch = s.launch_builder(&self.to_f16);
        launch.arg(x).arg(&mut first).arg(&len_i);
        // SAFETY: x and first hold n·b values; the kernel guards i < n·b.
        unsafe { launch.launch(LaunchConfig::for_num_elems(len as u32)) }
            .context("launching f32_to_f16")?;
        Ok(Some([first, second]))
    }

    /// One step: `pre = W·x` (GEMM), then `next = (1 − a)·x + a·f(pre + drive)`; with `half`
    /// (an f16 W), the GEMM reads `half.x` and the step also writes `half.next`.
    fn step(
        &self,
        blas: &CudaBlas,
        x: &CudaView<'_, f32>,
        half: Option<HalfStates<'_, '_>>,
        drive: &CudaView<'_, f32>,
        pre: &mut CudaSlice<f32>,
        next: &mut CudaViewMut<'_, f32>,
    ) -> Result<()> {
        let (n, b) = (self.config.size, self.batch);
        let context = "the batched step GEMM";
        let next_half = match (&self.w, half) {
            (DeviceW::F32(w), None) => {
                product_row_major(
                    blas,
                    &w.slice(..),
                    x,
                    &mut pre.slice_mut(..),
                    (n, n, b),
                    context,
                )?;
                None
            }
            (DeviceW::F16(w), Some(half)) => {
                product_row_major_f16(
                    blas,
                    self.device.stream(),
                    &w.slice(..),
                    &half.x,
                    &mut pre.slice_mut(..),
                    (n, n, b),
                    context,
                )?;
                Some(half.next)
            }
            _ => {
                return Err(ReservoirError::invalid(
                    context,
                    "f16 states go with an f16 W, and only with it",
                )
                .into())
            }
        };
        let activation: i32 = match self.config.activation {
            Activation::Tanh => 0,
            Activation::Identity => 1,
        };
        let (total, leak) = ((n * b) as i32, self.config.leak_rate as f32);
        let mut launch = self.device.stream().launch_builder(&self.elementwise);
        launch.arg(&*pre).arg(drive).arg(x).arg(next);
        let null = 0u64;
        match next_half {
            Some(half) => launch.arg(half),
            None => launch.arg(&null),
        };
        launch.arg(&total).arg(&leak).arg(&activation);
        // SAFETY: pre, drive, x and next hold n·b values, and so does the f16 copy when given
        // (else null); the kernel guards i < n·b.
        unsafe { launch.launch(LaunchConfig::for_num_elems(total as u32)) }
            .context("launching esn_elementwise")?;
        Ok(())
    }

    /// Median µs per step of `steps` steps on a fixed drive (no transfers), after a warm-up:
    /// for the benchmark. With `graph`, the steps are captured once into a CUDA graph and the
    /// graph is replayed, which removes the host's launch overhead between steps.
    pub fn time_steps(&mut self, steps: usize, repeats: usize, graph: bool) -> Result<f64> {
        let (n, b) = (self.config.size, self.batch);
        let s = self.device.stream().clone();
        let host_drive: Vec<f32> = (0..n * b)
            .map(|i| ((i * 7919 % 1000) as f32 / 1000.0) - 0.5)
            .collect();
        let drive = s.clone_htod(&host_drive).context("uploading a drive")?;
        let mut a = s.alloc_zeros::<f32>(n * b).context("allocating X")?;
        let mut c = s.alloc_zeros::<f32>(n * b).context("allocating X")?;
        let mut pre = s.alloc_zeros::<f32>(n * b).context("allocating W·X")?;
        let mut halves = self.half_states(&a)?;
        let blas = self.device.blas()?;
        let _math = MathModeGuard::set(blas, self.math)?;
        let mut enqueue = |me: &Self| -> Result<()> {
            for t in 0..steps {
                let (x, next) = if t % 2 == 0 {
                    (&a, &mut c)
                } else {
                    (&c, &mut a)
                };
                me.step(
                    blas,
                    &x.slice(..),
                    half_pair(&mut halves, t),
                    &drive.slice(..),
                    &mut pre,
                    &mut next.slice_mut(..),
                )?;
            }
            Ok(())
        };
        let captured = if graph {
            Some(self.device.capture(|| enqueue(self))?)
        } else {
            None
        };
        let device = self.device.clone();
        median_micros_per_step(&device, steps, repeats, || match &captured {
            Some(graph) => graph.launch().context("replaying the graph"),
            None => enqueue(self),
        })
    }
}

/// Step t's f16 operand and the buffer for step t + 1's: the two buffers alternate.
fn half_pair(halves: &mut Option<[CudaSlice<u16>; 2]>, t: usize) -> Option<HalfStates<'_, '_>> {
    halves.as_mut().map(|[even, odd]| {
        if t.is_multiple_of(2) {
            HalfStates {
                x: even.slice(..),
                next: odd,
            }
        } else {
            HalfStates {
                x: odd.slice(..),
                next: even,
            }
        }
    })
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
