//! The conformance suite on the GPU reservoirs: every check of `reservoir-conformance` for
//! `GpuReservoirComputer` on each step path the device runs and with `run_many` batched
//! (against the CPU's `EchoStateNetwork<f32>` on the same weights, states within 1e-4), for
//! `GpuDeepReservoir` with every layer and with some read out (against the CPU's deep stack,
//! within 1e-4), and for `GpuLifNetwork` on both step paths (against the CPU's `LifNetwork`, bit for bit). Skipped
//! with the reason printed without a GPU; fails instead with `RESERVOIR_REQUIRE_GPU=1`.

use crate::common;

use common::gpu;
use gpu_reservoir::{
    GemmMath, GpuDeepReservoir, GpuDevice, GpuError, GpuLifNetwork, GpuReservoirComputer,
    LifStepPath, ManySequences, StepPath,
};
use reservoir_conformance as check;
use reservoir_conformance::Subject;
use reservoir_core::deep::{cpu_deep_esn, DeepEsnConfig, DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::lif::{
    LifConfig, LifFeatures, LifInputMode, LifNetwork, LifParams, LifWeights,
};
use reservoir_core::{
    EchoStateNetwork, Par, Precision, Reservoir, ReservoirConfig, ReservoirParams,
    ReservoirWeights, Result,
};

fn echo_state_config() -> Result<ReservoirConfig> {
    Ok(ReservoirParams::new()
        .size(300)
        .input_size(3)
        .leak_rate(0.5)
        .bias_scaling(0.2)
        .seed(11)
        .check()?)
}

/// Three layers of different sizes, each also driven by the input, `readout` read out.
fn deep_config(readout: Option<Vec<usize>>) -> Result<DeepEsnConfig> {
    let layer = |size| {
        DeepEsnLayerParams::new()
            .size(size)
            .leak_rate(0.5)
            .bias_scaling(0.2)
    };
    Ok(DeepEsnParams::new()
        .layers(vec![layer(120), layer(80).spectral_radius(0.8), layer(50)])
        .input_size(3)
        .input_to_all(true)
        .readout_layers(readout)
        .precision(Precision::F32)
        .seed(13)
        .check()?)
}

fn lif_config() -> Result<LifConfig> {
    Ok(LifParams::new()
        .size(400)
        .input_size(3)
        .dt_ms(1.0)
        .input_mode(LifInputMode::Synaptic)
        .input_scaling(3.0)
        .features(LifFeatures::Membrane)
        .seed(5)
        .check()?)
}

/// Runs `run` on every subject the device has: the echo-state reservoir on each step path it
/// allows, the deep stack (also with some layers read out where `some_layers`), the LIF
/// network on both paths.
fn on_every_gpu_reservoir(run: fn(&Subject<'_>), some_layers: bool) {
    let Some(device) = gpu() else { return };
    let config = echo_state_config().expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let cpu = || -> Result<Box<dyn Reservoir>> {
        Ok(Box::new(EchoStateNetwork::<f32>::from_weights(
            &config,
            weights.clone(),
        )?))
    };
    let batched = ManySequences::Batched(GemmMath::F32);
    let ways = [
        (StepPath::Cluster, ManySequences::OneByOne),
        (StepPath::Persistent, ManySequences::OneByOne),
        (StepPath::PerStep, ManySequences::OneByOne),
        (StepPath::PerStep, batched),
    ];
    for (path, many) in ways {
        let on_path = |device: &GpuDevice| -> std::result::Result<Box<dyn Reservoir>, GpuError> {
            let reservoir = GpuReservoirComputer::from_weights(&config, weights.clone(), device)?;
            Ok(Box::new(
                reservoir.with_step_path(path)?.with_many_sequences(many)?,
            ))
        };
        match on_path(&device) {
            Err(GpuError::Unsupported { reason, .. }) => {
                eprintln!("{path:?}: not on this device ({reason})");
                continue;
            }
            Err(e) => panic!("{path:?}: {e}"),
            Ok(_) => {}
        }
        let build = || -> Result<Box<dyn Reservoir>> { Ok(on_path(&device)?) };
        let name = format!("GpuReservoirComputer ({path:?}, run_many {many:?})");
        run(&Subject {
            name: &name,
            build: &build,
            reference: &cpu,
            tolerance: 1e-4,
            state_rounding: 6e-8,
            sequence_rounding: 0.0,
        });
    }
    let readouts = if some_layers {
        vec![None, Some(vec![1, 2])]
    } else {
        vec![None]
    };
    for readout in readouts {
        let deep = deep_config(readout.clone()).expect("config");
        let cpu_deep =
            || -> Result<Box<dyn Reservoir>> { Ok(Box::new(cpu_deep_esn(&deep, Par::Seq)?)) };
        let build = || -> Result<Box<dyn Reservoir>> {
            Ok(Box::new(GpuDeepReservoir::new_shared(&deep, &device)?))
        };
        let name = format!("GpuDeepReservoir (input to all, readout {readout:?})");
        run(&Subject {
            name: &name,
            build: &build,
            reference: &cpu_deep,
            tolerance: 1e-4,
            state_rounding: 6e-8,
            sequence_rounding: 1e-4,
        });
    }
    let lif = lif_config().expect("config");
    let lif_weights = LifWeights::generate(&lif).expect("weights");
    let cpu_lif = || -> Result<Box<dyn Reservoir>> {
        Ok(Box::new(LifNetwork::from_weights(
            &lif,
            lif_weights.clone(),
        )?))
    };
    for path in [LifStepPath::Gather, LifStepPath::EventDriven] {
        let build = || -> Result<Box<dyn Reservoir>> {
            let network = GpuLifNetwork::from_weights(&lif, &lif_weights, &device)?;
            Ok(Box::new(network.with_step_path(path)))
        };
        let name = format!("GpuLifNetwork ({path:?})");
        run(&Subject {
            name: &name,
            build: &build,
            reference: &cpu_lif,
            tolerance: 0.0,
            state_rounding: 6e-8,
            sequence_rounding: 0.0,
        });
    }
}

macro_rules! conformance {
    ($($check:ident: $some_layers:expr),*) => {
        $(
            #[test]
            fn $check() {
                on_every_gpu_reservoir(check::$check, $some_layers);
            }
        )*
    };
}

// A stack that reads out only some layers has a state without the others', so `set_state` is
// refused there and the round trip is left out.
conformance!(
    shapes: true,
    errors: true,
    state_round_trip: false,
    determinism: true,
    parity: true,
    spike_patterns: true,
    many_sequences: true,
    ridge_sums: true
);
