//! A serialisable choice of encoder and its options, for configuration files.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use super::latency::latency_rows;
use super::poisson::poisson_rows;
use super::population::population_rows;
use super::rate::rate_rows;
use super::{check, check_finite_2d, check_steps, delta};
use super::{DeltaOptions, LatencyOptions, PopulationOptions, RateOptions};
use crate::error::{ConfigError, Result};

fn one() -> usize {
    1
}
fn one_f64() -> f64 {
    1.0
}
fn latency_threshold() -> f64 {
    LatencyOptions::default().threshold
}
fn delta_threshold() -> f64 {
    DeltaOptions::default().threshold
}
fn ten() -> usize {
    10
}
fn hundred() -> f64 {
    100.0
}

/// An encoder named in a config, e.g. TOML `kind = "latency"`, `steps = 20`, `normalize = true`.
/// Unknown keys are rejected; omitted keys take the defaults shown. Every variant except
/// `delta` holds each input row for `steps` output steps (see [`Encoder::encode_sequence`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Encoder {
    /// [`rate`](super::rate): `steps` (1), `gain` (1), `offset` (0).
    Rate {
        /// Output steps per input row, ≥ 1.
        #[serde(default = "one")]
        steps: usize,
        /// As [`RateOptions::gain`].
        #[serde(default = "one_f64")]
        gain: f64,
        /// As [`RateOptions::offset`].
        #[serde(default)]
        offset: f64,
    },
    /// [`latency`](super::latency): `steps` (1), `threshold` (0.01), `tau` (1), `linear`,
    /// `normalize`, `clip` (false).
    Latency {
        /// Output steps per input row, ≥ 1.
        #[serde(default = "one")]
        steps: usize,
        /// As [`LatencyOptions::threshold`].
        #[serde(default = "latency_threshold")]
        threshold: f64,
        /// As [`LatencyOptions::tau`].
        #[serde(default = "one_f64")]
        tau: f64,
        /// As [`LatencyOptions::linear`].
        #[serde(default)]
        linear: bool,
        /// As [`LatencyOptions::normalize`] (per input row).
        #[serde(default)]
        normalize: bool,
        /// As [`LatencyOptions::clip`].
        #[serde(default)]
        clip: bool,
    },
    /// [`delta`](super::delta) over the whole sequence: `threshold` (0.1), `padding`,
    /// `off_spike` (false).
    Delta {
        /// As [`DeltaOptions::threshold`].
        #[serde(default = "delta_threshold")]
        threshold: f64,
        /// As [`DeltaOptions::padding`].
        #[serde(default)]
        padding: bool,
        /// As [`DeltaOptions::off_spike`].
        #[serde(default)]
        off_spike: bool,
    },
    /// [`population`](super::population): `neurons_per_feature` (10), `min` (0), `max` (1),
    /// `sigma` (centre spacing), `steps` (1), `max_probability` (1).
    Population {
        /// As [`PopulationOptions::neurons_per_feature`].
        #[serde(default = "ten")]
        neurons_per_feature: usize,
        /// As [`PopulationOptions::min`].
        #[serde(default)]
        min: f64,
        /// As [`PopulationOptions::max`].
        #[serde(default = "one_f64")]
        max: f64,
        /// As [`PopulationOptions::sigma`].
        #[serde(default)]
        sigma: Option<f64>,
        /// As [`PopulationOptions::steps`].
        #[serde(default = "one")]
        steps: usize,
        /// As [`PopulationOptions::max_probability`].
        #[serde(default = "one_f64")]
        max_probability: f64,
    },
    /// [`poisson`](super::poisson) at `x · max_rate_hz` (100) over `steps` (1) bins of `dt_ms`
    /// (1) each; a bin holds its spike count.
    Poisson {
        /// Rate in Hz of intensity 1, finite and ≥ 0.
        #[serde(default = "hundred")]
        max_rate_hz: f64,
        /// Bin width in ms, finite and > 0.
        #[serde(default = "one_f64")]
        dt_ms: f64,
        /// Bins per input row, ≥ 1.
        #[serde(default = "one")]
        steps: usize,
    },
}

