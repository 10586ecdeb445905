//! The `[sweep]` table of a config: the grid of `reservoir sweep`.

use serde::{Deserialize, Serialize};

use super::Lane;
use crate::config::{
    check, check_input_scaling, check_leak_rate, check_ridge, check_spectral_radius, ReadoutConfig,
    ReservoirConfig,
};
use crate::error::ConfigError;

/// The `[sweep]` table: lists of hyper-parameter values whose Cartesian product gives the
/// lanes, and the ridge penalties every lane's readout is solved for.
///
/// A list that is absent stands for the base config's single value (`[reservoir]` for the
/// lane parameters, `[readout] ridge` for `ridge`); a config without a `[sweep]` table sweeps
/// one lane, the base config itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    /// Spectral radii of the lanes (each finite and > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spectral_radius: Option<Vec<f64>>,
    /// Leak rates of the lanes (each in (0, 1]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_rate: Option<Vec<f64>>,
    /// Input scalings of the lanes (each finite and >= 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_scaling: Option<Vec<f64>>,
    /// Ridge penalties solved for on every lane (each finite and >= 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ridge: Option<Vec<f64>>,
    /// Number of best results a report shows (>= 1). Default 10.
    #[serde(default = "default_top")]
    pub top: usize,
}

fn default_top() -> usize {
    10
}

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            spectral_radius: None,
            leak_rate: None,
            input_scaling: None,
            ridge: None,
            top: default_top(),
        }
    }
}

type Rule = fn(&str, f64) -> Result<(), ConfigError>;

impl SweepConfig {
    /// Checks every list: non-empty, each value obeying the rule of the field it sweeps
    /// (the same checks as [`ReservoirConfig::validate`] and [`ReadoutConfig::validate`]).
    /// The error names the list and the index, e.g. `leak_rate[2]`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let lists: [(&str, &Option<Vec<f64>>, Rule); 4] = [
            (
                "spectral_radius",
                &self.spectral_radius,
                check_spectral_radius,
            ),
            ("leak_rate", &self.leak_rate, check_leak_rate),
            ("input_scaling", &self.input_scaling, check_input_scaling),
            ("ridge", &self.ridge, check_ridge),
        ];
        for (field, list, rule) in lists {
            let Some(values) = list else { continue };
            check(!values.is_empty(), field, "must not be empty", "[]")?;
            for (index, &value) in values.iter().enumerate() {
                rule(&format!("{field}[{index}]"), value)?;
            }
        }
        check(self.top >= 1, "top", "must be >= 1", self.top)
    }

    /// The lanes: every combination of the three lists, spectral radius varying slowest and
    /// input scaling fastest (lane `(i·L + j)·S + k` has the i-th radius, the j-th leak rate
    /// and the k-th input scaling, for L leak rates and S input scalings).
    pub fn lanes(&self, base: &ReservoirConfig) -> Vec<Lane> {
        let or_base = |list: &Option<Vec<f64>>, value: f64| list.clone().unwrap_or(vec![value]);
        let radii = or_base(&self.spectral_radius, base.spectral_radius);
        let leaks = or_base(&self.leak_rate, base.leak_rate);
        let scalings = or_base(&self.input_scaling, base.input_scaling);
        let mut lanes = Vec::with_capacity(radii.len() * leaks.len() * scalings.len());
        for &spectral_radius in &radii {
            for &leak_rate in &leaks {
                for &input_scaling in &scalings {
                    lanes.push(Lane {
                        spectral_radius,
                        leak_rate,
                        input_scaling,
                    });
                }
            }
        }
        lanes
    }

    /// The ridge penalties, in the order given (`[readout] ridge` when absent).
    pub fn ridges(&self, readout: &ReadoutConfig) -> Vec<f64> {
        self.ridge.clone().unwrap_or(vec![readout.ridge])
    }
}
