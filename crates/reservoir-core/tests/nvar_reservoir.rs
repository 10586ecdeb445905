//! NVAR as a `Reservoir`: the conformance checks, its states are `Nvar`'s features, its state
//! round-trips through the linear part (strides 1) and is refused where it cannot (strides > 1).

use ndarray::{s, Array1, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance as check;
use reservoir_conformance::Subject;
use reservoir_core::nvar::{Nvar, NvarParams};
use reservoir_core::reservoir::run_one_by_one;
use reservoir_core::{NvarReservoir, Par, Reservoir, ReservoirError, Result};

fn params(strides: usize) -> NvarParams {
    NvarParams::new()
        .delay(3)
        .order(2)
        .strides(strides)
        .input_size(2)
}

fn nvar(strides: usize) -> Result<Box<dyn Reservoir>> {
    Ok(Box::new(NvarReservoir::new(&params(strides).check()?)?))
}

fn strides_one() -> Result<Box<dyn Reservoir>> {
    nvar(1)
}

fn strides_three() -> Result<Box<dyn Reservoir>> {
    nvar(3)
}

const STRIDES_ONE: Subject<'static> = Subject {
    name: "NvarReservoir (strides 1)",
    build: &strides_one,
    reference: &strides_one,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 0.0,
};

const STRIDES_THREE: Subject<'static> = Subject {
    name: "NvarReservoir (strides 3)",
    build: &strides_three,
    reference: &strides_three,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 0.0,
};

macro_rules! conformance {
    ($($check:ident: $($subject:ident),*;)*) => {
        $(
            #[test]
            fn $check() {
                for subject in [$(&$subject),*] {
                    check::$check(subject);
                }
            }
        )*
    };
}

// With strides above 1 the NVAR remembers inputs that no state of features holds, so
// `set_state` is refused there and the round trip is checked with strides 1 only (the refusal
// is `set_state_is_refused_where_the_features_do_not_hold_the_past` below).
conformance! {
    shapes: STRIDES_ONE, STRIDES_THREE;
    errors: STRIDES_ONE, STRIDES_THREE;
    state_round_trip: STRIDES_ONE;
    determinism: STRIDES_ONE, STRIDES_THREE;
    parity: STRIDES_ONE, STRIDES_THREE;
    spike_patterns: STRIDES_ONE, STRIDES_THREE;
    many_sequences: STRIDES_ONE, STRIDES_THREE;
    ridge_sums: STRIDES_ONE, STRIDES_THREE;
}

fn inputs(seed: u64, steps: usize) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, 2), |_| rng.random_range(-1.0..1.0))
}

#[test]
fn states_are_the_features_of_nvar_and_size_is_their_width() {
    for strides in [1, 2, 3] {
        let config = params(strides).check().unwrap();
        let u = inputs(strides as u64, 40);
        let features = Nvar::new(&config).unwrap().run(u.view()).unwrap();
        let mut reservoir = NvarReservoir::new(&config).unwrap();
        assert_eq!(
            (reservoir.size(), reservoir.input_size()),
            (config.width(), 2)
        );
        assert_eq!(
            reservoir.run(u.view()).unwrap(),
            features,
            "strides {strides}"
        );
        reservoir.reset().unwrap();
        assert_eq!(reservoir.state().unwrap(), Array1::zeros(config.width()));
        assert_eq!(reservoir.run(u.view()).unwrap(), features, "after reset");
    }
}

#[test]
fn a_state_taken_after_a_run_continues_it_exactly() {
    let config = params(1).check().unwrap();
    let u = inputs(5, 60);
    let mut whole = NvarReservoir::new(&config).unwrap();
    let all = whole.run(u.view()).unwrap();
    let mut first = NvarReservoir::new(&config).unwrap();
    first.run(u.slice(s![..35, ..])).unwrap();
    let mut resumed = NvarReservoir::new(&config).unwrap();
    resumed.set_state(first.state().unwrap().view()).unwrap();
    assert_eq!(
        resumed.run(u.slice(s![35.., ..])).unwrap(),
        all.slice(s![35.., ..])
    );
    // Only the linear part decides what follows: the rest of a set state is reported, unused.
    let mut odd = first.state().unwrap();
    let linear = config.linear_width();
    odd.slice_mut(s![linear..]).fill(0.5);
    let mut from_odd = NvarReservoir::new(&config).unwrap();
    from_odd.set_state(odd.view()).unwrap();
    assert_eq!(from_odd.state().unwrap(), odd);
    assert_eq!(
        from_odd.run(u.slice(s![35.., ..])).unwrap(),
        all.slice(s![35.., ..])
    );
}

#[test]
fn set_state_is_refused_where_the_features_do_not_hold_the_past() {
    let config = params(2).check().unwrap();
    let mut reservoir = NvarReservoir::new(&config).unwrap();
    reservoir.run(inputs(9, 10).view()).unwrap();
    let before = reservoir.state().unwrap();
    let refused = reservoir.set_state(Array1::zeros(config.width()).view());
    match refused {
        Err(ReservoirError::InvalidInput { message, .. }) => {
            assert!(message.contains("strides 2"), "{message}")
        }
        other => panic!("set_state with strides 2: {other:?}"),
    }
    assert_eq!(reservoir.state().unwrap(), before, "the state is unchanged");
}

#[test]
fn run_many_on_threads_gives_the_bits_of_one_after_another() {
    let config = params(2).check().unwrap();
    let sequences: Vec<Array2<f64>> = (0..23).map(|i| inputs(i, 5 + 7 * i as usize)).collect();
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|s| s.view()).collect();
    let collect = |reservoir: &mut NvarReservoir, threads: bool| {
        let mut got = Vec::new();
        let mut visit = |index: usize, states: ArrayView2<f64>| {
            got.push((index, states.to_owned()));
            Ok(())
        };
        if threads {
            reservoir.run_many(&views, &mut visit).unwrap();
        } else {
            run_one_by_one(reservoir, &views, &mut visit).unwrap();
        }
        got
    };
    let mut alone = NvarReservoir::new(&config).unwrap();
    let mut threaded = NvarReservoir::new(&config).unwrap().with_par(Par::rayon(4));
    assert_eq!(collect(&mut threaded, true), collect(&mut alone, false));
}
