//! Model files of format version 1, which also recorded the backend a model was trained on:
//! decoded as they were written; each model converts its own into today's form, the backend
//! dropped.

use ndarray::Array1;
use reservoir_core::readout::LinearReadout;
use reservoir_core::{ReservoirParams, ReservoirWeights};
use serde::Deserialize;

use super::text::options_as_toml;
use crate::config::SpikeClassificationOptions;

/// The `backend` field of a version 1 config (bincode writes its variant index).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Backend {
    Auto,
    Cpu,
    Cuda,
}

/// A version 1 config: today's parameters followed by the backend, which is the same bytes
/// as one struct with every field (bincode writes fields one after another).
#[derive(Deserialize)]
#[serde(try_from = "(ReservoirParams, Backend)")]
pub(super) struct ConfigV1(pub(super) reservoir_core::ReservoirConfig);

impl TryFrom<(ReservoirParams, Backend)> for ConfigV1 {
    type Error = reservoir_core::ConfigError;
    fn try_from((params, _where_it_ran): (ReservoirParams, Backend)) -> Result<Self, Self::Error> {
        Ok(Self(params.check()?))
    }
}

/// A version 1 series model.
#[derive(Deserialize)]
pub(super) struct ModelV1 {
    pub(super) config: ConfigV1,
    pub(super) weights: ReservoirWeights,
    pub(super) readout: LinearReadout,
    pub(super) state: Array1<f64>,
    #[serde(deserialize_with = "super::text::list")]
    pub(super) input_columns: Vec<String>,
    #[serde(deserialize_with = "super::text::list")]
    pub(super) target_columns: Vec<String>,
}

/// A version 1 spike-classifier model.
#[derive(Deserialize)]
pub(super) struct SpikeModelV1 {
    pub(super) config: ConfigV1,
    pub(super) weights: ReservoirWeights,
    pub(super) readout: LinearReadout,
    pub(super) state: Array1<f64>,
    #[serde(with = "options_as_toml")]
    pub(super) task: SpikeClassificationOptions,
}
