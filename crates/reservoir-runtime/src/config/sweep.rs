//! The `[sweep]` table of a config: the grid of `reservoir sweep` (run by [`crate::jobs::sweep`]).

use gpu_reservoir::GemmMath;
use serde::{Deserialize, Serialize};

use reservoir_core::lanes::Lane;
use reservoir_core::{Activation, ConfigError, ReadoutConfig, ReservoirConfig};

use super::folds::Validation;

/// The `[sweep]` table as written: lists of hyper-parameter values whose Cartesian product
/// gives the lanes, and the ridge penalties every lane's readout is solved for.
///
/// A list that is absent stands for the base config's single value (`[reservoir]` for the
/// lane parameters, `[readout] ridge` for `ridge`); a config without a `[sweep]` table sweeps
/// one lane, the base config itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepParams {
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
    /// Sequence datasets: validate on k folds of the training sequences (k >= 2; the
    /// default, with 5, when `validation` is not given either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folds: Option<usize>,
    /// Sequence datasets: validate on this fraction of the training sequences, held out
    /// (in (0, 1)), instead of folds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<f64>,
    /// The arithmetic of the lanes' GEMM when they run on a GPU: `f32` (the default), `tf32`
    /// or `f16` (tensor cores; faster, with a drift from the f32 states of about 3e-4 relative
    /// over 1,000 steps; `f16` needs `activation = "tanh"`). Lanes on the CPU compute in the
    /// config's precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_matmul: Option<GemmMath>,
}

/// Folds a sequence sweep validates on when the table names neither `folds` nor
/// `validation`.
pub const DEFAULT_FOLDS: usize = 5;

fn default_top() -> usize {
    10
}

impl Default for SweepParams {
    fn default() -> Self {
        Self {
            spectral_radius: None,
            leak_rate: None,
            input_scaling: None,
            ridge: None,
            top: default_top(),
            folds: None,
            validation: None,
            gpu_matmul: None,
        }
    }
}

/// Most (lane, ridge) readouts a sweep solves and ranks: its grid is built and every result kept,
/// so the grid is bounded before anything is built (a million results take about 200 MB).
pub(crate) const MAX_READOUTS: usize = 1_000_000;

/// `values` (the list `field`), each checked by `rule`; an error names the list and the index,
/// e.g. `leak_rate[2]`. An absent list is empty: the base config's value.
fn checked_list(
    field: &str,
    values: Option<Vec<f64>>,
    rule: impl Fn(f64) -> Result<(), ConfigError>,
) -> Result<Vec<f64>, ConfigError> {
    let Some(values) = values else {
        return Ok(Vec::new());
    };
    if values.is_empty() {
        return Err(ConfigError::new(field, "must not be empty", "[]"));
    }
    for (index, &value) in values.iter().enumerate() {
        rule(value).map_err(|mut e| {
            e.field = format!("{field}[{index}]");
            e
        })?;
    }
    Ok(values)
}

impl SweepParams {
    /// Checks every list against the base config: non-empty, each value obeying the rule of
    /// the field it sweeps (the rules of [`reservoir_core::ReservoirParams::check`] and
    /// [`reservoir_core::ReadoutParams::check`]); an absent list stands for the base config's
    /// value.
    pub fn check(
        self,
        base: &ReservoirConfig,
        readout: &ReadoutConfig,
    ) -> Result<SweepConfig, ConfigError> {
        let lane_rule = |change: fn(
            reservoir_core::ReservoirParams,
            f64,
        ) -> reservoir_core::ReservoirParams| {
            move |value: f64| change(base.to_params(), value).check().map(drop)
        };
        let spectral_radius = checked_list(
            "spectral_radius",
            self.spectral_radius,
            lane_rule(|p, v| p.spectral_radius(v)),
        )?;
        let leak_rate = checked_list(
            "leak_rate",
            self.leak_rate,
            lane_rule(|p, v| p.leak_rate(v)),
        )?;
        let input_scaling = checked_list(
            "input_scaling",
            self.input_scaling,
            lane_rule(|p, v| p.input_scaling(v)),
        )?;
        let ridge = checked_list("ridge", self.ridge, |v| {
            readout.to_params().ridge(v).check().map(drop)
        })?;
        let count = |list: &[f64]| list.len().max(1);
        let readouts = [&spectral_radius, &leak_rate, &input_scaling, &ridge]
            .iter()
            .fold(1usize, |product, list| product.saturating_mul(count(list)));
        if readouts > MAX_READOUTS {
            let sizes = [&spectral_radius, &leak_rate, &input_scaling, &ridge]
                .map(|list| count(list).to_string())
                .join(" × ");
            return Err(ConfigError::new(
                "spectral_radius × leak_rate × input_scaling × ridge",
                format!("must make at most {MAX_READOUTS} readouts, not {sizes}"),
                readouts,
            ));
        }
        let validation = match (self.folds, self.validation) {
            (Some(_), Some(fraction)) => {
                return Err(ConfigError::new(
                    "validation",
                    "give either `folds` or `validation`, not both",
                    fraction,
                ))
            }
            (Some(k), None) if k < 2 => {
                return Err(ConfigError::new("folds", "must be >= 2", k));
            }
            (Some(k), None) => Some(Validation::Folds(k)),
            (None, Some(f)) if !(f > 0.0 && f < 1.0) => {
                return Err(ConfigError::new("validation", "must be in (0, 1)", f));
            }
            (None, Some(f)) => Some(Validation::Holdout(f)),
            (None, None) => None,
        };
        SweepConfig {
            spectral_radius,
            leak_rate,
            input_scaling,
            ridge,
            top: 1,
            validation,
            gpu_matmul: GemmMath::F32,
        }
        .with_top(self.top)?
        .with_gpu_matmul(self.gpu_matmul.unwrap_or_default(), base)
    }
}

