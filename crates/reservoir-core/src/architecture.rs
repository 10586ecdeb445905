//! The one description every model is built from: which reservoir turns the inputs into
//! states (an echo-state network, a deep stack of them, or NVAR features), the links around it
//! (the input beside the states in the readout's features, the readout's outputs fed back
//! into the reservoir, increments predicted instead of values), and the unsupervised step
//! before the readout (intrinsic plasticity). Its weights are generated once, kept with a trained
//! model, and built into a [`Reservoir`] on any device.
//!
//! ```
//! use reservoir_core::architecture::{Architecture, ReservoirKind};
//! use reservoir_core::nvar::NvarParams;
//! use reservoir_core::Par;
//!
//! let nvar = NvarParams::new().delay(2).order(2).input_size(3).check()?;
//! let architecture = Architecture::new(ReservoirKind::Nvar(nvar)).with_input_to_readout(true);
//! let weights = architecture.generate(&[])?;
//! let reservoir = architecture.cpu(&weights, Par::Seq)?;
//! assert_eq!(reservoir.size(), 6 + 21 + 3); // linear part, quadratic monomials, the input
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use crate::config::ReservoirConfig;
use crate::deep::{DeepEsnConfig, DeepReservoir};
use crate::error::{ConfigError, ReservoirError, Result};
use crate::esn::cpu_reservoir;
use crate::links::WithInput;
use crate::nvar::{NvarConfig, NvarReservoir};
use crate::par::Par;
use crate::plasticity::{adapt, PlasticityConfig};
use crate::reservoir::Reservoir;
use crate::weights::ReservoirWeights;

/// Builds the echo-state networks of an [`Architecture`] where a caller picks
/// ([`Architecture::build_with`]): each network alone, and a deep stack, by default as its
/// layers built one by one and stacked.
pub trait EchoStateBuilder {
    /// One echo-state network of `config` on `weights`.
    ///
    /// # Errors
    /// Any error of building it.
    fn echo_state(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
    ) -> Result<Box<dyn Reservoir>>;

    /// The deep stack of `config` on its layers' `weights` (checked to fit): each layer built
    /// by [`EchoStateBuilder::echo_state`], stacked in a [`DeepReservoir`].
    ///
    /// # Errors
    /// The first error of building a layer, or layers that do not stack.
    fn deep_echo_state(
        &mut self,
        config: &DeepEsnConfig,
        weights: &[ReservoirWeights],
    ) -> Result<Box<dyn Reservoir>> {
        let layers = config
            .layer_configs()
            .iter()
            .zip(weights)
            .map(|(c, w)| self.echo_state(c, w.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(DeepReservoir::new(
            layers,
            config.input_to_all(),
            config.readout_layers().map(<[usize]>::to_vec),
        )?))
    }
}

/// A builder of each echo-state network by one function, a deep stack layer by layer.
struct EachNetwork<F>(F);

impl<F> EchoStateBuilder for EachNetwork<F>
where
    F: FnMut(&ReservoirConfig, ReservoirWeights) -> Result<Box<dyn Reservoir>>,
{
    fn echo_state(
        &mut self,
        config: &ReservoirConfig,
        weights: ReservoirWeights,
    ) -> Result<Box<dyn Reservoir>> {
        (self.0)(config, weights)
    }
}

/// The reservoir of a model, with its checked configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReservoirKind {
    /// One leaky echo-state network.
    EchoState(ReservoirConfig),
    /// A stack of echo-state layers, layer k driven by layer k − 1's states.
    DeepEchoState(DeepEsnConfig),
    /// Next-generation reservoir computing: delayed inputs and their monomials, no weights.
    Nvar(NvarConfig),
}

