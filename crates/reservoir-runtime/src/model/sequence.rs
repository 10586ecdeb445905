//! The sequence classifier as a file: the reservoir, how a sequence's states become features,
//! the one-hot readout, and the class names and input columns it was trained on.

use std::path::Path;

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use reservoir_core::features::SequenceFeatures;
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use super::classes::{predict_classes, Classes};
use super::{load_checked, stage_checked};
use crate::error::{Result, RuntimeError};
use crate::files::Staged;

/// First eight bytes of every sequence-classifier file ([`SequenceClassifier`]).
pub const SEQUENCE_MAGIC: [u8; 8] = *b"RSVSEQCL";

/// A trained sequence classifier (what `reservoir fit --label-column` saves).
///
/// A sequence is classified as in training: the reservoir runs it from the zero state, its
/// states are summarized by `features`, and the class is the readout's largest output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceClassifier {
    /// The echo-state reservoir's configuration (`input_size` = the input columns).
    pub config: ReservoirConfig,
    /// The reservoir's weights, stored rather than regenerated.
    pub weights: ReservoirWeights,
    /// How a sequence's states become the readout's features.
    pub features: SequenceFeatures,
    /// One-hot ridge readout: features → one output per class.
    pub readout: LinearReadout,
    /// The class names, in the readout's output order.
    pub classes: Classes,
    /// Names of the input columns, in order.
    #[serde(deserialize_with = "super::text::list")]
    pub input_columns: Vec<String>,
}

impl SequenceClassifier {
    /// Checks that the parts fit together (inputs, units, features, classes).
    pub fn validate(&self) -> Result<(), ReservoirError> {
        let n = self.weights.size();
        let consistent = self.config.size() == n
            && self.config.input_size() == self.weights.input_size()
            && self.input_columns.len() == self.weights.input_size()
            && self.readout.n_features() == self.features.width(n)
            && self.readout.n_outputs() == self.classes.len();
        if !consistent {
            return Err(ReservoirError::invalid(
                "sequence classifier",
                "config, weights, features, readout, classes and columns disagree on sizes",
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
        let model: SequenceClassifier = load_checked::<_, Self>(path, &SEQUENCE_MAGIC)?;
        model.validate().map_err(|e| RuntimeError::ModelFormat {
            path: path.to_path_buf(),
            message: format!("inconsistent model: {e}"),
        })?;
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