/// A checked `[sweep]` table (from [`SweepParams::check`]): lists of valid values, an empty one
/// standing for the base config's value.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    spectral_radius: Vec<f64>,
    leak_rate: Vec<f64>,
    input_scaling: Vec<f64>,
    ridge: Vec<f64>,
    top: usize,
    validation: Option<Validation>,
    gpu_matmul: GemmMath,
}

impl Default for SweepConfig {
    /// One lane, the base config itself, solved for its own ridge: what a config without a
    /// `[sweep]` table sweeps.
    fn default() -> Self {
        Self {
            spectral_radius: Vec::new(),
            leak_rate: Vec::new(),
            input_scaling: Vec::new(),
            ridge: Vec::new(),
            top: default_top(),
            validation: None,
            gpu_matmul: GemmMath::F32,
        }
    }
}

impl From<SweepConfig> for SweepParams {
    fn from(config: SweepConfig) -> Self {
        let list = |values: Vec<f64>| (!values.is_empty()).then_some(values);
        Self {
            spectral_radius: list(config.spectral_radius),
            leak_rate: list(config.leak_rate),
            input_scaling: list(config.input_scaling),
            ridge: list(config.ridge),
            top: config.top,
            folds: match config.validation {
                Some(Validation::Folds(k)) => Some(k),
                _ => None,
            },
            validation: match config.validation {
                Some(Validation::Holdout(f)) => Some(f),
                _ => None,
            },
            gpu_matmul: (config.gpu_matmul != GemmMath::F32).then_some(config.gpu_matmul),
        }
    }
}

impl SweepConfig {
    /// These lists showing the `top` best results.
    ///
    /// # Errors
    /// `top` of 0.
    pub fn with_top(mut self, top: usize) -> Result<Self, ConfigError> {
        if top == 0 {
            return Err(ConfigError::new("top", "must be >= 1", top));
        }
        self.top = top;
        Ok(self)
    }

    /// These lists with the lanes' GEMM on a GPU in `math`.
    ///
    /// # Errors
    /// `f16` for a `base` whose activation is not `tanh` (its states could leave f16's range).
    pub fn with_gpu_matmul(
        mut self,
        math: GemmMath,
        base: &ReservoirConfig,
    ) -> Result<Self, ConfigError> {
        check_gpu_matmul(math, base)?;
        self.gpu_matmul = math;
        Ok(self)
    }

    /// Number of best results a report shows.
    pub fn top(&self) -> usize {
        self.top
    }

    /// How a sweep of a sequence dataset validates ([`DEFAULT_FOLDS`] folds unless the table
    /// says otherwise).
    pub fn validation(&self) -> Validation {
        self.validation.unwrap_or(Validation::Folds(DEFAULT_FOLDS))
    }

    /// The arithmetic of the lanes' GEMM on a GPU.
    pub fn gpu_matmul(&self) -> GemmMath {
        self.gpu_matmul
    }

    /// Whether the table names `folds` or `validation` (which only sequence datasets use).
    pub fn names_validation(&self) -> bool {
        self.validation.is_some()
    }

    /// The lanes around `base`: every combination of the three lists, spectral radius varying
    /// slowest and input scaling fastest (lane `(i·L + j)·S + k` has the i-th radius, the j-th
    /// leak rate and the k-th input scaling, for L leak rates and S input scalings). An empty
    /// list (the default table) stands for the base's value.
    ///
    /// # Errors
    /// None for the base the lists were checked against; a config error otherwise.
    pub fn lanes(&self, base: &ReservoirConfig) -> Result<Vec<Lane>, ConfigError> {
        let or_base = |list: &[f64], value: f64| {
            if list.is_empty() {
                vec![value]
            } else {
                list.to_vec()
            }
        };
        let radii = or_base(&self.spectral_radius, base.spectral_radius());
        let leaks = or_base(&self.leak_rate, base.leak_rate());
        let scalings = or_base(&self.input_scaling, base.input_scaling());
        let mut lanes = Vec::with_capacity(radii.len() * leaks.len() * scalings.len());
        for &spectral_radius in &radii {
            for &leak_rate in &leaks {
                for &input_scaling in &scalings {
                    lanes.push(Lane::new(base, spectral_radius, leak_rate, input_scaling)?);
                }
            }
        }
        Ok(lanes)
    }

    /// The ridge penalties, in the order given (`[readout] ridge` when the list is empty).
    pub fn ridges(&self, readout: &ReadoutConfig) -> Vec<f64> {
        if self.ridge.is_empty() {
            vec![readout.ridge()]
        } else {
            self.ridge.clone()
        }
    }
}

/// An error (field `gpu_matmul`) unless the reservoir `base` can step its products in `math`:
/// f16 operands need a `tanh` reservoir.
pub(super) fn check_gpu_matmul(math: GemmMath, base: &ReservoirConfig) -> Result<(), ConfigError> {
    if math == GemmMath::F16 && base.activation() != Activation::Tanh {
        return Err(ConfigError::new(
            "gpu_matmul",
            "f16 operands need activation = \"tanh\" (a linear reservoir's states can leave \
             f16's range); use f32 or tf32",
            math,
        ));
    }
    Ok(())
}
