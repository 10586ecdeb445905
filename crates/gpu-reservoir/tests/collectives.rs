//! NCCL across the GPUs of this host: ridge sums added over GPUs (in one process and in two),
//! gathers, a reservoir sharded by rows (in one process and in two) and a LIF network split by
//! neuron, each against one GPU or the CPU. With one GPU the
//! collectives run with one rank, which checks the code paths but not the traffic.

use crate::common;

use std::process::Command;

use common::{fresh_seed, gpu};
use gpu_reservoir::collective::{nccl_loadable, new_unique_id, share, UNIQUE_ID_BYTES};
use gpu_reservoir::{
    probe, Collective, DeviceRidgeSums, GpuDevice, GpuReservoirComputer, ShardedLifNetwork,
    ShardedReservoir,
};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance::harness_name;
use reservoir_core::lif::{LifFeatures, LifNetwork, LifParams, LifWeights};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirWeights};

/// Every GPU's ordinal, or `None` (with the reason printed) without a GPU or NCCL. With
/// `RESERVOIR_REQUIRE_GPU=1` a missing NCCL fails the test.
fn all_gpus() -> Option<Vec<usize>> {
    gpu()?;
    if let Err(e) = nccl_loadable() {
        let required = std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
        assert!(!required, "RESERVOIR_REQUIRE_GPU=1 but {e}");
        eprintln!("skipping NCCL test: {e}");
        return None;
    }
    Some(probe().devices.iter().map(|d| d.ordinal).collect())
}

fn random(rng: &mut ChaCha8Rng, rows: usize, columns: usize) -> Array2<f64> {
    Array2::from_shape_fn((rows, columns), |_| rng.random_range(-1.0..1.0))
}

/// The sums of every row on GPU `device` alone.
fn one_gpu_sums(device: &GpuDevice, x: &Array2<f64>, y: &Array2<f64>) -> RidgeAccumulator {
    let shift: Vec<f64> = y.row(0).to_vec();
    let mut sums = DeviceRidgeSums::new(device, x.ncols(), y.ncols(), 1)
        .and_then(|s| s.with_target_shift(&shift))
        .expect("sums");
    sums.add_host(x.view(), y.view()).expect("add");
    sums.download().expect("download").remove(0)
}

/// The largest difference between two sets of sums, relative to the largest sum.
fn difference(got: &RidgeAccumulator, expected: &RidgeAccumulator) -> f64 {
    assert_eq!(got.rows(), expected.rows());
    let scale = expected.gram().iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let gram = (got.gram() - expected.gram())
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let cross = (got.cross() - expected.cross())
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    gram.max(cross) / scale
}

/// This process's members' sums of their shares of (x, y), added over `collective`.
fn reduced_sums(
    collective: &mut Collective,
    x: &Array2<f64>,
    y: &Array2<f64>,
) -> Vec<RidgeAccumulator> {
    let shift: Vec<f64> = y.row(0).to_vec();
    let world = collective.world();
    let mut sums: Vec<DeviceRidgeSums> = collective
        .devices()
        .iter()
        .zip(collective.ranks())
        .map(|(device, rank)| {
            let rows = share(x.nrows(), world, rank);
            let mut sums = DeviceRidgeSums::new(device, x.ncols(), y.ncols(), 1)
                .and_then(|s| s.with_target_shift(&shift))
                .expect("sums");
            sums.add_host(
                x.slice(ndarray::s![rows.clone(), ..]),
                y.slice(ndarray::s![rows, ..]),
            )
            .expect("add");
            sums
        })
        .collect();
    let mut refs: Vec<&mut DeviceRidgeSums> = sums.iter_mut().collect();
    DeviceRidgeSums::all_reduce(&mut refs, collective).expect("all-reduce");
    sums.iter()
        .map(|s| s.download().expect("download").remove(0))
        .collect()
}

#[test]
fn ridge_sums_added_over_the_gpus_equal_one_gpus() {
    let Some(ordinals) = all_gpus() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("ridge_sums_added_over_the_gpus"));
    let (x, y) = (random(&mut rng, 601, 40), random(&mut rng, 601, 3));
    let device = GpuDevice::shared(ordinals[0]).expect("GPU");
    let expected = one_gpu_sums(&device, &x, &y);
    let mut collective = Collective::local(&ordinals).expect("collective");
    for got in reduced_sums(&mut collective, &x, &y) {
        let d = difference(&got, &expected);
        eprintln!(
            "{} GPUs: sums differ by {d:e} of the largest",
            ordinals.len()
        );
        assert!(d < 1e-12, "{d}");
        let (a, b) = (
            got.solve(1e-6).expect("solve"),
            expected.solve(1e-6).expect("solve"),
        );
        let weights = (a.readout.weights() - b.readout.weights())
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(weights < 1e-9, "readouts differ by {weights}");
    }
    // Sums without a given shift, or of another shape, are refused before any traffic.
    let mut plain = DeviceRidgeSums::new(&device, 40, 3, 1).expect("sums");
    let mut one = Collective::local(&ordinals[..1]).expect("collective");
    let error = DeviceRidgeSums::all_reduce(&mut [&mut plain], &mut one).expect_err("no shift");
    assert!(error.to_string().contains("target shift"), "{error}");
}

