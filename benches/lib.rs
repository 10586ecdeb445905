//! Shared inputs of the benchmarks (kept here so every bench drives the same data).

use ndarray::Array2;

/// A smooth deterministic 1-D input of `len` steps.
pub fn sine_input(len: usize) -> Array2<f64> {
    Array2::from_shape_fn((len, 1), |(t, _)| (t as f64 * 0.1).sin() * 0.5)
}
