//! Every kernel module of `reservoir-kernels` loads on this device, from its shipped cubin or
//! compiled by the driver from its PTX; nothing else compiles (NVRTC is never loaded).
//!
//! Modules are compiled inside the crate, on first use per device, by the public GPU objects
//! (the loader is crate-private), so these tests build every public GPU object once on tiny
//! inputs and run it once: together they compile and load every module of
//! `reservoir_kernels::MODULES` that the device can run. The kernels' results are checked
//! against the CPU by the parity tests; the entry points and the shared header by
//! `reservoir-kernels`' own unit tests.

use crate::common;

use common::gpu;
use gpu_reservoir::{
    detection, encoding, spectral, BatchKernel, DeviceRidgeSums, GemmMath, GpuError, GpuLaneRunner,
    GpuLifNetwork, GpuReservoirComputer, LifStepPath, ManySequences, StepPath,
};
use ndarray::{Array2, ArrayView2};
use reservoir_core::detection::{random_template, DetectorOptions, PatternDetector};
use reservoir_core::encoding::RateOptions;
use reservoir_core::features::{FeatureParams, Summary};
use reservoir_core::lanes::{Lane, LaneData};
use reservoir_core::lif::LifParams;
use reservoir_core::spectral::SpectralOptions;
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights};

/// Which public GPU object compiles each kernel module (on its first use on a device).
const BUILT_BY: &[(&str, &str)] = &[
    ("esn.cu", "GpuReservoirComputer, on every step path"),
    (
        "esn_persistent.cu",
        "GpuReservoirComputer, where the device has cooperative launch",
    ),
    (
        "esn_cluster.cu",
        "GpuReservoirComputer, where the device has thread-block clusters (sm_90+)",
    ),
    (
        "esn_batch_tc.cu",
        "GpuReservoirComputer::run_many in f16 batches, on compute capability 9.0",
    ),
    (
        "sequence_features.cu",
        "GpuReservoirComputer::sequence_features with a model space, in batches",
    ),
    ("lanes.cu", "GpuLaneRunner::new"),
    ("ridge.cu", "DeviceRidgeSums::new"),
    ("spectral.cu", "gpu_reservoir::spectral::spectral_radius"),
    ("encoding.cu", "gpu_reservoir::encoding::rate_sequence"),
    ("detection.cu", "gpu_reservoir::detection::scores"),
    ("lif.cu", "GpuLifNetwork, on the gather and event-driven paths"),
    ("csr.cu", "GpuLifNetwork's upload (Wᵀ built on the device)"),
    (
        "lif_cluster.cu",
        "GpuLifNetwork on the EventCluster path, where the device has thread-block clusters (sm_90+)",
    ),
];

/// Step paths from the most to the least demanding: the order in which a reservoir picks its
/// default.
const STEP_PATHS: [StepPath; 3] = [StepPath::Cluster, StepPath::Persistent, StepPath::PerStep];

/// A small echo-state config (N within the cluster path's limit).
fn small_config() -> ReservoirConfig {
    ReservoirParams::new()
        .size(64)
        .input_size(2)
        .connection_prob(0.2)
        .bias_scaling(0.1)
        .seed(7)
        .check()
        .expect("config")
}

/// Deterministic inputs in (−1, 1), `steps` × `k`.
fn inputs(steps: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((steps, k), |(t, c)| ((t * k + c) as f64 * 0.37).sin())
}

fn assert_finite(what: &str, values: &Array2<f64>) {
    assert!(
        values.iter().all(|v| v.is_finite()),
        "{what}: a value is not finite"
    );
}

#[test]
fn every_kernel_module_is_built_by_an_object_here() {
    // A CPU test: a module added to (or renamed in) `reservoir_kernels::MODULES` must get the
    // object that compiles it into `BUILT_BY` and into the GPU test below.
    let mut modules: Vec<&str> = reservoir_kernels::MODULES.iter().map(|m| m.name).collect();
    let mut covered: Vec<&str> = BUILT_BY.iter().map(|(module, _)| *module).collect();
    modules.sort_unstable();
    covered.sort_unstable();
    assert_eq!(
        covered, modules,
        "the modules built here are not reservoir_kernels::MODULES"
    );
    for (module, object) in BUILT_BY {
        assert!(!object.is_empty(), "{module}: no object named");
    }
}

