//! Every model kind of the `[model]` table, end to end through the jobs every front end calls:
//! fitted, saved, loaded and predicting the same bits; its errors naming the field.

use std::path::Path;

use ndarray::{s, Array2, ArrayView2};
use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::deep::{DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::Par;
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::jobs::fit::{fit_one_series, OneSeries, SeriesPart};
use reservoir_runtime::jobs::predict::predict_one_series;
use reservoir_runtime::jobs::sequences::{fit_classifier, fit_series, Labelled, Series};
use reservoir_runtime::model::{Model, SequenceClassifier};
use reservoir_runtime::{Device, Dispatch, Workload};

const BASE: &str = "
[reservoir]
size = 60
spectral_radius = 0.9
leak_rate = 0.5
input_connectivity = 1.0
bias_scaling = 0.2
seed = 7

[readout]
ridge = 1e-6
washout = 20
";

const DEEP: &str = "
[model]
reservoir = \"deep_echo_state\"
input_to_readout = true

[[model.layers]]
size = 40
spectral_radius = 0.9
input_connectivity = 1.0
bias_scaling = 0.2

[[model.layers]]
size = 30
leak_rate = 0.5
bias_scaling = 0.2
";

const NVAR: &str = "
[model]
reservoir = \"nvar\"

[model.nvar]
delay = 3
order = 2
";

const PLASTIC: &str = "
[model]
input_to_readout = true

[model.plasticity]
learning_rate = 1e-3
";

fn config(extra: &str) -> ExperimentConfig {
    ExperimentConfig::from_toml(&format!("{BASE}{extra}"), "<test>").expect("config")
}

/// Two sines and their product a step ahead: inputs (T × 2), targets (T × 1). The product is
/// even in the inputs, so a reservoir needs a bias to give it.
fn series(t: usize, phase: f64) -> (Array2<f64>, Array2<f64>) {
    let x = Array2::from_shape_fn((t + 1, 2), |(i, c)| {
        ((i as f64 + phase) * 0.3 + c as f64).sin()
    });
    let y = Array2::from_shape_fn((t, 1), |(i, _)| x[[i + 1, 0]] * x[[i + 1, 1]]);
    (x.slice(s![..t, ..]).to_owned(), y)
}

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// Fits one series with `extra` as the `[model]` table and returns the model and its test NRMSE.
fn fit(extra: &str) -> (Model, f64) {
    let config = config(extra);
    let (u, y) = series(600, 0.0);
    let (inputs, targets) = (columns(&["a", "b"]), columns(&["y"]));
    let job = OneSeries {
        config: &config,
        origin: "<test>",
        input_columns: &inputs,
        target_columns: &targets,
        train: SeriesPart {
            source: Path::new("<train>"),
            inputs: u.slice(s![..400, ..]),
            targets: y.slice(s![..400, ..]),
        },
        test: Some(SeriesPart {
            source: Path::new("<test>"),
            inputs: u.slice(s![400.., ..]),
            targets: y.slice(s![400.., ..]),
        }),
    };
    let mut dispatch = Dispatch::new(Device::Cpu);
    let outcome = fit_one_series(&job, &mut dispatch, &mut |_, _, _| {}).expect("fit");
    (outcome.model, outcome.test.expect("scores").nrmse)
}

fn round_trips(model: &Model) {
    round_trips_with(model, series(50, 3.0).0);
}

/// Saved and loaded, `model` is the same and predicts the same bits for `u`, continuing its
/// state.
fn round_trips_with(model: &Model, u: Array2<f64>) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("model.bin");
    model.save(&path).expect("save");
    let loaded = Model::load(&path).expect("load");
    assert_eq!(&loaded, model);
    let predict = |m: &Model| {
        predict_one_series(
            m,
            u.view(),
            false,
            &mut Dispatch::new(Device::Cpu),
            &mut |_, _| {},
        )
        .expect("predict")
    };
    assert_eq!(predict(&loaded), predict(model));
}

