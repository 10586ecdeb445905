//! Device faults on one shared GPU: one reservoir used from several threads, reservoirs in
//! threads of their own, and reservoirs interleaved step by step (the device out of memory is
//! `out_of_memory.rs`). Each must end in a clear typed error or in exactly the numbers the same
//! work gives alone: never a panic, a hang or a wrong number. Every test body runs under a
//! time limit ([`crate::common::faults::within`]), so a hang fails the test instead of stalling
//! the run.

use crate::common;

use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use common::faults::{assert_same_bits, esn_config, limit, sanitizing, sized, within};
use common::{fresh_seed, gpu, random_inputs, relative_error, run_many, views};
use gpu_reservoir::{
    DeviceRidgeSums, GemmMath, GpuDevice, GpuError, GpuLaneRunner, GpuLifNetwork,
    GpuReservoirComputer, LifStepPath, ManySequences, StepPath,
};
use ndarray::{s, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::lanes::{Lane, LaneData};
use reservoir_core::lif::{LifConfig, LifNetwork, LifParams};
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirConfig};

fn lif_config(rng: &mut ChaCha8Rng, n: usize, k: usize) -> LifConfig {
    LifParams::new()
        .size(n)
        .input_size(k)
        .connection_prob(0.1)
        .spectral_radius(1.5)
        .input_scaling(2.0)
        .seed(rng.random())
        .check()
        .expect("LIF config")
}

/// Positive inputs with gaps, which make a LIF network spike.
fn lif_inputs(rng: &mut ChaCha8Rng, steps: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((steps, k), |_| {
        if rng.random_bool(0.3) {
            rng.random_range(0.0..2.0)
        } else {
            0.0
        }
    })
}

/// The GPU reservoir of `config` on `path`, or `None` where this device has no such path.
fn esn_on(
    device: &GpuDevice,
    config: &ReservoirConfig,
    path: StepPath,
) -> Option<GpuReservoirComputer> {
    let reservoir = GpuReservoirComputer::new_shared(config, device).expect("gpu reservoir");
    match reservoir.with_step_path(path) {
        Ok(reservoir) => Some(reservoir),
        Err(GpuError::Unsupported { .. }) => None,
        Err(other) => panic!("{path:?}: {other}"),
    }
}

/// The step paths this device runs for `config`.
fn paths(device: &GpuDevice, config: &ReservoirConfig) -> Vec<StepPath> {
    [StepPath::Cluster, StepPath::Persistent, StepPath::PerStep]
        .into_iter()
        .filter(|&path| esn_on(device, config, path).is_some())
        .collect()
}

#[test]
fn gpu_objects_can_move_to_and_be_shared_by_other_threads() {
    // A CPU test: the public GPU types are Send and Sync, so a reservoir can be built on one
    // thread and run on another, or shared behind a lock; `run` takes `&mut self`, so the
    // compiler allows one run at a time per reservoir.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<GpuDevice>();
    send_sync::<GpuReservoirComputer>();
    send_sync::<GpuLifNetwork>();
    send_sync::<GpuLaneRunner>();
    send_sync::<DeviceRidgeSums>();
    send_sync::<GpuError>();
}

