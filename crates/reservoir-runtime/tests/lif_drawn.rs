//! `Dispatch::lif_drawn_with_weights` (the Python `LifReservoir`'s constructor) hands back
//! the weights of the config's seed, and the reservoir it builds runs on them.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lif::{LifNetwork, LifParams, LifWeights};
use reservoir_core::Reservoir;
use reservoir_runtime::{Device, Dispatch, Workload};

#[test]
fn drawn_weights_are_the_seeds_and_the_reservoir_runs_on_them() {
    let seed = rand::rng().random();
    let config = LifParams::default()
        .size(300)
        .input_size(3)
        .seed(seed)
        .check()
        .unwrap();
    let mut dispatch = Dispatch::new(Device::Cpu);
    let (mut reservoir, weights) = dispatch
        .lif_drawn_with_weights(&config, Workload::single(200))
        .unwrap();
    let expected = LifWeights::generate(&config).unwrap();
    assert_eq!(weights, expected, "seed {seed}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let inputs = Array2::from_shape_fn((200, 3), |_| f64::from(rng.random_bool(0.2)));
    let mut reference = LifNetwork::from_weights(&config, expected).unwrap();
    assert_eq!(
        reservoir.run(inputs.view()).unwrap(),
        reference.run(inputs.view()).unwrap(),
        "seed {seed}"
    );
}