#[test]
fn gathers_return_every_ranks_part_in_rank_order() {
    let Some(ordinals) = all_gpus() else { return };
    let mut collective = Collective::local(&ordinals).expect("collective");
    let total = 7 * ordinals.len() + 1;
    let world = collective.world();
    let parts: Vec<Vec<u32>> = collective
        .ranks()
        .map(|rank| share(total, world, rank).map(|i| i as u32 * 3).collect())
        .collect();
    let views: Vec<&[u32]> = parts.iter().map(Vec::as_slice).collect();
    let width = total.div_ceil(world);
    let gathered = collective.gather_to_host(&views, width).expect("gather");
    for rank in 0..world {
        let mine = share(total, world, rank);
        let got = &gathered[rank * width..rank * width + mine.len()];
        assert_eq!(got, &parts[rank][..], "rank {rank}");
    }
    assert!(collective.gather_to_host(&views[..0], width).is_err());
}

#[test]
fn a_sharded_reservoir_gives_the_states_of_one_gpu_over_1000_steps() {
    let Some(ordinals) = all_gpus() else { return };
    let seed = fresh_seed("a_sharded_reservoir");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // An odd size, so the shards are padded.
    let config = ReservoirConfig::default()
        .to_params()
        .size(1001)
        .input_size(3)
        .connection_prob(0.2)
        .leak_rate(0.7)
        .spectral_radius(0.9)
        .seed(seed)
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let inputs = random(&mut rng, 1000, 3);
    let device = GpuDevice::shared(ordinals[0]).expect("GPU");
    let mut one =
        GpuReservoirComputer::from_weights(&config, weights.clone(), &device).expect("one GPU");
    let expected = one.run(inputs.view()).expect("one GPU run");
    // The CPU reservoir of the same weights in f32: the reference of the shard's step kernel.
    let mut cpu =
        reservoir_core::cpu_reservoir(&config, weights.clone(), reservoir_core::Par::all())
            .expect("cpu");
    let on_cpu = cpu.run(inputs.view()).expect("cpu run");
    let largest = |a: &ndarray::Array2<f64>, b: &ndarray::Array2<f64>| {
        (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs()))
    };
    let mut one_shard: Option<ndarray::Array2<f64>> = None;
    for ordinals in [&ordinals[..1], &ordinals[..]] {
        let collective = Collective::local(ordinals).expect("collective");
        let mut sharded = ShardedReservoir::new(&config, &weights, collective).expect("sharded");
        let got = sharded.run(inputs.view()).expect("sharded run");
        let (max, cpu_max) = (largest(&got, &expected), largest(&got, &on_cpu));
        eprintln!(
            "sharded over {ordinals:?}: states within {max:e} of one GPU's, {cpu_max:e} of the CPU's"
        );
        assert!(max < 1e-4 && cpu_max < 1e-4, "{max} {cpu_max}");
        // Every GPU count gives the bits of one shard.
        match &one_shard {
            None => one_shard = Some(got.clone()),
            Some(first) => assert!(*first == got, "the shards' states differ from one GPU's"),
        }
        // Two runs of 500 steps continue one another exactly as one of 1000 does.
        sharded.reset().expect("reset");
        let first = sharded
            .run(inputs.slice(ndarray::s![..500, ..]))
            .expect("first half");
        let state = sharded.state().expect("state");
        sharded.reset().expect("reset");
        sharded.set_state(state.view()).expect("set state");
        let second = sharded
            .run(inputs.slice(ndarray::s![500.., ..]))
            .expect("second half");
        assert_eq!(first, got.slice(ndarray::s![..500, ..]));
        assert_eq!(second, got.slice(ndarray::s![500.., ..]));
    }
    let noisy = config
        .to_params()
        .noise_level(0.01)
        .check()
        .expect("config");
    let collective = Collective::local(&ordinals[..1]).expect("collective");
    let error = ShardedReservoir::new(&noisy, &weights, collective).expect_err("noise");
    assert!(error.to_string().contains("noise_level"), "{error}");
}