#[test]
fn one_reservoir_behind_a_mutex_gives_the_sequential_states_on_every_path() {
    let Some(device) = gpu() else { return };
    let seed = fresh_seed("mutex");
    within("a reservoir behind a mutex", limit(120), move || {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let config = esn_config(&mut rng, 256, 2, 0.2);
        let segments: Vec<Array2<f64>> = (0..sized(12, 4))
            .map(|_| random_inputs(&mut rng, sized(25, 3), 2))
            .collect();
        for path in paths(&device, &config) {
            // Alone: the segments one after another, the state carried from each to the next.
            let mut alone = esn_on(&device, &config, path).expect("path");
            let expected: Vec<Array2<f64>> = segments
                .iter()
                .map(|segment| alone.run(segment.view()).expect("run"))
                .collect();
            // Shared by four threads: whichever holds the lock runs the next segment.
            let reservoir = esn_on(&device, &config, path).expect("path");
            let shared = Mutex::new((reservoir, 0usize, vec![None; segments.len()]));
            thread::scope(|scope| {
                for _ in 0..4 {
                    scope.spawn(|| loop {
                        let mut guard = shared.lock().expect("lock");
                        let (reservoir, next, out) = &mut *guard;
                        if *next == segments.len() {
                            break;
                        }
                        out[*next] = Some(reservoir.run(segments[*next].view()).expect("run"));
                        *next += 1;
                        drop(guard);
                        thread::yield_now();
                    });
                }
            });
            let (_, _, got) = shared.into_inner().expect("lock");
            for (index, (got, expected)) in got.iter().zip(&expected).enumerate() {
                let got = got.as_ref().expect("every segment ran");
                assert_same_bits(
                    &format!("{path:?}, segment {index}"),
                    got.as_slice().expect("layout"),
                    expected.as_slice().expect("layout"),
                );
            }
            // Each thread resets the shared reservoir and runs its own sequence under the lock:
            // each gets what that sequence gives alone from the zero state.
            let shared = Arc::new(Mutex::new(esn_on(&device, &config, path).expect("path")));
            let handles: Vec<_> = segments[..4]
                .iter()
                .cloned()
                .map(|segment| {
                    let shared = Arc::clone(&shared);
                    thread::spawn(move || {
                        let mut reservoir = shared.lock().expect("lock");
                        reservoir.reset().expect("reset");
                        reservoir.run(segment.view()).expect("run")
                    })
                })
                .collect();
            for (index, handle) in handles.into_iter().enumerate() {
                let got = handle.join().expect("thread");
                let mut alone = esn_on(&device, &config, path).expect("path");
                let expected = alone.run(segments[index].view()).expect("run");
                assert_same_bits(
                    &format!("{path:?}, thread {index} from the zero state"),
                    got.as_slice().expect("layout"),
                    expected.as_slice().expect("layout"),
                );
            }
            eprintln!("{path:?}: shared by 4 threads, the sequential states bit for bit");
        }
    });
}

/// Work that gives the same numbers every time it runs alone: a reservoir built and run on
/// the calling thread.
#[derive(Clone)]
enum Job {
    Esn {
        config: ReservoirConfig,
        path: StepPath,
        inputs: Array2<f64>,
    },
    Batched {
        config: ReservoirConfig,
        math: GemmMath,
        sequences: Vec<Array2<f64>>,
    },
    Lif {
        config: LifConfig,
        path: LifStepPath,
        inputs: Array2<f64>,
    },
    /// A sweep's lanes over several chunks, whose steps replay a CUDA graph captured on the
    /// device's stream.
    Lanes {
        config: ReservoirConfig,
        lanes: Vec<Lane>,
        inputs: Array2<f64>,
        targets: Array2<f64>,
    },
}

impl Job {
    fn name(&self) -> String {
        match self {
            Job::Esn { config, path, .. } => format!("echo state N {} {path:?}", config.size()),
            Job::Batched { config, math, .. } => {
                format!("batched N {} {math:?}", config.size())
            }
            Job::Lif { config, path, .. } => format!("LIF N {} {path:?}", config.size()),
            Job::Lanes { config, lanes, .. } => {
                format!("{} lanes N {}", lanes.len(), config.size())
            }
        }
    }

