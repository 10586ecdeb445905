//! Deep reservoirs: the conformance checks on stacks (echo-state layers in f64 and f32, with the
//! input to every layer, a stack mixing kinds, a stack exposing some layers, a stack run in
//! small stretches), running layer by layer is stepping the stack, and the deep ESN's config.

use ndarray::{concatenate, s, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance as check;
use reservoir_conformance::Subject;
use reservoir_core::deep::{cpu_deep_esn, layer_seed, DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::nvar::NvarParams;
use reservoir_core::{
    DeepReservoir, EchoStateNetwork, NvarReservoir, Par, Precision, Reservoir, ReservoirError,
    ReservoirParams, Result,
};

const K: usize = 3;

fn params(input_to_all: bool, precision: Precision) -> DeepEsnParams {
    let layer = |size| {
        DeepEsnLayerParams::new()
            .size(size)
            .leak_rate(0.5)
            .bias_scaling(0.1)
            .connection_prob(0.2)
    };
    DeepEsnParams::new()
        .layers(vec![layer(40), layer(30).spectral_radius(0.8), layer(20)])
        .input_size(K)
        .input_to_all(input_to_all)
        .precision(precision)
        .seed(77)
}

fn deep_f64() -> Result<Box<dyn Reservoir>> {
    let config = params(false, Precision::F64).check()?;
    Ok(Box::new(cpu_deep_esn(&config, Par::Seq)?))
}

fn deep_f32_input_to_all() -> Result<Box<dyn Reservoir>> {
    let config = params(true, Precision::F32).check()?;
    Ok(Box::new(cpu_deep_esn(&config, Par::rayon(2))?))
}

/// An echo-state layer under an NVAR layer: any kinds stack.
fn mixed() -> Result<Box<dyn Reservoir>> {
    let esn = ReservoirParams::new()
        .size(6)
        .input_size(K)
        .leak_rate(0.7)
        .precision(Precision::F64)
        .seed(3)
        .check()?;
    let nvar = NvarParams::new().delay(2).order(2).input_size(6).check()?;
    let layers: Vec<Box<dyn Reservoir>> = vec![
        Box::new(EchoStateNetwork::<f64>::new(&esn)?),
        Box::new(NvarReservoir::new(&nvar)?),
    ];
    Ok(Box::new(DeepReservoir::new(layers, false, None)?))
}

fn some_layers() -> Result<Box<dyn Reservoir>> {
    let config = params(true, Precision::F64)
        .readout_layers(Some(vec![1, 2]))
        .check()?;
    Ok(Box::new(cpu_deep_esn(&config, Par::Seq)?))
}

/// A bound that runs `run_into` in stretches of a few dozen steps and `run_many` in groups
/// of short sequences, the longer ones alone.
fn small_stretches() -> Result<Box<dyn Reservoir>> {
    let config = params(true, Precision::F64).check()?;
    Ok(Box::new(
        cpu_deep_esn(&config, Par::Seq)?.with_memory_values(5000),
    ))
}

const DEEP_F64: Subject<'static> = Subject {
    name: "DeepReservoir (3 EchoStateNetwork<f64>)",
    build: &deep_f64,
    reference: &deep_f64,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 1e-12,
};

const DEEP_F32: Subject<'static> = Subject {
    name: "DeepReservoir (3 EchoStateNetwork<f32>, input to all)",
    build: &deep_f32_input_to_all,
    reference: &deep_f32_input_to_all,
    tolerance: 0.0,
    state_rounding: 6e-8,
    sequence_rounding: 1e-4,
};

const MIXED: Subject<'static> = Subject {
    name: "DeepReservoir (EchoStateNetwork<f64>, NvarReservoir)",
    build: &mixed,
    reference: &mixed,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 0.0,
};

const SOME_LAYERS: Subject<'static> = Subject {
    name: "DeepReservoir (layers 1 and 2 read out)",
    build: &some_layers,
    reference: &some_layers,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 1e-12,
};

const SMALL_STRETCHES: Subject<'static> = Subject {
    name: "DeepReservoir (in small stretches)",
    build: &small_stretches,
    reference: &deep_f64_input_to_all,
    tolerance: 0.0,
    state_rounding: 0.0,
    sequence_rounding: 1e-12,
};

fn deep_f64_input_to_all() -> Result<Box<dyn Reservoir>> {
    let config = params(true, Precision::F64).check()?;
    Ok(Box::new(cpu_deep_esn(&config, Par::Seq)?))
}

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

