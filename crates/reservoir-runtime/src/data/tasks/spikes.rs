//! Spike-pattern classification data: K classes of planted temporal patterns in Poisson
//! background noise (classified by [`crate::jobs::spikes`]).
//!
//! Each class is a random template (one spike per channel at a random time within
//! `pattern_ms`). A sample is `sample_ms` of Poisson background on every channel plus its
//! class's template starting at `onset_ms`, every template spike moved by uniform jitter in
//! ±`jitter_ms`. All of it is seeded: the same options give the same data on every run.
//! The classes differ only in spike timing, so a rate code cannot tell them apart.

use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use reservoir_core::detection::random_template;
use reservoir_core::encoding::{poisson, Encoder};
use reservoir_core::error::{ReservoirError, Result};
use reservoir_core::memory::ensure_available;
use reservoir_core::spikes::{Spike, SpikePattern};

use crate::config::SpikeClassificationOptions;

/// ChaCha stream of the jitter and the background seeds (the templates use their own seeds).
const STREAM_SAMPLES: u64 = 200;

/// One sample: a spike pattern and its class.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledPattern {
    /// Background plus the planted template.
    pub pattern: SpikePattern,
    /// The class, `< classes`.
    pub label: usize,
}

/// Templates and the train and test samples.
#[derive(Debug, Clone, PartialEq)]
pub struct SpikeClassificationData {
    /// One template per class (`pattern_ms` long, channels as the samples).
    pub templates: Vec<SpikePattern>,
    /// Training samples, classes interleaved.
    pub train: Vec<LabelledPattern>,
    /// Test samples, classes interleaved.
    pub test: Vec<LabelledPattern>,
}

/// The `encoder` path of [`generate`]: the sample as analog intensities (bins × channels) —
/// the background's spike probability per bin, `background_hz · dt / 1000`, everywhere, and
/// intensity 1 in the bins of the jittered template spikes — turned into spikes by `encoder`,
/// which must give one output step per bin (e.g. `rate` with `steps = 1`, or `delta`).
fn encode_sample(
    options: &SpikeClassificationOptions,
    encoder: &Encoder,
    template: &[Spike],
    seed: u64,
) -> Result<SpikePattern> {
    let bins = (options.sample_ms / options.dt_ms).ceil() as usize;
    let background = options.background_hz * options.dt_ms / 1000.0;
    let mut intensity = Array2::from_elem((bins, options.channels), background);
    for s in template {
        let bin = ((s.time_ms / options.dt_ms) as usize).min(bins - 1);
        intensity[(bin, s.neuron_id as usize)] = 1.0;
    }
    let trains = encoder.encode_sequence(intensity.view(), seed)?;
    if trains.nrows() != bins {
        return Err(ReservoirError::invalid(
            "task.encoder",
            format!(
                "must give one step per bin ({bins}), gave {} (use steps = 1)",
                trains.nrows()
            ),
        ));
    }
    SpikePattern::from_matrix(&trains, options.dt_ms)
}

/// Generates the templates and samples.
pub fn generate(options: &SpikeClassificationOptions) -> Result<SpikeClassificationData> {
    ensure_available(
        &format!(
            "the spike-classification data ({} samples of {} channels × {} bins)",
            options.samples(),
            options.channels,
            options.bins()
        ),
        options.data_bytes(),
    )?;
    let templates = (0..options.classes)
        .map(|c| {
            random_template(
                options.channels,
                options.pattern_ms,
                options.channels,
                options.seed.wrapping_add(c as u64 * 7919),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    rng.set_stream(STREAM_SAMPLES);
    let mut sample = |label: usize| -> Result<LabelledPattern> {
        let jittered: Vec<Spike> = templates[label]
            .spikes()
            .iter()
            .map(|s| {
                let jitter = if options.jitter_ms > 0.0 {
                    rng.random_range(-options.jitter_ms..=options.jitter_ms)
                } else {
                    0.0
                };
                let time_ms = (options.onset_ms + s.time_ms + jitter)
                    .clamp(0.0, options.sample_ms * (1.0 - 1e-12));
                Spike { time_ms, ..*s }
            })
            .collect();
        let pattern = match &options.encoder {
            None => {
                let rates = Array1::from_elem(options.channels, options.background_hz);
                let background = poisson(rates.view(), options.sample_ms, rng.random())?;
                let mut spikes = background.spikes().to_vec();
                spikes.extend(jittered);
                SpikePattern::new(spikes, options.channels, options.sample_ms)?
            }
            Some(encoder) => encode_sample(options, encoder, &jittered, rng.random())?,
        };
        Ok(LabelledPattern { pattern, label })
    };
    let mut draw = |per_class: usize| -> Result<Vec<LabelledPattern>> {
        (0..per_class * options.classes)
            .map(|i| sample(i % options.classes))
            .collect()
    };
    let train = draw(options.train_per_class)?;
    let test = draw(options.test_per_class)?;
    Ok(SpikeClassificationData {
        templates,
        train,
        test,
    })
}
