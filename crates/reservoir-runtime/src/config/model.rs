//! The `[model]` table: which reservoir a model is built around (the `[reservoir]` echo-state
//! network, a deep stack of echo-state layers, or NVAR), the links between the data, the
//! reservoir and the readout (the input to the readout, output feedback, increments), and
//! intrinsic plasticity. With the data's widths known, [`ModelConfig::architecture`] makes
//! the one description every job builds its reservoir from.

use reservoir_core::architecture::{Architecture, Feedback, ReservoirKind};
use reservoir_core::deep::{DeepEsnLayerParams, DeepEsnParams};
use reservoir_core::nvar::NvarParams;
use reservoir_core::plasticity::{PlasticityConfig, PlasticityParams};
use reservoir_core::{ConfigError, ReservoirConfig, ReservoirParams};
use serde::{Deserialize, Serialize};

/// The reservoir kinds `[model] reservoir` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReservoirChoice {
    /// The `[reservoir]` table's echo-state network.
    #[default]
    EchoState,
    /// `[[model.layers]]`, a stack of echo-state layers (seed and precision of `[reservoir]`).
    DeepEchoState,
    /// `[model.nvar]`: next-generation reservoir computing.
    Nvar,
}

impl ReservoirChoice {
    /// The name configs use.
    pub fn name(self) -> &'static str {
        match self {
            ReservoirChoice::EchoState => "echo_state",
            ReservoirChoice::DeepEchoState => "deep_echo_state",
            ReservoirChoice::Nvar => "nvar",
        }
    }
}

/// NVAR's settings in `[model.nvar]` (the input width comes from the data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NvarTable {
    /// Inputs in the linear part (default 2).
    pub delay: usize,
    /// Degree of the monomials (default 2).
    pub order: usize,
    /// Steps between the linear part's inputs (default 1).
    pub strides: usize,
}

impl Default for NvarTable {
    fn default() -> Self {
        let defaults = NvarParams::new();
        Self {
            delay: defaults.delay,
            order: defaults.order,
            strides: defaults.strides,
        }
    }
}

/// The `[model]` table as written. Every key is optional: the default is the `[reservoir]`
/// echo-state network alone.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelParams {
    /// `echo_state` (default), `deep_echo_state` or `nvar`.
    pub reservoir: ReservoirChoice,
    /// The input beside the states in the readout's features (default false).
    pub input_to_readout: bool,
    /// The deep stack's layers, layer 0 first (`[[model.layers]]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<DeepEsnLayerParams>,
    /// Every layer of the deep stack also driven by the input (default false: layer 0 only).
    pub input_to_all: bool,
    /// The deep stack's layers the readout reads (default: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readout_layers: Option<Vec<usize>>,
    /// NVAR's settings (`[model.nvar]`).
    pub nvar: NvarTable,
    /// Output feedback: the readout's previous outputs fed into the reservoir beside the
    /// input, times this scaling (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<f64>,
    /// The readout predicts each target minus the same step's input (default false).
    pub increments: bool,
    /// Intrinsic plasticity of the echo-state units before the readout (`[model.plasticity]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plasticity: Option<PlasticityParams>,
}

/// A checked `[model]` table (from [`ModelParams::check`]), still without the input width.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    params: ModelParams,
    plasticity: Option<PlasticityConfig>,
}

impl From<ModelConfig> for ModelParams {
    fn from(config: ModelConfig) -> Self {
        config.params
    }
}

impl ModelParams {
    /// Checks the table with `reservoir` (the `[reservoir]` table, whose seed and precision a
    /// deep stack takes) on a one-channel input: the rules that do not depend on the data.
    /// Field names start with `model.`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field: layers given to another kind, no layers for a
    /// deep stack, a layer, NVAR or plasticity value out of its range, plasticity on a
    /// reservoir other than one echo-state network.
    pub fn check(self, reservoir: &ReservoirConfig) -> Result<ModelConfig, ConfigError> {
        let prefixed = |e: ConfigError| e.prefixed("model");
        if self.reservoir != ReservoirChoice::DeepEchoState {
            let deep_only = [
                ("layers", !self.layers.is_empty(), "are"),
                ("readout_layers", self.readout_layers.is_some(), "is"),
                ("input_to_all", self.input_to_all, "is"),
            ];
            if let Some((field, _, verb)) = deep_only.into_iter().find(|(_, set, _)| *set) {
                return Err(prefixed(ConfigError::new(
                    field,
                    format!("{verb} read only with reservoir = \"deep_echo_state\""),
                    self.reservoir.name(),
                )));
            }
        }
        let plasticity = self
            .plasticity
            .map(|p| p.check().map_err(|e| e.prefixed("plasticity")))
            .transpose()
            .map_err(prefixed)?;
        let config = ModelConfig {
            params: self,
            plasticity,
        };
        config.architecture(reservoir, 1, Some(1))?;
        Ok(config)
    }
}

