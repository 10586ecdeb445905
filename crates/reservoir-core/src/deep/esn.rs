//! Deep echo-state networks: [`DeepEsnParams`] → [`DeepEsnConfig`], which derives every
//! layer's [`ReservoirConfig`] (its input size from the layer below, its seed from the
//! stack's), and [`cpu_deep_esn`], the stack on the CPU.

use serde::{Deserialize, Serialize};

use super::{check_readout_layers, DeepReservoir};
use crate::config::{check, checked_conversions, Precision, ReservoirConfig, ReservoirParams};
use crate::error::{ConfigError, Result};
use crate::esn::cpu_reservoir;
use crate::par::Par;
use crate::reservoir::Reservoir;
use crate::weights::ReservoirWeights;

/// Most layers a stack may have (more is almost certainly a typo).
pub const MAX_LAYERS: usize = 1024;

/// Unchecked settings of one layer of a deep echo-state network; what every layer shares
/// (the input, the seed, the precision) is in [`DeepEsnParams`]. Defaults and rules are those
/// of [`ReservoirParams`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeepEsnLayerParams {
    size: usize,
    spectral_radius: f64,
    leak_rate: f64,
    input_scaling: f64,
    connection_prob: f64,
    input_connectivity: f64,
    bias_scaling: f64,
}

impl Default for DeepEsnLayerParams {
    fn default() -> Self {
        let defaults = ReservoirConfig::default();
        Self {
            size: defaults.size(),
            spectral_radius: defaults.spectral_radius(),
            leak_rate: defaults.leak_rate(),
            input_scaling: defaults.input_scaling(),
            connection_prob: defaults.connection_prob(),
            input_connectivity: defaults.input_connectivity(),
            bias_scaling: defaults.bias_scaling(),
        }
    }
}

impl DeepEsnLayerParams {
    /// The defaults of [`ReservoirParams`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Units of the layer (as [`ReservoirParams::size`]).
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }

    /// Spectral radius of the layer's W (as [`ReservoirParams::spectral_radius`]).
    pub fn spectral_radius(mut self, spectral_radius: f64) -> Self {
        self.spectral_radius = spectral_radius;
        self
    }

    /// Leak rate (as [`ReservoirParams::leak_rate`]).
    pub fn leak_rate(mut self, leak_rate: f64) -> Self {
        self.leak_rate = leak_rate;
        self
    }

    /// Scale of the layer's input weights, from the layer below (and the stack's input)
    /// (as [`ReservoirParams::input_scaling`]).
    pub fn input_scaling(mut self, input_scaling: f64) -> Self {
        self.input_scaling = input_scaling;
        self
    }

    /// Density of W (as [`ReservoirParams::connection_prob`]).
    pub fn connection_prob(mut self, connection_prob: f64) -> Self {
        self.connection_prob = connection_prob;
        self
    }

    /// Density of W_in (as [`ReservoirParams::input_connectivity`]).
    pub fn input_connectivity(mut self, input_connectivity: f64) -> Self {
        self.input_connectivity = input_connectivity;
        self
    }

    /// Scale of the bias (as [`ReservoirParams::bias_scaling`]).
    pub fn bias_scaling(mut self, bias_scaling: f64) -> Self {
        self.bias_scaling = bias_scaling;
        self
    }
}

/// Unchecked parameters of a deep echo-state network (DeepESN): a stack of echo-state layers,
/// layer 0 driven by the input, layer k by layer k − 1's states (and by the input too where
/// `input_to_all`).
///
/// ```
/// use reservoir_core::deep::{cpu_deep_esn, DeepEsnLayerParams, DeepEsnParams};
/// use reservoir_core::{Par, Reservoir};
///
/// let layer = DeepEsnLayerParams::new().size(50).leak_rate(0.5);
/// let config = DeepEsnParams::new().layers(vec![layer; 3]).input_size(2).check()?;
/// let stack = cpu_deep_esn(&config, Par::Seq)?;
/// assert_eq!((stack.size(), stack.input_size()), (150, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeepEsnParams {
    layers: Vec<DeepEsnLayerParams>,
    input_size: usize,
    input_to_all: bool,
    readout_layers: Option<Vec<usize>>,
    seed: u64,
    precision: Precision,
}

impl Default for DeepEsnParams {
    fn default() -> Self {
        let defaults = ReservoirConfig::default();
        Self {
            layers: Vec::new(),
            input_size: defaults.input_size(),
            input_to_all: false,
            readout_layers: None,
            seed: defaults.seed(),
            precision: defaults.precision(),
        }
    }
}

impl DeepEsnParams {
    /// No layers yet (at least one must be given), the other defaults of [`ReservoirParams`],
    /// the input to layer 0 only, every layer read out.
    pub fn new() -> Self {
        Self::default()
    }

    /// The layers, layer 0 first: 1..=[`MAX_LAYERS`] of them.
    pub fn layers(mut self, layers: Vec<DeepEsnLayerParams>) -> Self {
        self.layers = layers;
        self
    }

    /// Input channels K of the stack (≥ 1). Default 1.
    pub fn input_size(mut self, input_size: usize) -> Self {
        self.input_size = input_size;
        self
    }

    /// Whether every layer also takes the input beside the states below it. Default false
    /// (Gallicchio & Micheli's DeepESN: the input reaches layer 0 only).
    pub fn input_to_all(mut self, input_to_all: bool) -> Self {
        self.input_to_all = input_to_all;
        self
    }

