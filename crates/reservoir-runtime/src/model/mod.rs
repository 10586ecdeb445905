//! Trained models (a series model, a sequence classifier, a spike-pattern classifier), what
//! they compute from new inputs, and their files: a checked header, then a bincode payload.
//!
//! File layout (little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic: `RSVMODEL` ([`Model`]), `RSVSPIKE` ([`SpikeModel`]) or `RSVSEQCL` ([`SequenceClassifier`]) |
//! | 4 | format version ([`FORMAT_VERSION`]; every earlier version is still read) |
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
//! backend of the run, which loading ignores. Version 3 added the labels' type to the
//! sequence classifier; version 4 the model description (reservoir kind, links, plasticity)
//! to the series model and the sequence classifier, and the classifier's bidirectional,
//! projected and model-space features; version 5 the output links (feedback, increments) to
//! the description and the last input and output to the series model. The spike classifier
//! is unchanged since version 2.

use std::fs;
use std::io::Read;
use std::path::Path;

use bincode::error::DecodeError;
use ndarray::Array1;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use reservoir_core::architecture::{Architecture, ArchitectureWeights, ReservoirKind};
use reservoir_core::forecast::Continuation;
use reservoir_core::plasticity::PlasticityConfig;
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
/// Version of the payload layout this build writes (it reads this and every earlier version).
pub const FORMAT_VERSION: u32 = 5;
const HEADER_LEN: usize = 8 + 4 + 8 + 4;

/// Everything needed to reproduce predictions: the model's description, its weights, the
/// trained readout, where to continue from (the reservoir's state, the last input and output),
/// and the names of the data columns it was trained on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The model's description: its reservoir (seed included), links and plasticity.
    pub architecture: Architecture,
    /// The reservoir's weights, stored rather than regenerated.
    pub weights: ArchitectureWeights,
    /// The trained readout.
    pub readout: LinearReadout,
    /// The reservoir state at the end of the last run (training, or test when given).
    pub state: Array1<f64>,
    /// The last input of that run and the model's output there (the first value a closed
    /// loop generates, and the output fed back at the next step).
    pub continuation: Continuation,
    /// Names of the input columns, in order.
    #[serde(deserialize_with = "text::list")]
    pub input_columns: Vec<String>,
    /// Names of the target columns, in order.
    #[serde(deserialize_with = "text::list")]
    pub target_columns: Vec<String>,
}

