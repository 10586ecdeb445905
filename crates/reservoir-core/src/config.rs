//! Configuration: unchecked parameters that `check()` turns into a config that cannot be invalid.
//!
//! [`ReservoirParams`] and [`ReadoutParams`] are builders (and serde structs, so TOML and other
//! formats load them; unknown keys are an error, so a typo never falls back to a default).
//! Their `check()` returns a [`ReservoirConfig`] / [`ReadoutConfig`] or a [`ConfigError`]
//! naming the first field that breaks its rule. Everything downstream takes the checked types
//! and never validates them again.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// `TryFrom<$params>` through `$params::check` and `From<$checked>` back to the parameters:
/// what `#[serde(try_from = .., into = ..)]` needs of every checked type (a struct holding its
/// parameters in `params`).
macro_rules! checked_conversions {
    ($checked:ty, $params:ty) => {
        impl TryFrom<$params> for $checked {
            type Error = $crate::error::ConfigError;
            fn try_from(
                params: $params,
            ) -> ::core::result::Result<Self, $crate::error::ConfigError> {
                params.check()
            }
        }

        impl From<$checked> for $params {
            fn from(checked: $checked) -> Self {
                checked.params
            }
        }
    };
}
pub(crate) use checked_conversions;

/// Nonlinearity `f` of the echo-state update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// `tanh`, the usual echo-state nonlinearity.
    #[default]
    Tanh,
    /// `f(x) = x`, a linear reservoir.
    Identity,
}

/// Distribution of the non-zero recurrent and input weights before scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WeightDistribution {
    /// Uniform on (−1, 1).
    #[default]
    Uniform,
    /// Standard normal N(0, 1).
    Normal,
}

/// Floating-point type the reservoir state is computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// 32-bit: twice the throughput; enough for most tasks (and what the GPU uses).
    #[default]
    F32,
    /// 64-bit: for tasks scored near 1e-5 (e.g. Mackey–Glass one-step).
    F64,
}

/// Largest reservoir the engine builds; larger sizes are almost certainly a typo.
pub const MAX_SIZE: usize = 1 << 24;

/// Unchecked parameters of the echo-state reservoir
/// `x(t+1) = (1 − a)·x(t) + a·f(W_in·u(t) + W·x(t) + b + noise)`.
///
/// ```
/// use reservoir_core::ReservoirParams;
///
/// let config = ReservoirParams::new().size(500).spectral_radius(0.9).leak_rate(1.0).check()?;
/// assert_eq!(config.size(), 500);
/// let error = ReservoirParams::new().leak_rate(1.5).check().unwrap_err();
/// assert_eq!(error.to_string(), "invalid value for `leak_rate`: must be in (0, 1] (got 1.5)");
/// # Ok::<(), reservoir_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReservoirParams {
    size: usize,
    input_size: usize,
    spectral_radius: f64,
    connection_prob: f64,
    input_connectivity: f64,
    leak_rate: f64,
    input_scaling: f64,
    bias_scaling: f64,
    noise_level: f64,
    activation: Activation,
    weight_distribution: WeightDistribution,
    seed: u64,
    precision: Precision,
}

impl Default for ReservoirParams {
    fn default() -> Self {
        Self {
            size: 1000,
            input_size: 1,
            spectral_radius: 0.95,
            connection_prob: 0.1,
            input_connectivity: 0.1,
            leak_rate: 0.3,
            input_scaling: 1.0,
            bias_scaling: 0.0,
            noise_level: 0.0,
            activation: Activation::Tanh,
            weight_distribution: WeightDistribution::Uniform,
            seed: 42,
            precision: Precision::F32,
        }
    }
}

