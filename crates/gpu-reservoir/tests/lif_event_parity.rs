//! The event-driven GPU LIF step against the CPU reference on fresh random inputs: spike
//! trains, features and synaptic-event counts bit for bit, on every forced path (the cluster
//! run where the device has thread-block clusters), across path switches, through inbox
//! overflows (synchronous bursts), over repeated runs of the same inputs (what the benchmarks
//! time), and at N = 100,000 with 1 % connectivity.

use crate::common;

use common::{fresh_seed, gpu};
use gpu_reservoir::internals::LIF_INBOX_CAPACITY;
use gpu_reservoir::{GpuDevice, GpuLifNetwork, LifStepPath};
use ndarray::{s, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lif::{LifConfig, LifFeatures, LifInputMode, LifNetwork, LifParams};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::Reservoir;

/// Sparse random drive: each entry is 0 with probability 0.7, else uniform on [0, scale).
fn random_inputs(rng: &mut ChaCha8Rng, steps: usize, channels: usize, scale: f64) -> Array2<f64> {
    Array2::from_shape_fn((steps, channels), |_| {
        if rng.random_bool(0.3) {
            rng.random_range(0.0..scale)
        } else {
            0.0
        }
    })
}

fn forced(config: &LifConfig, device: &GpuDevice, path: LifStepPath) -> GpuLifNetwork {
    GpuLifNetwork::new_shared(config, device)
        .expect("gpu network")
        .with_step_path(path)
}

/// The forced paths to compare for `config`: both launch paths, and the cluster run where the
/// device has thread-block clusters (it must, at compute capability 9.0 and later).
fn paths(config: &LifConfig, device: &GpuDevice) -> Vec<LifStepPath> {
    let mut paths = vec![LifStepPath::EventDriven, LifStepPath::Gather];
    let mut probe = forced(config, device, LifStepPath::EventCluster);
    if probe.cluster_run_available().expect("cluster plan") {
        paths.push(LifStepPath::EventCluster);
    } else {
        assert!(
            device.info().compute_capability.0 < 9,
            "no cluster run on a device of compute capability 9.0 or later"
        );
        eprintln!("no thread-block clusters on this device: the cluster run is not tested");
    }
    paths
}

/// Runs `inputs` on the CPU and on `gpu` and asserts identical spikes, features (bit for
/// bit) and synaptic-event counts; returns the CPU's spikes.
fn assert_same_run(
    what: &str,
    cpu: &mut LifNetwork,
    gpu: &mut GpuLifNetwork,
    inputs: &Array2<f64>,
) -> SpikePattern {
    let events_before = (cpu.synaptic_events(), gpu.synaptic_events());
    let (cpu_features, cpu_spikes) = cpu.run_recording(inputs.view()).expect("cpu run");
    let (gpu_features, gpu_spikes) = gpu.run_recording(inputs.view()).expect("gpu run");
    assert_eq!(gpu_spikes, cpu_spikes, "{what}: spike trains differ");
    let differing = gpu_features
        .iter()
        .zip(&cpu_features)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(differing, 0, "{what}: {differing} feature values differ");
    assert_eq!(
        gpu.synaptic_events() - events_before.1,
        cpu.synaptic_events() - events_before.0,
        "{what}: synaptic events differ"
    );
    assert_eq!(gpu.spike_count(), cpu.spike_count(), "{what}: spike counts");
    cpu_spikes
}

#[test]
fn event_driven_and_gather_paths_are_identical_to_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_event_parity"));
    for case in 0..6 {
        let config = LifParams::new()
            .size([1000, 3000, 5000][case % 3])
            .input_size(1 + case % 3)
            .connection_prob([0.1, 0.03, 0.01][case % 3])
            .spectral_radius(rng.random_range(1.0..3.0))
            .bias_current(rng.random_range(0.85..0.97))
            .input_scaling(rng.random_range(0.5..3.0))
            .features(
                [
                    LifFeatures::Trace,
                    LifFeatures::Membrane,
                    LifFeatures::Counts,
                ][case % 3],
            )
            .input_mode(if case % 2 == 0 {
                LifInputMode::Current
            } else {
                LifInputMode::Synaptic
            })
            .count_window_steps(50)
            .seed(rng.random())
            .check()
            .expect("config");
        let inputs = random_inputs(&mut rng, 1000, config.input_size(), 2.0);
        for path in paths(&config, &device) {
            let what = format!("case {case}, {path:?} ({config:?})");
            let mut cpu = LifNetwork::new(&config).expect("cpu network");
            let mut gpu = forced(&config, &device, path);
            assert_eq!(gpu.step_path(), path);
            let spikes = assert_same_run(&what, &mut cpu, &mut gpu, &inputs);
            eprintln!(
                "{what}: {} spikes, {} synaptic events over 1000 steps",
                spikes.spikes().len(),
                cpu.synaptic_events()
            );
            assert!(
                !spikes.spikes().is_empty(),
                "{what}: the network is silent, the test proves nothing"
            );
            // A second run continues from the kept state (pending spikes included).
            let more = random_inputs(&mut rng, 300, config.input_size(), 2.0);
            assert_same_run(&format!("{what}, continued"), &mut cpu, &mut gpu, &more);
            gpu.reset().expect("gpu reset");
            cpu.reset().expect("cpu reset");
            assert_same_run(&format!("{what}, after reset"), &mut cpu, &mut gpu, &more);
        }
    }
}