    /// Builds the reservoir on `device` and runs it twice (the second run carries on from
    /// the first, or runs the batch again); all the numbers, flattened.
    fn run(&self, device: &GpuDevice) -> Vec<f64> {
        let mut out = Vec::new();
        match self {
            Job::Esn {
                config,
                path,
                inputs,
            } => {
                let mut reservoir = esn_on(device, config, *path).expect("path");
                for _ in 0..2 {
                    out.extend(reservoir.run(inputs.view()).expect("run"));
                }
            }
            Job::Batched {
                config,
                math,
                sequences,
            } => {
                let mut reservoir = GpuReservoirComputer::new_shared(config, device)
                    .expect("gpu")
                    .with_many_sequences(ManySequences::Batched(*math))
                    .expect("batched");
                for _ in 0..2 {
                    for states in run_many(&mut reservoir, &views(sequences)).expect("run_many") {
                        out.extend(states);
                    }
                }
            }
            Job::Lif {
                config,
                path,
                inputs,
            } => {
                let mut network = GpuLifNetwork::new_shared(config, device)
                    .expect("gpu network")
                    .with_step_path(*path);
                for _ in 0..2 {
                    out.extend(network.run(inputs.view()).expect("run"));
                }
            }
            Job::Lanes {
                config,
                lanes,
                inputs,
                targets,
            } => {
                let mut runner = GpuLaneRunner::new(device).expect("lane runner");
                let data = LaneData {
                    inputs: inputs.view(),
                    targets: targets.view(),
                    washout: 10,
                    train_rows: inputs.nrows() / 2,
                };
                for sums in runner.run(config, lanes, &data).expect("lanes") {
                    for part in [&sums.train, &sums.validation] {
                        out.extend(part.gram());
                        out.extend(part.cross());
                        out.extend(part.feature_sums());
                    }
                }
            }
        }
        out
    }
}

/// A job of every kind this device runs.
fn jobs(device: &GpuDevice, rng: &mut ChaCha8Rng) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (n, density) in [(128, 0.2), (300, 0.1), (64, 0.3)] {
        let config = esn_config(rng, n, 2, density);
        for path in paths(device, &config) {
            jobs.push(Job::Esn {
                config: config.clone(),
                path,
                inputs: random_inputs(rng, sized(150, 10), 2),
            });
        }
    }
    let config = esn_config(rng, 200, 2, 0.2);
    let sequences: Vec<Array2<f64>> = (0..sized(8, 3))
        .map(|_| random_inputs(rng, sized(60, 6), 2))
        .collect();
    for math in [GemmMath::F32, GemmMath::Tf32, GemmMath::F16] {
        jobs.push(Job::Batched {
            config: config.clone(),
            math,
            sequences: sequences.clone(),
        });
    }
    for path in [LifStepPath::Gather, LifStepPath::EventDriven] {
        jobs.push(Job::Lif {
            config: lif_config(rng, 300, 2),
            path,
            inputs: lif_inputs(rng, sized(200, 20), 2),
        });
    }
    jobs
}

/// Runs `jobs` alone, one after another (each on a fresh thread: its first CUDA call), then
/// `rounds` times all at once, each in its own thread; every run must give the numbers of
/// its run alone.
fn alone_and_together(device: &GpuDevice, jobs: &[Job], rounds: usize) {
    let alone: Vec<Vec<f64>> = jobs
        .iter()
        .map(|job| {
            let (job, device) = (job.clone(), device.clone());
            thread::spawn(move || job.run(&device))
                .join()
                .expect("alone")
        })
        .collect();
    for round in 0..rounds {
        let start = Arc::new(Barrier::new(jobs.len()));
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                let (job, device, start) = (job.clone(), device.clone(), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    job.run(&device)
                })
            })
            .collect();
        for ((job, handle), expected) in jobs.iter().zip(handles).zip(&alone) {
            let got = handle.join().expect("a job's thread");
            assert_same_bits(&format!("round {round}, {}", job.name()), &got, expected);
        }
    }
    let names: Vec<String> = jobs.iter().map(Job::name).collect();
    eprintln!(
        "{} jobs at once, {rounds} rounds, each bit for bit as alone: {names:?}",
        jobs.len()
    );
}