impl Encoder {
    /// Checks every option rule; the error names the field (unprefixed, e.g. `threshold`; use
    /// [`ConfigError::prefixed`] to add the table name).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match *self {
            Self::Rate {
                steps,
                gain,
                offset,
            } => {
                check_steps(steps)?;
                RateOptions { gain, offset }.validate()
            }
            Self::Latency { steps, .. } => {
                check_steps(steps)?;
                self.latency_options().validate()
            }
            Self::Delta { .. } => self.delta_options().validate(),
            Self::Population { .. } => self.population_options().validate(),
            Self::Poisson {
                max_rate_hz: r,
                dt_ms,
                steps,
            } => {
                check(
                    r.is_finite() && r >= 0.0,
                    "max_rate_hz",
                    "must be finite and >= 0",
                    r,
                )?;
                check(
                    dt_ms.is_finite() && dt_ms > 0.0,
                    "dt_ms",
                    "must be finite and > 0",
                    dt_ms,
                )?;
                check_steps(steps)
            }
        }
    }

    /// Output channels for `input_channels` features: `input_channels · neurons_per_feature`
    /// for `population`, `input_channels` otherwise.
    pub fn output_channels(&self, input_channels: usize) -> usize {
        match *self {
            Self::Population {
                neurons_per_feature,
                ..
            } => input_channels * neurons_per_feature,
            _ => input_channels,
        }
    }

    /// Encodes a sequence `x` (T × K). `delta` encodes it as one signal (T × K out). Every
    /// other kind holds row `r` for `steps` steps, giving `(T·steps)` × channels with row `r`
    /// in output rows `r·steps .. (r + 1)·steps`:
    /// - `rate` / `population`: global step `t = r·steps + s` picks the counters, as in
    ///   [`rate_sequence`](super::rate_sequence) (which `rate` with `steps = 1` equals);
    /// - `latency`: [`latency`](super::latency) of each row (normalised per row);
    /// - `poisson`: one [`poisson_rng`](super::poisson_rng) for the whole call, rows in
    ///   order, a spike at time τ of row `r` counted in bin `min(floor(τ / dt_ms), steps − 1)`;
    ///   `x` must be ≥ 0.
    ///
    /// # Errors
    /// Bad options (as [`validate`](Self::validate)); non-finite (or, for `poisson`,
    /// negative) inputs, naming `[t, i]`.
    pub fn encode_sequence(&self, x: ArrayView2<f64>, seed: u64) -> Result<Array2<f64>> {
        self.validate()?;
        check_finite_2d("encoder", x)?;
        match *self {
            Self::Rate {
                steps,
                gain,
                offset,
            } => rate_rows(x, steps, RateOptions { gain, offset }, seed, "rate encoder"),
            Self::Latency { steps, .. } => latency_rows(x, steps, self.latency_options()),
            Self::Delta { .. } => delta(x, self.delta_options()),
            Self::Population { steps, .. } => {
                population_rows(x, steps, self.population_options(), seed)
            }
            Self::Poisson {
                max_rate_hz,
                dt_ms,
                steps,
            } => poisson_rows(x, max_rate_hz, dt_ms, steps, seed),
        }
    }

    fn latency_options(&self) -> LatencyOptions {
        match *self {
            Self::Latency {
                threshold,
                tau,
                linear,
                normalize,
                clip,
                ..
            } => LatencyOptions {
                threshold,
                tau,
                linear,
                normalize,
                clip,
            },
            _ => LatencyOptions::default(),
        }
    }

    fn delta_options(&self) -> DeltaOptions {
        match *self {
            Self::Delta {
                threshold,
                padding,
                off_spike,
            } => DeltaOptions {
                threshold,
                padding,
                off_spike,
            },
            _ => DeltaOptions::default(),
        }
    }

    fn population_options(&self) -> PopulationOptions {
        match *self {
            Self::Population {
                neurons_per_feature,
                min,
                max,
                sigma,
                steps,
                max_probability,
            } => PopulationOptions {
                neurons_per_feature,
                min,
                max,
                sigma,
                steps,
                max_probability,
            },
            _ => PopulationOptions::default(),
        }
    }
}
