//! The arithmetic of the products that step many states at once (the batched many-sequence
//! step and a sweep's lanes), the kernel that steps them (a GEMM per step, or the tensor-core
//! run), and W on the device in that kernel's operand type.

use std::fmt;
use std::str::FromStr;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use ndarray::Array2;
use reservoir_core::{Activation, HalfFormat, ReservoirConfig, ReservoirError, ReservoirWeights};
use serde::{Deserialize, Serialize};

use crate::driver::blas::{product_row_major, product_row_major_f16};
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::ops::tensor_core::{one_launch, unsupported, TensorCoreW};

/// Arithmetic of the per-step GEMM W·X of [`crate::ManySequences::Batched`] and of a sweep's
/// lanes ([`crate::GpuLaneRunner::with_math`]). Written `f32`, `tf32` or `f16` in configs
/// and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

impl GemmMath {
    /// Every arithmetic, in the order of its name's documentation.
    pub const ALL: [GemmMath; 3] = [GemmMath::F32, GemmMath::Tf32, GemmMath::F16];

    /// The name configs and the command line use: `f32`, `tf32` or `f16`.
    pub fn name(self) -> &'static str {
        match self {
            GemmMath::F32 => "f32",
            GemmMath::Tf32 => "tf32",
            GemmMath::F16 => "f16",
        }
    }

    /// The device's cuBLAS handle for this arithmetic: the TF32 handle for
    /// [`GemmMath::Tf32`], else the default one. Neither handle's math mode ever changes, so
    /// GEMMs of different arithmetic can run in several threads at once.
    pub(crate) fn blas(self, device: &GpuDevice) -> Result<&CudaBlas> {
        match self {
            GemmMath::Tf32 => device.blas_tf32(),
            GemmMath::F32 | GemmMath::F16 => device.blas(),
        }
    }
}

impl fmt::Display for GemmMath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GemmMath {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|math| math.name() == text)
            .ok_or_else(|| format!("unknown GEMM arithmetic `{text}`: expected f32, tf32 or f16"))
    }
}

/// The kernel that steps many states whose products have f16 operands ([`GemmMath::F16`]):
/// a batch of [`crate::ManySequences::Batched`] or a sweep's lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BatchKernel {
    /// [`BatchKernel::TensorCore`] for a batch it runs in one launch (where it was measured
    /// faster than the GEMM path, docs/decisions.md, "Other thresholds"), else [`BatchKernel::Gemm`]. The
    /// default.
    #[default]
    Auto,
    /// One cuBLAS GEMM and one elementwise launch per step, on every device.
    Gemm,
    /// A chunk of steps in one cooperative launch per up to 512 sequences (N = 1000 on 132
    /// SMs), W held in the tensor cores' registers: compute capability 9.0 and N ≤ 1024 only.
    /// With [`GemmMath::F16`] only.
    TensorCore,
}

/// The kernel of `math` and `kernel` for a reservoir of `n` units on `device`: `Gemm` or
/// `TensorCore`, never `Auto`.
///
/// # Errors
/// [`GpuError::Unsupported`] for [`BatchKernel::TensorCore`] with another arithmetic than
/// f16, or where the device or N cannot run it.
pub(crate) fn resolve_kernel(
    device: &GpuDevice,
    n: usize,
    math: GemmMath,
    kernel: BatchKernel,
) -> Result<BatchKernel> {
    let refused = |reason: String| GpuError::Unsupported {
        what: "the tensor-core batch kernel".into(),
        reason,
    };
    match (kernel, math) {
        (BatchKernel::Gemm, _) | (BatchKernel::Auto, GemmMath::F32 | GemmMath::Tf32) => {
            Ok(BatchKernel::Gemm)
        }
        (BatchKernel::TensorCore, GemmMath::F32 | GemmMath::Tf32) => Err(refused(format!(
            "it takes f16 operands; the batch's arithmetic is {math}"
        ))),
        (BatchKernel::Auto | BatchKernel::TensorCore, GemmMath::F16) => {
            match unsupported(device, n)? {
                None => Ok(BatchKernel::TensorCore),
                Some(_) if kernel == BatchKernel::Auto => Ok(BatchKernel::Gemm),
                Some(reason) => Err(refused(reason)),
            }
        }
    }
}

