//! Shared by the GPU test files: a device or a printed skip, and fresh seeds.

#![allow(dead_code)]

use gpu_reservoir::{probe, GpuDevice};

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

/// A seed that differs on every run (fresh random inputs), printed so a failure can be replayed.
pub fn fresh_seed(test: &str) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let seed = std::env::var("RESERVOIR_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(nanos);
    eprintln!("{test}: seed {seed} (replay with RESERVOIR_TEST_SEED={seed})");
    seed
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
