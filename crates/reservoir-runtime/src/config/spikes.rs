//! The spike task's `[task]` table (`kind = "spike_classification"`): how the samples are
//! drawn and binned, and how the readout sees them.

use std::ops::Deref;

use reservoir_core::encoding::Encoder;
use reservoir_core::error::ConfigError;
use reservoir_core::lif::LifConfig;
use reservoir_core::memory::bytes_of;
use serde::{Deserialize, Serialize};

use crate::device::Workload;

/// The task's parameters as written (serde: the `[task]` table of
/// `configs/spike_classification.toml`), unchecked; [`SpikeClassificationParams::check`]
/// makes the [`SpikeClassificationOptions`] the task runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpikeClassificationParams {
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
    /// [`crate::data::tasks::spikes::generate`].
    pub encoder: Option<Encoder>,
}

impl Default for SpikeClassificationParams {
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

impl SpikeClassificationParams {
    /// The options, once every field obeys its rule (the encoder was checked as it was read);
    /// an error names the field (as `task.<field>`).
    pub fn check(self) -> Result<SpikeClassificationOptions, ConfigError> {
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
        if let Some(encoder) = &self.encoder {
            // Checked before anything is encoded: each bin must stay one step of the patterns.
            if encoder.steps_per_row() != 1 {
                return Err(ConfigError::new(
                    "task.encoder.steps",
                    "must be 1: the spike task encodes each time bin as one step",
                    encoder.steps_per_row(),
                ));
            }
            if encoder.output_channels(1) != 1 {
                return Err(ConfigError::new(
                    "task.encoder.neurons_per_feature",
                    "must be 1: the spike task keeps one input channel per pattern channel",
                    encoder.output_channels(1),
                ));
            }
        }
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
        Ok(SpikeClassificationOptions(self))
    }

    /// Time bins of one sample (`sample_ms / dt_ms`, rounded up).
    fn bins(&self) -> usize {
        (self.sample_ms / self.dt_ms).ceil() as usize
    }
}

/// The spike task's options, checked ([`SpikeClassificationParams::check`]): every field obeys
/// its rule. The fields are read through [`Deref`] and cannot be changed; a file's options
/// are checked as they are read, so a model file cannot smuggle in invalid ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "SpikeClassificationParams",
    into = "SpikeClassificationParams"
)]
pub struct SpikeClassificationOptions(SpikeClassificationParams);

impl Deref for SpikeClassificationOptions {
    type Target = SpikeClassificationParams;

    fn deref(&self) -> &SpikeClassificationParams {
        &self.0
    }
}

impl TryFrom<SpikeClassificationParams> for SpikeClassificationOptions {
    type Error = ConfigError;

    fn try_from(params: SpikeClassificationParams) -> Result<Self, ConfigError> {
        params.check()
    }
}

impl From<SpikeClassificationOptions> for SpikeClassificationParams {
    fn from(options: SpikeClassificationOptions) -> Self {
        options.0
    }
}

impl Default for SpikeClassificationOptions {
    /// The defaults of [`SpikeClassificationParams`], which obey every rule.
    fn default() -> Self {
        Self(SpikeClassificationParams::default())
    }
}

impl SpikeClassificationOptions {
    /// What the task asks of each reservoir: every training and test sample is a sequence of
    /// `ceil(sample_ms / dt_ms)` bins.
    pub fn workload(&self) -> Workload {
        let samples = self.samples();
        Workload::many(samples, samples.saturating_mul(self.bins()))
    }

    /// Training and test samples in all.
    pub fn samples(&self) -> usize {
        self.train_per_class
            .saturating_add(self.test_per_class)
            .saturating_mul(self.classes)
    }

    /// Time bins of one sample (`sample_ms / dt_ms`, rounded up).
    pub fn bins(&self) -> usize {
        self.0.bins()
    }

    /// Bytes of the generated data: every sample's spikes (the template's, one per channel,
    /// and the background's expected count, 16 bytes each) and the templates, plus one sample
    /// as dense bins × channels values (an encoder's intensities, a reservoir's inputs). An
    /// encoder gives at most one spike per bin and channel, whatever the rate.
    pub fn data_bytes(&self) -> u64 {
        let channels = self.channels as f64;
        let per_sample = match &self.encoder {
            None => channels * (1.0 + self.background_hz * self.sample_ms / 1000.0),
            Some(_) => {
                let per_bin = (self.background_hz * self.dt_ms / 1000.0).min(1.0);
                channels * (1.0 + per_bin * self.bins() as f64)
            }
        };
        // Saturating: a rate beyond any memory is refused by the estimate, not wrapped.
        let per_sample = per_sample.ceil().min(usize::MAX as f64) as usize;
        let spikes = bytes_of(self.samples().saturating_add(self.classes), per_sample);
        spikes
            .saturating_mul(16)
            .saturating_add(bytes_of(self.bins(), self.channels).saturating_mul(16))
    }
}

/// Most classes, channels, samples per class or bins per sample the task accepts: far beyond
/// any memory (which the data generator checks), small enough that products of them cannot
/// overflow.
pub(crate) const MAX_COUNT: usize = 1_000_000_000_000;

/// Checks the task's options, and that the LIF network (if any) bins the samples as the task
/// does.
pub(crate) fn check(
    params: SpikeClassificationParams,
    lif: Option<&LifConfig>,
) -> Result<SpikeClassificationOptions, ConfigError> {
    let options = params.check()?;
    if let Some(lif) = lif {
        if lif.dt_ms() != options.dt_ms {
            return Err(ConfigError::new(
                "lif.dt_ms",
                "must equal task.dt_ms (one LIF step per input bin)",
                lif.dt_ms(),
            ));
        }
    }
    Ok(options)
}