impl ReservoirKind {
    /// `echo_state`, `deep_echo_state` or `nvar`: the name configs use.
    pub fn name(&self) -> &'static str {
        match self {
            ReservoirKind::EchoState(_) => "echo_state",
            ReservoirKind::DeepEchoState(_) => "deep_echo_state",
            ReservoirKind::Nvar(_) => "nvar",
        }
    }

    /// Input channels K.
    pub fn input_size(&self) -> usize {
        match self {
            ReservoirKind::EchoState(c) => c.input_size(),
            ReservoirKind::DeepEchoState(c) => c.input_size(),
            ReservoirKind::Nvar(c) => c.input_size(),
        }
    }

    /// Width of the states: the units (of the layers read out), or NVAR's features.
    pub fn state_size(&self) -> usize {
        match self {
            ReservoirKind::EchoState(c) => c.size(),
            ReservoirKind::DeepEchoState(c) => {
                let layers = c.layer_configs();
                match c.readout_layers() {
                    Some(chosen) => chosen
                        .iter()
                        .filter_map(|&l| layers.get(l))
                        .map(|l| l.size())
                        .sum(),
                    None => layers.iter().map(|l| l.size()).sum(),
                }
            }
            ReservoirKind::Nvar(c) => c.width(),
        }
    }
}

/// A model's description: its reservoir, its links and its unsupervised step. Checked as its
/// parts are (and read back through the same checks); [`Architecture::check_weights`] ties
/// weights to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ArchitectureParts")]
pub struct Architecture {
    reservoir: ReservoirKind,
    input_to_readout: bool,
    feedback: Option<Feedback>,
    increments: bool,
    plasticity: Option<PlasticityConfig>,
}

#[derive(Deserialize)]
struct ArchitectureParts {
    reservoir: ReservoirKind,
    input_to_readout: bool,
    feedback: Option<Feedback>,
    increments: bool,
    plasticity: Option<PlasticityConfig>,
}

impl TryFrom<ArchitectureParts> for Architecture {
    type Error = ConfigError;
    fn try_from(parts: ArchitectureParts) -> std::result::Result<Self, ConfigError> {
        Architecture::new(parts.reservoir)
            .with_input_to_readout(parts.input_to_readout)
            .with_feedback(parts.feedback)?
            .with_increments(parts.increments)
            .with_plasticity(parts.plasticity)
    }
}

/// Output feedback (ReservoirPy's `reservoir <<= readout` with `fb_scaling`): the readout's
/// previous outputs enter the reservoir as input channels after the data's, times `scaling`.
/// Training feeds back the previous targets (teacher forcing); predicting feeds back the
/// model's own outputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FeedbackParts")]
pub struct Feedback {
    outputs: usize,
    scaling: f64,
}

#[derive(Deserialize)]
struct FeedbackParts {
    outputs: usize,
    scaling: f64,
}

impl TryFrom<FeedbackParts> for Feedback {
    type Error = ConfigError;
    fn try_from(parts: FeedbackParts) -> std::result::Result<Self, ConfigError> {
        Feedback::new(parts.outputs, parts.scaling)
    }
}

impl Feedback {
    /// `outputs` values fed back, each times `scaling`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `feedback` for no outputs or a scaling that is not finite and
    /// positive.
    pub fn new(outputs: usize, scaling: f64) -> std::result::Result<Self, ConfigError> {
        if outputs == 0 {
            return Err(ConfigError::new(
                "feedback",
                "needs at least one output to feed back",
                outputs,
            ));
        }
        if !(scaling.is_finite() && scaling > 0.0) {
            return Err(ConfigError::new(
                "feedback",
                "the scaling must be finite and > 0",
                scaling,
            ));
        }
        Ok(Self { outputs, scaling })
    }

    /// Outputs fed back (M).
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// What each fed-back output is multiplied by.
    pub fn scaling(&self) -> f64 {
        self.scaling
    }
}

/// The weights an [`Architecture`] generates: one set per echo-state network, none for NVAR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchitectureWeights {
    /// The echo-state network's.
    EchoState(ReservoirWeights),
    /// Each layer's, layer 0 first.
    DeepEchoState(Vec<ReservoirWeights>),
    /// NVAR has none.
    Nvar,
}

