//! Configuration of the LIF reservoir: [`LifParams`] (a builder and serde struct, loadable from
//! TOML) whose `check()` gives the [`LifConfig`] every LIF constructor takes.

use serde::{Deserialize, Serialize};

use crate::config::{check, check_dimensions, check_scale, checked_conversions};
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

/// How a step integrates the membrane and the synapse over `dt_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LifIntegration {
    /// The exact solution for a current held over the step: decays exp(−dt/τ), drive
    /// R·(1 − α_m).
    #[default]
    Exact,
    /// Forward Euler, as the simulators that import NIR step it (Norse, snnTorch): decays
    /// 1 − dt/τ, drive R·dt/τ_m. Every τ must then be at least `dt_ms` (τ_syn = dt: no
    /// synaptic filter, the input current of one step only, as NIR's LIF neuron).
    Euler,
}

/// Unchecked parameters of a current-based leaky integrate-and-fire reservoir (see
/// [`crate::lif`] for the dynamics). Times are in ms, potentials and currents in arbitrary
/// units with R·I a potential. Each default is documented on its setter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LifParams {
    size: usize,
    input_size: usize,
    dt_ms: f64,
    tau_m_ms: f64,
    tau_syn_ms: f64,
    threshold: f64,
    v_rest: f64,
    v_reset: f64,
    refractory_ms: f64,
    resistance: f64,
    excitatory_fraction: f64,
    connection_prob: f64,
    spectral_radius: f64,
    input_scaling: f64,
    input_connectivity: f64,
    input_mode: LifInputMode,
    bias_current: f64,
    trace_tau_ms: f64,
    integration: LifIntegration,
    features: LifFeatures,
    count_window_steps: usize,
    seed: u64,
}

impl Default for LifParams {
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
            integration: LifIntegration::Exact,
            features: LifFeatures::Trace,
            count_window_steps: 200,
            seed: 42,
        }
    }
}