impl Model {
    /// Checks that the parts fit together (the weights to the description; sizes of the
    /// readout, state and names).
    pub fn validate(&self) -> Result<(), ReservoirError> {
        self.architecture.check_weights(&self.weights)?;
        let n = self.architecture.size();
        let (k, m) = (self.architecture.input_size(), self.readout.n_outputs());
        let consistent = self.readout.n_features() == n
            && self.state.len() == n
            && self.input_columns.len() == k
            && self.target_columns.len() == m
            && self.continuation.last_input.len() == k
            && self.continuation.last_output.len() == m
            && self
                .architecture
                .feedback()
                .is_none_or(|f| f.outputs() == m)
            && (!self.architecture.increments() || k == m);
        if !consistent {
            return Err(ReservoirError::invalid(
                "model",
                "reservoir, readout, state and column names disagree on sizes",
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
        let model: Model = load_checked(path, &MAGIC)?;
        consistent(model.validate(), path)?;
        Ok(model)
    }

    /// The bytes [`Model::save`] writes, for a front end that keeps a model in memory (Python's
    /// pickle).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.validate()?;
        encode(&MAGIC, self).map_err(in_memory)
    }

    /// A model from the bytes of a model file, checked as [`Model::load`] checks a file;
    /// `origin` names them in errors.
    pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<Self> {
        let model: Model = from_bytes_checked(bytes, &MAGIC, origin)?;
        consistent(model.validate(), origin)?;
        Ok(model)
    }
}

/// A decoded model's consistency check as a format error naming `origin`.
fn consistent(check: std::result::Result<(), ReservoirError>, origin: &Path) -> Result<()> {
    check.map_err(|e| RuntimeError::ModelFormat {
        path: origin.to_path_buf(),
        message: format!("inconsistent model: {e}"),
    })
}

/// A failure to encode a model held in memory.
fn in_memory(message: String) -> RuntimeError {
    RuntimeError::ModelFormat {
        path: "(a model in memory)".into(),
        message,
    }
}

/// A series model of format versions 2 and 3: one echo-state network.
#[derive(Deserialize)]
struct ModelV3 {
    config: ReservoirConfig,
    weights: ReservoirWeights,
    readout: LinearReadout,
    state: Array1<f64>,
    #[serde(deserialize_with = "text::list")]
    input_columns: Vec<String>,
    #[serde(deserialize_with = "text::list")]
    target_columns: Vec<String>,
}

impl From<ModelV3> for ModelV4 {
    fn from(old: ModelV3) -> Self {
        ModelV4 {
            architecture: ArchitectureV4 {
                reservoir: ReservoirKind::EchoState(old.config),
                input_to_readout: false,
                plasticity: None,
            },
            weights: ArchitectureWeights::EchoState(old.weights),
            readout: old.readout,
            state: old.state,
            input_columns: old.input_columns,
            target_columns: old.target_columns,
        }
    }
}

impl From<legacy::ModelV1> for ModelV3 {
    fn from(old: legacy::ModelV1) -> Self {
        ModelV3 {
            config: old.config.0,
            weights: old.weights,
            readout: old.readout,
            state: old.state,
            input_columns: old.input_columns,
            target_columns: old.target_columns,
        }
    }
}

/// The model description of format version 4: no output links.
#[derive(Deserialize)]
pub(super) struct ArchitectureV4 {
    reservoir: ReservoirKind,
    input_to_readout: bool,
    plasticity: Option<PlasticityConfig>,
}

impl ArchitectureV4 {
    /// Today's description of the same model.
    pub(super) fn into_architecture(self) -> std::result::Result<Architecture, DecodeError> {
        Architecture::new(self.reservoir)
            .with_input_to_readout(self.input_to_readout)
            .with_plasticity(self.plasticity)
            .map_err(|e| DecodeError::OtherString(format!("model description: {e}")))
    }
}

/// A series model of format version 4: the description, without the last input and output.
#[derive(Deserialize)]
struct ModelV4 {
    architecture: ArchitectureV4,
    weights: ArchitectureWeights,
    readout: LinearReadout,
    state: Array1<f64>,
    #[serde(deserialize_with = "text::list")]
    input_columns: Vec<String>,
    #[serde(deserialize_with = "text::list")]
    target_columns: Vec<String>,
}

impl ModelV4 {
    /// Today's model: a model without output links continues from its state alone, so its
    /// last output is the readout's at that state and its last input (never read) zero.
    fn into_model(self) -> std::result::Result<Model, DecodeError> {
        let outputs = self
            .readout
            .predict(self.state.view().insert_axis(ndarray::Axis(0)))
            .map_err(|e| DecodeError::OtherString(format!("readout: {e}")))?;
        Ok(Model {
            architecture: self.architecture.into_architecture()?,
            weights: self.weights,
            continuation: Continuation {
                last_input: Array1::zeros(self.input_columns.len()),
                last_output: outputs.row(0).to_owned(),
            },
            readout: self.readout,
            state: self.state,
            input_columns: self.input_columns,
            target_columns: self.target_columns,
        })
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

/// `value` encoded behind the header (`magic`, version, length, CRC-32): a model file's bytes.
fn encode<T: Serialize>(magic: &[u8; 8], value: &T) -> std::result::Result<Vec<u8>, String> {
    let payload = bincode::serde::encode_to_vec(value, bincode::config::standard())
        .map_err(|e| format!("cannot encode the model: {e}"))?;
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

/// Encodes `value` ([`encode`]) and stages it for `path`.
fn stage_checked<T: Serialize>(path: &Path, magic: &[u8; 8], value: &T) -> Result<Staged> {
    let bytes = encode(magic, value).map_err(|message| RuntimeError::ModelFormat {
        path: path.to_path_buf(),
        message,
    })?;
    stage(path, &bytes)
}

/// What a header declares, once its magic bytes and version are checked.
struct Header {
    version: u32,
    payload_len: u64,
    checksum: u32,
}

/// Checks the first [`HEADER_LEN`] bytes of a model (or fewer, when that is all there is).
fn read_header(header: &[u8], magic: &[u8; 8]) -> std::result::Result<Header, String> {
    if header.len() < magic.len() || header[..magic.len()] != *magic {
        let found = header.get(..magic.len()).and_then(other_kind);
        return Err(match (found, other_kind(magic)) {
            (Some(found), Some(wanted)) => format!("this is {found}, not {wanted}"),
            _ => "not a reservoir model file (bad magic bytes)".into(),
        });
    }
    if header.len() < HEADER_LEN {
        return Err("truncated header".into());
    }
    let word = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let version = word(8);
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "model format version {version}, this build reads versions 1 to {FORMAT_VERSION}"
        ));
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&header[12..20]);
    Ok(Header {
        version,
        payload_len: u64::from_le_bytes(len_bytes),
        checksum: word(20),
    })
}

/// An error unless the payload's length is the declared one (`actual` bytes follow the header).
fn check_length(header: &Header, actual: u64) -> std::result::Result<(), String> {
    let declared = header.payload_len;
    if declared == actual {
        return Ok(());
    }
    Err(format!(
        "{} ({actual} payload bytes, header says {declared})",
        if actual < declared {
            "truncated"
        } else {
            "trailing bytes after the model"
        }
    ))
}

/// A kind of model file's payload in every format version: how a payload of an older version
/// decodes into today's layout.
trait Versioned: DeserializeOwned {
    /// Decodes a payload of format `version` (below [`FORMAT_VERSION`]): the provided method
    /// for a kind whose layout has not changed since.
    fn decode_old(
        version: u32,
        payload: &[u8],
    ) -> std::result::Result<(Self, usize), bincode::error::DecodeError> {
        let _ = version;
        decode::<Self>(payload)
    }
}

impl Versioned for Model {
    fn decode_old(
        version: u32,
        payload: &[u8],
    ) -> std::result::Result<(Self, usize), bincode::error::DecodeError> {
        let (old, used) = match version {
            1 => decode::<legacy::ModelV1>(payload)
                .map(|(old, used)| (ModelV4::from(ModelV3::from(old)), used))?,
            2 | 3 => decode::<ModelV3>(payload).map(|(old, used)| (old.into(), used))?,
            _ => decode::<ModelV4>(payload)?,
        };
        Ok((old.into_model()?, used))
    }
}

/// The payload checked against the header's checksum and decoded in the header's version
/// ([`Versioned`]).
fn decode_payload<T: Versioned>(header: &Header, payload: &[u8]) -> std::result::Result<T, String> {
    if crc32fast::hash(payload) != header.checksum {
        return Err("corrupted (checksum mismatch)".into());
    }
    let (value, used) = if header.version < FORMAT_VERSION {
        T::decode_old(header.version, payload)
    } else {
        decode::<T>(payload)
    }
    .map_err(|e| format!("cannot decode the model: {e}"))?;
    if used != payload.len() {
        return Err("trailing bytes inside the payload".into());
    }
    Ok(value)
}

/// Reads a file written by [`stage_checked`] with `magic`, checking the header before decoding
/// ([`decode_payload`]).
fn load_checked<T: Versioned>(path: &Path, magic: &[u8; 8]) -> Result<T> {
    let format_error = |message: String| RuntimeError::ModelFormat {
        path: path.to_path_buf(),
        message,
    };
    let io_error = |source| RuntimeError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: only a regular file has an end to read to (`/dev/zero` has
    // none), and opening a FIFO would wait for a writer.
    let metadata = fs::metadata(path).map_err(io_error)?;
    if !metadata.is_file() {
        return Err(format_error(
            "not a regular file, so not a model file".into(),
        ));
    }
    let mut file = fs::File::open(path).map_err(io_error)?;
    // The header first: the payload is read only once its declared length matches the file's,
    // so a large file that is not a model is never read whole.
    let mut header = Vec::with_capacity(HEADER_LEN);
    (&mut file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .map_err(io_error)?;
    let header = read_header(&header, magic).map_err(format_error)?;
    check_length(&header, metadata.len().saturating_sub(HEADER_LEN as u64))
        .map_err(format_error)?;
    let declared = header.payload_len;
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
    decode_payload::<T>(&header, &payload).map_err(format_error)
}

/// Decodes the bytes of a model file (`bytes`, named `origin` in errors) as [`load_checked`]
/// decodes a file.
fn from_bytes_checked<T: Versioned>(bytes: &[u8], magic: &[u8; 8], origin: &Path) -> Result<T> {
    let parsed = read_header(&bytes[..bytes.len().min(HEADER_LEN)], magic).and_then(|header| {
        let payload = &bytes[HEADER_LEN..];
        check_length(&header, payload.len() as u64)?;
        decode_payload::<T>(&header, payload)
    });
    parsed.map_err(|message| RuntimeError::ModelFormat {
        path: origin.to_path_buf(),
        message,
    })
}

/// A bincode payload (standard config) decoded as `T`, and the bytes it used.
fn decode<T: DeserializeOwned>(
    payload: &[u8],
) -> std::result::Result<(T, usize), bincode::error::DecodeError> {
    bincode::serde::decode_from_slice(payload, bincode::config::standard())
}