impl Architecture {
    /// `reservoir` alone: no links, no plasticity.
    pub fn new(reservoir: ReservoirKind) -> Self {
        Self {
            reservoir,
            input_to_readout: false,
            feedback: None,
            increments: false,
            plasticity: None,
        }
    }

    /// Feeds the readout's outputs back into the reservoir ([`Feedback`]): the reservoir's
    /// last `outputs` input channels carry them, so it must have more input channels than
    /// that (the data's come first).
    ///
    /// # Errors
    /// A [`ConfigError`] naming `feedback` when the reservoir has no input channel left for
    /// the data.
    pub fn with_feedback(
        mut self,
        feedback: Option<Feedback>,
    ) -> std::result::Result<Self, ConfigError> {
        if let Some(f) = feedback {
            if f.outputs >= self.reservoir.input_size() {
                return Err(ConfigError::new(
                    "feedback",
                    format!(
                        "the reservoir's {} input channels must hold the data's and the {} \
                         fed-back outputs",
                        self.reservoir.input_size(),
                        f.outputs
                    ),
                    f.outputs,
                ));
            }
        }
        self.feedback = feedback;
        Ok(self)
    }

    /// Sets whether the readout predicts each target minus the same step's input (Gauthier et
    /// al.'s NG-RC forecasts), the input added back to every prediction. It needs as many
    /// targets as inputs.
    pub fn with_increments(mut self, increments: bool) -> Self {
        self.increments = increments;
        self
    }

    /// Sets whether the readout sees the input beside the states (ReservoirPy's
    /// `[data, reservoir] >> readout`).
    pub fn with_input_to_readout(mut self, input_to_readout: bool) -> Self {
        self.input_to_readout = input_to_readout;
        self
    }

    /// Adapts the echo-state units by intrinsic plasticity on the training inputs before the
    /// readout.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `plasticity` for a reservoir other than one tanh echo-state
    /// network.
    pub fn with_plasticity(
        mut self,
        plasticity: Option<PlasticityConfig>,
    ) -> std::result::Result<Self, ConfigError> {
        if plasticity.is_some() && !matches!(self.reservoir, ReservoirKind::EchoState(_)) {
            return Err(ConfigError::new(
                "plasticity",
                "applies to one echo-state network (model.reservoir = \"echo_state\")",
                self.reservoir.name(),
            ));
        }
        self.plasticity = plasticity;
        Ok(self)
    }

    /// The reservoir.
    pub fn reservoir(&self) -> &ReservoirKind {
        &self.reservoir
    }

    /// Whether the readout sees the input beside the states.
    pub fn input_to_readout(&self) -> bool {
        self.input_to_readout
    }

    /// The output feedback, if any.
    pub fn feedback(&self) -> Option<&Feedback> {
        self.feedback.as_ref()
    }

    /// Whether the readout predicts increments over the input.
    pub fn increments(&self) -> bool {
        self.increments
    }

    /// Whether the model has a link between its outputs and its inputs (feedback or
    /// increments): what only models of series support.
    pub fn links_outputs(&self) -> bool {
        self.feedback.is_some() || self.increments
    }

    /// The intrinsic plasticity applied before the readout, if any.
    pub fn plasticity(&self) -> Option<&PlasticityConfig> {
        self.plasticity.as_ref()
    }

    /// Input channels K of the data (the reservoir's, less the fed-back outputs).
    pub fn input_size(&self) -> usize {
        self.reservoir.input_size() - self.feedback.map_or(0, |f| f.outputs)
    }

    /// Width of the states the readout (or a sequence summary) reads: the reservoir's, plus
    /// the reservoir's input channels with the input link.
    pub fn size(&self) -> usize {
        self.reservoir.state_size()
            + if self.input_to_readout {
                self.reservoir.input_size()
            } else {
                0
            }
    }