// A stack that reads out only some layers has a state without the others', so `set_state` is
// refused there (`set_state_needs_every_layer_read_out` below) and the round trip is left out.
conformance! {
    shapes: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    errors: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    state_round_trip: DEEP_F64, DEEP_F32, MIXED, SMALL_STRETCHES;
    determinism: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    parity: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    spike_patterns: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    many_sequences: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
    ridge_sums: DEEP_F64, DEEP_F32, MIXED, SOME_LAYERS, SMALL_STRETCHES;
}

fn inputs(seed: u64, steps: usize) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((steps, K), |_| rng.random_range(-1.0..1.0))
}

#[test]
fn running_layer_by_layer_is_stepping_the_stack() {
    for input_to_all in [false, true] {
        let config = params(input_to_all, Precision::F64).check().unwrap();
        let mut layers: Vec<EchoStateNetwork<f64>> = config
            .layer_configs()
            .iter()
            .map(|c| EchoStateNetwork::new(c).unwrap())
            .collect();
        let u = inputs(1, 200);
        let mut stepped = Array2::zeros((200, 90));
        for (t, row) in u.rows().into_iter().enumerate() {
            let mut below = row.insert_axis(Axis(0)).to_owned();
            let mut column = 0;
            for (k, layer) in layers.iter_mut().enumerate() {
                let input = if k > 0 && input_to_all {
                    concatenate![Axis(1), below, row.insert_axis(Axis(0))]
                } else {
                    below.clone()
                };
                below = layer.run(input.view()).unwrap();
                let n = layer.size();
                stepped
                    .slice_mut(s![t..t + 1, column..column + n])
                    .assign(&below);
                column += n;
            }
        }
        let mut stack = cpu_deep_esn(&config, Par::Seq).unwrap();
        assert_eq!(stack.run(u.view()).unwrap(), stepped, "{input_to_all}");
    }
}

#[test]
fn one_layer_is_the_echo_state_reservoir_of_the_stacks_seed() {
    let layer = DeepEsnLayerParams::new().size(50).leak_rate(0.4);
    let config = DeepEsnParams::new()
        .layers(vec![layer])
        .input_size(K)
        .seed(9)
        .precision(Precision::F64)
        .check()
        .unwrap();
    let plain = ReservoirParams::new()
        .size(50)
        .leak_rate(0.4)
        .input_size(K)
        .seed(9)
        .precision(Precision::F64)
        .check()
        .unwrap();
    assert_eq!(config.layer_configs(), std::slice::from_ref(&plain));
    let u = inputs(2, 100);
    let mut stack = cpu_deep_esn(&config, Par::Seq).unwrap();
    let mut esn = EchoStateNetwork::<f64>::new(&plain).unwrap();
    assert_eq!(stack.run(u.view()).unwrap(), esn.run(u.view()).unwrap());
}

#[test]
fn stretches_and_groups_of_any_size_give_the_same_states() {
    let config = params(true, Precision::F64).check().unwrap();
    let u = inputs(3, 300);
    let whole = cpu_deep_esn(&config, Par::Seq)
        .unwrap()
        .run(u.view())
        .unwrap();
    let sequences: Vec<Array2<f64>> = (0..12)
        .map(|i| inputs(20 + i, 1 + 9 * i as usize))
        .collect();
    let views: Vec<ArrayView2<f64>> = sequences.iter().map(|s| s.view()).collect();
    let many = |stack: &mut DeepReservoir| {
        let mut got = Vec::new();
        stack
            .run_many(&views, &mut |index, states| {
                got.push((index, states.to_owned()));
                Ok(())
            })
            .unwrap();
        got
    };
    let expected = many(&mut cpu_deep_esn(&config, Par::Seq).unwrap());
    for values in [1, 100, 1000, 20_000] {
        let mut stack = cpu_deep_esn(&config, Par::Seq)
            .unwrap()
            .with_memory_values(values);
        assert_eq!(stack.run(u.view()).unwrap(), whole, "bound {values}");
        // A sequence alone runs by `run`, a group by the layers' `run_many`: the same to its
        // rounding.
        let got = many(&mut stack);
        assert_eq!(got.len(), expected.len(), "bound {values}");
        for ((index, got), (expected_index, expected)) in got.iter().zip(&expected) {
            assert_eq!(index, expected_index);
            let error = reservoir_conformance::relative_error(got.view(), expected.view());
            assert!(
                error <= 1e-12,
                "bound {values}, sequence {index}: {error:e}"
            );
        }
    }
}

