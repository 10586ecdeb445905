//! Trained models (a series model, a sequence classifier, a spike-pattern classifier), what
//! they compute from new inputs, and their files: a checked header, then a bincode payload.
//!
//! File layout (little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic: `RSVMODEL` ([`Model`]), `RSVSPIKE` ([`SpikeModel`]) or `RSVSEQCL` ([`SequenceClassifier`]) |
//! | 4 | format version ([`FORMAT_VERSION`]; version 1 is still read) |
//! | 8 | payload length in bytes |
//! | 4 | CRC-32 of the payload |
//! | n | bincode (standard config) of the model |
//!
//! Loading checks each of these before decoding, so a foreign, truncated or corrupted file is a
//! clear error, and decoding never trusts a length it has not read; the decoded config is
//! checked as any config is. Saving goes through [`crate::files::stage`], so a failed save
//! leaves the previous file as it was.
//!
//! A model holds what it computes, never where it ran: version 1 files also recorded the
//! backend of the run, which loading ignores.

use std::fs;
use std::io::Read;
use std::path::Path;

use ndarray::Array1;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use reservoir_core::readout::LinearReadout;
use reservoir_core::{ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::error::{Result, RuntimeError};
use crate::files::{stage, Staged};

mod classes;
mod legacy;
mod sequence;
mod spike;
mod text;

pub use classes::{predict_classes, Classes};
pub use sequence::{SequenceClassifier, SEQUENCE_MAGIC};
pub(crate) use spike::segment_means;
pub use spike::{sample_features, SpikeModel, SPIKE_MAGIC};

/// First eight bytes of every series model file ([`Model`]).
pub const MAGIC: [u8; 8] = *b"RSVMODEL";
/// Version of the payload layout this build writes (it reads this and version 1).
pub const FORMAT_VERSION: u32 = 2;
const HEADER_LEN: usize = 8 + 4 + 8 + 4;

/// Everything needed to reproduce predictions: the reservoir, its weights, the trained readout,
/// the state to continue from, and the names of the data columns it was trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The reservoir configuration (seed included).
    pub config: ReservoirConfig,
    /// The reservoir's weights, stored rather than regenerated.
    pub weights: ReservoirWeights,
    /// The trained readout.
    pub readout: LinearReadout,
    /// The reservoir state at the end of the last run (training, or test when given).
    pub state: Array1<f64>,
    /// Names of the input columns, in order.
    #[serde(deserialize_with = "text::list")]
    pub input_columns: Vec<String>,
    /// Names of the target columns, in order.
    #[serde(deserialize_with = "text::list")]
    pub target_columns: Vec<String>,
}