/// The kernel that steps a batch of `batch` states in `math` under `kernel` for a reservoir of
/// `n` units on `device` (`Gemm` or `TensorCore`, never `Auto`): as [`resolve_kernel`], and
/// under [`BatchKernel::Auto`] the tensor-core run only for a batch it takes in one launch
/// ([`one_launch`]), the shapes where it was measured faster than the GEMM path.
///
/// # Errors
/// As [`resolve_kernel`].
pub(crate) fn batch_kernel(
    device: &GpuDevice,
    n: usize,
    math: GemmMath,
    kernel: BatchKernel,
    batch: usize,
) -> Result<BatchKernel> {
    let resolved = resolve_kernel(device, n, math, kernel)?;
    let sms = device.info().multiprocessors.max(0) as usize;
    Ok(match (resolved, kernel) {
        (BatchKernel::TensorCore, BatchKernel::Auto) if !one_launch(n, batch, sms) => {
            BatchKernel::Gemm
        }
        _ => resolved,
    })
}

/// W on the device for the kernels that step many states: dense in the GEMM's operand type,
/// padded f16 for the tensor-core run, or both (under [`BatchKernel::Auto`], which picks one
/// per batch by [`batch_kernel`]'s rule).
#[derive(Debug)]
pub(crate) struct BatchW {
    gemm: Option<DeviceW>,
    tensor_core: Option<TensorCoreW>,
    /// Whether the tensor-core run steps every batch (it was asked for).
    forced: bool,
}

impl BatchW {
    /// W of `weights` for `math` and `kernel` (resolved by [`resolve_kernel`]), after
    /// [`DeviceW::check`] (`what` names the reservoir in errors).
    ///
    /// # Errors
    /// As [`DeviceW::check`] and [`resolve_kernel`]; any upload error.
    pub(crate) fn upload(
        device: &GpuDevice,
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
        kernel: BatchKernel,
        what: &'static str,
    ) -> Result<Self> {
        DeviceW::check(config, weights, math, what)?;
        let n = config.size();
        let tensor_core = match resolve_kernel(device, n, math, kernel)? {
            BatchKernel::TensorCore => TensorCoreW::upload(device, &f16_bits(weights, what)?, n)?,
            BatchKernel::Gemm | BatchKernel::Auto => None,
        };
        let forced = kernel == BatchKernel::TensorCore;
        if forced && tensor_core.is_none() {
            return Err(GpuError::Unsupported {
                what: "the tensor-core batch kernel".into(),
                reason: format!("it cannot hold a W of N = {n} on this device"),
            });
        }
        let gemm = if forced {
            None
        } else {
            Some(DeviceW::upload(device, config, weights, math, what)?)
        };
        Ok(Self {
            gemm,
            tensor_core,
            forced,
        })
    }

    /// The tensor-core W when it steps a batch of `batch` states (see [`batch_kernel`]), else
    /// `None` (the GEMM does).
    pub(crate) fn tensor_core_for(&self, batch: usize) -> Option<&TensorCoreW> {
        self.tensor_core
            .as_ref()
            .filter(|w| self.forced || w.one_launch(batch))
    }

    /// W for the GEMM path.
    ///
    /// # Errors
    /// When only the tensor-core run's W was uploaded.
    pub(crate) fn gemm(&self) -> Result<&DeviceW> {
        self.gemm.as_ref().ok_or_else(|| {
            ReservoirError::invalid(
                "the batched step",
                "a GEMM step of states on the tensor-core kernel",
            )
            .into()
        })
    }
}

/// W on the device, dense, in the operand type of a [`GemmMath`].
#[derive(Debug)]
pub(crate) enum DeviceW {
    /// For [`GemmMath::F32`] and [`GemmMath::Tf32`].
    F32(CudaSlice<f32>),
    /// For [`GemmMath::F16`]: f16 bit patterns.
    F16(CudaSlice<u16>),
}

impl DeviceW {
    /// W of `weights`, densified, uploaded for `math` after [`DeviceW::check`] (`what` names
    /// the reservoir in errors).
    ///
    /// # Errors
    /// As [`DeviceW::check`]; any upload error.
    pub(crate) fn upload(
        device: &GpuDevice,
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
        what: &'static str,
    ) -> Result<Self> {
        Self::check(config, weights, math, what)?;
        Ok(match math {
            GemmMath::F32 | GemmMath::Tf32 => DeviceW::F32(
                device.upload_f32(&weights.recurrent().to_dense(), "uploading the dense W")?,
            ),
            GemmMath::F16 => {
                let half = f16_bits(weights, what)?;
                DeviceW::F16(
                    device
                        .stream()
                        .clone_htod(&half)
                        .alloc_context::<u16>("uploading W in f16", half.len())?,
                )
            }
        })
    }