#[test]
fn every_model_kind_fits_saves_and_predicts_the_same_bits() {
    let (esn, esn_nrmse) = fit("");
    assert!(matches!(
        esn.architecture.reservoir(),
        ReservoirKind::EchoState(_)
    ));
    let (deep, deep_nrmse) = fit(DEEP);
    let (nvar, nvar_nrmse) = fit(NVAR);
    let (plastic, plastic_nrmse) = fit(PLASTIC);
    for (model, nrmse) in [
        (&esn, esn_nrmse),
        (&deep, deep_nrmse),
        (&nvar, nvar_nrmse),
        (&plastic, plastic_nrmse),
    ] {
        assert!(
            nrmse < 0.2,
            "{}: NRMSE {nrmse}",
            model.architecture.reservoir().name()
        );
        round_trips(model);
    }
    // 70 units of the stack and the 2 inputs; NVAR's 6 + 21 features.
    assert_eq!(deep.readout.n_features(), 72);
    assert!(
        matches!(&deep.weights, ArchitectureWeights::DeepEchoState(layers) if layers.len() == 2)
    );
    assert_eq!(nvar.readout.n_features(), 27);
    // Plasticity changed the weights the seed generates, and the fit is reproducible.
    assert_ne!(plastic.weights, esn.weights);
    assert_eq!(fit(PLASTIC).0, plastic);
    assert_eq!(fit(DEEP).0, deep);
}

#[test]
fn many_series_and_classifiers_take_every_kind() {
    let data: Vec<(Array2<f64>, Array2<f64>)> = (0..6).map(|i| series(80, i as f64)).collect();
    let inputs: Vec<ArrayView2<f64>> = data.iter().map(|(u, _)| u.view()).collect();
    let targets: Vec<ArrayView2<f64>> = data.iter().map(|(_, y)| y.view()).collect();
    let ids: Vec<String> = (0..6).map(|i| format!("s{i}")).collect();
    let labels: Vec<String> = (0..6).map(|i| ["p", "q"][i % 2].to_string()).collect();
    for extra in [DEEP, NVAR, PLASTIC] {
        let config = config(extra);
        let train = Series {
            ids: &ids,
            inputs: &inputs,
            targets: &targets,
        };
        let mut dispatch = Dispatch::new(Device::Cpu);
        let outcome = fit_series(
            &config,
            &columns(&["a", "b"]),
            &columns(&["y"]),
            train,
            None,
            &mut dispatch,
            &mut |_, _, _| {},
        )
        .expect("many series");
        assert!(
            outcome.train_nrmse < 0.3,
            "{extra}: {}",
            outcome.train_nrmse
        );

        let labelled = Labelled {
            ids: &ids,
            inputs: &inputs,
            labels: &labels,
        };
        let classifier = fit_classifier(
            &config,
            &columns(&["a", "b"]),
            labelled,
            Some(labelled),
            &mut dispatch,
            &mut |_, _, _| {},
        )
        .expect("classifier")
        .model;
        let bytes = classifier.to_bytes().expect("bytes");
        let again = SequenceClassifier::from_bytes(&bytes, Path::new("<bytes>")).expect("load");
        assert_eq!(again, classifier);
        let mut reservoir = again
            .architecture
            .cpu(&again.weights, Par::Seq)
            .expect("build");
        let classes = again
            .classify(reservoir.as_mut(), &inputs, &mut |_, _| {})
            .expect("classify");
        assert_eq!(classes.len(), 6);
    }
}

#[test]
fn model_tables_are_checked_and_sweeps_refuse_other_kinds() {
    let error = |extra: &str| {
        ExperimentConfig::from_toml(&format!("{BASE}{extra}"), "<test>")
            .expect_err("refused")
            .to_string()
    };
    assert!(error("[model]\nreservoir = \"deep_echo_state\"\n").contains("model.layers"));
    assert!(error("[[model.layers]]\nsize = 10\n").contains("model.layers"));
    let nvar = error("[model]\nreservoir = \"nvar\"\n[model.nvar]\norder = 0\n");
    assert!(nvar.contains("model.nvar.order"), "{nvar}");
    let plastic = error("[model]\nreservoir = \"nvar\"\n[model.plasticity]\n");
    assert!(plastic.contains("model.plasticity"), "{plastic}");
    let rate = error("[model.plasticity]\nlearning_rate = 2.0\n");
    assert!(rate.contains("model.plasticity.learning_rate"), "{rate}");
    let layer = error(&format!("{DEEP}\n[[model.layers]]\nleak_rate = 0.0\n"));
    assert!(layer.contains("model.layers[2].leak_rate"), "{layer}");
    let sweep = config(NVAR)
        .lanes_base(2)
        .expect_err("a sweep varies an echo-state network");
    assert!(sweep.to_string().contains("model"), "{sweep}");
    assert!(config("").lanes_base(2).is_ok());
}