impl Model {
    /// Checks that the parts fit together (sizes of config, weights, readout, state, names).
    pub fn validate(&self) -> Result<(), ReservoirError> {
        let n = self.weights.size();
        let consistent = self.config.size() == n
            && self.config.input_size() == self.weights.input_size()
            && self.readout.n_features() == n
            && self.state.len() == n
            && self.input_columns.len() == self.weights.input_size()
            && self.target_columns.len() == self.readout.n_outputs();
        if !consistent {
            return Err(ReservoirError::invalid(
                "model",
                "config, weights, readout, state and column names disagree on sizes",
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
        stage_checked(path, &MAGIC, self)
    }

    /// Reads a model written by [`Model::save`].
    ///
    /// # Errors
    /// An I/O error naming the file, or a format error saying whether it is not a model file,
    /// of another format version, truncated, corrupted, or inconsistent.
    pub fn load(path: &Path) -> Result<Self> {
        let model: Model = load_checked::<_, legacy::ModelV1>(path, &MAGIC)?;
        model.validate().map_err(|e| RuntimeError::ModelFormat {
            path: path.to_path_buf(),
            message: format!("inconsistent model: {e}"),
        })?;
        Ok(model)
    }
}

impl From<legacy::ModelV1> for Model {
    fn from(old: legacy::ModelV1) -> Self {
        Model {
            config: old.config.0,
            weights: old.weights,
            readout: old.readout,
            state: old.state,
            input_columns: old.input_columns,
            target_columns: old.target_columns,
        }
    }
}

/// What a file with another kind's magic bytes is, for the error message.
fn other_kind(magic: &[u8]) -> Option<&'static str> {
    if magic == MAGIC {
        Some("a series model (from `reservoir fit` or `reservoir run` on a series task)")
    } else if magic == SPIKE_MAGIC {
        Some("a spike-classifier model (from `reservoir run` on a spike_classification config)")
    } else if magic == SEQUENCE_MAGIC {
        Some("a sequence-classifier model (from `reservoir fit --label-column`)")
    } else {
        None
    }
}

/// Encodes `value` behind the header (`magic`, version, length, CRC-32) and stages it for
/// `path`.
fn stage_checked<T: Serialize>(path: &Path, magic: &[u8; 8], value: &T) -> Result<Staged> {
    let payload =
        bincode::serde::encode_to_vec(value, bincode::config::standard()).map_err(|e| {
            RuntimeError::ModelFormat {
                path: path.to_path_buf(),
                message: format!("cannot encode the model: {e}"),
            }
        })?;
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    stage(path, &bytes)
}

/// Reads a file written by [`stage_checked`] with `magic`, checking the header before decoding;
/// a version 1 payload is decoded as `V1` and converted.
fn load_checked<T: DeserializeOwned, V1: DeserializeOwned + Into<T>>(
    path: &Path,
    magic: &[u8; 8],
) -> Result<T> {
    let format_error = |message: String| RuntimeError::ModelFormat {
        path: path.to_path_buf(),
        message,
    };
    let io_error = |source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(path).map_err(io_error)?;
    // Only a regular file has an end to read to (`/dev/zero` has none).
    let metadata = file.metadata().map_err(io_error)?;
    if !metadata.is_file() {
        return Err(format_error(
            "not a regular file, so not a model file".into(),
        ));
    }
    // The header first: the payload is read only once its declared length matches the file's,
    // so a large file that is not a model is never read whole.
    let mut header = Vec::with_capacity(HEADER_LEN);
    (&mut file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .map_err(io_error)?;
    if header.len() < magic.len() || header[..magic.len()] != *magic {
        let found = header.get(..magic.len()).and_then(other_kind);
        return Err(format_error(match (found, other_kind(magic)) {
            (Some(found), Some(wanted)) => format!("this is {found}, not {wanted}"),
            _ => "not a reservoir model file (bad magic bytes)".into(),
        }));
    }
    if header.len() < HEADER_LEN {
        return Err(format_error("truncated header".into()));
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != FORMAT_VERSION && version != 1 {
        return Err(format_error(format!(
            "model format version {version}, this build reads versions 1 and {FORMAT_VERSION}"
        )));
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&header[12..20]);
    let declared = u64::from_le_bytes(len_bytes);
    let actual = metadata.len().saturating_sub(HEADER_LEN as u64);
    if declared != actual {
        return Err(format_error(format!(
            "{} ({actual} payload bytes, header says {declared})",
            if actual < declared {
                "truncated"
            } else {
                "trailing bytes after the model"
            }
        )));
    }
    let too_large = || ReservoirError::OutOfMemory {
        what: format!("the model file {}", path.display()),
        needed: declared,
        available: reservoir_core::memory::available(),
    };
    let length = usize::try_from(declared).map_err(|_| too_large())?;
    let mut payload = Vec::new();
    payload.try_reserve_exact(length).map_err(|_| too_large())?;
    (&mut file)
        .take(declared)
        .read_to_end(&mut payload)
        .map_err(io_error)?;
    if payload.len() != length {
        return Err(format_error(format!(
            "truncated while reading ({} of {declared} payload bytes)",
            payload.len()
        )));
    }
    let checksum = u32::from_le_bytes([header[20], header[21], header[22], header[23]]);
    let payload = payload.as_slice();
    if crc32fast::hash(payload) != checksum {
        return Err(format_error("corrupted (checksum mismatch)".into()));
    }
    let decode_error = |e| format_error(format!("cannot decode the model: {e}"));
    let (value, used) = if version == 1 {
        let (old, used): (V1, usize) =
            bincode::serde::decode_from_slice(payload, bincode::config::standard())
                .map_err(decode_error)?;
        (old.into(), used)
    } else {
        bincode::serde::decode_from_slice(payload, bincode::config::standard())
            .map_err(decode_error)?
    };
    if used != payload.len() {
        return Err(format_error("trailing bytes inside the payload".into()));
    }
    Ok(value)
}
