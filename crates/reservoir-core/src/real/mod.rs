//! The floating-point types the engine computes in (`f32` and `f64`).

mod calibration;
mod dense;
mod spmm;
mod spmv;
mod tanh;

pub(crate) use calibration::{fastest_kernel, fastest_of, Remembered, TimedProduct};
pub(crate) use dense::{mul_dense, DenseRef, DENSE_TILE};
pub(crate) use spmm::{mul_block, LANES};
#[cfg(test)]
pub(crate) use spmv::mul_blocked_portable;
pub use spmv::ProductKernel;
pub(crate) use spmv::{has_avx2_fma, mul_csr};
pub(crate) use spmv::{BlockedRef, CsrRef, SlicedRef, BLOCK_COLS, GROUP_ROWS, SLICE};

use std::fmt::{Debug, Display};

/// A floating-point scalar usable for reservoir states and weights.
///
/// Weights are generated in `f64` and rounded once to `Self`, so an `f32` reservoir holds the
/// correctly rounded values of the `f64` one.
pub trait Real:
    num_traits::Float
    + ndarray::ScalarOperand
    + ndarray::LinalgScalar
    + std::iter::Sum
    + std::ops::AddAssign
    + std::ops::MulAssign
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + serde::Serialize
    + serde::de::DeserializeOwned
    + 'static
{
    /// Rounds an `f64` to this type.
    fn from_f64(value: f64) -> Self;
    /// Widens to `f64` (exact).
    fn as_f64(self) -> f64;
    /// `tanh` over a slice, in place; the hot path of the tanh reservoir.
    fn tanh_in_place(values: &mut [Self]);
    /// `y ← A·x` for the slices of a sliced matrix with `kernel` (the lengths checked by the
    /// caller, `SlicedMatrix`).
    #[doc(hidden)]
    fn sliced_mul_vec(
        kernel: ProductKernel,
        matrix: SlicedRef<'_, Self>,
        x: &[Self],
        y: &mut [Self],
    );
    /// Whether [`ProductKernel::Avx512Permute`] exists for this type.
    #[doc(hidden)]
    const BLOCKED: bool;
    /// `y ← A·x` for the groups of a blocked matrix (the lengths checked by the caller).
    #[doc(hidden)]
    fn blocked_mul_vec(matrix: BlockedRef<'_, Self>, x: &[Self], y: &mut [Self]);
}

impl Real for f32 {
    #[inline]
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    #[inline]
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn tanh_in_place(values: &mut [Self]) {
        tanh::tanh_f32_in_place(values);
    }
    fn sliced_mul_vec(
        kernel: ProductKernel,
        matrix: SlicedRef<'_, Self>,
        x: &[Self],
        y: &mut [Self],
    ) {
        spmv::mul_sliced_f32(kernel, matrix, x, y);
    }
    const BLOCKED: bool = true;
    fn blocked_mul_vec(matrix: BlockedRef<'_, Self>, x: &[Self], y: &mut [Self]) {
        spmv::mul_blocked_f32(matrix, x, y);
    }
}

impl Real for f64 {
    #[inline]
    fn from_f64(value: f64) -> Self {
        value
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self
    }
    #[inline]
    fn tanh_in_place(values: &mut [Self]) {
        for v in values {
            *v = v.tanh();
        }
    }
    fn sliced_mul_vec(
        kernel: ProductKernel,
        matrix: SlicedRef<'_, Self>,
        x: &[Self],
        y: &mut [Self],
    ) {
        spmv::mul_sliced_f64(kernel, matrix, x, y);
    }
    const BLOCKED: bool = false;
    fn blocked_mul_vec(matrix: BlockedRef<'_, Self>, x: &[Self], y: &mut [Self]) {
        spmv::mul_blocked_portable(matrix, x, y);
    }
}