#[test]
fn a_sweep_replaying_its_graph_beside_reservoirs_in_other_threads_gives_its_numbers() {
    let Some(device) = gpu() else { return };
    if sanitizing() {
        // Its point is 16,000 steps replayed from a graph beside other work; the sweep's
        // kernels are under the sanitizer in sweep_parity and kernels_compile.
        eprintln!("skipping under compute-sanitizer: too many steps");
        return;
    }
    let seed = fresh_seed("sweep_threads");
    within("a sweep beside reservoirs", limit(180), move || {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // 32 units and 2 lanes: chunks of 8192 steps, so 2 × 8192 + 100 steps make three
        // chunks and the full ones replay the graph captured on the device's stream.
        let config = esn_config(&mut rng, 32, 1, 0.3);
        let steps = 2 * gpu_reservoir::internals::CHUNK_STEPS + 100;
        let lanes = vec![
            Lane::new(&config, 0.9, 0.5, 1.0).expect("lane"),
            Lane::new(&config, 0.7, 0.3, 0.5).expect("lane"),
        ];
        let mut jobs = vec![Job::Lanes {
            config: config.clone(),
            lanes,
            inputs: random_inputs(&mut rng, steps, 1),
            targets: random_inputs(&mut rng, steps, 1),
        }];
        for path in [StepPath::PerStep, StepPath::Cluster, StepPath::Persistent] {
            let config = esn_config(&mut rng, 64, 2, 0.2);
            if esn_on(&device, &config, path).is_some() {
                jobs.push(Job::Esn {
                    config,
                    path,
                    inputs: random_inputs(&mut rng, 400, 2),
                });
            }
        }
        alone_and_together(&device, &jobs, 3);
    });
}

#[test]
fn reservoirs_in_threads_of_their_own_give_the_numbers_they_give_alone() {
    let Some(device) = gpu() else { return };
    let seed = fresh_seed("threads");
    within("reservoirs in their own threads", limit(180), move || {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let jobs = jobs(&device, &mut rng);
        alone_and_together(&device, &jobs, sized(3, 1));
    });
}

/// One step (one input row) of a reservoir that runs row by row.
trait Stepper {
    fn step(&mut self, row: ArrayView2<f64>) -> Vec<f64>;
}

impl Stepper for GpuReservoirComputer {
    fn step(&mut self, row: ArrayView2<f64>) -> Vec<f64> {
        self.run(row).expect("step").into_iter().collect()
    }
}

impl Stepper for GpuLifNetwork {
    fn step(&mut self, row: ArrayView2<f64>) -> Vec<f64> {
        self.run(row).expect("step").into_iter().collect()
    }
}

/// `steps` steps of `a` and `b` alternating (a, b, a, …), then of fresh copies alone: each
/// must give the same numbers both ways.
fn interleave(
    what: &str,
    make: &dyn Fn() -> (Box<dyn Stepper>, Box<dyn Stepper>),
    inputs: (&Array2<f64>, &Array2<f64>),
) -> (Vec<f64>, Vec<f64>) {
    let (mut a, mut b) = make();
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    for t in 0..inputs.0.nrows() {
        got_a.extend(a.step(inputs.0.slice(s![t..t + 1, ..])));
        got_b.extend(b.step(inputs.1.slice(s![t..t + 1, ..])));
    }
    let (mut a, mut b) = make();
    let mut alone_a = Vec::new();
    for t in 0..inputs.0.nrows() {
        alone_a.extend(a.step(inputs.0.slice(s![t..t + 1, ..])));
    }
    let mut alone_b = Vec::new();
    for t in 0..inputs.1.nrows() {
        alone_b.extend(b.step(inputs.1.slice(s![t..t + 1, ..])));
    }
    assert_same_bits(&format!("{what}: the first"), &got_a, &alone_a);
    assert_same_bits(&format!("{what}: the second"), &got_b, &alone_b);
    eprintln!("{what}: interleaved, each as alone bit for bit");
    (got_a, got_b)
}