#[test]
fn chosen_layers_are_their_columns_of_the_whole_stack() {
    let all = params(false, Precision::F64).check().unwrap();
    let some = params(false, Precision::F64)
        .readout_layers(Some(vec![0, 2]))
        .check()
        .unwrap();
    let u = inputs(4, 80);
    let whole = cpu_deep_esn(&all, Par::Seq).unwrap().run(u.view()).unwrap();
    let mut stack = cpu_deep_esn(&some, Par::Seq).unwrap();
    assert_eq!((stack.size(), stack.readout_layers()), (60, &[0, 2][..]));
    let states = stack.run(u.view()).unwrap();
    assert_eq!(
        states,
        concatenate![
            Axis(1),
            whole.slice(s![.., ..40]),
            whole.slice(s![.., 70..])
        ]
    );
}

#[test]
fn set_state_needs_every_layer_read_out() {
    let mut stack = some_layers().unwrap();
    stack.run(inputs(5, 10).view()).unwrap();
    let before = stack.state().unwrap();
    match stack.set_state(before.view()) {
        Err(ReservoirError::InvalidInput { message, .. }) => {
            assert!(message.contains("[1, 2]"), "{message}")
        }
        other => panic!("set_state of a partial stack: {other:?}"),
    }
    assert_eq!(stack.state().unwrap(), before);
}

#[test]
fn layers_that_do_not_stack_are_refused() {
    let esn = |size, input_size| -> Box<dyn Reservoir> {
        let config = ReservoirParams::new()
            .size(size)
            .input_size(input_size)
            .check()
            .unwrap();
        Box::new(EchoStateNetwork::<f32>::new(&config).unwrap())
    };
    let wrong = DeepReservoir::new(vec![esn(10, 2), esn(5, 10)], true, None);
    assert!(
        matches!(&wrong, Err(ReservoirError::Shape { context, .. }) if context.contains("layer 1")),
        "{:?}",
        wrong.err()
    );
    assert!(DeepReservoir::new(vec![esn(10, 2), esn(5, 12)], true, None).is_ok());
    assert!(DeepReservoir::<dyn Reservoir>::new(Vec::new(), false, None).is_err());
    for readout in [vec![], vec![1, 0], vec![0, 2]] {
        let refused = DeepReservoir::new(vec![esn(10, 2), esn(5, 10)], false, Some(readout));
        assert!(matches!(refused, Err(ReservoirError::InvalidInput { .. })));
    }
}

#[test]
fn the_deep_esn_config_derives_each_layers_config() {
    let config = params(true, Precision::F32).check().unwrap();
    let layers = config.layer_configs();
    let sizes: Vec<(usize, usize)> = layers.iter().map(|c| (c.size(), c.input_size())).collect();
    assert_eq!(sizes, [(40, K), (30, 40 + K), (20, 30 + K)]);
    assert_eq!(layers[1].spectral_radius(), 0.8);
    let seeds: Vec<u64> = layers.iter().map(|c| c.seed()).collect();
    assert_eq!(seeds, [77, layer_seed(77, 1), layer_seed(77, 2)]);
    assert!(seeds[1] != seeds[2] && seeds[1] != 77 && layer_seed(78, 1) != seeds[1]);
    let without = params(false, Precision::F32).check().unwrap();
    assert_eq!(without.layer_configs()[2].input_size(), 30);

    let text = toml::to_string(&config).unwrap();
    let back: reservoir_core::deep::DeepEsnConfig = toml::from_str(&text).unwrap();
    assert_eq!(back, config);
    let typo = "input_size = 2\n[[layers]]\nsize = 10\nleak = 0.5\n";
    assert!(toml::from_str::<DeepEsnParams>(typo).is_err());
}

#[test]
fn bad_deep_esn_parameters_name_their_field() {
    let field = |params: DeepEsnParams| params.check().unwrap_err().field;
    assert_eq!(field(DeepEsnParams::new()), "layers");
    let layer = DeepEsnLayerParams::new().size(10);
    let base = DeepEsnParams::new().layers(vec![layer; 2]);
    assert_eq!(
        field(base.clone().layers(vec![layer, layer.leak_rate(2.0)])),
        "layers[1].leak_rate"
    );
    assert_eq!(
        field(base.clone().layers(vec![layer.size(0)])),
        "layers[0].size"
    );
    assert_eq!(field(base.clone().input_size(0)), "input_size");
    for readout in [vec![], vec![1, 1], vec![2]] {
        assert_eq!(
            field(base.clone().readout_layers(Some(readout))),
            "readout_layers"
        );
    }
}
