//! Spike-pattern classification: K classes of planted temporal patterns in Poisson background
//! noise, classified by a reservoir (echo-state or LIF) and a ridge readout.
//!
//! Each class is a random template (one spike per channel at a random time within
//! `pattern_ms`). A sample is `sample_ms` of Poisson background on every channel plus its
//! class's template starting at `onset_ms`, every template spike moved by uniform jitter in
//! ±`jitter_ms`. All of it is seeded: the same options give the same data on every run.
//! The classes differ only in spike timing, so a rate code cannot tell them apart.

mod classify;

pub use classify::{classify, classify_with_progress, sample_features, ClassificationReport};

use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use reservoir_core::detection::random_template;
use reservoir_core::encoding::{poisson, Encoder};
use reservoir_core::error::{ConfigError, ReservoirError, Result};
use reservoir_core::memory::{bytes_of, ensure_available};
use reservoir_core::spikes::{Spike, SpikePattern};

use crate::dispatch::Workload;

/// ChaCha stream of the jitter and the background seeds (the templates use their own seeds).
const STREAM_SAMPLES: u64 = 200;

/// The task's parameters (serde: the `[task]` table of `configs/spike_classification.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpikeClassificationOptions {
    /// Number of classes K. Default 10.
    pub classes: usize,
    /// Input channels. Default 40.
    pub channels: usize,
    /// Length of a template in ms. Default 50.
    pub pattern_ms: f64,
    /// Where the template starts in a sample, in ms. Default 10.
    pub onset_ms: f64,
    /// Length of a sample in ms (≥ onset + pattern). Default 80.
    pub sample_ms: f64,
    /// Poisson background rate of every channel, in Hz. Default 5.
    pub background_hz: f64,
    /// Uniform jitter of every template spike, ±ms. Default 1.
    pub jitter_ms: f64,
    /// Training samples per class. Default 20.
    pub train_per_class: usize,
    /// Test samples per class. Default 20.
    pub test_per_class: usize,
    /// Bin width of the reservoir input, ms. Default 1.
    pub dt_ms: f64,
    /// The readout sees the mean state over this many equal segments of a sample. Default 8.
    pub segments: usize,
    /// Seed of the templates and samples. Default 1.
    pub seed: u64,
    /// How samples become spikes. `None` (default): background spikes are drawn as Poisson
    /// trains and the template's spikes added. With an encoder (the `[task.encoder]` table, e.g.
    /// `kind = "rate"`), each sample is first an analog intensity map, then encoded; see
    /// [`generate`].
    pub encoder: Option<Encoder>,
}

impl Default for SpikeClassificationOptions {
    fn default() -> Self {
        Self {
            classes: 10,
            channels: 40,
            pattern_ms: 50.0,
            onset_ms: 10.0,
            sample_ms: 80.0,
            background_hz: 5.0,
            jitter_ms: 1.0,
            train_per_class: 20,
            test_per_class: 20,
            dt_ms: 1.0,
            segments: 8,
            seed: 1,
            encoder: None,
        }
    }
}

impl SpikeClassificationOptions {
    /// What the task asks of each reservoir: every training and test sample is a sequence of
    /// `ceil(sample_ms / dt_ms)` bins.
    pub fn workload(&self) -> Workload {
        let samples = self.samples();
        Workload {
            sequences: samples,
            steps: samples.saturating_mul(self.bins()),
        }
    }

    /// Training and test samples in all.
    pub fn samples(&self) -> usize {
        self.train_per_class
            .saturating_add(self.test_per_class)
            .saturating_mul(self.classes)
    }

    /// Time bins of one sample (`sample_ms / dt_ms`, rounded up).
    pub fn bins(&self) -> usize {
        (self.sample_ms / self.dt_ms).ceil() as usize
    }

