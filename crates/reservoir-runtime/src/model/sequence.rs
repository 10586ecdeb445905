//! The sequence classifier as a file: the reservoir, how a sequence's states become features,
//! the one-hot readout, and the class names and input columns it was trained on.

use std::path::Path;

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use bincode::error::DecodeError;
use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::features::{FeatureParams, SequenceFeatures, Summary};
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use super::classes::{predict_classes, Classes};
use super::{
    consistent, decode, encode, from_bytes_checked, in_memory, load_checked, stage_checked,
    ArchitectureV4, Versioned,
};
use crate::error::Result;
use crate::files::Staged;

/// First eight bytes of every sequence-classifier file ([`SequenceClassifier`]).
pub const SEQUENCE_MAGIC: [u8; 8] = *b"RSVSEQCL";

/// A trained sequence classifier (what `reservoir fit --label-column` saves).
///
/// A sequence is classified as in training: the reservoir runs it from the zero state, its
/// states are summarized by `features`, and the class is the readout's largest output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceClassifier {
    /// The model's description: its reservoir (`input_size` = the input columns), links and
    /// plasticity.
    pub architecture: Architecture,
    /// The reservoir's weights, stored rather than regenerated.
    pub weights: ArchitectureWeights,
    /// How a sequence's states become the readout's features.
    pub features: SequenceFeatures,
    /// One-hot ridge readout: features → one output per class.
    pub readout: LinearReadout,
    /// The class names, in the readout's output order.
    pub classes: Classes,
    /// Names of the input columns, in order.
    #[serde(deserialize_with = "super::text::list")]
    pub input_columns: Vec<String>,
    /// The type of the labels it was fitted on, for a front end that gives classes back in
    /// their type (Python: the NumPy dtype, as `dtype.str`, such as `<i8`); `None` for labels
    /// read as text.
    pub label_dtype: Option<String>,
}

/// Sequence features as format versions 1 to 3 stored them: summaries of the states alone.
#[derive(Deserialize)]
struct FeaturesV3 {
    summaries: Vec<Summary>,
    last_k: usize,
    warmup: usize,
}

impl FeaturesV3 {
    fn into_features(self) -> std::result::Result<SequenceFeatures, DecodeError> {
        FeatureParams::new()
            .summaries(self.summaries)
            .last_k(self.last_k)
            .warmup(self.warmup)
            .check()
            .map_err(|e| DecodeError::OtherString(format!("features: {e}")))
    }
}

/// A sequence classifier of format versions 1 and 2, which had no labels' type.
#[derive(Deserialize)]
struct SequenceClassifierV2 {
    config: ReservoirConfig,
    weights: ReservoirWeights,
    features: FeaturesV3,
    readout: LinearReadout,
    classes: Classes,
    #[serde(deserialize_with = "super::text::list")]
    input_columns: Vec<String>,
}

/// A sequence classifier of format version 3: the labels' type added.
#[derive(Deserialize)]
struct SequenceClassifierV3 {
    config: ReservoirConfig,
    weights: ReservoirWeights,
    features: FeaturesV3,
    readout: LinearReadout,
    classes: Classes,
    #[serde(deserialize_with = "super::text::list")]
    input_columns: Vec<String>,
    label_dtype: Option<String>,
}

/// A sequence classifier of format version 4: the model description without output links.
#[derive(Deserialize)]
struct SequenceClassifierV4 {
    architecture: ArchitectureV4,
    weights: ArchitectureWeights,
    features: SequenceFeatures,
    readout: LinearReadout,
    classes: Classes,
    #[serde(deserialize_with = "super::text::list")]
    input_columns: Vec<String>,
    label_dtype: Option<String>,
}

impl Versioned for SequenceClassifier {
    fn decode_old(version: u32, payload: &[u8]) -> std::result::Result<(Self, usize), DecodeError> {
        if version == 4 {
            let (old, used) = decode::<SequenceClassifierV4>(payload)?;
            let model = SequenceClassifier {
                architecture: old.architecture.into_architecture()?,
                weights: old.weights,
                features: old.features,
                readout: old.readout,
                classes: old.classes,
                input_columns: old.input_columns,
                label_dtype: old.label_dtype,
            };
            return Ok((model, used));
        }
        let (old, used) = match version {
            1 | 2 => {
                let (v2, used) = decode::<SequenceClassifierV2>(payload)?;
                let v3 = SequenceClassifierV3 {
                    config: v2.config,
                    weights: v2.weights,
                    features: v2.features,
                    readout: v2.readout,
                    classes: v2.classes,
                    input_columns: v2.input_columns,
                    label_dtype: None,
                };
                (v3, used)
            }
            _ => decode::<SequenceClassifierV3>(payload)?,
        };
        let model = SequenceClassifier {
            architecture: Architecture::new(ReservoirKind::EchoState(old.config)),
            weights: ArchitectureWeights::EchoState(old.weights),
            features: old.features.into_features()?,
            readout: old.readout,
            classes: old.classes,
            input_columns: old.input_columns,
            label_dtype: old.label_dtype,
        };
        Ok((model, used))
    }
}

impl SequenceClassifier {
    /// Checks that the parts fit together (weights, inputs, units, features, classes).
    pub fn validate(&self) -> Result<(), ReservoirError> {
        self.architecture.check_weights(&self.weights)?;
        let n = self.architecture.size();
        let consistent = self.input_columns.len() == self.architecture.input_size()
            && self.readout.n_features() == self.features.width(n)
            && self
                .features
                .projection()
                .is_none_or(|p| p.input_width() == self.features.state_width(n))
            && !self.features.needs_projection()
            && !self.architecture.links_outputs()
            && self.readout.n_outputs() == self.classes.len();
        if !consistent {
            return Err(ReservoirError::invalid(
                "sequence classifier",
                "reservoir, features, readout, classes and columns disagree on sizes",
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
        stage_checked(path, &SEQUENCE_MAGIC, self)
    }

    /// Reads a model written by [`SequenceClassifier::save`].
    ///
    /// # Errors
    /// As [`Model::load`](super::Model::load); another kind of model file says what it is.
    pub fn load(path: &Path) -> Result<Self> {
        let model: SequenceClassifier = load_checked(path, &SEQUENCE_MAGIC)?;
        consistent(model.validate(), path)?;
        Ok(model)
    }

    /// The bytes [`SequenceClassifier::save`] writes, for a front end that keeps a model in
    /// memory (Python's pickle).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.validate()?;
        encode(&SEQUENCE_MAGIC, self).map_err(in_memory)
    }

    /// A model from the bytes of a model file, checked as [`SequenceClassifier::load`] checks
    /// a file; `origin` names them in errors.
    pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<Self> {
        let model: SequenceClassifier = from_bytes_checked(bytes, &SEQUENCE_MAGIC, origin)?;
        consistent(model.validate(), origin)?;
        Ok(model)
    }

    /// The class index of each sequence, run through `reservoir` (this model's, on any
    /// backend); `progress(sequences_done, sequences)` as they finish.
    ///
    /// # Errors
    /// A sequence too short for the features, of the wrong width, or non-finite; any error of
    /// the runs.
    pub fn classify(
        &self,
        reservoir: &mut dyn Reservoir,
        sequences: &[ArrayView2<f64>],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<usize>, ReservoirError> {
        let features = reservoir.sequence_features(sequences, &self.features, progress)?;
        predict_classes(&self.readout, features.view())
    }
}