#[test]
fn every_public_gpu_object_builds_and_runs_once_on_this_device() {
    let Some(device) = gpu() else { return };
    eprintln!("device: {:?}", device.info());

    // esn.cu, and esn_persistent.cu / esn_cluster.cu where the device runs them: every step
    // path the device allows builds and runs; the others are refused as unsupported.
    let config = small_config();
    let u = inputs(20, 2);
    let mut allowed = Vec::new();
    for path in STEP_PATHS {
        let reservoir =
            GpuReservoirComputer::new_shared(&config, &device).expect("GpuReservoirComputer");
        match reservoir.with_step_path(path) {
            Ok(mut reservoir) => {
                assert_eq!(reservoir.step_path(), path);
                let states = reservoir
                    .run(u.view())
                    .unwrap_or_else(|e| panic!("{path:?}: the run failed: {e}"));
                assert_eq!(states.dim(), (20, 64), "{path:?}");
                assert_finite(&format!("{path:?}"), &states);
                allowed.push(path);
            }
            Err(GpuError::Unsupported { what, reason }) => {
                eprintln!("{path:?}: {what} is not supported here: {reason}");
            }
            Err(other) => panic!("{path:?}: expected Ok or Unsupported, got {other}"),
        }
    }
    eprintln!("step paths this device runs: {allowed:?}");
    assert!(
        allowed.contains(&StepPath::PerStep),
        "every device runs the per-step path"
    );

    // The many-sequence GEMM path (esn.cu's elementwise and f16 kernels beside cuBLAS), in
    // each arithmetic, and the tensor-core run (esn_batch_tc.cu) where the device has it.
    let sequences = [inputs(12, 2), inputs(7, 2)];
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|s| s.view()).collect();
    let hopper = device.info().compute_capability == (9, 0);
    for (math, kernel) in [
        (GemmMath::F32, BatchKernel::Gemm),
        (GemmMath::Tf32, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::TensorCore),
    ] {
        let reservoir = GpuReservoirComputer::new_shared(&config, &device)
            .expect("GpuReservoirComputer")
            .with_many_sequences(ManySequences::Batched(math))
            .expect("batch math");
        let mut reservoir = match reservoir.with_batch_kernel(kernel) {
            Ok(reservoir) => reservoir,
            Err(GpuError::Unsupported { what, reason }) if !hopper => {
                eprintln!("{what} is not supported here: {reason}");
                continue;
            }
            Err(other) => panic!("{math:?}, {kernel:?}: {other}"),
        };
        let mut lengths = Vec::new();
        reservoir
            .run_many(&views, &mut |_, states| {
                lengths.push(states.nrows());
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{math:?}, {kernel:?}: run_many failed: {e}"));
        assert_eq!(lengths, [12, 7], "{math:?}, {kernel:?}");
        assert_eq!(
            reservoir.batch_kernel(math, views.len()).expect("kernel"),
            kernel
        );
    }

    // sequence_features.cu: a model space of the batched states (N = 64, within the device
    // solve's width).
    let mut reservoir = GpuReservoirComputer::new_shared(&config, &device)
        .expect("GpuReservoirComputer")
        .with_many_sequences(ManySequences::Batched(GemmMath::F32))
        .expect("batch math");
    let model_space = FeatureParams::new()
        .summaries(vec![Summary::ModelSpace, Summary::Mean])
        .check()
        .expect("features");
    let rows = reservoir
        .sequence_features(&views, &model_space, &mut |_, _| {})
        .expect("model-space features");
    assert_eq!(rows.dim(), (2, model_space.width(64)));
    assert_finite("model space", &rows);

    // lif.cu on its two paths (csr.cu builds Wᵀ for them), and lif_cluster.cu where the
    // device has clusters.
    let lif = LifParams::new()
        .size(50)
        .input_size(2)
        .check()
        .expect("LIF config");
    let mut lif_paths = vec![LifStepPath::Gather, LifStepPath::EventDriven];
    let clusters = GpuLifNetwork::new_shared(&lif, &device)
        .expect("GpuLifNetwork")
        .cluster_run_available()
        .expect("the LIF cluster plan");
    assert_eq!(
        clusters,
        device.info().compute_capability.0 >= 9,
        "the LIF cluster run is available exactly on sm_90+ devices"
    );
    if clusters {
        lif_paths.push(LifStepPath::EventCluster);
    }
    for path in lif_paths {
        let mut network = GpuLifNetwork::new_shared(&lif, &device)
            .expect("GpuLifNetwork")
            .with_step_path(path);
        assert_eq!(network.step_path(), path);
        let features = network
            .run(inputs(30, 2).mapv(f64::abs).view())
            .unwrap_or_else(|e| panic!("{path:?}: the LIF run failed: {e}"));
        assert_eq!(features.dim(), (30, 50), "{path:?}");
        assert_finite(&format!("LIF {path:?}"), &features);
    }

    // lanes.cu (and ridge.cu through the lanes' sums).
    let mut runner = GpuLaneRunner::new(&device).expect("GpuLaneRunner::new");
    let (lane_inputs, targets) = (inputs(40, 2), inputs(40, 1));
    let data = LaneData {
        inputs: lane_inputs.view(),
        targets: targets.view(),
        washout: 5,
        train_rows: 30,
    };
    let lanes = [Lane::new(&config, 0.9, 0.5, 1.0).expect("lane")];
    let sums = runner
        .run(&config, &lanes, &data)
        .expect("GpuLaneRunner::run");
    assert_eq!(sums.len(), 1);
    assert_eq!((sums[0].train.rows(), sums[0].validation.rows()), (25, 10));

    // ridge.cu on its own.
    let mut ridge = DeviceRidgeSums::new(&device, 4, 1, 2).expect("DeviceRidgeSums::new");
    let host: Vec<f32> = (0..3 * 8).map(|i| (i as f32 * 0.1).sin()).collect();
    let states = device.stream().clone_htod(&host).expect("upload");
    ridge
        .add(&states.slice(..), Array2::<f64>::ones((3, 1)).view())
        .expect("DeviceRidgeSums::add");
    let blocks = ridge.download().expect("DeviceRidgeSums::download");
    assert_eq!(blocks.len(), 2);
    assert!(blocks.iter().all(|b| b.rows() == 3));

    // encoding.cu.
    let spikes = encoding::rate_sequence(
        &device,
        inputs(10, 3).mapv(f64::abs).view(),
        RateOptions::default(),
        11,
    )
    .expect("encoding::rate_sequence");
    assert_eq!(spikes.dim(), (10, 3));
    assert!(spikes.iter().all(|&s| s == 0.0 || s == 1.0));

    // detection.cu.
    let template = random_template(4, 10.0, 4, 3).expect("template");
    let detector =
        PatternDetector::new(vec![template], DetectorOptions::default()).expect("detector");
    let stream: Vec<Spike> = (0..40)
        .map(|i| Spike {
            neuron_id: i % 4,
            time_ms: f64::from(i) * 2.4,
            amplitude: 1.0,
        })
        .collect();
    let stream = SpikePattern::new(stream, 4, 100.0).expect("stream");
    let scores = detection::scores(&device, &detector, &stream).expect("detection::scores");
    assert_eq!(scores.ncols(), 1);
    assert!(scores.nrows() > 0);

    // spectral.cu.
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let estimate =
        spectral::spectral_radius(&device, weights.recurrent(), &SpectralOptions::default())
            .expect("spectral::spectral_radius");
    assert!(
        estimate.radius.is_finite() && estimate.radius > 0.0,
        "{estimate:?}"
    );

    // Every module came shipped or from the driver's compile: the process never loaded NVRTC.
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    assert!(
        !maps.contains("libnvrtc"),
        "a GPU object loaded NVRTC: {}",
        maps.lines()
            .find(|l| l.contains("libnvrtc"))
            .unwrap_or_default()
    );
}

#[test]
fn the_default_step_path_is_the_first_the_device_allows() {
    let Some(device) = gpu() else { return };
    let config = small_config();
    let default = GpuReservoirComputer::new_shared(&config, &device)
        .expect("GpuReservoirComputer")
        .step_path();
    let first_allowed =
        STEP_PATHS.into_iter().find(|&path| {
            match GpuReservoirComputer::new_shared(&config, &device)
                .expect("GpuReservoirComputer")
                .with_step_path(path)
            {
                Ok(_) => true,
                Err(GpuError::Unsupported { .. }) => false,
                Err(other) => panic!("{path:?}: expected Ok or Unsupported, got {other}"),
            }
        });
    eprintln!(
        "compute capability {:?}: default step path {default:?}",
        device.info().compute_capability
    );
    assert_eq!(Some(default), first_allowed);
    if device.info().compute_capability.0 >= 9 {
        // N = 64 is within the cluster path's limit.
        assert_eq!(default, StepPath::Cluster, "an sm_90+ device with N = 64");
    }
}