    /// The layers whose states a readout sees (increasing indices). Default: every layer.
    pub fn readout_layers(mut self, readout_layers: Option<Vec<usize>>) -> Self {
        self.readout_layers = readout_layers;
        self
    }

    /// Seed of the stack; each layer's is derived from it ([`layer_seed`]). Default 42.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Arithmetic of every layer's update. Default `f32`.
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The checked config: every layer's [`ReservoirConfig`] checked, a layer's error named
    /// `layers[k].field`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first field that breaks its rule.
    pub fn check(self) -> std::result::Result<DeepEsnConfig, ConfigError> {
        check(
            (1..=MAX_LAYERS).contains(&self.layers.len()),
            "layers",
            &format!("must hold 1..={MAX_LAYERS} layers"),
            self.layers.len(),
        )?;
        check(
            self.input_size >= 1,
            "input_size",
            "must be >= 1",
            self.input_size,
        )?;
        if let Some(readout) = &self.readout_layers {
            if let Err(rule) = check_readout_layers(readout, self.layers.len()) {
                return Err(ConfigError::new(
                    "readout_layers",
                    rule,
                    format!("{readout:?}"),
                ));
            }
        }
        let mut configs = Vec::with_capacity(self.layers.len());
        let mut input_size = self.input_size;
        for (index, layer) in self.layers.iter().enumerate() {
            let table = format!("layers[{index}]");
            let config = ReservoirParams::new()
                .size(layer.size)
                .input_size(input_size)
                .spectral_radius(layer.spectral_radius)
                .leak_rate(layer.leak_rate)
                .input_scaling(layer.input_scaling)
                .connection_prob(layer.connection_prob)
                .input_connectivity(layer.input_connectivity)
                .bias_scaling(layer.bias_scaling)
                .seed(layer_seed(self.seed, index))
                .precision(self.precision)
                .check()
                .map_err(|e| e.prefixed(&table))?;
            let extra = if self.input_to_all {
                self.input_size
            } else {
                0
            };
            input_size = config.size().checked_add(extra).ok_or_else(|| {
                ConfigError::new(
                    "input_size",
                    "must leave the layers' input sizes within usize",
                    self.input_size,
                )
            })?;
            configs.push(config);
        }
        Ok(DeepEsnConfig {
            params: self,
            layers: configs,
        })
    }
}

/// Seed of layer `layer` of a stack seeded `seed`: `seed` itself for layer 0 (so a one-layer
/// stack is the echo-state reservoir of that seed), a SplitMix64 mix of `seed` and the index
/// for the others (so no two layers draw the same weights, nor do stacks of nearby seeds
/// share layers).
pub fn layer_seed(seed: u64, layer: usize) -> u64 {
    if layer == 0 {
        return seed;
    }
    let mut z = seed.wrapping_add((layer as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A checked deep echo-state configuration (from [`DeepEsnParams::check`]), with each layer's
/// [`ReservoirConfig`]. Serialises as its parameters and deserialises through `check()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DeepEsnParams", into = "DeepEsnParams")]
pub struct DeepEsnConfig {
    params: DeepEsnParams,
    layers: Vec<ReservoirConfig>,
}

checked_conversions!(DeepEsnConfig, DeepEsnParams);

impl DeepEsnConfig {
    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> DeepEsnParams {
        self.params.clone()
    }

    /// Each layer's echo-state config, layer 0 first: layer k's `input_size` is layer
    /// k − 1's `size` (plus K where `input_to_all`), its seed [`layer_seed`].
    pub fn layer_configs(&self) -> &[ReservoirConfig] {
        &self.layers
    }

    /// Input channels K of the stack.
    pub fn input_size(&self) -> usize {
        self.params.input_size
    }

    /// Whether every layer also takes the input.
    pub fn input_to_all(&self) -> bool {
        self.params.input_to_all
    }

    /// The layers read out (None: all).
    pub fn readout_layers(&self) -> Option<&[usize]> {
        self.params.readout_layers.as_deref()
    }

    /// Seed of the stack.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }

    /// Each layer's settings as given, layer 0 first.
    pub fn layer_params(&self) -> &[DeepEsnLayerParams] {
        &self.params.layers
    }

    /// Precision of every layer.
    pub fn precision(&self) -> Precision {
        self.params.precision
    }

    /// Stacks the layers that `layer` builds from each layer's config (a CPU or GPU echo-state
    /// reservoir, on any device a caller picks).
    ///
    /// # Errors
    /// The first error of `layer`, or layers whose sizes do not stack (a layer of other
    /// sizes than its config's).
    pub fn build(
        &self,
        mut layer: impl FnMut(&ReservoirConfig) -> Result<Box<dyn Reservoir>>,
    ) -> Result<DeepReservoir> {
        let layers = self
            .layers
            .iter()
            .map(&mut layer)
            .collect::<Result<Vec<_>>>()?;
        DeepReservoir::new(
            layers,
            self.input_to_all(),
            self.readout_layers().map(<[usize]>::to_vec),
        )
    }
}

/// The deep echo-state network of `config` on the CPU: each layer's weights generated from
/// its config, each layer a [`cpu_reservoir`] running on the threads of `par`.
///
/// # Errors
/// A layer's weights that cannot be generated (see [`ReservoirWeights::generate`]).
pub fn cpu_deep_esn(config: &DeepEsnConfig, par: Par) -> Result<DeepReservoir> {
    config.build(|layer| {
        let (weights, _) = ReservoirWeights::generate(layer)?;
        cpu_reservoir(layer, weights, par)
    })
}