#[test]
fn switching_paths_between_runs_keeps_the_cpu_trajectory() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_path_switch"));
    // Synaptic input integrates over τ_syn, so every leg of 150 steps has spikes.
    let config = LifParams::new()
        .size(2000)
        .connection_prob(0.05)
        .spectral_radius(2.5)
        .bias_current(0.95)
        .input_mode(LifInputMode::Synaptic)
        .input_scaling(2.0)
        .seed(rng.random())
        .check()
        .expect("config");
    let mut cpu = LifNetwork::new(&config).expect("cpu network");
    let mut gpu = forced(&config, &device, LifStepPath::EventDriven);
    let mut order = vec![
        LifStepPath::EventDriven,
        LifStepPath::Gather,
        LifStepPath::EventDriven,
        LifStepPath::EventDriven,
        LifStepPath::Gather,
    ];
    if paths(&config, &device).contains(&LifStepPath::EventCluster) {
        // Into the cluster run from each path, twice in a row, and out of it to each.
        order.extend([
            LifStepPath::EventCluster,
            LifStepPath::EventCluster,
            LifStepPath::Gather,
            LifStepPath::EventCluster,
            LifStepPath::EventDriven,
            LifStepPath::EventCluster,
        ]);
    }
    for (leg, path) in order.into_iter().enumerate() {
        gpu = gpu.with_step_path(path);
        let inputs = random_inputs(&mut rng, 150, 1, 1.5);
        let spikes = assert_same_run(&format!("leg {leg}, {path:?}"), &mut cpu, &mut gpu, &inputs);
        assert!(!spikes.spikes().is_empty(), "leg {leg}: silent");
    }
}

/// Synaptic events each neuron received per step: neuron i at step t gets one per neuron j
/// that spiked at step t − 1 with W[i, j] ≠ 0.
fn max_events_per_target(cpu: &LifNetwork, spikes: &SpikePattern, steps: usize) -> usize {
    let dt = cpu.config().dt_ms();
    let mut by_step = vec![Vec::new(); steps];
    for spike in spikes.spikes() {
        by_step[(spike.time_ms / dt) as usize].push(spike.neuron_id as usize);
    }
    let w = cpu.weights().recurrent();
    let mut spiked = vec![false; w.ncols()];
    let mut most = 0;
    for list in &by_step {
        // A neuron receives at most one event per spike of the step.
        if list.len() <= most {
            continue;
        }
        list.iter().for_each(|&j| spiked[j] = true);
        for row in w.row_ptr().windows(2) {
            let cols = &w.col_idx()[row[0] as usize..row[1] as usize];
            most = most.max(cols.iter().filter(|&&j| spiked[j as usize]).count());
        }
        list.iter().for_each(|&j| spiked[j] = false);
    }
    most
}

#[test]
fn synchronous_bursts_overflow_the_inboxes_and_still_match() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_inbox_overflow"));
    // Every neuron gets input; every 150 steps a pulse makes ~40 % of them fire in the same
    // step, so a neuron with 200 inputs receives far more events than an inbox holds (85–98
    // at most per run, measured on the CPU over 8 seeds).
    let config = LifParams::new()
        .size(2000)
        .connection_prob(0.1)
        .input_connectivity(1.0)
        .input_scaling(1.0)
        .seed(rng.random())
        .check()
        .expect("config");
    let steps = 600;
    let inputs = Array2::from_shape_fn((steps, 1), |(t, _)| {
        if t % 150 == 0 {
            rng.random_range(150.0..300.0)
        } else {
            rng.random_range(0.0..1.0)
        }
    });
    let mut spikes = None;
    for path in paths(&config, &device) {
        let mut cpu = LifNetwork::new(&config).expect("cpu network");
        let mut gpu = forced(&config, &device, path);
        spikes = Some((
            assert_same_run(&format!("bursts, {path:?}"), &mut cpu, &mut gpu, &inputs),
            cpu,
        ));
    }
    let (spikes, cpu) = spikes.expect("paths");
    let most = max_events_per_target(&cpu, &spikes, steps);
    eprintln!(
        "bursts: {} spikes; up to {most} events reached one neuron in a step (inbox {})",
        spikes.spikes().len(),
        LIF_INBOX_CAPACITY
    );
    assert!(
        most > LIF_INBOX_CAPACITY,
        "no inbox overflowed ({most} events at most): the fallback was not exercised"
    );
}