    /// An error unless `math` can run this reservoir: f16 operands need a `tanh` reservoir
    /// (a linear one's states can leave f16's range) and every weight of W within f16's range.
    pub(crate) fn check(
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        math: GemmMath,
        what: &'static str,
    ) -> Result<()> {
        if math != GemmMath::F16 {
            return Ok(());
        }
        if config.activation() != Activation::Tanh {
            return Err(ReservoirError::invalid(
                what,
                "f16 GEMM operands need activation = tanh: a linear reservoir's states can \
                 leave f16's range",
            )
            .into());
        }
        match weights
            .recurrent()
            .values()
            .iter()
            .find(|&&v| HalfFormat::F16.to_bits(v).is_none())
        {
            Some(&v) => Err(beyond_f16(v, what)),
            None => Ok(()),
        }
    }

    /// `out = W·X` for X of `b` columns of `n` units (column-major): `x` in f32, or with an
    /// f16 W, `half`'s first view (X in f16); `half`'s second buffer is handed back as the one
    /// the step writes the next X's f16 copy into. On `stream`, the stream of `blas`.
    ///
    /// # Errors
    /// An f16 operand with an f32 W, or none with an f16 W; any cuBLAS error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn product<'h>(
        &self,
        blas: &CudaBlas,
        stream: &CudaStream,
        x: &CudaView<'_, f32>,
        half: Option<(CudaView<'_, u16>, &'h mut CudaSlice<u16>)>,
        out: &mut CudaViewMut<'_, f32>,
        (n, b): (usize, usize),
        context: &'static str,
    ) -> Result<Option<CudaViewMut<'h, u16>>> {
        match (self, half) {
            (DeviceW::F32(w), None) => {
                product_row_major(blas, &w.slice(..), x, out, (n, n, b), context)?;
                Ok(None)
            }
            (DeviceW::F16(w), Some((x_half, next_half))) => {
                product_row_major_f16(
                    blas,
                    stream,
                    &w.slice(..),
                    &x_half,
                    out,
                    (n, n, b),
                    context,
                )?;
                Ok(Some(next_half.slice_mut(..n * b)))
            }
            _ => Err(ReservoirError::invalid(
                context,
                "f16 states go with an f16 W, and only with it",
            )
            .into()),
        }
    }
}

/// The error of a weight `v` of W beyond f16's range.
fn beyond_f16(v: f64, what: &'static str) -> crate::GpuError {
    ReservoirError::invalid(
        what,
        format!("W has a weight ({v}) beyond f16's range (±65504): use the f32 or tf32 GEMM"),
    )
    .into()
}

/// W of `weights`, dense and row-major, in f16 bit patterns rounded to nearest even; an error
/// if a weight is beyond f16's range.
pub(crate) fn f16_bits(weights: &ReservoirWeights, what: &'static str) -> Result<Vec<u16>> {
    weights_to_f16(&weights.recurrent().to_dense(), what)
}

/// `w` in f16 bit patterns, rounded to nearest even; an error if a weight is beyond f16's
/// range.
fn weights_to_f16(w: &Array2<f64>, what: &'static str) -> Result<Vec<u16>> {
    w.iter()
        .map(|&v| {
            HalfFormat::F16
                .to_bits(v)
                .ok_or_else(|| beyond_f16(v, what))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_to_the_nearest_f16_and_refuse_its_overflow() {
        let w = Array2::from_shape_vec((1, 4), vec![0.1, -1.0 / 3.0, 65504.0, 0.0]).expect("shape");
        let bits = weights_to_f16(&w, "test").expect("in range");
        // 0.1 and -1/3 to nearest even (f16 bits 0x2E66 and 0xB555), the largest finite f16.
        assert_eq!(bits, vec![0x2E66, 0xB555, 0x7BFF, 0]);
        let big = Array2::from_shape_vec((1, 2), vec![0.5, 70000.0]).expect("shape");
        let message = weights_to_f16(&big, "test")
            .expect_err("beyond f16")
            .to_string();
        assert!(message.contains("70000"), "{message}");
    }

    #[test]
    fn arithmetic_names_parse_back_and_others_are_refused() {
        for math in GemmMath::ALL {
            assert_eq!(math.name().parse::<GemmMath>(), Ok(math));
            assert_eq!(math.to_string(), math.name());
        }
        let error = "bf16".parse::<GemmMath>().expect_err("not an arithmetic");
        assert!(
            error.contains("`bf16`") && error.contains("f32, tf32 or f16"),
            "{error}"
        );
    }
}
