//! Configuration of the LIF reservoir: a serde struct loadable from TOML, checked by `validate()`.

use serde::{Deserialize, Serialize};

use crate::config::{check, check_dimensions};
use crate::error::ConfigError;

/// Largest `count_window_steps`: the window keeps one spike list per step.
pub const MAX_COUNT_WINDOW: usize = 1 << 20;

/// What the reservoir reports as its state, one value per neuron and step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LifFeatures {
    /// The exponentially filtered spike train r ← r·α_tr + s (units: spikes; a neuron firing
    /// at rate ν has r ≈ ν·τ_tr). Smooth, so a linear readout fits it well.
    #[default]
    Trace,
    /// The membrane potential v.
    Membrane,
    /// The number of spikes in the last `count_window_steps` steps (this one included).
    Counts,
}

/// Where the input term W_in·u(t) enters the dynamics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LifInputMode {
    /// A current for this step only: I = I_syn + W_in·u(t) + bias. For analogue inputs.
    #[default]
    Current,
    /// Input spikes through the synapse: I_syn += W_in·u(t), which then decays with τ_syn,
    /// like a recurrent spike. A count of 1 then has the same effect whatever `dt_ms` is
    /// (in `current` mode its charge is w·dt), so this is the mode for spike patterns.
    Synaptic,
}

/// A current-based leaky integrate-and-fire reservoir (see [`crate::lif`] for the dynamics).
///
/// Every field has a default (see [`LifConfig::default`]); construct with struct-update syntax
/// and call [`LifConfig::validate`] (every constructor in this module does). Times are in ms,
/// potentials and currents in arbitrary units with R·I a potential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LifConfig {
    /// Number of neurons N. Default 1000.
    pub size: usize,
    /// Number of input channels K. Default 1.
    pub input_size: usize,
    /// Time step in ms; one input row per step. Default 0.1: the integration is exact for a
    /// current held constant over a step, so dt only quantises spike times to the step grid
    /// (an inter-spike interval of T is late by less than dt, i.e. ≤ 1 % for T ≥ 10 ms).
    pub dt_ms: f64,
    /// Membrane time constant τ_m > 0 in ms. Default 20.
    pub tau_m_ms: f64,
    /// Synaptic time constant τ_syn > 0 in ms. Default 5.
    pub tau_syn_ms: f64,
    /// Firing threshold θ; must exceed `v_reset`. Default 1.
    pub threshold: f64,
    /// Resting potential. Default 0.
    pub v_rest: f64,
    /// Potential after a spike, held during the refractory period; below `threshold`.
    /// Default 0.
    pub v_reset: f64,
    /// Absolute refractory period t_ref ≥ 0 in ms, held for `round(t_ref/dt)` steps.
    /// Default 2.
    pub refractory_ms: f64,
    /// Membrane resistance R > 0. Default 1.
    pub resistance: f64,
    /// Fraction f_E in [0, 1] of excitatory neurons: the first `round(f_E·N)` neurons are
    /// excitatory, the rest inhibitory. Default 0.8.
    pub excitatory_fraction: f64,
    /// Density of W in (0, 1]: each neuron receives exactly `round(p·(N−1))` (≥ 1 when N > 1)
    /// synapses from distinct other neurons (no self-connections). Default 0.1.
    pub connection_prob: f64,
    /// Spectral radius ρ(W) ≥ 0 that W is scaled to (0: no recurrent synapses). Exact to 10^-6
    /// where the estimate converges within its budget of products (e.g. 10^7 synapses at
    /// N = 10^4), about 1 % above where it does not (10^8 synapses at N = 10^5): see
    /// [`crate::lif::spectral_products`]. A spike of
    /// neuron j adds `W[i, j]` to `I_syn[i]`, which then decays with τ_syn, so W is a current
    /// per spike, and ρ(W) ≈ the RMS row norm of W (circular law) sets the size of the recurrent
    /// current fluctuations. It is not a stability bound: the linearised rate dynamics have
    /// gain ≈ φ'·R·τ_syn·W, with φ' the slope of the rate-vs-current curve. As ρ fixes the
    /// row norm, the regime hardly depends on N and p. Default 2: with `bias_current` 0.9 the
    /// network follows its input and falls silent within ~0.5 s without it (measured at
    /// N = 10³…10⁴, p = 0.01…0.1); from 2.5 on, N = 10⁴ at p = 0.01 sustains its own
    /// activity (~10 Hz).
    pub spectral_radius: f64,
    /// Scale s ≥ 0 of the input weights, drawn uniform on (−s, s). Default 1.
    pub input_scaling: f64,
    /// Density of W_in in (0, 1]: each input channel reaches exactly `round(p·N)` (≥ 1)
    /// neurons. Default 0.1.
    pub input_connectivity: f64,
    /// Where the input enters (`current` or `synaptic`). Default `current`.
    pub input_mode: LifInputMode,
    /// Constant current into every neuron. Default 0.9: R·bias = 0.9θ holds every neuron just
    /// below threshold, so the network is silent without input, and input plus the balanced
    /// recurrent fluctuations make most neurons fire irregularly (the default net under a
    /// random input in [0, 1]: ~5 Hz, > 75 % of neurons active, ISI CV ≈ 0.4). With bias 0.85
    /// activity stays within the directly driven neurons; with 0.95 it sustains itself.
    pub bias_current: f64,
    /// Time constant τ_tr > 0 in ms of the spike traces. Default 20.
    pub trace_tau_ms: f64,
    /// The state the reservoir reports. Default `trace`.
    pub features: LifFeatures,
    /// Window (steps, in 1..=2^20) of the `counts` features. Default 200 (20 ms at dt 0.1).
    pub count_window_steps: usize,
    /// Seed of every random draw. Default 42.
    pub seed: u64,
}

