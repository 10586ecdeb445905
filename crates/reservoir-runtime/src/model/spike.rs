//! The spike-pattern classifier as a file: the echo-state reservoir, its readout on segment
//! means, and the task options that say how a pattern becomes features.

use std::path::Path;

use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use reservoir_core::readout::LinearReadout;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use super::classes::predict_classes;
use super::text::options_as_toml;
use super::{decode, legacy, load_checked, stage_checked, Versioned};
use crate::config::SpikeClassificationOptions;
use crate::error::{Result, RuntimeError};
use crate::files::Staged;

/// First eight bytes of every spike-classifier file ([`SpikeModel`]).
pub const SPIKE_MAGIC: [u8; 8] = *b"RSVSPIKE";

/// A trained spike-pattern classifier (what `reservoir run` saves for `spike_classification`).
///
/// A pattern is classified as in training: the reservoir is reset, runs over the pattern
/// binned at `task.dt_ms`, the mean state over each of `task.segments` equal runs of bins is
/// concatenated (segments × N features), and the class is the readout's largest output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeModel {
    /// The echo-state reservoir's configuration (`input_size` = the task's channels).
    pub config: ReservoirConfig,
    /// The reservoir's weights, stored rather than regenerated.
    pub weights: ReservoirWeights,
    /// One-hot ridge readout: segments × N features → one output per class.
    pub readout: LinearReadout,
    /// The reservoir state after the last sample it ran (each pattern starts from zero).
    pub state: Array1<f64>,
    /// The task it was trained on: channels, classes, `dt_ms`, `segments`, and how the data
    /// were drawn.
    #[serde(with = "options_as_toml")]
    pub task: SpikeClassificationOptions,
}

impl From<legacy::SpikeModelV1> for SpikeModel {
    fn from(old: legacy::SpikeModelV1) -> Self {
        SpikeModel {
            config: old.config.0,
            weights: old.weights,
            readout: old.readout,
            state: old.state,
            task: old.task,
        }
    }
}

impl Versioned for SpikeModel {
    fn decode_old(
        version: u32,
        payload: &[u8],
    ) -> std::result::Result<(Self, usize), bincode::error::DecodeError> {
        match version {
            1 => decode::<legacy::SpikeModelV1>(payload).map(|(old, used)| (old.into(), used)),
            _ => decode::<Self>(payload),
        }
    }
}

impl SpikeModel {
    /// Checks that the parts fit together (channels, units, segments, classes).
    pub fn validate(&self) -> Result<(), ReservoirError> {
        let n = self.weights.size();
        let consistent = self.config.size() == n
            && self.config.input_size() == self.weights.input_size()
            && self.config.input_size() == self.task.channels
            && self.readout.n_features() == self.task.segments * n
            && self.readout.n_outputs() == self.task.classes
            && self.state.len() == n;
        if !consistent {
            return Err(ReservoirError::invalid(
                "spike model",
                "config, weights, readout, state and task disagree on sizes",
            ));
        }
        Ok(())
    }

    /// Writes the model to `path` atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.stage(path)?.commit()
    }

    /// The model encoded and staged for `path` ([`crate::files::stage`]): written to a
    /// temporary file, put in place only by [`Staged::commit`].
    pub fn stage(&self, path: &Path) -> Result<Staged> {
        self.validate()?;
        stage_checked(path, &SPIKE_MAGIC, self)
    }

    /// Reads a model written by [`SpikeModel::save`].
    ///
    /// # Errors
    /// As [`Model::load`](super::Model::load); a series model file says so.
    pub fn load(path: &Path) -> Result<Self> {
        let model: SpikeModel = load_checked(path, &SPIKE_MAGIC)?;
        model.validate().map_err(|e| RuntimeError::ModelFormat {
            path: path.to_path_buf(),
            message: format!("inconsistent model: {e}"),
        })?;
        Ok(model)
    }

    /// The class of each pattern, run through `reservoir` (this model's, on any backend).
    ///
    /// # Errors
    /// A pattern whose channel count is not the model's, or any error of the run.
    pub fn classify(
        &self,
        reservoir: &mut dyn Reservoir,
        patterns: &[&SpikePattern],
    ) -> Result<Vec<usize>, ReservoirError> {
        let n = reservoir.size();
        let width = self.task.segments * n;
        let mut features = Array2::zeros((patterns.len(), width));
        for (i, pattern) in patterns.iter().enumerate() {
            if pattern.n_neurons() != self.task.channels {
                return Err(ReservoirError::shape(
                    "spike pattern channels",
                    self.task.channels,
                    pattern.n_neurons(),
                ));
            }
            let row = sample_features(reservoir, pattern, self.task.dt_ms, self.task.segments)?;
            features.row_mut(i).assign(&row);
        }
        predict_classes(&self.readout, features.view())
    }
}

/// The readout features of one sample: the reservoir is reset, runs over the binned pattern,
/// and the mean state over each of `segments` equal runs of bins is concatenated
/// (segments × N values).
pub fn sample_features(
    reservoir: &mut dyn Reservoir,
    pattern: &SpikePattern,
    dt_ms: f64,
    segments: usize,
) -> Result<Array1<f64>, ReservoirError> {
    reservoir.reset()?;
    let states = reservoir.run_pattern(pattern, dt_ms)?;
    segment_means(states.view(), segments)
}

/// The features of one sample from its states (bins × N): the mean state over each of
/// `segments` equal runs of bins, concatenated (segments × N values).
pub(crate) fn segment_means(
    states: ArrayView2<f64>,
    segments: usize,
) -> Result<Array1<f64>, ReservoirError> {
    let (bins, n) = states.dim();
    if segments == 0 || segments > bins {
        return Err(ReservoirError::invalid(
            "sample features",
            format!("{segments} segments for {bins} bins"),
        ));
    }
    let mut features = Array1::zeros(segments * n);
    for k in 0..segments {
        let (start, end) = (k * bins / segments, (k + 1) * bins / segments);
        let mean = states.slice(s![start..end, ..]).sum_axis(Axis(0)) / (end - start) as f64;
        features.slice_mut(s![k * n..(k + 1) * n]).assign(&mean);
    }
    Ok(features)
}
