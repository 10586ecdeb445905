//! The floating-point types the engine computes in (`f32` and `f64`).

mod spmm;
mod spmv;
mod tanh;

pub(crate) use spmm::{mul_block, LANES};
pub use spmv::CsrRef;

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
    /// `y ← A·x` with the fastest kernel this CPU has (the lengths checked by the caller,
    /// `CsrMatrix`).
    #[doc(hidden)]
    fn csr_mul_vec(matrix: CsrRef<'_, Self>, x: &[Self], y: &mut [Self]);
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
    fn tanh_in_place(values: &mut [Self]) {
        tanh::tanh_f32_in_place(values);
    }
    fn csr_mul_vec(matrix: CsrRef<'_, Self>, x: &[Self], y: &mut [Self]) {
        spmv::mul_vec_f32(matrix, x, y);
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
    fn tanh_in_place(values: &mut [Self]) {
        for v in values {
            *v = v.tanh();
        }
    }
    fn csr_mul_vec(matrix: CsrRef<'_, Self>, x: &[Self], y: &mut [Self]) {
        spmv::mul_vec_f64(matrix, x, y);
    }
}
