//! B sequences in one GEMM per step against the CPU reservoir run on each sequence.

mod common;

use common::{fresh_seed, gpu, relative_error};
use gpu_reservoir::{GemmMath, GpuBatchedReservoir};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirConfig};

#[test]
fn batched_states_match_the_cpu_per_sequence() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("batched"));
    let config = ReservoirConfig {
        size: 500,
        input_size: 2,
        connection_prob: 0.2,
        spectral_radius: 0.9,
        bias_scaling: 0.2,
        seed: rng.random(),
        ..Default::default()
    };
    let batch = 7;
    let sequences: Vec<Array2<f64>> = (0..batch)
        .map(|_| Array2::from_shape_fn((1000, 2), |_| rng.random_range(-1.0..1.0)))
        .collect();
    let views: Vec<_> = sequences.iter().map(|s| s.view()).collect();
    for (math, bound) in [(GemmMath::F32, 1e-4), (GemmMath::Tf32, 2e-2)] {
        let mut gpu = GpuBatchedReservoir::new_shared(&config, batch, math, &device)
            .expect("batched reservoir");
        let got = gpu.run(&views).expect("batched run");
        let mut worst: f64 = 0.0;
        for (seq, states) in sequences.iter().zip(&got) {
            let expected = EchoStateNetwork::<f32>::new(&config)
                .expect("cpu")
                .run(seq.view())
                .expect("cpu run");
            worst = worst.max(relative_error(states, &expected).0);
        }
        eprintln!("{math:?}: worst relative error over {batch} sequences x 1000 steps {worst:.2e}");
        assert!(worst < bound, "{math:?}: {worst:.2e}");
    }
    let mut gpu = GpuBatchedReservoir::new_shared(&config, batch, GemmMath::F32, &device)
        .expect("batched reservoir");
    assert!(gpu.run(&views[..3]).is_err(), "wrong batch size");
}
