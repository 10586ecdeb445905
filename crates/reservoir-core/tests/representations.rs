//! Sequence representations beyond plain summaries: the two directions side by side, the
//! projection onto principal components fitted on training states, the reservoir model space.
//! Each is checked against its definition, computed here from one sequence's states at a time,
//! on fresh random sequences through the reservoirs' own paths (the CPU's blocks included).

use ndarray::{concatenate, s, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance::fresh_seed;
use reservoir_core::features::{FeatureParams, SequenceFeatures, Summary};
use reservoir_core::reservoir::{features_of_runs, fit_features};
use reservoir_core::{EchoStateNetwork, Par, Reservoir, ReservoirParams};

const K: usize = 3;

/// 23 sequences of K channels, 4 to 40 steps, uniform in [-1, 1).
fn sequences(seed: u64) -> Vec<Array2<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..23)
        .map(|_| {
            let t = rng.random_range(4..40);
            Array2::from_shape_fn((t, K), |_| rng.random_range(-1.0..1.0))
        })
        .collect()
}

fn views(sequences: &[Array2<f64>]) -> Vec<ArrayView2<'_, f64>> {
    sequences.iter().map(|s| s.view()).collect()
}

fn reservoir() -> EchoStateNetwork<f64> {
    let config = ReservoirParams::new()
        .size(40)
        .input_size(K)
        .leak_rate(0.5)
        .bias_scaling(0.1)
        .seed(9)
        .check()
        .unwrap();
    EchoStateNetwork::new(&config)
        .unwrap()
        .with_par(Par::rayon(2))
}

/// The definition: each sequence run alone from zero, forward (and reversed beside it).
fn by_definition(
    reservoir: &mut EchoStateNetwork<f64>,
    sequences: &[Array2<f64>],
    features: &SequenceFeatures,
) -> Array2<f64> {
    let rows: Vec<_> = sequences
        .iter()
        .enumerate()
        .map(|(i, u)| {
            reservoir.reset().unwrap();
            let forward = reservoir.run(u.view()).unwrap();
            let states = if features.bidirectional() {
                reservoir.reset().unwrap();
                let backward = reservoir.run(u.slice(s![..;-1, ..])).unwrap();
                concatenate(Axis(1), &[forward.view(), backward.view()]).unwrap()
            } else {
                forward
            };
            features.of(states.view(), i).unwrap()
        })
        .collect();
    let row_views: Vec<_> = rows.iter().map(|r| r.view()).collect();
    ndarray::stack(Axis(0), &row_views).unwrap()
}

fn max_difference(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn bidirectional_features_are_both_directions_side_by_side() {
    let data = sequences(fresh_seed(
        "bidirectional_features_are_both_directions_side_by_side",
    ));
    let mut esn = reservoir();
    let features = FeatureParams::new()
        .summaries(vec![Summary::Last, Summary::Mean])
        .warmup(2)
        .bidirectional(true)
        .check()
        .unwrap();
    let got = esn
        .sequence_features(&views(&data), &features, &mut |_, _| {})
        .unwrap();
    assert_eq!(got.ncols(), features.width(40));
    assert_eq!(got.ncols(), 4 * 40);
    let expected = by_definition(&mut esn, &data, &features);
    // The blocks of the CPU step sequences together: the same states to rounding.
    assert!(max_difference(&got, &expected) < 1e-12);
    // The forward half of each summary is the one-direction features.
    let forward = esn
        .sequence_features(&views(&data), &features.one_direction(), &mut |_, _| {})
        .unwrap();
    assert_eq!(got.slice(s![.., ..40]), forward.slice(s![.., ..40]));
    assert_eq!(got.slice(s![.., 80..120]), forward.slice(s![.., 40..]));
}

#[test]
fn projected_model_space_features_follow_their_definition() {
    let seed = fresh_seed("projected_model_space_features_follow_their_definition");
    let data = sequences(seed);
    let mut esn = reservoir();
    let params = FeatureParams::new()
        .summaries(vec![Summary::ModelSpace, Summary::Last])
        .warmup(1)
        .bidirectional(true)
        .components(6)
        .model_ridge(0.5);
    let unfitted = params.clone().check().unwrap();
    assert!(unfitted.needs_projection());
    let refused = esn.sequence_features(&views(&data), &unfitted, &mut |_, _| {});
    assert!(refused.is_err_and(|e| e.to_string().contains("not been fitted")));

    let features = fit_features(&mut esn, &views(&data), &unfitted).unwrap();
    let projection = features.projection().unwrap();
    assert_eq!((projection.input_width(), projection.components()), (80, 6));
    assert_eq!(features.width(40), 6 * 6 + 6 + 6);
    // Fitted again on the same sequences: the same bits.
    assert_eq!(
        fit_features(&mut esn, &views(&data), &unfitted).unwrap(),
        features
    );

    let got = esn
        .sequence_features(&views(&data), &features, &mut |_, _| {})
        .unwrap();
    let expected = by_definition(&mut esn, &data, &features);
    assert!(max_difference(&got, &expected) < 1e-9);
    // The blocks summarize on their own threads the bits the provided method gives, in both
    // directions and in one, projected or not.
    let forward_only = FeatureParams::new()
        .summaries(vec![Summary::ModelSpace, Summary::Mean])
        .warmup(1)
        .model_ridge(0.5)
        .check()
        .unwrap();
    for features in [&features, &forward_only] {
        let blocks = esn
            .sequence_features(&views(&data), features, &mut |_, _| {})
            .unwrap();
        let provided = features_of_runs(&mut esn, &views(&data), features, &mut |_, _| {}).unwrap();
        assert_eq!(blocks, provided);
    }

    // The model of a sequence predicts its next projected state.
    let first = &data[0];
    esn.reset().unwrap();
    let forward = esn.run(first.view()).unwrap();
    esn.reset().unwrap();
    let backward = esn.run(first.slice(s![..;-1, ..])).unwrap();
    let both = concatenate(Axis(1), &[forward.view(), backward.view()]).unwrap();
    let projected = projection.apply(both.view()).unwrap();
    let row = got.row(0);
    let weights = row.slice(s![..36]).into_shape_with_order((6, 6)).unwrap();
    let bias = row.slice(s![36..42]);
    let fitted_next = projected
        .slice(s![1..projected.nrows() - 1, ..])
        .dot(&weights)
        + bias;
    let residual = &fitted_next - &projected.slice(s![2.., ..]);
    let spread = projected.slice(s![2.., ..]).std(0.0);
    assert!(
        residual.std(0.0) < spread,
        "the model explains less than the mean does: {} against {spread}",
        residual.std(0.0)
    );
    // The last summary is the projected last state.
    assert_eq!(row.slice(s![42..]), projected.row(projected.nrows() - 1));
}

#[test]
fn too_many_components_and_too_short_sequences_are_named() {
    let data = sequences(5);
    let mut esn = reservoir();
    let wide = FeatureParams::new().components(41).check().unwrap();
    let error = fit_features(&mut esn, &views(&data), &wide).unwrap_err();
    assert!(error.to_string().contains("components"), "{error}");

    let model_space = FeatureParams::new()
        .summaries(vec![Summary::ModelSpace])
        .warmup(3)
        .check()
        .unwrap();
    let short = vec![Array2::zeros((5, K)), Array2::zeros((4, K))];
    let error = esn
        .sequence_features(&views(&short), &model_space, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("sequence 1") && error.contains("at least 5"),
        "{error}"
    );
    assert!(FeatureParams::new().model_ridge(0.0).check().is_err());
    assert!(FeatureParams::new().model_ridge(f64::NAN).check().is_err());
}
