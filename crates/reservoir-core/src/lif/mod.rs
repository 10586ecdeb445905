//! A current-based leaky integrate-and-fire (LIF) reservoir with Dale's law and event-driven
//! recurrent propagation.
//!
//! # Model
//! τ_m dv/dt = −(v − v_rest) + R·I(t), I = I_syn + W_in·u(t) + bias; a spike when v ≥ θ, then
//! v = v_reset for the refractory period. τ_syn dI_syn/dt = −I_syn, and a spike of neuron j
//! makes every `I_syn[i]` jump by `W[i, j]` (exponential synapses: a spike delivers a charge
//! W·τ_syn). For constant input with R·I > θ − v_rest (v_rest = v_reset = 0) the
//! inter-spike interval is T = t_ref + τ_m ln(R·I / (R·I − θ)).
//!
//! # The step, exactly
//! State in `f32`: v, I_syn, traces r, refractory counters, spike counts, and the list of
//! neurons that spiked in the previous step. Constants ([`LifConstants`]) are computed once in
//! `f64` and rounded to `f32`: α_m, α_syn, α_tr = exp(−dt/τ) (with `integration = "euler"`,
//! the forward-Euler 1 − dt/τ of the simulators that import NIR); g_m = R·(1 − α_m) from the
//! rounded α_m; n_ref = round(t_ref/dt). W and W_in are the generated `f64` weights rounded
//! to `f32`, and so is the input row u(t). Each step:
//!
//! 1. `I_syn[i] = I_syn[i] * α_syn` for every i; then for every neuron j that spiked in the
//!    previous step, in ascending j, for its targets i in ascending i:
//!    `I_syn[i] = I_syn[i] + W[i, j]` (one rounded add per synapse; summing the same terms
//!    per target in ascending j, as a gather over W's rows does, gives the same bits).
//! 2. `ext[i] = bias`; then for every channel k in ascending order with u_k ≠ 0:
//!    `x[i] = x[i] + W_in[i, k] * u_k`, where x is `ext` (`input_mode = "current"`) or
//!    `I_syn` (`"synaptic"`). (Skipping u_k = 0 changes at most the sign of a zero.)
//! 3. For every i in ascending order: if `refr[i] > 0` then `refr[i] -= 1; v[i] = v_reset`
//!    (no spike); else with `I = I_syn[i] + ext[i]`,
//!    `v' = (v_rest + (v[i] − v_rest) * α_m) + I * g_m` (exact integration of a current
//!    constant over the step); if `v' ≥ θ` the neuron spikes: `v[i] = v_reset`,
//!    `refr[i] = n_ref`; else `v[i] = v'`. Then `r[i] = r[i] * α_tr + s_i`, s_i ∈ {0, 1}.
//! 4. The spike list of this step (ascending) replaces the previous one; the spike counts add
//!    it and drop the list from `count_window_steps` steps ago.
//!
//! A spike at step t thus reaches its targets' currents at step t + 1 (one dt of delay), and
//! after a spike at step s the neuron integrates again from step s + n_ref + 1: for constant
//! input the interval is (n_ref + k)·dt with k = ⌈τ_m ln(R·I / (R·I − θ)) / dt⌉, later than T
//! by less than dt when t_ref is a multiple of dt. Recurrent cost per step is O(N) plus one add per synaptic event: only
//! the neurons that spiked touch their outgoing synapses (W stored transposed, per source).
//!
//! # Features
//! `trace` (default): r, the spike train filtered with τ_tr; `membrane`: v; `counts`: spikes
//! in the last `count_window_steps` steps.
//!
//! ```
//! use ndarray::Array2;
//! use reservoir_core::lif::{LifNetwork, LifParams};
//! use reservoir_core::Reservoir;
//!
//! let config = LifParams::new().size(200).check()?;
//! let mut net = LifNetwork::new(&config)?;
//! let inputs = Array2::from_shape_fn((2000, 1), |(t, _)| 0.5 + 0.5 * (t as f64 * 0.01).sin());
//! let (states, spikes) = net.run_recording(inputs.view())?;
//! assert_eq!(states.dim(), (2000, 200));
//! assert_eq!(spikes.spikes().len() as u64, net.spike_count());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod constants;
mod network;
mod run;
mod step;
mod transpose;
mod weights;

pub use config::{
    LifConfig, LifFeatures, LifInputMode, LifIntegration, LifParams, MAX_COUNT_WINDOW,
};
pub use constants::LifConstants;
pub use network::LifNetwork;
pub use step::MIN_PART_NEURONS;
pub use weights::{
    input_fan_in, spectral_products, spectral_scale, synapse_bytes, synapses_per_neuron,
    LifWeights, SPECTRAL_BUDGET, STREAM_INPUT, STREAM_RECURRENT, STREAM_SPECTRAL,
};