#[test]
fn a_lif_network_split_over_the_gpus_spikes_as_the_cpu_does() {
    let Some(ordinals) = all_gpus() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("sharded_lif"));
    for (case, (size, density)) in [(5003, 0.02), (2000, 0.1)].into_iter().enumerate() {
        // Strong drive and recurrence: bursts overflow some inboxes, so the gather fallback
        // (which reads every GPU's flags) runs too.
        let config = LifParams::new()
            .size(size)
            .input_size(2)
            .connection_prob(density)
            .spectral_radius(rng.random_range(1.5..3.0))
            .bias_current(rng.random_range(0.85..0.97))
            .input_scaling(rng.random_range(1.0..3.0))
            .features([LifFeatures::Trace, LifFeatures::Counts][case])
            .count_window_steps(40)
            .seed(rng.random())
            .check()
            .expect("config");
        let weights = LifWeights::generate(&config).expect("weights");
        let inputs = Array2::from_shape_fn((700, 2), |_| {
            if rng.random_bool(0.3) {
                rng.random_range(0.0..2.0)
            } else {
                0.0
            }
        });
        let mut cpu = LifNetwork::from_weights(&config, weights.clone()).expect("cpu");
        let expected = cpu.run(inputs.view()).expect("cpu run");
        let spikes = cpu.spike_count();
        assert!(spikes > 0, "case {case}: the network is silent");
        for gpus in [&ordinals[..1], &ordinals[..]] {
            let collective = Collective::local(gpus).expect("collective");
            let mut split = ShardedLifNetwork::new(&config, &weights, collective).expect("split");
            let got = split.run(inputs.view()).expect("split run");
            let differing = got
                .iter()
                .zip(&expected)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
            eprintln!("case {case}, N = {size} over {gpus:?}: {spikes} spikes, {differing} features differ");
            assert_eq!(differing, 0, "case {case} over {gpus:?}");
            // Reset and a second run: the same again.
            split.reset().expect("reset");
            let again = split.run(inputs.view()).expect("again");
            assert!(
                again == got,
                "case {case} over {gpus:?}: a run after reset differs"
            );
        }
    }
}

/// The environment variable that makes this test binary a child rank.
const CHILD_RANK: &str = "RESERVOIR_TEST_CHILD_RANK";
/// The environment variable that hands the child rank NCCL's unique id, in hex.
const CHILD_ID: &str = "RESERVOIR_TEST_NCCL_ID";

/// The unique id written in hex.
fn unhex(hex: &str) -> Option<[u8; UNIQUE_ID_BYTES]> {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    bytes.try_into().ok()
}

#[test]
fn two_processes_add_their_sums_through_nccl() {
    let Some(ordinals) = all_gpus() else { return };
    let child = std::env::var(CHILD_RANK)
        .ok()
        .and_then(|r| r.parse::<usize>().ok());
    let world = ordinals.len().min(2);
    // Rank 0 makes NCCL's unique id and hands it to the child in its environment, in hex.
    let (rank, seed, id) = match child {
        Some(rank) => (
            rank,
            std::env::var("RESERVOIR_TEST_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .expect("seed"),
            std::env::var(CHILD_ID)
                .ok()
                .and_then(|hex| unhex(&hex))
                .expect("the unique id"),
        ),
        None => (
            0,
            fresh_seed("two_processes"),
            new_unique_id().expect("unique id"),
        ),
    };
    if world < 2 {
        eprintln!("one GPU: the two-process test runs as one rank");
    }
    let spawned = (child.is_none() && world == 2).then(|| {
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                &harness_name(module_path!(), "two_processes_add_their_sums_through_nccl"),
                "--nocapture",
            ])
            .env(CHILD_RANK, "1")
            .env("RESERVOIR_TEST_SEED", seed.to_string())
            .env(
                CHILD_ID,
                id.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            )
            .spawn()
            .expect("the second rank")
    });
    let device = GpuDevice::shared(ordinals[rank]).expect("GPU");
    let mut collective = Collective::process(&device, rank, world, id).expect("collective");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (x, y) = (random(&mut rng, 333, 24), random(&mut rng, 333, 2));
    let expected = one_gpu_sums(&device, &x, &y);
    let got = reduced_sums(&mut collective, &x, &y).remove(0);
    let d = difference(&got, &expected);
    eprintln!("rank {rank} of {world}: sums differ by {d:e} of the largest");
    assert!(d < 1e-12, "{d}");
    // A reservoir sharded over the two processes (each builds its rank's shard) gives the
    // states of one GPU holding every row, bit for bit.
    let config = ReservoirConfig::default()
        .to_params()
        .size(1001)
        .input_size(3)
        .connection_prob(0.2)
        .seed(seed)
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let inputs = random(&mut rng, 300, 3);
    let mut spread = ShardedReservoir::new(&config, &weights, collective).expect("sharded");
    let got = spread.run(inputs.view()).expect("sharded run");
    let alone = Collective::local(&[ordinals[rank]]).expect("one GPU");
    let mut whole = ShardedReservoir::new(&config, &weights, alone).expect("one shard");
    let expected = whole.run(inputs.view()).expect("one shard run");
    assert!(
        got == expected,
        "rank {rank}: the states over two processes differ"
    );
    if let Some(mut other) = spawned {
        assert!(
            other.wait().expect("second rank").success(),
            "the second rank failed"
        );
    }
}