impl LifParams {
    /// The defaults (each documented on its setter).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of neurons N. Default 1000.
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }

    /// Number of input channels K. Default 1.
    pub fn input_size(mut self, input_size: usize) -> Self {
        self.input_size = input_size;
        self
    }

    /// Time step in ms; one input row per step. Default 0.1: the integration is exact for a
    /// current held constant over a step, so dt only quantises spike times to the step grid
    /// (an inter-spike interval of T is late by less than dt, i.e. ≤ 1 % for T ≥ 10 ms).
    pub fn dt_ms(mut self, dt_ms: f64) -> Self {
        self.dt_ms = dt_ms;
        self
    }

    /// Membrane time constant τ_m > 0 in ms. Default 20.
    pub fn tau_m_ms(mut self, tau_m_ms: f64) -> Self {
        self.tau_m_ms = tau_m_ms;
        self
    }

    /// Synaptic time constant τ_syn > 0 in ms. Default 5.
    pub fn tau_syn_ms(mut self, tau_syn_ms: f64) -> Self {
        self.tau_syn_ms = tau_syn_ms;
        self
    }

    /// Firing threshold θ; must exceed `v_reset`. Default 1.
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Resting potential. Default 0.
    pub fn v_rest(mut self, v_rest: f64) -> Self {
        self.v_rest = v_rest;
        self
    }

    /// Potential after a spike, held during the refractory period; below `threshold`.
    /// Default 0.
    pub fn v_reset(mut self, v_reset: f64) -> Self {
        self.v_reset = v_reset;
        self
    }

    /// Absolute refractory period t_ref ≥ 0 in ms, held for `round(t_ref/dt)` steps.
    /// Default 2.
    pub fn refractory_ms(mut self, refractory_ms: f64) -> Self {
        self.refractory_ms = refractory_ms;
        self
    }

    /// Membrane resistance R > 0. Default 1.
    pub fn resistance(mut self, resistance: f64) -> Self {
        self.resistance = resistance;
        self
    }

    /// Fraction f_E in [0, 1] of excitatory neurons: the first `round(f_E·N)` neurons are
    /// excitatory, the rest inhibitory. Default 0.8.
    pub fn excitatory_fraction(mut self, excitatory_fraction: f64) -> Self {
        self.excitatory_fraction = excitatory_fraction;
        self
    }

    /// Density of W in (0, 1]: each neuron receives exactly `round(p·(N−1))` (≥ 1 when N > 1)
    /// synapses from distinct other neurons (no self-connections). Default 0.1.
    pub fn connection_prob(mut self, connection_prob: f64) -> Self {
        self.connection_prob = connection_prob;
        self
    }

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
    pub fn spectral_radius(mut self, spectral_radius: f64) -> Self {
        self.spectral_radius = spectral_radius;
        self
    }

    /// Scale s in [0, 1e6] of the input weights, drawn uniform on (−s, s). Default 1.
    pub fn input_scaling(mut self, input_scaling: f64) -> Self {
        self.input_scaling = input_scaling;
        self
    }

    /// Density of W_in in (0, 1]: each input channel reaches exactly `round(p·N)` (≥ 1)
    /// neurons. Default 0.1.
    pub fn input_connectivity(mut self, input_connectivity: f64) -> Self {
        self.input_connectivity = input_connectivity;
        self
    }

    /// Where the input enters (`current` or `synaptic`). Default `current`.
    pub fn input_mode(mut self, input_mode: LifInputMode) -> Self {
        self.input_mode = input_mode;
        self
    }

    /// Constant current into every neuron. Default 0.9: R·bias = 0.9θ holds every neuron just
    /// below threshold, so the network is silent without input, and input plus the balanced
    /// recurrent fluctuations make most neurons fire irregularly (the default net under a
    /// random input in [0, 1]: ~5 Hz, > 75 % of neurons active, ISI CV ≈ 0.4). With bias 0.85
    /// activity stays within the directly driven neurons; with 0.95 it sustains itself.
    pub fn bias_current(mut self, bias_current: f64) -> Self {
        self.bias_current = bias_current;
        self
    }

    /// Time constant τ_tr > 0 in ms of the spike traces. Default 20.
    pub fn trace_tau_ms(mut self, trace_tau_ms: f64) -> Self {
        self.trace_tau_ms = trace_tau_ms;
        self
    }

    /// How a step integrates the dynamics (`exact` or `euler`). Default `exact`.
    pub fn integration(mut self, integration: LifIntegration) -> Self {
        self.integration = integration;
        self
    }

    /// The state the reservoir reports. Default `trace`.
    pub fn features(mut self, features: LifFeatures) -> Self {
        self.features = features;
        self
    }

    /// Window (steps, in 1..=2^20) of the `counts` features. Default 200 (20 ms at dt 0.1).
    pub fn count_window_steps(mut self, count_window_steps: usize) -> Self {
        self.count_window_steps = count_window_steps;
        self
    }

    /// Seed of every random draw. Default 42.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The checked config; the error names the first field that breaks its rule.
    pub fn check(self) -> Result<LifConfig, ConfigError> {
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
        check_scale("spectral_radius", self.spectral_radius)?;
        check_scale("input_scaling", self.input_scaling)?;
        check(
            self.input_connectivity > 0.0 && self.input_connectivity <= 1.0,
            "input_connectivity",
            "must be in (0, 1]",
            self.input_connectivity,
        )?;
        check_finite("bias_current", self.bias_current)?;
        check_positive("trace_tau_ms", self.trace_tau_ms)?;
        if self.integration == LifIntegration::Euler {
            for (field, tau) in [
                ("tau_m_ms", self.tau_m_ms),
                ("tau_syn_ms", self.tau_syn_ms),
                ("trace_tau_ms", self.trace_tau_ms),
            ] {
                check(
                    tau >= self.dt_ms,
                    field,
                    &format!(
                        "must be at least dt_ms ({}) with integration = \"euler\", whose \
                         decay 1 − dt/τ is then in [0, 1)",
                        self.dt_ms
                    ),
                    tau,
                )?;
            }
        }
        check(
            (1..=MAX_COUNT_WINDOW).contains(&self.count_window_steps),
            "count_window_steps",
            &format!("must be in 1..={MAX_COUNT_WINDOW}"),
            self.count_window_steps,
        )?;
        Ok(LifConfig { params: self })
    }
}