#[test]
fn a_cluster_run_of_several_neurons_a_thread_and_small_shared_inboxes_matches_the_cpu() {
    // 30,000 neurons: two a thread in a 16-block cluster, and shared inboxes of about 7
    // entries (on 227 KB of shared memory a block) against the global 32; pulses overflow
    // both. Legs alternate with the launched paths, through the inboxes the run hands over.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_cluster_large"));
    let config = LifParams::new()
        .size(30_000)
        .connection_prob(0.0067)
        .input_connectivity(1.0)
        .input_scaling(1.0)
        .seed(rng.random())
        .check()
        .expect("config");
    if !paths(&config, &device).contains(&LifStepPath::EventCluster) {
        return;
    }
    let mut cpu = LifNetwork::new(&config).expect("cpu network");
    let mut gpu = GpuLifNetwork::from_weights(&config, cpu.weights(), &device).expect("gpu");
    let steps = 300;
    let mut most = 0;
    for (leg, path) in [
        LifStepPath::EventCluster,
        LifStepPath::EventDriven,
        LifStepPath::EventCluster,
        LifStepPath::Gather,
        LifStepPath::EventCluster,
    ]
    .into_iter()
    .enumerate()
    {
        gpu = gpu.with_step_path(path);
        let inputs = Array2::from_shape_fn((steps, 1), |(t, _)| {
            if t % 100 == 37 {
                rng.random_range(150.0..300.0)
            } else {
                rng.random_range(0.0..1.0)
            }
        });
        let what = format!("leg {leg}, {path:?}");
        let spikes = assert_same_run(&what, &mut cpu, &mut gpu, &inputs);
        assert!(!spikes.spikes().is_empty(), "{what}: silent");
        most = most.max(max_events_per_target(&cpu, &spikes, steps));
    }
    eprintln!("30,000 neurons: up to {most} events reached one neuron in a step");
    assert!(
        most > LIF_INBOX_CAPACITY,
        "no inbox overflowed ({most} events at most): the fallback was not exercised"
    );
}

#[test]
fn repeated_runs_of_the_same_inputs_are_the_cpu_runs() {
    // What the benchmarks time (a warm-up run and timed runs of the same inputs, each from
    // the state the previous left): every run is the CPU's, spikes and events included.
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_repeated_runs"));
    let config = LifParams::new()
        .size(3000)
        .connection_prob(0.05)
        .seed(rng.random())
        .check()
        .expect("config");
    let inputs = random_inputs(&mut rng, 400, 1, 2.0);
    for path in paths(&config, &device) {
        let mut cpu = LifNetwork::new(&config).expect("cpu network");
        let mut gpu = forced(&config, &device, path);
        let repeats = 3;
        let mut last = None;
        // The warm-up and the repeated runs.
        for run in 0..=repeats {
            let what = format!("{path:?}, run {run}");
            last = Some(assert_same_run(&what, &mut cpu, &mut gpu, &inputs));
        }
        let last = last.expect("runs");
        assert!(!last.spikes().is_empty(), "{path:?}: silent");
        let more = random_inputs(&mut rng, 200, 1, 2.0);
        let cpu_more = cpu.run(more.view()).expect("cpu");
        assert_eq!(
            gpu.run(more.view()).expect("gpu"),
            cpu_more,
            "{path:?}: after the repeated runs"
        );
        assert!(
            gpu.run(Array2::zeros((10, 2)).view()).is_err(),
            "wrong input width"
        );
    }
}

#[test]
fn a_100k_network_at_1_percent_matches_the_cpu() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("lif_100k"));
    let config = LifParams::new()
        .size(100_000)
        .connection_prob(0.01)
        .seed(rng.random())
        .check()
        .expect("config");
    let started = std::time::Instant::now();
    let mut cpu = LifNetwork::new(&config).expect("cpu network");
    let built = started.elapsed().as_secs_f64();
    let mut gpu = GpuLifNetwork::from_weights(&config, cpu.weights(), &device).expect("gpu");
    assert_eq!(gpu.step_path(), LifStepPath::EventDriven, "the auto path");
    // Input held for 10 ms at a time, the default regime (the first neurons fire after
    // ~15–35 ms from rest).
    let steps = 1000;
    let levels: Vec<f64> = (0..steps / 100)
        .map(|_| rng.random_range(0.5..1.0))
        .collect();
    let inputs = Array2::from_shape_fn((steps, 1), |(t, _)| levels[t / 100]);
    let (head, tail) = (inputs.slice(s![..700, ..]), inputs.slice(s![700.., ..]));
    let spikes = assert_same_run("N = 100,000", &mut cpu, &mut gpu, &head.to_owned());
    let continued = "N = 100,000, continued";
    assert_same_run(continued, &mut cpu, &mut gpu, &tail.to_owned());
    eprintln!(
        "N = 100,000, p = 1 %: CPU network built in {built:.1} s; {} spikes in the first 700 \
         steps, {} synaptic events in 1000; identical",
        spikes.spikes().len(),
        cpu.synaptic_events()
    );
    assert!(spikes.spikes().len() > 1000, "too few spikes to prove much");
}