impl ReservoirParams {
    /// The defaults (each documented on its setter).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of reservoir units N, in 1..=[`MAX_SIZE`]. Default 1000.
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }

    /// Number of input channels K ≥ 1. Default 1 (the command line takes it from the data).
    pub fn input_size(mut self, input_size: usize) -> Self {
        self.input_size = input_size;
        self
    }

    /// Target spectral radius ρ(W), in (0, 1e6]; values ≥ 1 are allowed. Default 0.95.
    pub fn spectral_radius(mut self, spectral_radius: f64) -> Self {
        self.spectral_radius = spectral_radius;
        self
    }

    /// Density of W in (0, 1]: each unit receives `round(p·N)` (≥ 1) connections. Default 0.1
    /// (ReservoirPy's default).
    pub fn connection_prob(mut self, connection_prob: f64) -> Self {
        self.connection_prob = connection_prob;
        self
    }

    /// Density of W_in in (0, 1]: each input channel reaches `round(p·N)` (≥ 1) units.
    /// Default 0.1.
    pub fn input_connectivity(mut self, input_connectivity: f64) -> Self {
        self.input_connectivity = input_connectivity;
        self
    }

    /// Leak rate a in (0, 1]. Default 0.3.
    pub fn leak_rate(mut self, leak_rate: f64) -> Self {
        self.leak_rate = leak_rate;
        self
    }

    /// Scale of the input weights, in [0, 1e6]. Default 1.0.
    pub fn input_scaling(mut self, input_scaling: f64) -> Self {
        self.input_scaling = input_scaling;
        self
    }

    /// Scale s of the bias b, drawn uniform on (−s, s) for every unit (s in [0, 1e6]).
    /// Default 0.0.
    pub fn bias_scaling(mut self, bias_scaling: f64) -> Self {
        self.bias_scaling = bias_scaling;
        self
    }

    /// Standard deviation of Gaussian noise added to the pre-activation every step (finite,
    /// ≥ 0). Default 0.0.
    pub fn noise_level(mut self, noise_level: f64) -> Self {
        self.noise_level = noise_level;
        self
    }

    /// Nonlinearity. Default `tanh`.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Distribution of the non-zero weights of W and W_in. Default `uniform`.
    pub fn weight_distribution(mut self, weight_distribution: WeightDistribution) -> Self {
        self.weight_distribution = weight_distribution;
        self
    }

    /// Seed of every random draw (weights, noise). Default 42.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Arithmetic of the state update. Default `f32` (the GPU computes in `f32` only).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The checked config; the error names the first field that breaks its rule.
    pub fn check(self) -> Result<ReservoirConfig, ConfigError> {
        check_dimensions(self.size, self.input_size)?;
        check_spectral_radius("spectral_radius", self.spectral_radius)?;
        check_unit_interval("connection_prob", self.connection_prob)?;
        check_unit_interval("input_connectivity", self.input_connectivity)?;
        check_leak_rate("leak_rate", self.leak_rate)?;
        check_input_scaling("input_scaling", self.input_scaling)?;
        check_scale("bias_scaling", self.bias_scaling)?;
        check_non_negative("noise_level", self.noise_level)?;
        Ok(ReservoirConfig { params: self })
    }
}

/// A checked echo-state configuration (from [`ReservoirParams::check`]): every value obeys its
/// rule, so nothing that takes one validates it again. Serialises as its parameters and
/// deserialises through `check()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ReservoirParams", into = "ReservoirParams")]
pub struct ReservoirConfig {
    params: ReservoirParams,
}

impl Default for ReservoirConfig {
    /// The default parameters, which are valid.
    fn default() -> Self {
        Self {
            params: ReservoirParams::default(),
        }
    }
}

checked_conversions!(ReservoirConfig, ReservoirParams);

impl ReservoirConfig {
    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> ReservoirParams {
        self.params.clone()
    }

    /// Number of reservoir units N.
    pub fn size(&self) -> usize {
        self.params.size
    }

    /// Number of input channels K.
    pub fn input_size(&self) -> usize {
        self.params.input_size
    }

    /// Target spectral radius ρ(W).
    pub fn spectral_radius(&self) -> f64 {
        self.params.spectral_radius
    }

    /// Density of W.
    pub fn connection_prob(&self) -> f64 {
        self.params.connection_prob
    }

    /// Density of W_in.
    pub fn input_connectivity(&self) -> f64 {
        self.params.input_connectivity
    }

    /// Leak rate a.
    pub fn leak_rate(&self) -> f64 {
        self.params.leak_rate
    }

    /// Scale of the input weights.
    pub fn input_scaling(&self) -> f64 {
        self.params.input_scaling
    }

    /// Scale of the bias.
    pub fn bias_scaling(&self) -> f64 {
        self.params.bias_scaling
    }

    /// Standard deviation of the state noise.
    pub fn noise_level(&self) -> f64 {
        self.params.noise_level
    }

    /// Nonlinearity.
    pub fn activation(&self) -> Activation {
        self.params.activation
    }

    /// Distribution of the non-zero weights.
    pub fn weight_distribution(&self) -> WeightDistribution {
        self.params.weight_distribution
    }

    /// Seed of every random draw.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }

    /// Arithmetic of the state update.
    pub fn precision(&self) -> Precision {
        self.params.precision
    }
}

/// Unchecked parameters of the trained linear readout (ridge regression on the states).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadoutParams {
    ridge: f64,
    washout: usize,
}

impl Default for ReadoutParams {
    fn default() -> Self {
        Self {
            ridge: 1e-6,
            washout: 100,
        }
    }
}

impl ReadoutParams {
    /// The defaults (each documented on its setter).
    pub fn new() -> Self {
        Self::default()
    }

    /// Ridge (Tikhonov) regularisation λ on the weights, finite and ≥ 0; the intercept is not
    /// regularised. Default 1e-6.
    pub fn ridge(mut self, ridge: f64) -> Self {
        self.ridge = ridge;
        self
    }

    /// Leading rows of each training sequence dropped before fitting (reservoir warm-up).
    /// Default 100.
    pub fn washout(mut self, washout: usize) -> Self {
        self.washout = washout;
        self
    }

