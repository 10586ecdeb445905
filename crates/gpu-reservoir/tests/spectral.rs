//! The GPU spectral radius against the CPU estimate on fresh random matrices: the same bits.

use crate::common;

use common::{fresh_seed, gpu};
use gpu_reservoir::spectral::spectral_radius as gpu_spectral_radius;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::{CsrMatrix, ReservoirParams, ReservoirWeights};

#[test]
fn gpu_spectral_radius_is_the_cpus_bit_for_bit() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("spectral"));
    for (size, density) in [(1000, 0.1), (500, 0.02), (2000, 0.05)] {
        let config = ReservoirParams::new()
            .size(size)
            .connection_prob(density)
            .spectral_radius(rng.random_range(0.5..1.5))
            .seed(rng.random())
            .check()
            .expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let options = SpectralOptions::default();
        let cpu = weights
            .recurrent()
            .spectral_radius(&options)
            .expect("cpu estimate");
        let gpu =
            gpu_spectral_radius(&device, weights.recurrent(), &options).expect("gpu estimate");
        eprintln!(
            "N {size} p {density}: cpu {:.6} gpu {:.6}, {} products",
            cpu.radius, gpu.radius, gpu.iterations
        );
        assert!(gpu.converged, "N {size}: {gpu:?}");
        assert_eq!(gpu, cpu, "N {size}: the estimates differ");
        assert!(
            (gpu.radius - config.spectral_radius()).abs() < 1e-3 * config.spectral_radius(),
            "the scaled W has the configured radius"
        );
    }
}

/// Rows of every length the product stages differently (empty, shorter than, equal to and one
/// past its chunk of entries, long, a few of up to N entries) in a matrix whose size is not a
/// multiple of the product's block of rows: the GPU's products, and so the estimate, are the
/// CPU's bit for bit.
#[test]
fn gpu_products_sum_rows_of_any_length_as_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("spectral rows"));
    let n = rng.random_range(1000..1300);
    let (mut row_ptr, mut cols, mut values) = (vec![0u32], Vec::new(), Vec::new());
    for _ in 0..n {
        let len = match rng.random_range(0..7) {
            0 => 0,
            1 => rng.random_range(1..8),
            2 => 8,
            3 => 9,
            4 => rng.random_range(10..100),
            5 if rng.random_bool(0.05) => rng.random_range(500..n),
            _ => rng.random_range(1..40),
        };
        let mut picked = rand::seq::index::sample(&mut rng, n, len).into_vec();
        picked.sort_unstable();
        for column in picked {
            cols.push(column as u32);
            values.push(rng.random_range(-1.0..1.0));
        }
        row_ptr.push(cols.len() as u32);
    }
    let w = CsrMatrix::from_parts(n, n, row_ptr, cols, values).expect("csr");
    let options = SpectralOptions {
        max_matvecs: 300,
        ..SpectralOptions::default()
    };
    let cpu = w.spectral_radius(&options).expect("cpu estimate");
    let gpu = gpu_spectral_radius(&device, &w, &options).expect("gpu estimate");
    eprintln!("N {n}: cpu {cpu:?}");
    assert_eq!(gpu, cpu, "N {n}: the estimates differ");
}