/// A checked LIF configuration (from [`LifParams::check`]). Serialises as its parameters and
/// deserialises through `check()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LifParams", into = "LifParams")]
pub struct LifConfig {
    params: LifParams,
}

impl Default for LifConfig {
    /// The default parameters, which are valid.
    fn default() -> Self {
        Self {
            params: LifParams::default(),
        }
    }
}

checked_conversions!(LifConfig, LifParams);

impl LifConfig {
    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> LifParams {
        self.params.clone()
    }

    /// Number of neurons N.
    pub fn size(&self) -> usize {
        self.params.size
    }

    /// Number of input channels K.
    pub fn input_size(&self) -> usize {
        self.params.input_size
    }

    /// Time step in ms; one input row per step.
    pub fn dt_ms(&self) -> f64 {
        self.params.dt_ms
    }

    /// Membrane time constant τ_m > 0 in ms.
    pub fn tau_m_ms(&self) -> f64 {
        self.params.tau_m_ms
    }

    /// Synaptic time constant τ_syn > 0 in ms.
    pub fn tau_syn_ms(&self) -> f64 {
        self.params.tau_syn_ms
    }

    /// Firing threshold θ; must exceed `v_reset`.
    pub fn threshold(&self) -> f64 {
        self.params.threshold
    }

    /// Resting potential.
    pub fn v_rest(&self) -> f64 {
        self.params.v_rest
    }

    /// Potential after a spike, held during the refractory period; below `threshold`.
    pub fn v_reset(&self) -> f64 {
        self.params.v_reset
    }

    /// Absolute refractory period t_ref ≥ 0 in ms, held for `round(t_ref/dt)` steps.
    pub fn refractory_ms(&self) -> f64 {
        self.params.refractory_ms
    }

    /// Membrane resistance R > 0.
    pub fn resistance(&self) -> f64 {
        self.params.resistance
    }

    /// Fraction f_E in [0, 1] of excitatory neurons: the first `round(f_E·N)` neurons are excitatory, the rest inhibitory.
    pub fn excitatory_fraction(&self) -> f64 {
        self.params.excitatory_fraction
    }

    /// Density of W in (0, 1]: each neuron receives exactly `round(p·(N−1))` (≥ 1 when N > 1) synapses from distinct other neurons (no self-connections).
    pub fn connection_prob(&self) -> f64 {
        self.params.connection_prob
    }

    /// Spectral radius ρ(W) ≥ 0 that W is scaled to (0: no recurrent synapses).
    pub fn spectral_radius(&self) -> f64 {
        self.params.spectral_radius
    }

    /// Scale s ≥ 0 of the input weights, drawn uniform on (−s, s).
    pub fn input_scaling(&self) -> f64 {
        self.params.input_scaling
    }

    /// Density of W_in in (0, 1]: each input channel reaches exactly `round(p·N)` (≥ 1) neurons.
    pub fn input_connectivity(&self) -> f64 {
        self.params.input_connectivity
    }

    /// Where the input enters (`current` or `synaptic`).
    pub fn input_mode(&self) -> LifInputMode {
        self.params.input_mode
    }

    /// Constant current into every neuron.
    pub fn bias_current(&self) -> f64 {
        self.params.bias_current
    }

    /// Time constant τ_tr > 0 in ms of the spike traces.
    pub fn trace_tau_ms(&self) -> f64 {
        self.params.trace_tau_ms
    }

    /// How a step integrates the dynamics.
    pub fn integration(&self) -> LifIntegration {
        self.params.integration
    }

    /// The state the reservoir reports.
    pub fn features(&self) -> LifFeatures {
        self.params.features
    }

    /// Window (steps, in 1..=2^20) of the `counts` features.
    pub fn count_window_steps(&self) -> usize {
        self.params.count_window_steps
    }

    /// Seed of every random draw.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }

    /// Steps of the refractory period: `round(refractory_ms / dt_ms)`.
    pub fn refractory_steps(&self) -> u32 {
        (self.params.refractory_ms / self.params.dt_ms).round() as u32
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
