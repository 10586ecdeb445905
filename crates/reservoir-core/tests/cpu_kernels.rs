//! Whatever kernel sums W's rows and however many threads step one sequence, the CPU
//! echo-state reservoir gives the same states, bit for bit.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::real::ProductKernel;
use reservoir_core::{
    EchoStateNetwork, Par, Precision, Reservoir, ReservoirParams, ReservoirWeights,
};

/// Fresh random inputs (T × 2) for each call's seed.
fn inputs(steps: usize, seed: u64) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, 2), |_| rng.random_range(-1.0..1.0))
}

fn reservoir<T: reservoir_core::real::Real>(
    size: usize,
    density: f64,
    seed: u64,
) -> EchoStateNetwork<T> {
    let precision = if std::mem::size_of::<T>() == 4 {
        Precision::F32
    } else {
        Precision::F64
    };
    let config = ReservoirParams::new()
        .size(size)
        .input_size(2)
        .connection_prob(density)
        .precision(precision)
        .seed(seed)
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    EchoStateNetwork::from_weights(&config, weights).expect("reservoir")
}

fn run_on<T: reservoir_core::real::Real>(
    reservoir: &mut EchoStateNetwork<T>,
    threads: usize,
    inputs: &Array2<f64>,
) -> (Array2<f64>, Vec<u64>) {
    reservoir.set_par(Par::rayon(threads));
    reservoir.reset().expect("reset");
    let states = reservoir.run(inputs.view()).expect("run");
    let last = reservoir.state().expect("state");
    (states, last.iter().map(|v| v.to_bits()).collect())
}

fn bits(a: &Array2<f64>) -> Vec<u64> {
    a.iter().map(|v| v.to_bits()).collect()
}

fn every_kernel_and_thread_count_agree<T: reservoir_core::real::Real>() {
    // N = 700 at 10 % and 30 %: products big enough to split; odd and even run lengths (the
    // split run ends in either of its two buffers).
    for (seed, density, steps) in [(1, 0.1, 301), (2, 0.3, 200)] {
        let mut net = reservoir::<T>(700, density, seed);
        let inputs = inputs(steps, seed + 100);
        let (want, want_last) = run_on(&mut net, 1, &inputs);
        for kernel in ProductKernel::available::<T>() {
            net.set_product_kernel(kernel).expect("kernel");
            for threads in [1, 2, 3, 5] {
                let (got, last) = run_on(&mut net, threads, &inputs);
                assert_eq!(bits(&got), bits(&want), "{kernel}, {threads} threads");
                assert_eq!(last, want_last, "final state, {kernel}, {threads} threads");
            }
        }
    }
}

#[test]
fn f32_states_are_the_same_bits_whatever_the_kernel_and_threads() {
    every_kernel_and_thread_count_agree::<f32>();
}

#[test]
fn f64_states_are_the_same_bits_whatever_the_kernel_and_threads() {
    every_kernel_and_thread_count_agree::<f64>();
}

#[test]
fn a_dense_w_gives_the_same_bits_with_every_kernel_and_thread_count() {
    // At 100 % the dense layout competes in the timed choice; every layout sums in one order.
    let mut net = reservoir::<f32>(600, 1.0, 3);
    let inputs = inputs(150, 7);
    let (want, _) = run_on(&mut net, 1, &inputs);
    for kernel in ProductKernel::available::<f32>() {
        net.set_product_kernel(kernel).expect("kernel");
        for threads in [1, 2, 4] {
            let (got, _) = run_on(&mut net, threads, &inputs);
            assert_eq!(bits(&got), bits(&want), "{kernel}, {threads} threads");
        }
    }
    // Many sequences at once (the block product over CSR) give the bits of one run.
    let mut visited = Vec::new();
    net.run_many(&[inputs.view(), inputs.view()], &mut |_, states| {
        visited.push(bits(&states.to_owned()));
        Ok(())
    })
    .expect("run_many");
    assert_eq!(visited, vec![bits(&want), bits(&want)]);
}

#[test]
fn a_split_run_continues_from_the_current_state() {
    // Two halves run one after the other equal one whole run, on several threads.
    let mut net = reservoir::<f32>(700, 0.1, 4);
    let inputs = inputs(400, 11);
    let (whole, _) = run_on(&mut net, 1, &inputs);
    net.set_par(Par::rayon(2));
    net.reset().expect("reset");
    let first = net.run(inputs.slice(ndarray::s![..201, ..])).expect("run");
    let second = net.run(inputs.slice(ndarray::s![201.., ..])).expect("run");
    let joined = ndarray::concatenate(ndarray::Axis(0), &[first.view(), second.view()])
        .expect("concatenate");
    assert_eq!(bits(&joined), bits(&whole));
}
