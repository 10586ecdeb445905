//! Reservoir and readout configuration: serde structs loadable from TOML, validated by `validate()`.
//!
//! Unknown keys are an error (`deny_unknown_fields`), so a typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, ReservoirError, Result};

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

/// Where a reservoir runs; the command line picks the backend from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The GPU when one is usable (and the config is one the GPU runs), otherwise the CPU,
    /// with the reason said once.
    #[default]
    Auto,
    /// Always the CPU.
    Cpu,
    /// Always the GPU; an error when none is usable.
    Cuda,
}

/// The echo-state reservoir: `x(t+1) = (1 − a)·x(t) + a·f(W_in·u(t) + W·x(t) + b + noise)`.
///
/// Every field has a default (see [`ReservoirConfig::default`]); construct with struct-update
/// syntax and call [`ReservoirConfig::validate`] (every constructor in this crate does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReservoirConfig {
    /// Number of reservoir units N. Default 1000.
    pub size: usize,
    /// Number of input channels K. Default 1 (the command line takes it from the data).
    pub input_size: usize,
    /// Target spectral radius ρ(W) > 0; values ≥ 1 are allowed. Default 0.95.
    pub spectral_radius: f64,
    /// Density of the recurrent matrix W in (0, 1]: each unit receives `round(p·N)` (≥ 1)
    /// connections. Default 0.1 (ReservoirPy's default).
    pub connection_prob: f64,
    /// Density of the input matrix W_in in (0, 1]: each input channel reaches `round(p·N)`
    /// (≥ 1) units. Default 0.1.
    pub input_connectivity: f64,
    /// Leak rate a in (0, 1]. Default 0.3.
    pub leak_rate: f64,
    /// Scale of the input weights (≥ 0). Default 1.0.
    pub input_scaling: f64,
    /// Scale of the bias b, drawn uniform on (−s, s) for every unit (≥ 0). Default 0.0.
    pub bias_scaling: f64,
    /// Standard deviation of Gaussian noise added to the pre-activation every step (≥ 0).
    /// Default 0.0.
    pub noise_level: f64,
    /// Nonlinearity. Default `tanh`.
    pub activation: Activation,
    /// Distribution of the non-zero weights of W and W_in. Default `uniform`.
    pub weight_distribution: WeightDistribution,
    /// Seed of every random draw (weights, noise). Default 42.
    pub seed: u64,
    /// Arithmetic of the state update. Default `f32` (the GPU computes in `f32` only).
    pub precision: Precision,
    /// Where to run: `auto` (default), `cpu` or `cuda`. The core library itself always runs on
    /// the CPU; `gpu-reservoir` and the command line read this.
    pub backend: Backend,
}

impl Default for ReservoirConfig {
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
            backend: Backend::Auto,
        }
    }
}

/// Largest reservoir the CPU engine builds; larger sizes are almost certainly a typo.
pub const MAX_SIZE: usize = 1 << 24;

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

/// The rule of [`ReservoirConfig::spectral_radius`] (finite and > 0), for the value of `field`.
pub(crate) fn check_spectral_radius(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        value.is_finite() && value > 0.0,
        field,
        "must be finite and > 0",
        value,
    )
}

/// The rule of [`ReservoirConfig::leak_rate`] (in (0, 1]), for the value of `field`.
pub(crate) fn check_leak_rate(field: &str, value: f64) -> Result<(), ConfigError> {
    check_unit_interval(field, value)
}

/// The rule of [`ReservoirConfig::input_scaling`] (finite and >= 0), for the value of `field`.
pub(crate) fn check_input_scaling(field: &str, value: f64) -> Result<(), ConfigError> {
    check_non_negative(field, value)
}

/// The rule of [`ReadoutConfig::ridge`] (finite and >= 0), for the value of `field`.
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

impl ReservoirConfig {
    /// Checks every field; the error names the first field that breaks its rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_dimensions(self.size, self.input_size)?;
        check_spectral_radius("spectral_radius", self.spectral_radius)?;
        check_unit_interval("connection_prob", self.connection_prob)?;
        check_unit_interval("input_connectivity", self.input_connectivity)?;
        check_leak_rate("leak_rate", self.leak_rate)?;
        check_input_scaling("input_scaling", self.input_scaling)?;
        check_non_negative("bias_scaling", self.bias_scaling)?;
        check_non_negative("noise_level", self.noise_level)?;
        Ok(())
    }
}

/// The trained linear readout: ridge regression on the reservoir states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadoutConfig {
    /// Ridge (Tikhonov) regularisation λ ≥ 0 on the weights; the intercept is not regularised.
    /// Default 1e-6.
    pub ridge: f64,
    /// Leading rows of each training sequence dropped before fitting (reservoir warm-up).
    /// Default 100.
    pub washout: usize,
}

impl Default for ReadoutConfig {
    fn default() -> Self {
        Self {
            ridge: 1e-6,
            washout: 100,
        }
    }
}

impl ReadoutConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_ridge("ridge", self.ridge)
    }
}

/// Parses TOML into `T`, turning the parser's message (key, line, column) into a typed error.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let place = e
            .span()
            .map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {column}: ")
            })
            .unwrap_or_default();
        ReservoirError::ConfigParse {
            origin: origin.to_string(),
            message: format!("{place}{}", e.message().trim_end().replace('\n', " ")),
        }
    })
}
