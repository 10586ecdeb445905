//! The `f32` constants of the LIF update, computed once per network.

use super::config::{LifConfig, LifIntegration};

/// The `f32` constants of the update, precomputed once in `f64` and rounded; a port that
/// must match bit for bit should take these values rather than recompute them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LifConstants {
    /// α_m = exp(−dt/τ_m) (Euler: 1 − dt/τ_m).
    pub alpha_m: f32,
    /// α_syn = exp(−dt/τ_syn) (Euler: 1 − dt/τ_syn).
    pub alpha_syn: f32,
    /// α_tr = exp(−dt/τ_tr) (Euler: 1 − dt/τ_tr).
    pub alpha_trace: f32,
    /// g_m = R·(1 − α_m) (Euler: R·dt/τ_m), computed in `f64` from the rounded α_m, so that
    /// v = v_rest + R·I is the fixed point of the rounded update for a constant I.
    pub drive_gain: f32,
    /// Resting potential.
    pub v_rest: f32,
    /// Reset potential.
    pub v_reset: f32,
    /// Threshold θ.
    pub threshold: f32,
    /// Constant current into every neuron.
    pub bias: f32,
    /// Steps held at `v_reset` after a spike: `round(refractory_ms / dt_ms)`.
    pub refractory_steps: u32,
}

impl LifConstants {
    /// The constants of `config` (assumed valid).
    pub fn new(config: &LifConfig) -> Self {
        let decay = |tau: f64| match config.integration() {
            LifIntegration::Exact => (-config.dt_ms() / tau).exp() as f32,
            LifIntegration::Euler => (1.0 - config.dt_ms() / tau) as f32,
        };
        let alpha_m = decay(config.tau_m_ms());
        Self {
            alpha_m,
            alpha_syn: decay(config.tau_syn_ms()),
            alpha_trace: decay(config.trace_tau_ms()),
            drive_gain: (config.resistance() * (1.0 - f64::from(alpha_m))) as f32,
            v_rest: config.v_rest() as f32,
            v_reset: config.v_reset() as f32,
            threshold: config.threshold() as f32,
            bias: config.bias_current() as f32,
            refractory_steps: config.refractory_steps(),
        }
    }
}