#[test]
fn two_reservoirs_interleaved_step_by_step_give_the_states_each_gives_alone() {
    let Some(device) = gpu() else { return };
    let seed = fresh_seed("interleaved");
    within("interleaved reservoirs", limit(180), move || {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let steps = sized(40, 8);
        // Every pair of step paths (the same path twice too), on reservoirs of different sizes.
        let small = esn_config(&mut rng, 100, 2, 0.2);
        let large = esn_config(&mut rng, 300, 2, 0.1);
        let (u_a, u_b) = (
            random_inputs(&mut rng, steps, 2),
            random_inputs(&mut rng, steps, 2),
        );
        for path_a in paths(&device, &small) {
            for path_b in paths(&device, &large) {
                let (got_a, _) = interleave(
                    &format!("N 100 {path_a:?} with N 300 {path_b:?}"),
                    &|| {
                        (
                            Box::new(esn_on(&device, &small, path_a).expect("path")),
                            Box::new(esn_on(&device, &large, path_b).expect("path")),
                        )
                    },
                    (&u_a, &u_b),
                );
                // And the numbers are the CPU's, to f32 rounding.
                let expected = EchoStateNetwork::<f32>::new(&small)
                    .expect("cpu")
                    .run(u_a.view())
                    .expect("cpu run");
                let got = Array2::from_shape_vec((steps, 100), got_a).expect("shape");
                assert!(relative_error(&got, &expected).0 < 1e-4, "{path_a:?}");
            }
        }
        // Two reservoirs of the same config and seed (the same weights), different inputs.
        for path in paths(&device, &small) {
            interleave(
                &format!("two copies of N 100 on {path:?}"),
                &|| {
                    (
                        Box::new(esn_on(&device, &small, path).expect("path")),
                        Box::new(esn_on(&device, &small, path).expect("path")),
                    )
                },
                (&u_a, &u_b),
            );
        }
        // An echo-state reservoir with a LIF network, on each LIF path.
        let lif = lif_config(&mut rng, 200, 2);
        let spikes = lif_inputs(&mut rng, steps, 2);
        for lif_path in [LifStepPath::Gather, LifStepPath::EventDriven] {
            let (_, got) = interleave(
                &format!("N 100 with LIF {lif_path:?}"),
                &|| {
                    (
                        Box::new(GpuReservoirComputer::new_shared(&small, &device).expect("gpu")),
                        Box::new(
                            GpuLifNetwork::new_shared(&lif, &device)
                                .expect("gpu network")
                                .with_step_path(lif_path),
                        ),
                    )
                },
                (&u_a, &spikes),
            );
            let expected = LifNetwork::new(&lif)
                .expect("cpu network")
                .run(spikes.view())
                .expect("cpu run");
            assert_same_bits(
                &format!("LIF {lif_path:?} against the CPU"),
                &got,
                expected.as_slice().expect("layout"),
            );
        }
        // A batched run_many between the steps of a single-sequence reservoir, and a state set
        // and read back between the other's steps.
        let mut single = GpuReservoirComputer::new_shared(&small, &device).expect("gpu");
        let mut batched = GpuReservoirComputer::new_shared(&large, &device)
            .expect("gpu")
            .with_many_sequences(ManySequences::Batched(GemmMath::F32))
            .expect("batched");
        let batch: Vec<Array2<f64>> = (0..4)
            .map(|_| random_inputs(&mut rng, sized(30, 5), 2))
            .collect();
        let batch_alone = run_many(&mut batched, &views(&batch)).expect("batch");
        let mut got = Vec::new();
        for t in 0..steps {
            got.extend(single.step(u_a.slice(s![t..t + 1, ..])));
            if t % 4 == 2 {
                let states = run_many(&mut batched, &views(&batch)).expect("batch");
                assert_eq!(states, batch_alone, "step {t}: the batch changed");
                let state = single.state().expect("state");
                single.set_state(state.view()).expect("set state");
                assert_eq!(single.state().expect("state"), state);
            }
        }
        let mut alone = GpuReservoirComputer::new_shared(&small, &device).expect("gpu");
        let mut expected = Vec::new();
        for t in 0..steps {
            expected.extend(alone.step(u_a.slice(s![t..t + 1, ..])));
        }
        assert_same_bits("steps around batched runs", &got, &expected);
        // Row-by-row steps are the whole run's states.
        let whole = GpuReservoirComputer::new_shared(&small, &device)
            .expect("gpu")
            .run(u_a.view())
            .expect("run");
        assert_same_bits(
            "one step at a time against one run",
            &expected,
            whole.as_slice().expect("layout"),
        );
    });
}
