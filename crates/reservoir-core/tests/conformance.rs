//! The conformance suite on the CPU reservoirs: every check of `reservoir-conformance` for the
//! echo-state network in f32 and f64 and for the LIF network (reporting membrane potentials,
//! so that `set_state` and `state` are inverses).

use reservoir_conformance as check;
use reservoir_conformance::Subject;
use reservoir_core::lif::{LifFeatures, LifInputMode, LifNetwork, LifParams};
use reservoir_core::{
    EchoStateNetwork, Reservoir, ReservoirConfig, ReservoirParams, ReservoirWeights, Result,
};

fn echo_state_config() -> Result<ReservoirConfig> {
    ReservoirParams::new()
        .size(120)
        .input_size(3)
        .leak_rate(0.5)
        .bias_scaling(0.2)
        .seed(11)
        .check()
        .map_err(Into::into)
}

fn echo_state_f32() -> Result<Box<dyn Reservoir>> {
    let config = echo_state_config()?;
    let (weights, _) = ReservoirWeights::generate(&config)?;
    Ok(Box::new(EchoStateNetwork::<f32>::from_weights(
        &config, weights,
    )?))
}

fn echo_state_f64() -> Result<Box<dyn Reservoir>> {
    let config = echo_state_config()?;
    let (weights, _) = ReservoirWeights::generate(&config)?;
    Ok(Box::new(EchoStateNetwork::<f64>::from_weights(
        &config, weights,
    )?))
}

fn lif() -> Result<Box<dyn Reservoir>> {
    let config = LifParams::new()
        .size(150)
        .input_size(3)
        .dt_ms(1.0)
        .input_mode(LifInputMode::Synaptic)
        .input_scaling(3.0)
        .features(LifFeatures::Membrane)
        .seed(5)
        .check()?;
    Ok(Box::new(LifNetwork::new(&config)?))
}

const F32: Subject<'static> = Subject {
    name: "EchoStateNetwork<f32>",
    build: &echo_state_f32,
    reference: &echo_state_f32,
    tolerance: 0.0,
    state_rounding: 6e-8,
    sequence_rounding: 1e-5,
};

const F64: Subject<'static> = Subject {
    name: "EchoStateNetwork<f64>",
    build: &echo_state_f64,
    reference: &echo_state_f64,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 1e-13,
};

const LIF: Subject<'static> = Subject {
    name: "LifNetwork",
    build: &lif,
    reference: &lif,
    tolerance: 0.0,
    state_rounding: 6e-8,
    sequence_rounding: 0.0,
};

macro_rules! conformance {
    ($($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                for subject in [&F32, &F64, &LIF] {
                    check::$check(subject);
                }
            }
        )*
    };
}

conformance!(
    shapes,
    errors,
    state_round_trip,
    determinism,
    parity,
    spike_patterns,
    many_sequences,
    ridge_sums
);
