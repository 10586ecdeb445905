//! The spike-pattern classification task: ≥ 95 % test accuracy with 10 classes at the default
//! options, by both reservoir kinds.

use reservoir_core::lif::{LifInputMode, LifNetwork, LifParams};
use reservoir_core::{cpu_reservoir, ReservoirParams, ReservoirWeights};
use reservoir_runtime::config::SpikeClassificationOptions;
use reservoir_runtime::data::tasks::spikes::generate;
use reservoir_runtime::jobs::spikes::classify;

#[test]
fn echo_state_and_lif_reservoirs_classify_10_classes_above_95_percent() {
    let options = SpikeClassificationOptions::default();
    let data = generate(&options).unwrap();
    assert_eq!((data.train.len(), data.test.len()), (200, 200));
    let esn_config = ReservoirParams::new()
        .size(400)
        .input_size(options.channels)
        .spectral_radius(0.9)
        .leak_rate(0.3)
        .input_scaling(0.5)
        .check()
        .unwrap();
    let (esn_weights, _) = ReservoirWeights::generate(&esn_config).unwrap();
    let mut esn = cpu_reservoir(&esn_config, esn_weights, reservoir_core::Par::all()).unwrap();
    let (_, esn_report) = classify(esn.as_mut(), &data, &options, 1e-3).unwrap();
    let lif_config = LifParams::new()
        .size(400)
        .input_size(options.channels)
        .dt_ms(options.dt_ms)
        .input_mode(LifInputMode::Synaptic)
        .input_scaling(5.0)
        .spectral_radius(0.9)
        .bias_current(0.5)
        .check()
        .unwrap();
    let mut lif = LifNetwork::new(&lif_config).unwrap();
    let (_, lif_report) = classify(&mut lif, &data, &options, 1e-3).unwrap();
    println!(
        "ESN: test {:.3} train {:.3}; LIF: test {:.3} train {:.3}",
        esn_report.test_accuracy,
        esn_report.train_accuracy,
        lif_report.test_accuracy,
        lif_report.train_accuracy
    );
    assert!(
        esn_report.test_accuracy >= 0.95,
        "ESN accuracy {}",
        esn_report.test_accuracy
    );
    assert!(
        lif_report.test_accuracy >= 0.95,
        "LIF accuracy {}",
        lif_report.test_accuracy
    );
}