/// `extra` (one of the `[model]` tables above, or none) with output feedback added.
fn with_feedback(extra: &str) -> String {
    if extra.contains("[model]\n") {
        extra.replacen("[model]\n", "[model]\nfeedback = 0.3\n", 1)
    } else {
        format!("[model]\nfeedback = 0.3\n{extra}")
    }
}

#[test]
fn output_feedback_works_with_every_kind_and_a_fit_scores_as_a_prediction_does() {
    for extra in ["", DEEP, NVAR, PLASTIC] {
        let extra = with_feedback(extra);
        let (model, nrmse) = fit(&extra);
        let kind = model.architecture.reservoir().name();
        assert!(nrmse < 0.3, "{kind}: NRMSE {nrmse}");
        let feedback = model.architecture.feedback().expect("feedback");
        assert_eq!((feedback.outputs(), feedback.scaling()), (1, 0.3));
        // The data's 2 channels and the fed-back output drive the reservoir.
        assert_eq!(model.architecture.input_size(), 2);
        assert_eq!(model.architecture.reservoir().input_size(), 3);
        round_trips(&model);
        assert_eq!(fit(&extra).0, model, "{kind}: reproducible");
    }
    // The fit's test rows are predicted as `predict` predicts them from the trained model.
    let config = config(&with_feedback(""));
    let (u, y) = series(600, 0.0);
    let (inputs, targets) = (columns(&["a", "b"]), columns(&["y"]));
    let part = |rows: std::ops::Range<usize>, name: &'static str| SeriesPart {
        source: Path::new(name),
        inputs: u.slice(s![rows.clone(), ..]),
        targets: y.slice(s![rows, ..]),
    };
    let job = |test| OneSeries {
        config: &config,
        origin: "<test>",
        input_columns: &inputs,
        target_columns: &targets,
        train: part(0..400, "<train>"),
        test,
    };
    let cpu = || Dispatch::new(Device::Cpu);
    let tested = fit_one_series(
        &job(Some(part(400..600, "<test>"))),
        &mut cpu(),
        &mut |_, _, _| {},
    )
    .expect("fit with test");
    let trained = fit_one_series(&job(None), &mut cpu(), &mut |_, _, _| {}).expect("fit");
    let predicted = predict_one_series(
        &trained.model,
        u.slice(s![400.., ..]),
        false,
        &mut cpu(),
        &mut |_, _| {},
    )
    .expect("predict");
    assert_eq!(Some(predicted), tested.test_predictions);
    assert_eq!(tested.model.continuation.last_input, u.row(599));
}

#[test]
fn increments_forecast_in_closed_loop_and_need_a_target_per_input() {
    // NVAR on two sines, each target the inputs a step on (Gauthier et al.'s set-up).
    let config =
        config("[model]\nreservoir = \"nvar\"\nincrements = true\n[model.nvar]\ndelay = 2\n");
    let x = Array2::from_shape_fn((701, 2), |(i, c)| ((i as f64) * 0.05 + c as f64).sin());
    let (u, y) = (x.slice(s![..700, ..]), x.slice(s![1.., ..]));
    let names = columns(&["a", "b"]);
    let next = columns(&["a_next", "b_next"]);
    let job = OneSeries {
        config: &config,
        origin: "<test>",
        input_columns: &names,
        target_columns: &next,
        train: SeriesPart {
            source: Path::new("<train>"),
            inputs: u.slice(s![..500, ..]),
            targets: y.slice(s![..500, ..]),
        },
        test: None,
    };
    let outcome =
        fit_one_series(&job, &mut Dispatch::new(Device::Cpu), &mut |_, _, _| {}).expect("fit");
    let model = outcome.model;
    assert!(model.architecture.increments());
    round_trips_with(&model, u.slice(s![500..550, ..]).to_owned());
    let mut reservoir = model
        .architecture
        .cpu(&model.weights, Par::Seq)
        .expect("build");
    let generated =
        reservoir_runtime::jobs::predict::generate(reservoir.as_mut(), &model, None, 100)
            .expect("generate");
    // The first value follows the training rows; 100 steps on, the loop still follows them.
    let error = (&generated - &x.slice(s![500..600, ..])).mapv(f64::abs);
    assert!(
        error.iter().all(|e| *e < 1e-3),
        "largest error {}",
        error.fold(0.0f64, |m, e| m.max(*e))
    );

    // One target for two inputs: refused, naming the field.
    let refused = fit_one_series(
        &OneSeries {
            target_columns: &columns(&["a_next"]),
            train: SeriesPart {
                source: Path::new("<train>"),
                inputs: u.slice(s![..500, ..]),
                targets: y.slice(s![..500, ..1]),
            },
            ..job
        },
        &mut Dispatch::new(Device::Cpu),
        &mut |_, _, _| {},
    )
    .expect_err("one target for two inputs");
    assert!(
        refused.to_string().contains("model.increments"),
        "{refused}"
    );
}

