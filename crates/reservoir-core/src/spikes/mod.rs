//! Spikes and spike patterns: the data the neuromorphic side of the engine consumes and emits.

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::error::{ReservoirError, Result};

/// Fraction of a bin by which a spike time may fall short of its bin's start and still count
/// in it (absorbs the rounding of `t·dt / dt`).
pub const BIN_TOLERANCE: f64 = 1e-9;

/// One spike: which neuron (or input channel), when, and how strong.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    /// Index of the neuron or input channel, `< n_neurons` of its pattern.
    pub neuron_id: u32,
    /// Time in milliseconds from the start of the pattern, in `[0, duration_ms)`.
    pub time_ms: f64,
    /// Weight of the spike (1 for an ordinary spike, −1 for an off-spike of a delta code).
    pub amplitude: f64,
}

/// A validated set of spikes over `n_neurons` channels and `duration_ms`, sorted by time
/// (ties by neuron id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PatternParts")]
pub struct SpikePattern {
    spikes: Vec<Spike>,
    n_neurons: usize,
    duration_ms: f64,
}

#[derive(Deserialize)]
struct PatternParts {
    spikes: Vec<Spike>,
    n_neurons: usize,
    duration_ms: f64,
}

impl TryFrom<PatternParts> for SpikePattern {
    type Error = ReservoirError;
    fn try_from(p: PatternParts) -> Result<Self> {
        Self::new(p.spikes, p.n_neurons, p.duration_ms)
    }
}

impl SpikePattern {
    /// Validates and sorts `spikes`.
    ///
    /// # Errors
    /// A non-positive or non-finite duration, or a spike (named by its index in `spikes`) whose
    /// neuron id is `>= n_neurons`, whose time is outside `[0, duration_ms)` or whose amplitude
    /// is not finite.
    pub fn new(mut spikes: Vec<Spike>, n_neurons: usize, duration_ms: f64) -> Result<Self> {
        const CTX: &str = "spike pattern";
        if !(duration_ms.is_finite() && duration_ms > 0.0) {
            return Err(ReservoirError::invalid(
                CTX,
                format!("duration_ms must be finite and > 0, got {duration_ms}"),
            ));
        }
        for (i, s) in spikes.iter().enumerate() {
            if s.neuron_id as usize >= n_neurons {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!(
                        "spike {i}: neuron_id {} is not below n_neurons {n_neurons}",
                        s.neuron_id
                    ),
                ));
            }
            if !(s.time_ms >= 0.0 && s.time_ms < duration_ms) {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!(
                        "spike {i}: time_ms {} is outside [0, {duration_ms})",
                        s.time_ms
                    ),
                ));
            }
            if !s.amplitude.is_finite() {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!("spike {i}: amplitude is not finite"),
                ));
            }
        }
        spikes.sort_by(|a, b| {
            a.time_ms
                .total_cmp(&b.time_ms)
                .then(a.neuron_id.cmp(&b.neuron_id))
        });
        Ok(Self {
            spikes,
            n_neurons,
            duration_ms,
        })
    }

    /// The spikes, sorted by time.
    pub fn spikes(&self) -> &[Spike] {
        &self.spikes
    }

    /// Number of channels the pattern spans.
    pub fn n_neurons(&self) -> usize {
        self.n_neurons
    }

    /// Length of the pattern in milliseconds.
    pub fn duration_ms(&self) -> f64 {
        self.duration_ms
    }

    /// Number of time bins of width `dt_ms` that cover the pattern: `ceil(duration / dt)`.
    pub fn n_bins(&self, dt_ms: f64) -> Result<usize> {
        if !(dt_ms.is_finite() && dt_ms > 0.0) {
            return Err(ReservoirError::invalid(
                "spike binning",
                format!("dt_ms must be finite and > 0, got {dt_ms}"),
            ));
        }
        Ok((self.duration_ms / dt_ms).ceil() as usize)
    }

    /// The pattern as an input matrix (bins × n_neurons): entry (b, n) is the sum of the
    /// amplitudes of neuron n's spikes with `time_ms` in `[b·dt, (b + 1)·dt)`. Counts are kept,
    /// not normalised, so two spikes in one bin give 2.
    pub fn to_input_matrix(&self, dt_ms: f64) -> Result<Array2<f64>> {
        let bins = self.n_bins(dt_ms)?;
        let mut matrix = Array2::zeros((bins, self.n_neurons));
        for s in &self.spikes {
            // A spike at t·dt lands in bin t even when t·dt/dt rounds to just below t.
            let bin = ((s.time_ms / dt_ms + BIN_TOLERANCE) as usize).min(bins - 1);
            matrix[(bin, s.neuron_id as usize)] += s.amplitude;
        }
        Ok(matrix)
    }

    /// The pattern of a spike-train matrix (steps × channels, as the encoders produce): every
    /// non-zero entry (step t, channel n) becomes a spike at `t·dt_ms` with that amplitude.
    pub fn from_matrix(trains: &Array2<f64>, dt_ms: f64) -> Result<Self> {
        if !(dt_ms.is_finite() && dt_ms > 0.0) {
            return Err(ReservoirError::invalid(
                "spike trains",
                format!("dt_ms must be finite and > 0, got {dt_ms}"),
            ));
        }
        let spikes = trains
            .indexed_iter()
            .filter(|(_, v)| **v != 0.0)
            .map(|((t, n), &amplitude)| Spike {
                neuron_id: n as u32,
                time_ms: t as f64 * dt_ms,
                amplitude,
            })
            .collect();
        Self::new(
            spikes,
            trains.ncols(),
            (trains.nrows().max(1)) as f64 * dt_ms,
        )
    }
}
