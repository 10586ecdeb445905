//! `WithInput`: the conformance checks on echo-state, LIF and NVAR reservoirs with the input
//! beside their states, and that the states are exactly `[inner states, inputs]`.

use ndarray::{concatenate, s, Array1, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance as check;
use reservoir_conformance::Subject;
use reservoir_core::lif::{LifFeatures, LifInputMode, LifNetwork, LifParams};
use reservoir_core::nvar::NvarParams;
use reservoir_core::{
    EchoStateNetwork, NvarReservoir, Par, Reservoir, ReservoirConfig, ReservoirParams, Result,
    WithInput,
};

fn esn_config() -> ReservoirConfig {
    ReservoirParams::new()
        .size(80)
        .input_size(3)
        .leak_rate(0.6)
        .bias_scaling(0.2)
        .seed(21)
        .check()
        .unwrap()
}

fn esn_f64() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(EchoStateNetwork::<f64>::new(&esn_config())?))
}

fn esn_f32() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(
        EchoStateNetwork::<f32>::new(&esn_config())?.with_par(Par::rayon(2)),
    ))
}

fn lif() -> Result<Box<dyn Reservoir>> {
    let config = LifParams::new()
        .size(90)
        .input_size(3)
        .input_mode(LifInputMode::Synaptic)
        .input_scaling(3.0)
        .features(LifFeatures::Membrane)
        .seed(4)
        .check()?;
    Ok(Box::new(LifNetwork::new(&config)?))
}

fn nvar() -> Result<Box<dyn Reservoir>> {
    let config = NvarParams::new().delay(2).order(2).input_size(3).check()?;
    Ok(Box::new(NvarReservoir::new(&config)?))
}

fn with_esn_f64() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(WithInput::new(esn_f64()?)))
}

fn with_esn_f32() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(WithInput::new(esn_f32()?)))
}

fn with_lif() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(WithInput::new(lif()?)))
}

fn with_nvar() -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(WithInput::new(nvar()?)))
}

const ESN_F64: Subject<'static> = Subject {
    name: "WithInput<EchoStateNetwork<f64>>",
    build: &with_esn_f64,
    reference: &with_esn_f64,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 1e-13,
};

const ESN_F32: Subject<'static> = Subject {
    name: "WithInput<EchoStateNetwork<f32>>",
    build: &with_esn_f32,
    reference: &with_esn_f32,
    tolerance: 0.0,
    state_rounding: 6e-8,
    sequence_rounding: 1e-5,
};

const LIF: Subject<'static> = Subject {
    name: "WithInput<LifNetwork>",
    build: &with_lif,
    reference: &with_lif,
    tolerance: 0.0,
    state_rounding: 6e-8,
    sequence_rounding: 0.0,
};

const NVAR: Subject<'static> = Subject {
    name: "WithInput<NvarReservoir>",
    build: &with_nvar,
    reference: &with_nvar,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 0.0,
};

macro_rules! conformance {
    ($($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                for subject in [&ESN_F64, &ESN_F32, &LIF, &NVAR] {
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

fn inputs(seed: u64, steps: usize) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, 3), |_| rng.random_range(-1.0..1.0))
}

#[test]
fn states_are_the_inner_states_then_the_inputs() {
    let u = inputs(1, 50);
    let inner = esn_f64().unwrap().run(u.view()).unwrap();
    let mut linked = WithInput::new(esn_f64().unwrap());
    assert_eq!((linked.size(), linked.input_size()), (83, 3));
    let states = linked.run(u.view()).unwrap();
    assert_eq!(states, concatenate![Axis(1), inner, u]);
    let state = linked.state().unwrap();
    assert_eq!(state.slice(s![..80]), inner.row(49));
    assert_eq!(state.slice(s![80..]), u.row(49));
    linked.reset().unwrap();
    assert_eq!(linked.state().unwrap(), Array1::zeros(83));
}

#[test]
fn set_state_sets_the_inner_state_and_the_input_beside_it() {
    let u = inputs(2, 30);
    let mut source = WithInput::new(esn_f64().unwrap());
    source.run(u.slice(s![..20, ..])).unwrap();
    let state = source.state().unwrap();
    let mut target = WithInput::new(esn_f64().unwrap());
    target.set_state(state.view()).unwrap();
    assert_eq!(target.state().unwrap(), state);
    assert_eq!(
        target.inner().state().unwrap(),
        source.inner().state().unwrap()
    );
    assert_eq!(
        target.run(u.slice(s![20.., ..])).unwrap(),
        source.run(u.slice(s![20.., ..])).unwrap()
    );
}

#[test]
fn run_many_puts_each_sequences_inputs_beside_its_states() {
    let sequences: Vec<Array2<f64>> = (0..9)
        .map(|i| inputs(10 + i, 3 + 11 * i as usize))
        .collect();
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|s| s.view()).collect();
    let mut linked = WithInput::new(esn_f64().unwrap());
    let mut alone = esn_f64().unwrap();
    let mut seen = 0;
    linked
        .run_many(&views, &mut |index, states| {
            alone.reset()?;
            let inner = alone.run(views[index])?;
            assert_eq!(states.slice(s![.., 80..]), views[index]);
            let error =
                reservoir_conformance::relative_error(states.slice(s![.., ..80]), inner.view());
            assert!(error < 1e-13, "sequence {index}: {error:e}");
            seen += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, 9);
    assert_eq!(linked.state().unwrap(), Array1::zeros(83), "left at rest");
}