#[test]
fn output_links_belong_to_models_of_series() {
    let data: Vec<(Array2<f64>, Array2<f64>)> = (0..4).map(|i| series(60, i as f64)).collect();
    let inputs: Vec<ArrayView2<f64>> = data.iter().map(|(u, _)| u.view()).collect();
    let targets: Vec<ArrayView2<f64>> = data.iter().map(|(_, y)| y.view()).collect();
    let ids: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
    let labels: Vec<String> = (0..4).map(|i| ["p", "q"][i % 2].to_string()).collect();
    let config = config(&with_feedback(""));
    // Many series: each teacher forced in training, each predicted from zero.
    let train = Series {
        ids: &ids,
        inputs: &inputs,
        targets: &targets,
    };
    let outcome = fit_series(
        &config,
        &columns(&["a", "b"]),
        &columns(&["y"]),
        train,
        Some(train),
        &mut Dispatch::new(Device::Cpu),
        &mut |_, _, _| {},
    )
    .expect("many series");
    let predictions = outcome.test_predictions.expect("predictions");
    let alone = predict_one_series(
        &outcome.model,
        inputs[2],
        true,
        &mut Dispatch::new(Device::Cpu),
        &mut |_, _| {},
    )
    .expect("one series from zero");
    assert_eq!(predictions[2], alone);

    let labelled = Labelled {
        ids: &ids,
        inputs: &inputs,
        labels: &labels,
    };
    let refused = fit_classifier(
        &config,
        &columns(&["a", "b"]),
        labelled,
        None,
        &mut Dispatch::new(Device::Cpu),
        &mut |_, _, _| {},
    )
    .expect_err("a classifier has no outputs to feed back");
    assert!(refused.to_string().contains("model.feedback"), "{refused}");
    let sweep = config
        .lanes_base(2)
        .expect_err("a sweep varies one network");
    assert!(sweep.to_string().contains("model"), "{sweep}");
    let scaling =
        ExperimentConfig::from_toml(&format!("{BASE}[model]\nfeedback = -1.0\n"), "<test>")
            .expect_err("negative scaling");
    assert!(scaling.to_string().contains("model.feedback"), "{scaling}");
}

#[test]
fn a_deep_stack_placed_on_the_gpu_runs_there_as_on_the_cpu() {
    let support = gpu_reservoir::probe();
    if let Some(problem) = support.problem {
        let required = std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "RESERVOIR_REQUIRE_GPU=1 but no usable GPU: {problem}"
        );
        eprintln!("skipping GPU test: {problem}");
        return;
    }
    let layers = vec![
        DeepEsnLayerParams::new().size(120).spectral_radius(0.9),
        DeepEsnLayerParams::new().size(80).leak_rate(0.5),
        DeepEsnLayerParams::new().size(50),
    ];
    let config = DeepEsnParams::new()
        .layers(layers)
        .input_size(2)
        .input_to_all(true)
        .readout_layers(Some(vec![1, 2]))
        .seed(11)
        .check()
        .expect("config");
    let architecture =
        Architecture::new(ReservoirKind::DeepEchoState(config)).with_input_to_readout(true);
    let weights = architecture.generate(&[]).expect("weights");
    let (u, _) = series(700, 0.5);
    let work = Workload::single(u.nrows());
    let mut on_gpu = Dispatch::new(Device::Cuda(0));
    let gpu = on_gpu
        .build(&architecture, &weights, work)
        .expect("gpu stack")
        .run(u.view())
        .expect("gpu run");
    let placed: Vec<String> = on_gpu.placements().iter().map(|(_, p)| p.name()).collect();
    assert_eq!(placed, ["cuda", "cuda", "cuda"], "every layer on the GPU");
    let cpu = Dispatch::new(Device::Cpu)
        .build(&architecture, &weights, work)
        .expect("cpu stack")
        .run(u.view())
        .expect("cpu run");
    assert_eq!(gpu.dim(), (700, 80 + 50 + 2));
    let diff = (&gpu - &cpu).iter().fold(0.0f64, |m, d| m.max(d.abs()));
    assert!(diff < 1e-4, "largest difference {diff:.2e}");
}
