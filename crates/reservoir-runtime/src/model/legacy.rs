//! Model files of format version 1, which also recorded the backend a model was trained on:
//! decoded as they were written, converted to today's models, the backend dropped.

use ndarray::Array1;
use reservoir_core::readout::LinearReadout;
use reservoir_core::{ReservoirParams, ReservoirWeights};
use serde::Deserialize;

use super::spike::options_as_toml;
use super::{Model, SpikeModel};
use crate::tasks::spike_classification::SpikeClassificationOptions;

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
struct ConfigV1(reservoir_core::ReservoirConfig);

impl TryFrom<(ReservoirParams, Backend)> for ConfigV1 {
    type Error = reservoir_core::ConfigError;
    fn try_from((params, _where_it_ran): (ReservoirParams, Backend)) -> Result<Self, Self::Error> {
        Ok(Self(params.check()?))
    }
}

/// A version 1 series model.
#[derive(Deserialize)]
pub(super) struct ModelV1 {
    config: ConfigV1,
    weights: ReservoirWeights,
    readout: LinearReadout,
    state: Array1<f64>,
    #[serde(deserialize_with = "super::text::list")]
    input_columns: Vec<String>,
    #[serde(deserialize_with = "super::text::list")]
    target_columns: Vec<String>,
}

impl From<ModelV1> for Model {
    fn from(old: ModelV1) -> Self {
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

/// A version 1 spike-classifier model.
#[derive(Deserialize)]
pub(super) struct SpikeModelV1 {
    config: ConfigV1,
    weights: ReservoirWeights,
    readout: LinearReadout,
    state: Array1<f64>,
    #[serde(with = "options_as_toml")]
    task: SpikeClassificationOptions,
}

impl From<SpikeModelV1> for SpikeModel {
    fn from(old: SpikeModelV1) -> Self {
        SpikeModel {
            config: old.config.0,
            weights: old.weights,
            readout: old.readout,
            state: old.state,
            task: old.task,
        }
    }
}
