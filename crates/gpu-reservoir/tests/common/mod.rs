//! Shared by the GPU tests: a device or a printed skip, fresh seeds, random inputs, and the
//! device-fault harness ([`faults`]).

#![allow(dead_code)]

pub mod faults;

use gpu_reservoir::{probe, GpuDevice};
use ndarray::{Array2, ArrayView2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
pub use reservoir_conformance::fresh_seed;
use reservoir_core::Reservoir;

/// The shared GPU 0, or `None` with the reason printed. With `RESERVOIR_REQUIRE_GPU=1` a
/// missing GPU fails the test instead of skipping it.
pub fn gpu() -> Option<GpuDevice> {
    let support = probe();
    let required = std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match (support.problem, GpuDevice::shared(0)) {
        (None, Ok(device)) => Some(device),
        (problem, result) => {
            let reason = problem.unwrap_or_else(|| format!("{:?}", result.err()));
            assert!(
                !required,
                "RESERVOIR_REQUIRE_GPU=1 but no usable GPU: {reason}"
            );
            eprintln!("skipping GPU test: {reason}");
            None
        }
    }
}

/// ‖a − b‖ / ‖b‖ and max |a − b|.
pub fn relative_error(a: &ndarray::Array2<f64>, b: &ndarray::Array2<f64>) -> (f64, f64) {
    let diff = a - b;
    let norm = |m: &ndarray::Array2<f64>| m.iter().map(|v| v * v).sum::<f64>().sqrt();
    let max = diff.iter().fold(0.0f64, |m, d| m.max(d.abs()));
    (norm(&diff) / norm(b).max(f64::MIN_POSITIVE), max)
}

/// W rounded to f16 (dense), as the f16 GEMM's operand.
pub fn f16_weights(w: &ndarray::Array2<f64>) -> ndarray::Array2<f64> {
    w.mapv(|v| {
        reservoir_core::HalfFormat::F16
            .round(v)
            .expect("W within f16's range")
    })
}

/// `w16`·x as the f16 GEMM computes it: x rounded to f16 (`w16` already is; see
/// [`f16_weights`]); f16 products are exact, so their sum in f64 rounded to f32 is the GPU's
/// f32 sum up to its order.
pub fn f16_product(w16: &ndarray::Array2<f64>, x: &[f32]) -> Vec<f32> {
    let operand = ndarray::Array1::from_iter(x.iter().map(|&v| {
        reservoir_core::HalfFormat::F16
            .round(f64::from(v))
            .expect("tanh states are within f16's range")
    }));
    w16.dot(&operand).iter().map(|&p| p as f32).collect()
}

/// Inputs of `steps` × `k` values drawn uniformly from [−1, 1).
pub fn random_inputs(rng: &mut ChaCha8Rng, steps: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((steps, k), |_| rng.random_range(-1.0..1.0))
}

/// Views of `arrays`, in order.
pub fn views(arrays: &[Array2<f64>]) -> Vec<ArrayView2<'_, f64>> {
    arrays.iter().map(|a| a.view()).collect()
}

/// `reservoir.run_many(sequences)`, each sequence's states collected in the order handed out
/// (which must be the order of the sequences).
pub fn run_many(
    reservoir: &mut dyn Reservoir,
    sequences: &[ArrayView2<f64>],
) -> reservoir_core::Result<Vec<Array2<f64>>> {
    let mut got: Vec<Array2<f64>> = Vec::new();
    reservoir.run_many(sequences, &mut |index, states| {
        assert_eq!(index, got.len(), "sequences are visited in order");
        got.push(states.to_owned());
        Ok(())
    })?;
    Ok(got)
}