    /// The weights: generated from the configs' seeds, then adapted by intrinsic plasticity
    /// on `training` (the reservoir's training inputs: [`Architecture::teacher_inputs`]) when
    /// asked for. The same description and inputs
    /// give the same bits.
    ///
    /// # Errors
    /// Any error of generating the weights or of the adaptation.
    pub fn generate(&self, training: &[ArrayView2<f64>]) -> Result<ArchitectureWeights> {
        Ok(match &self.reservoir {
            ReservoirKind::EchoState(config) => {
                let (weights, _) = ReservoirWeights::generate(config)?;
                ArchitectureWeights::EchoState(match &self.plasticity {
                    Some(plasticity) => adapt(config, &weights, plasticity, training)?,
                    None => weights,
                })
            }
            ReservoirKind::DeepEchoState(config) => ArchitectureWeights::DeepEchoState(
                config
                    .layer_configs()
                    .iter()
                    .map(|layer| ReservoirWeights::generate(layer).map(|(w, _)| w))
                    .collect::<Result<_>>()?,
            ),
            ReservoirKind::Nvar(_) => ArchitectureWeights::Nvar,
        })
    }

    /// An error unless `weights` are of this reservoir's kind and sizes.
    ///
    /// # Errors
    /// An invalid-input error saying what disagrees.
    pub fn check_weights(&self, weights: &ArchitectureWeights) -> Result<()> {
        let fits = |config: &ReservoirConfig, w: &ReservoirWeights| {
            config.size() == w.size() && config.input_size() == w.input_size()
        };
        let consistent = match (&self.reservoir, weights) {
            (ReservoirKind::EchoState(c), ArchitectureWeights::EchoState(w)) => fits(c, w),
            (ReservoirKind::DeepEchoState(c), ArchitectureWeights::DeepEchoState(layers)) => {
                c.layer_configs().len() == layers.len()
                    && c.layer_configs()
                        .iter()
                        .zip(layers)
                        .all(|(c, w)| fits(c, w))
            }
            (ReservoirKind::Nvar(_), ArchitectureWeights::Nvar) => true,
            _ => false,
        };
        if consistent {
            Ok(())
        } else {
            Err(ReservoirError::invalid(
                "model weights",
                format!(
                    "do not fit the {} reservoir they are stored with",
                    self.reservoir.name()
                ),
            ))
        }
    }

    /// The model's reservoir, each echo-state network built by `echo_state` (on the device
    /// the caller picks; NVAR runs on the CPU on the threads of `par`), with the input link
    /// around it when asked for.
    ///
    /// # Errors
    /// Weights that do not fit ([`Architecture::check_weights`]) or any error of `echo_state`.
    pub fn build(
        &self,
        weights: &ArchitectureWeights,
        par: Par,
        echo_state: impl FnMut(&ReservoirConfig, ReservoirWeights) -> Result<Box<dyn Reservoir>>,
    ) -> Result<Box<dyn Reservoir>> {
        self.build_with(weights, par, &mut EachNetwork(echo_state))
    }

    /// [`Architecture::build`] with a `builder` that may also build a deep stack whole (a
    /// device that runs every layer of it in one go).
    ///
    /// # Errors
    /// Weights that do not fit ([`Architecture::check_weights`]) or any error of `builder`.
    pub fn build_with(
        &self,
        weights: &ArchitectureWeights,
        par: Par,
        builder: &mut dyn EchoStateBuilder,
    ) -> Result<Box<dyn Reservoir>> {
        self.check_weights(weights)?;
        let reservoir: Box<dyn Reservoir> = match (&self.reservoir, weights) {
            (ReservoirKind::EchoState(config), ArchitectureWeights::EchoState(w)) => {
                builder.echo_state(config, w.clone())?
            }
            (ReservoirKind::DeepEchoState(config), ArchitectureWeights::DeepEchoState(layers)) => {
                builder.deep_echo_state(config, layers)?
            }
            (ReservoirKind::Nvar(config), _) => Box::new(NvarReservoir::new(config)?.with_par(par)),
            _ => {
                return Err(ReservoirError::invalid(
                    "model weights",
                    "do not fit the reservoir",
                ))
            }
        };
        Ok(if self.input_to_readout {
            Box::new(WithInput::new(reservoir))
        } else {
            reservoir
        })
    }