    /// Bytes of the generated data: every sample's spikes (the template's, one per channel,
    /// and the background's expected count, 16 bytes each) and the templates, plus one sample
    /// as dense bins × channels values (an encoder's intensities, a reservoir's inputs).
    pub fn data_bytes(&self) -> u64 {
        let background = self.background_hz * self.sample_ms / 1000.0;
        let per_sample = (self.channels as f64 * (1.0 + background)).ceil() as usize;
        let spikes = bytes_of(self.samples().saturating_add(self.classes), per_sample);
        spikes
            .saturating_mul(16)
            .saturating_add(bytes_of(self.bins(), self.channels).saturating_mul(8))
    }

    /// Checks every field (the encoder was checked as it was read); errors name the field (as
    /// `task.<field>`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |field: &str, ok: bool, value: String| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::new(
                    format!("task.{field}"),
                    "must be > 0 (and finite)",
                    value,
                ))
            }
        };
        if self.classes < 2 {
            return Err(ConfigError::new(
                "task.classes",
                "must be >= 2",
                self.classes.to_string(),
            ));
        }
        for (field, count) in [
            ("classes", self.classes),
            ("channels", self.channels),
            ("train_per_class", self.train_per_class),
            ("test_per_class", self.test_per_class),
        ] {
            if count > MAX_COUNT {
                return Err(ConfigError::new(
                    format!("task.{field}"),
                    format!("must be <= {MAX_COUNT}"),
                    count,
                ));
            }
        }
        positive("channels", self.channels >= 1, self.channels.to_string())?;
        positive(
            "pattern_ms",
            self.pattern_ms > 0.0 && self.pattern_ms.is_finite(),
            self.pattern_ms.to_string(),
        )?;
        positive(
            "dt_ms",
            self.dt_ms > 0.0 && self.dt_ms.is_finite(),
            self.dt_ms.to_string(),
        )?;
        positive(
            "train_per_class",
            self.train_per_class >= 1,
            self.train_per_class.to_string(),
        )?;
        positive(
            "test_per_class",
            self.test_per_class >= 1,
            self.test_per_class.to_string(),
        )?;
        positive("segments", self.segments >= 1, self.segments.to_string())?;
        if !(self.onset_ms >= 0.0 && self.onset_ms.is_finite()) {
            return Err(ConfigError::new(
                "task.onset_ms",
                "must be finite and >= 0",
                self.onset_ms,
            ));
        }
        let fits = self.onset_ms + self.pattern_ms <= self.sample_ms && self.sample_ms.is_finite();
        if !fits {
            return Err(ConfigError::new(
                "task.sample_ms",
                format!(
                    "must be finite and >= onset_ms + pattern_ms (= {} ms)",
                    self.onset_ms + self.pattern_ms
                ),
                self.sample_ms,
            ));
        }
        if !(self.background_hz >= 0.0 && self.background_hz.is_finite()) {
            return Err(ConfigError::new(
                "task.background_hz",
                "must be finite and >= 0",
                self.background_hz,
            ));
        }
        if !(self.jitter_ms >= 0.0 && self.jitter_ms.is_finite()) {
            return Err(ConfigError::new(
                "task.jitter_ms",
                "must be finite and >= 0",
                self.jitter_ms,
            ));
        }
        let bins = self.sample_ms / self.dt_ms;
        if bins > MAX_COUNT as f64 {
            return Err(ConfigError::new(
                "task.dt_ms",
                format!(
                    "must leave at most {MAX_COUNT} bins in a sample of sample_ms = {} ms",
                    self.sample_ms
                ),
                self.dt_ms,
            ));
        }
        if self.segments > self.bins() {
            return Err(ConfigError::new(
                "task.segments",
                "must not exceed the bins of a sample",
                self.segments,
            ));
        }
        Ok(())
    }
}

/// Most classes, channels, samples per class or bins per sample the task accepts: far beyond
/// any memory (which [`generate`] checks), small enough that products of them cannot overflow.
pub const MAX_COUNT: usize = 1_000_000_000_000;

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
    options.validate()?;
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
