//! The spike-pattern task of `reservoir run`: classify planted patterns with an echo-state and
//! (when `[lif]` is given) a LIF reservoir, and find the templates with the pattern detector.

use std::time::Instant;

use reservoir_core::detection::{DetectorOptions, PatternDetector};
use reservoir_core::lif::{synapse_bytes, LifConfig};
use reservoir_core::memory::bytes_of;
use reservoir_core::readout::ridge_bytes;
use reservoir_core::weights::weights_bytes;
use reservoir_core::{ReservoirConfig, ReservoirWeights};

use super::{figure, ExperimentReport, Figure, RunHooks, RunOutcome, TrainedModel};
use crate::config::{ExperimentConfig, SpikeClassificationOptions};
use crate::data::tasks::spikes::{generate, SpikeClassificationData};
use crate::device::Dispatch;
use crate::error::Result;
use crate::jobs::spikes::classify_with_progress;
use crate::memory::JobMemory;
use crate::model::SpikeModel;

/// Generates the data, classifies it with each configured reservoir and runs the detector.
pub(super) fn run(
    config: &ExperimentConfig,
    options: &SpikeClassificationOptions,
    dispatch: &mut Dispatch,
    hooks: &mut RunHooks<'_>,
) -> Result<RunOutcome> {
    let esn_config = config
        .reservoir()
        .to_params()
        .input_size(options.channels)
        .check()?;
    let lif_config = config
        .lif()
        .map(|lif| lif.to_params().input_size(options.channels).check())
        .transpose()?;
    memory(options, &esn_config, lif_config.as_ref()).ensure()?;
    let mut metrics = Vec::new();
    let mut timings = Vec::new();
    let t = Instant::now();
    let data = generate(options)?;
    timings.push(figure("generate_seconds", t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let (weights, _) = ReservoirWeights::generate(&esn_config)?;
    let mut esn = dispatch.echo_state(&esn_config, weights.clone(), options.workload())?;
    let (esn_readout, esn_report) = classify_with_progress(
        esn.as_mut(),
        &data,
        options,
        config.readout().ridge(),
        &mut |done, total| hooks.report("esn", done, total),
    )?;
    metrics.push(figure("esn_test_accuracy", esn_report.test_accuracy));
    metrics.push(figure("esn_train_accuracy", esn_report.train_accuracy));
    timings.push(figure("esn_seconds", t.elapsed().as_secs_f64()));

    if let Some(lif_config) = lif_config {
        let t = Instant::now();
        let mut network = dispatch.lif_drawn(&lif_config, options.workload())?;
        let (_, lif_report) = classify_with_progress(
            network.as_mut(),
            &data,
            options,
            config.readout().ridge(),
            &mut |done, total| hooks.report("lif", done, total),
        )?;
        metrics.push(figure("lif_test_accuracy", lif_report.test_accuracy));
        metrics.push(figure("lif_train_accuracy", lif_report.train_accuracy));
        timings.push(figure("lif_seconds", t.elapsed().as_secs_f64()));
    }

    let t = Instant::now();
    detection_summary(&data, options, config.detector(), &mut metrics, hooks)?;
    timings.push(figure("detection_seconds", t.elapsed().as_secs_f64()));
    let size = esn_config.size();
    let model = if hooks.keep_model {
        Some(TrainedModel::SpikeClassifier(SpikeModel {
            state: esn.state()?,
            config: esn_config,
            weights,
            readout: esn_readout,
            task: options.clone(),
        }))
    } else {
        None
    };
    Ok(RunOutcome {
        report: ExperimentReport {
            task: "spike_classification".into(),
            size,
            metrics,
            timings,
        },
        model,
        test_series: None,
        spike_data: Some(data),
    })
}

/// The host memory of the spike task at its peak: the data, each reservoir's weights, and for
/// the larger reservoir one sample's states (bins × N), every sample's features (segments × N)
/// and the ridge sums over them.
fn memory(
    options: &SpikeClassificationOptions,
    esn: &ReservoirConfig,
    lif: Option<&LifConfig>,
) -> JobMemory {
    let units = esn.size().max(lif.map_or(0, LifConfig::size));
    let features = options.segments.saturating_mul(units);
    JobMemory::default()
        .add("task data", options.data_bytes())
        .add(
            "weights",
            weights_bytes(esn).saturating_add(lif.map_or(0, synapse_bytes)),
        )
        .add("states", bytes_of(options.bins(), units).saturating_mul(8))
        .add(
            "features",
            bytes_of(options.samples(), features).saturating_mul(8),
        )
        .add("ridge sums", ridge_bytes(features, options.classes))
}

/// Runs the template detector over every test sample. A detection is right when it names the
/// sample's class and ends within one template length of where the planted template ends.
/// Reports recall (samples whose template was found), precision (right detections over all
/// detections) and the detections per sample.
fn detection_summary(
    data: &SpikeClassificationData,
    options: &SpikeClassificationOptions,
    detector_options: &DetectorOptions,
    metrics: &mut Vec<Figure>,
    hooks: &mut RunHooks<'_>,
) -> Result<()> {
    let detector = PatternDetector::new(data.templates.clone(), *detector_options)?;
    let expected_end = options.onset_ms + options.pattern_ms;
    let (mut found, mut right, mut total) = (0usize, 0usize, 0usize);
    for (i, sample) in data.test.iter().enumerate() {
        let detections = detector.detect(&sample.pattern)?;
        hooks.report("detection", i + 1, data.test.len());
        let correct = detections
            .iter()
            .filter(|d| {
                d.template == sample.label && (d.time_ms - expected_end).abs() <= options.pattern_ms
            })
            .count();
        found += usize::from(correct > 0);
        right += correct;
        total += detections.len();
    }
    let samples = data.test.len().max(1) as f64;
    metrics.push(figure("detection_recall", found as f64 / samples));
    metrics.push(figure(
        "detection_precision",
        if total == 0 {
            0.0
        } else {
            right as f64 / total as f64
        },
    ));
    metrics.push(figure("detections_per_sample", total as f64 / samples));
    Ok(())
}
