//! The GPU spectral radius against the CPU estimate on fresh random matrices: the same bits.

mod common;

use common::{fresh_seed, gpu};
use gpu_reservoir::spectral::spectral_radius as gpu_spectral_radius;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::{ReservoirParams, ReservoirWeights};

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