    /// [`Architecture::build`] on the CPU, every part on the threads of `par`.
    ///
    /// # Errors
    /// As [`Architecture::build`].
    pub fn cpu(&self, weights: &ArchitectureWeights, par: Par) -> Result<Box<dyn Reservoir>> {
        self.build(weights, par, |config, w| cpu_reservoir(config, w, par))
    }

    /// Every echo-state network's config: the reservoir's, or each layer's (none for NVAR).
    pub fn echo_state_configs(&self) -> Vec<&ReservoirConfig> {
        match &self.reservoir {
            ReservoirKind::EchoState(config) => vec![config],
            ReservoirKind::DeepEchoState(config) => config.layer_configs().iter().collect(),
            ReservoirKind::Nvar(_) => Vec::new(),
        }
    }

    /// The echo-state network's config when that is the reservoir (what lanes and sweeps
    /// vary).
    pub fn echo_state(&self) -> Option<&ReservoirConfig> {
        match &self.reservoir {
            ReservoirKind::EchoState(config) => Some(config),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReservoirParams;
    use crate::deep::{DeepEsnLayerParams, DeepEsnParams};
    use crate::nvar::NvarParams;
    use crate::plasticity::PlasticityParams;

    fn echo_state() -> ReservoirKind {
        let config = ReservoirParams::new()
            .size(30)
            .input_size(2)
            .seed(3)
            .check();
        ReservoirKind::EchoState(config.expect("config"))
    }

    fn deep() -> ReservoirKind {
        let layers = vec![
            DeepEsnLayerParams::new().size(20),
            DeepEsnLayerParams::new().size(10),
        ];
        let config = DeepEsnParams::new()
            .layers(layers)
            .input_size(2)
            .seed(3)
            .check();
        ReservoirKind::DeepEchoState(config.expect("config"))
    }

    fn nvar() -> ReservoirKind {
        let config = NvarParams::new().delay(2).order(2).input_size(2).check();
        ReservoirKind::Nvar(config.expect("config"))
    }

    #[test]
    fn each_kind_builds_a_reservoir_of_its_size_from_its_own_weights() {
        for (kind, size) in [(echo_state(), 30), (deep(), 30), (nvar(), 4 + 10)] {
            for link in [false, true] {
                let architecture = Architecture::new(kind.clone()).with_input_to_readout(link);
                let weights = architecture.generate(&[]).expect("weights");
                assert_eq!(architecture.generate(&[]).expect("again"), weights);
                let reservoir = architecture.cpu(&weights, Par::Seq).expect("build");
                let expected = size + if link { 2 } else { 0 };
                assert_eq!(
                    (reservoir.size(), architecture.size()),
                    (expected, expected)
                );
                assert_eq!(reservoir.input_size(), 2);
            }
        }
        let echo = Architecture::new(echo_state());
        let other = Architecture::new(deep()).generate(&[]).expect("weights");
        assert!(echo.check_weights(&other).is_err());
        assert!(echo.cpu(&ArchitectureWeights::Nvar, Par::Seq).is_err());
    }

    #[test]
    fn plasticity_belongs_to_one_echo_state_network() {
        let plasticity = Some(PlasticityParams::new().check().expect("plasticity"));
        let refused = Architecture::new(deep()).with_plasticity(plasticity);
        assert!(refused.is_err_and(|e| e.field == "plasticity"));
        let adapted = Architecture::new(echo_state())
            .with_plasticity(plasticity)
            .expect("echo state");
        let inputs = ndarray::Array2::from_shape_fn((50, 2), |(t, c)| ((t + c) as f64).sin());
        let weights = adapted.generate(&[inputs.view()]).expect("adapted");
        let plain = Architecture::new(echo_state())
            .generate(&[])
            .expect("plain");
        assert_ne!(weights, plain);
        assert_eq!(adapted.generate(&[inputs.view()]).expect("again"), weights);
    }
}