impl Default for LifConfig {
    fn default() -> Self {
        Self {
            size: 1000,
            input_size: 1,
            dt_ms: 0.1,
            tau_m_ms: 20.0,
            tau_syn_ms: 5.0,
            threshold: 1.0,
            v_rest: 0.0,
            v_reset: 0.0,
            refractory_ms: 2.0,
            resistance: 1.0,
            excitatory_fraction: 0.8,
            connection_prob: 0.1,
            spectral_radius: 2.0,
            input_scaling: 1.0,
            input_connectivity: 0.1,
            input_mode: LifInputMode::Current,
            bias_current: 0.9,
            trace_tau_ms: 20.0,
            features: LifFeatures::Trace,
            count_window_steps: 200,
            seed: 42,
        }
    }
}

/// Finite, and still finite once rounded to `f32` (the state's precision).
fn finite(value: f64) -> bool {
    value.is_finite() && (value as f32).is_finite()
}

fn check_positive(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        finite(value) && value > 0.0,
        field,
        "must be finite and > 0",
        value,
    )
}

fn check_non_negative(field: &str, value: f64) -> Result<(), ConfigError> {
    check(
        finite(value) && value >= 0.0,
        field,
        "must be finite and >= 0",
        value,
    )
}

fn check_finite(field: &str, value: f64) -> Result<(), ConfigError> {
    check(finite(value), field, "must be finite", value)
}

impl LifConfig {
    /// Checks every field; the error names the first field that breaks its rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_dimensions(self.size, self.input_size)?;
        check_positive("dt_ms", self.dt_ms)?;
        check_positive("tau_m_ms", self.tau_m_ms)?;
        check_positive("tau_syn_ms", self.tau_syn_ms)?;
        check_finite("threshold", self.threshold)?;
        check_finite("v_rest", self.v_rest)?;
        check_finite("v_reset", self.v_reset)?;
        check(
            self.v_reset < self.threshold,
            "v_reset",
            &format!("must be < threshold ({})", self.threshold),
            self.v_reset,
        )?;
        check_non_negative("refractory_ms", self.refractory_ms)?;
        check(
            self.refractory_ms / self.dt_ms < f64::from(u32::MAX),
            "refractory_ms",
            "must be fewer than 2^32 steps of dt_ms",
            self.refractory_ms,
        )?;
        check_positive("resistance", self.resistance)?;
        check(
            (0.0..=1.0).contains(&self.excitatory_fraction),
            "excitatory_fraction",
            "must be in [0, 1]",
            self.excitatory_fraction,
        )?;
        check(
            self.connection_prob > 0.0 && self.connection_prob <= 1.0,
            "connection_prob",
            "must be in (0, 1]",
            self.connection_prob,
        )?;
        check_non_negative("spectral_radius", self.spectral_radius)?;
        check_non_negative("input_scaling", self.input_scaling)?;
        check(
            self.input_connectivity > 0.0 && self.input_connectivity <= 1.0,
            "input_connectivity",
            "must be in (0, 1]",
            self.input_connectivity,
        )?;
        check_finite("bias_current", self.bias_current)?;
        check_positive("trace_tau_ms", self.trace_tau_ms)?;
        check(
            (1..=MAX_COUNT_WINDOW).contains(&self.count_window_steps),
            "count_window_steps",
            &format!("must be in 1..={MAX_COUNT_WINDOW}"),
            self.count_window_steps,
        )?;
        Ok(())
    }

    /// Steps of the refractory period: `round(refractory_ms / dt_ms)`.
    pub fn refractory_steps(&self) -> u32 {
        (self.refractory_ms / self.dt_ms).round() as u32
    }
}
