//! `run::run_full`: progress calls, the kept model and the test data agree with the
//! report, and `jobs::run::run` reports the same scores.

use reservoir_core::architecture::ArchitectureWeights;
use std::collections::BTreeMap;

use reservoir_core::metrics::nrmse;
use reservoir_core::{cpu_reservoir, ReservoirWeights};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::data::tasks::spikes::generate;
use reservoir_runtime::jobs::run::{self, RunHooks, RunOutcome, TrainedModel};
use reservoir_runtime::{Device, Dispatch};

fn cpu() -> Dispatch {
    Dispatch::new(Device::Cpu)
}

const NARMA: &str = "
[task]
kind = \"narma10\"
train = 1200
test = 300
seed = 1

[reservoir]
size = 100
spectral_radius = 0.9
leak_rate = 1.0
seed = 1

[readout]
washout = 100
";

const SPIKES: &str = "
[task]
kind = \"spike_classification\"
classes = 3
channels = 12
train_per_class = 5
test_per_class = 4
seed = 2

[reservoir]
size = 80
leak_rate = 0.3
input_scaling = 0.5
seed = 1

[readout]
ridge = 1e-3
";

/// Runs `text` keeping the model; returns the outcome and the last (done, total) per stage,
/// after checking that `done` never decreases within a stage.
fn run(text: &str) -> (RunOutcome, BTreeMap<String, (usize, usize)>) {
    let config = ExperimentConfig::from_toml(text, "<test>").unwrap();
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut progress = |stage: &str, done: usize, total: usize| {
        let last = seen.entry(stage.to_string()).or_insert((0, total));
        assert!(
            done >= last.0 && done <= total,
            "{stage}: {done} after {last:?}"
        );
        *last = (done, total);
    };
    let mut hooks = RunHooks {
        progress: Some(&mut progress),
        keep_model: true,
    };
    let outcome = run::run_full(&config, &mut cpu(), &mut hooks).unwrap();
    let plain = run::run(&config, &mut cpu()).unwrap();
    assert_eq!(outcome.report.metrics, plain.metrics, "run and run_full");
    (outcome, seen)
}

fn metric(outcome: &RunOutcome, name: &str) -> f64 {
    let figure = outcome.report.metrics.iter().find(|f| f.name == name);
    figure.unwrap().value
}

#[test]
fn series_run_keeps_the_readout_and_the_test_predictions() {
    let (outcome, seen) = run(NARMA);
    assert_eq!(seen.get("training"), Some(&(1200, 1200)));
    let series = outcome.test_series.as_ref().unwrap();
    assert_eq!(series.predictions.dim(), (300, 1));
    let error = nrmse(series.predictions.view(), series.targets.view()).unwrap();
    assert_eq!(error, metric(&outcome, "test_nrmse"));
    let Some(TrainedModel::Series(model)) = &outcome.model else {
        panic!("no series model: {:?}", outcome.model.is_some());
    };
    model.validate().unwrap();
    assert_eq!(
        (
            model.input_columns.as_slice(),
            model.target_columns.as_slice()
        ),
        (&["u".to_string()][..], &["y".to_string()][..])
    );
    assert_eq!(model.architecture.input_size(), 1);
    // The stored weights are the reservoir's, the ones the config and seed generate.
    let (generated, _) =
        ReservoirWeights::generate(model.architecture.echo_state().unwrap()).unwrap();
    assert_eq!(model.weights, ArchitectureWeights::EchoState(generated));
}

#[test]
fn spike_run_keeps_a_classifier_that_reproduces_the_test_accuracy() {
    let (outcome, seen) = run(SPIKES);
    assert_eq!(seen.get("esn"), Some(&(27, 27)));
    assert_eq!(seen.get("detection"), Some(&(12, 12)));
    let Some(TrainedModel::SpikeClassifier(model)) = &outcome.model else {
        panic!("no spike model");
    };
    model.validate().unwrap();
    let data = generate(&model.task).unwrap();
    assert_eq!(outcome.spike_data.as_ref(), Some(&data));
    let mut reservoir = cpu_reservoir(
        &model.config,
        model.weights.clone(),
        reservoir_core::Par::all(),
    )
    .unwrap();
    let patterns: Vec<_> = data.test.iter().map(|s| &s.pattern).collect();
    let classes = model.classify(reservoir.as_mut(), &patterns).unwrap();
    let right = classes
        .iter()
        .zip(&data.test)
        .filter(|(c, s)| **c == s.label)
        .count();
    let accuracy = right as f64 / data.test.len() as f64;
    assert_eq!(accuracy, metric(&outcome, "esn_test_accuracy"));
    assert_eq!(reservoir.size(), model.config.size());
}

#[test]
fn no_model_unless_asked_and_none_for_memory_capacity() {
    let config = ExperimentConfig::from_toml(NARMA, "<test>").unwrap();
    let outcome = run::run_full(&config, &mut cpu(), &mut RunHooks::default()).unwrap();
    assert!(outcome.model.is_none() && outcome.test_series.is_some());
    let mc = "[task]\nkind = \"memory_capacity\"\nmax_delay = 10\ntrain = 500\ntest = 200\n\
              [reservoir]\nsize = 30\n[readout]\nwashout = 50\n";
    let config = ExperimentConfig::from_toml(mc, "<test>").unwrap();
    let mut hooks = RunHooks {
        keep_model: true,
        ..RunHooks::default()
    };
    let outcome = run::run_full(&config, &mut cpu(), &mut hooks).unwrap();
    assert!(outcome.model.is_none() && outcome.test_series.is_none());
}