    /// The checked config; the error names the field that breaks its rule.
    pub fn check(self) -> Result<ReadoutConfig, ConfigError> {
        check_ridge("ridge", self.ridge)?;
        Ok(ReadoutConfig { params: self })
    }
}

/// A checked readout configuration (from [`ReadoutParams::check`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ReadoutParams", into = "ReadoutParams")]
pub struct ReadoutConfig {
    params: ReadoutParams,
}

impl Default for ReadoutConfig {
    /// The default parameters, which are valid.
    fn default() -> Self {
        Self {
            params: ReadoutParams::default(),
        }
    }
}

checked_conversions!(ReadoutConfig, ReadoutParams);

impl ReadoutConfig {
    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> ReadoutParams {
        self.params.clone()
    }

    /// Ridge penalty λ.
    pub fn ridge(&self) -> f64 {
        self.params.ridge
    }

    /// Rows dropped before fitting.
    pub fn washout(&self) -> usize {
        self.params.washout
    }
}

/// `Err(ConfigError { field, rule, value })` unless `ok`: the one rule check of every config.
pub(crate) fn check(
    ok: bool,
    field: &str,
    rule: &str,
    value: impl ToString,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, rule, value))
    }
}

fn check_unit_interval(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        value > 0.0 && value <= 1.0,
        field,
        "must be in (0, 1]",
        value,
    )
}

fn check_non_negative(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        value.is_finite() && value >= 0.0,
        field,
        "must be finite and >= 0",
        value,
    )
}

/// Largest spectral radius, input scaling or bias scaling: weights are stored in f32 (and f16 on
/// a GPU), so a scale far beyond any useful one would make them infinite, and every state NaN.
pub const MAX_SCALE: f64 = 1e6;

/// The rule of a spectral radius (in (0, [`MAX_SCALE`]]), for the value of `field`.
pub(crate) fn check_spectral_radius(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        value > 0.0 && value <= MAX_SCALE,
        field,
        "must be in (0, 1e6]",
        value,
    )
}

/// The rule of a weight scale (in [0, [`MAX_SCALE`]]), for the value of `field`.
pub(crate) fn check_scale(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        (0.0..=MAX_SCALE).contains(&value),
        field,
        "must be in [0, 1e6]",
        value,
    )
}

/// The rule of a leak rate (in (0, 1]), for the value of `field`.
pub(crate) fn check_leak_rate(field: &str, value: f64) -> Result<(), ConfigError> {
    check_unit_interval(field, value)
}

/// The rule of an input scaling (in [0, [`MAX_SCALE`]]), for the value of `field`.
pub(crate) fn check_input_scaling(field: &str, value: f64) -> Result<(), ConfigError> {
    check_scale(field, value)
}

/// The rule of a ridge penalty (finite and >= 0), for the value of `field`.
pub(crate) fn check_ridge(field: &str, value: f64) -> Result<(), ConfigError> {
    check_non_negative(field, value)
}

/// `size` in 1..=[`MAX_SIZE`] and `input_size` ≥ 1: the dimensions every reservoir config has.
pub(crate) fn check_dimensions(size: usize, input_size: usize) -> Result<(), ConfigError> {
    check(
        (1..=MAX_SIZE).contains(&size),
        "size",
        &format!("must be in 1..={MAX_SIZE}"),
        size,
    )?;
    check(input_size >= 1, "input_size", "must be >= 1", input_size)
}

/// Options in the configs' convention: `$params`, unchecked (serde, unknown keys refused, and
/// a builder with one setter a field, each documented by its field's doc), and `$checked`,
/// which only `$params::check` (written beside the invocation) makes, with a getter a field,
/// and which serialises as its parameters and deserialises through `check()`. So a function
/// that takes `$checked` never checks it again.
macro_rules! checked_options {
    (
        $(#[$params_doc:meta])*
        params $params:ident;
        $(#[$checked_doc:meta])*
        checked $checked:ident = $params_name:literal;
        $( $(#[$field_doc:meta])* $field:ident: $ty:ty = $default:expr, )*
    ) => {
        $(#[$params_doc])*
        #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $params {
            $( $field: $ty, )*
        }

        impl Default for $params {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $params {
            /// The defaults (each documented on its setter).
            pub fn new() -> Self {
                Self::default()
            }

            $(
                $(#[$field_doc])*
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }

        $(#[$checked_doc])*
        #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = $params_name, into = $params_name)]
        pub struct $checked {
            params: $params,
        }

        impl Default for $checked {
            /// The default parameters, which are valid.
            fn default() -> Self {
                Self { params: $params::default() }
            }
        }

        $crate::config::checked_conversions!($checked, $params);

        impl $checked {
            /// These values as parameters, to change some and check again.
            pub fn to_params(&self) -> $params {
                self.params
            }

            $(
                $(#[$field_doc])*
                pub fn $field(&self) -> $ty {
                    self.params.$field
                }
            )*
        }
    };
}
pub(crate) use checked_options;