impl ModelParams {
    /// The `[reservoir]` and `[model]` tables that describe `architecture`: what a front end
    /// shows of a trained model, and what builds the same model again.
    pub fn describing(architecture: &Architecture) -> (ReservoirParams, ModelParams) {
        let mut model = ModelParams {
            input_to_readout: architecture.input_to_readout(),
            feedback: architecture.feedback().map(Feedback::scaling),
            increments: architecture.increments(),
            plasticity: architecture.plasticity().copied().map(Into::into),
            ..ModelParams::default()
        };
        let reservoir = match architecture.reservoir() {
            ReservoirKind::EchoState(config) => config.to_params(),
            ReservoirKind::DeepEchoState(config) => {
                model.reservoir = ReservoirChoice::DeepEchoState;
                model.layers = config.layer_params().to_vec();
                model.input_to_all = config.input_to_all();
                model.readout_layers = config.readout_layers().map(<[usize]>::to_vec);
                ReservoirParams::new()
                    .input_size(config.input_size())
                    .seed(config.seed())
                    .precision(config.precision())
            }
            ReservoirKind::Nvar(config) => {
                model.reservoir = ReservoirChoice::Nvar;
                model.nvar = NvarTable {
                    delay: config.delay(),
                    order: config.order(),
                    strides: config.strides(),
                };
                ReservoirParams::new().input_size(config.input_size())
            }
        };
        (reservoir, model)
    }
}

impl ModelConfig {
    /// Which reservoir.
    pub fn reservoir(&self) -> ReservoirChoice {
        self.params.reservoir
    }

    /// Whether the table asks for anything but the `[reservoir]` echo-state network alone.
    pub fn is_plain(&self) -> bool {
        self.params == ModelParams::default()
    }

    /// The description of a model on `k` input channels, its echo-state network (or the deep
    /// stack's seed and precision) from `reservoir`; `outputs` is the targets of a model of
    /// series (`None` for a classifier, which takes no output links).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the `model.` field that breaks a rule for these widths.
    pub fn architecture(
        &self,
        reservoir: &ReservoirConfig,
        k: usize,
        outputs: Option<usize>,
    ) -> Result<Architecture, ConfigError> {
        let prefixed = |e: ConfigError| e.prefixed("model");
        let p = &self.params;
        let feedback = match (p.feedback, outputs) {
            (None, _) => None,
            (Some(scaling), Some(m)) => Some(Feedback::new(m, scaling).map_err(prefixed)?),
            (Some(scaling), None) => {
                return Err(prefixed(ConfigError::new(
                    "feedback",
                    "applies to models of series (targets to predict), not to classifiers",
                    scaling,
                )))
            }
        };
        if p.increments && outputs != Some(k) {
            return Err(prefixed(ConfigError::new(
                "increments",
                format!(
                    "needs one target per input ({k} input(s)): each target is its input a \
                     step on, {}",
                    match outputs {
                        Some(m) => format!("got {m} target(s)"),
                        None => "and a classifier has none".to_string(),
                    }
                ),
                true,
            )));
        }
        // The fed-back outputs are input channels of the reservoir after the data's.
        let k = k + feedback.map_or(0, |f| f.outputs());
        let kind = match p.reservoir {
            ReservoirChoice::EchoState => ReservoirKind::EchoState(
                reservoir
                    .to_params()
                    .input_size(k)
                    .check()
                    .map_err(|e| e.prefixed("reservoir"))?,
            ),
            ReservoirChoice::DeepEchoState => ReservoirKind::DeepEchoState(
                DeepEsnParams::new()
                    .layers(p.layers.clone())
                    .input_size(k)
                    .input_to_all(p.input_to_all)
                    .readout_layers(p.readout_layers.clone())
                    .seed(reservoir.seed())
                    .precision(reservoir.precision())
                    .check()
                    .map_err(prefixed)?,
            ),
            ReservoirChoice::Nvar => ReservoirKind::Nvar(
                NvarParams::new()
                    .delay(p.nvar.delay)
                    .order(p.nvar.order)
                    .strides(p.nvar.strides)
                    .input_size(k)
                    .check()
                    .map_err(|e| prefixed(e.prefixed("nvar")))?,
            ),
        };
        Architecture::new(kind)
            .with_input_to_readout(p.input_to_readout)
            .with_feedback(feedback)
            .and_then(|a| a.with_plasticity(self.plasticity))
            .map(|a| a.with_increments(p.increments))
            .map_err(prefixed)
    }
}
