//! A serialisable choice of encoder and its options, for configuration files.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use super::latency::latency_rows;
use super::poisson::poisson_rows;
use super::population::population_rows;
use super::rate::rate_rows;
use super::{check, check_finite_2d, check_steps, delta};
use super::{DeltaOptions, LatencyOptions, PopulationOptions, RateOptions};
use super::{DeltaParams, LatencyParams, PopulationParams, RateParams};
use crate::config::checked_conversions;
use crate::error::{ConfigError, Result};

fn one() -> usize {
    1
}
fn one_f64() -> f64 {
    1.0
}
fn latency_threshold() -> f64 {
    LatencyOptions::default().threshold()
}
fn delta_threshold() -> f64 {
    DeltaOptions::default().threshold()
}
fn ten() -> usize {
    10
}
fn hundred() -> f64 {
    100.0
}

/// An encoder named in a config, unchecked, e.g. TOML `kind = "latency"`, `steps = 20`,
/// `normalize = true`. Unknown keys are rejected; omitted keys take the defaults shown. Every
/// variant except `delta` holds each input row for `steps` output steps (see
/// [`Encoder::encode_sequence`]). [`EncoderParams::check`] makes the [`Encoder`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EncoderParams {
    /// [`rate`](super::rate): `steps` (1), `gain` (1), `offset` (0).
    Rate {
        /// Output steps per input row, ≥ 1.
        #[serde(default = "one")]
        steps: usize,
        /// As [`RateParams::gain`].
        #[serde(default = "one_f64")]
        gain: f64,
        /// As [`RateParams::offset`].
        #[serde(default)]
        offset: f64,
    },
    /// [`latency`](super::latency): `steps` (1), `threshold` (0.01), `tau` (1), `linear`,
    /// `normalize`, `clip` (false).
    Latency {
        /// Output steps per input row, ≥ 1.
        #[serde(default = "one")]
        steps: usize,
        /// As [`LatencyParams::threshold`].
        #[serde(default = "latency_threshold")]
        threshold: f64,
        /// As [`LatencyParams::tau`].
        #[serde(default = "one_f64")]
        tau: f64,
        /// As [`LatencyParams::linear`].
        #[serde(default)]
        linear: bool,
        /// As [`LatencyParams::normalize`] (per input row).
        #[serde(default)]
        normalize: bool,
        /// As [`LatencyParams::clip`].
        #[serde(default)]
        clip: bool,
    },
    /// [`delta`](super::delta) over the whole sequence: `threshold` (0.1), `padding`,
    /// `off_spike` (false).
    Delta {
        /// As [`DeltaParams::threshold`].
        #[serde(default = "delta_threshold")]
        threshold: f64,
        /// As [`DeltaParams::padding`].
        #[serde(default)]
        padding: bool,
        /// As [`DeltaParams::off_spike`].
        #[serde(default)]
        off_spike: bool,
    },
    /// [`population`](super::population): `neurons_per_feature` (10), `min` (0), `max` (1),
    /// `sigma` (centre spacing), `steps` (1), `max_probability` (1).
    Population {
        /// As [`PopulationParams::neurons_per_feature`].
        #[serde(default = "ten")]
        neurons_per_feature: usize,
        /// As [`PopulationParams::min`].
        #[serde(default)]
        min: f64,
        /// As [`PopulationParams::max`].
        #[serde(default = "one_f64")]
        max: f64,
        /// As [`PopulationParams::sigma`].
        #[serde(default)]
        sigma: Option<f64>,
        /// As [`PopulationParams::steps`].
        #[serde(default = "one")]
        steps: usize,
        /// As [`PopulationParams::max_probability`].
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

impl EncoderParams {
    /// The checked encoder; the error names the field (unprefixed, e.g. `threshold`; use
    /// [`ConfigError::prefixed`] to add the table name).
    pub fn check(self) -> Result<Encoder, ConfigError> {
        let kind = match self {
            Self::Rate {
                steps,
                gain,
                offset,
            } => {
                check_steps(steps)?;
                let options = RateParams::new().gain(gain).offset(offset).check()?;
                Kind::Rate { steps, options }
            }
            Self::Latency {
                steps,
                threshold,
                tau,
                linear,
                normalize,
                clip,
            } => {
                check_steps(steps)?;
                let options = LatencyParams::new()
                    .threshold(threshold)
                    .tau(tau)
                    .linear(linear)
                    .normalize(normalize)
                    .clip(clip)
                    .check()?;
                Kind::Latency { steps, options }
            }
            Self::Delta {
                threshold,
                padding,
                off_spike,
            } => Kind::Delta(
                DeltaParams::new()
                    .threshold(threshold)
                    .padding(padding)
                    .off_spike(off_spike)
                    .check()?,
            ),
            Self::Population {
                neurons_per_feature,
                min,
                max,
                sigma,
                steps,
                max_probability,
            } => Kind::Population(
                PopulationParams::new()
                    .neurons_per_feature(neurons_per_feature)
                    .min(min)
                    .max(max)
                    .sigma(sigma)
                    .steps(steps)
                    .max_probability(max_probability)
                    .check()?,
            ),
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
                check_steps(steps)?;
                Kind::Poisson {
                    max_rate_hz: r,
                    dt_ms,
                    steps,
                }
            }
        };
        Ok(Encoder { params: self, kind })
    }
}

/// A checked encoder (from [`EncoderParams::check`]): serialises as its parameters and
/// deserialises through `check()`, so encoding never checks the options again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "EncoderParams", into = "EncoderParams")]
pub struct Encoder {
    params: EncoderParams,
    kind: Kind,
}

/// An encoder's checked options, as the encoding functions take them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Rate {
        steps: usize,
        options: RateOptions,
    },
    Latency {
        steps: usize,
        options: LatencyOptions,
    },
    Delta(DeltaOptions),
    Population(PopulationOptions),
    Poisson {
        max_rate_hz: f64,
        dt_ms: f64,
        steps: usize,
    },
}

checked_conversions!(Encoder, EncoderParams);

impl Encoder {
    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> EncoderParams {
        self.params
    }

    /// Output rows per input row: `steps` (as configured), 1 for `delta`.
    pub fn steps_per_row(&self) -> usize {
        match self.kind {
            Kind::Rate { steps, .. }
            | Kind::Latency { steps, .. }
            | Kind::Poisson { steps, .. } => steps,
            Kind::Population(options) => options.steps(),
            Kind::Delta(_) => 1,
        }
    }

    /// Output channels for `input_channels` features: `input_channels · neurons_per_feature`
    /// for `population`, `input_channels` otherwise.
    pub fn output_channels(&self, input_channels: usize) -> usize {
        match self.kind {
            Kind::Population(options) => input_channels * options.neurons_per_feature(),
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
    /// Non-finite (or, for `poisson`, negative) inputs, naming `[t, i]`.
    pub fn encode_sequence(&self, x: ArrayView2<f64>, seed: u64) -> Result<Array2<f64>> {
        check_finite_2d("encoder", x)?;
        match self.kind {
            Kind::Rate { steps, options } => rate_rows(x, steps, options, seed, "rate encoder"),
            Kind::Latency { steps, options } => latency_rows(x, steps, options),
            Kind::Delta(options) => delta(x, options),
            Kind::Population(options) => population_rows(x, options.steps(), options, seed),
            Kind::Poisson {
                max_rate_hz,
                dt_ms,
                steps,
            } => poisson_rows(x, max_rate_hz, dt_ms, steps, seed),
        }
    }
}
