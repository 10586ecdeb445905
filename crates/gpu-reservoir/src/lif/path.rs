//! Which of the two LIF step paths a network takes.

/// Synapse count from which [`LifStepPath::auto`] picks the event-driven path: the smallest
/// network measured. `gpu_lif_bench` on an NVIDIA H200 (2026-11-22, 6–9 Hz, 2000 steps × 5
/// runs), event-driven vs gather µs/step: 10^5 synapses (N = 1000, p = 0.1) 7.3 vs 11.8;
/// 10^6 (N = 10^4, p = 0.01) 7.6 vs 13.9; 4·10^6 8.9 vs 24.1; 10^8 (N = 10^5, p = 0.01)
/// 13.6 vs 303. Below 10^5 nothing was measured, so the gather (one launch) stays.
pub const LIF_EVENT_MIN_SYNAPSES: usize = 100_000;

/// How a [`GpuLifNetwork`](super::GpuLifNetwork) steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifStepPath {
    /// One launch per step; each neuron scans its row of W against last step's spike flags.
    /// The reference path, cheapest when W is small.
    Gather,
    /// Two launches per step; only the outgoing synapses of the neurons that spiked are
    /// touched (see the module docs).
    EventDriven,
}

impl LifStepPath {
    /// The path for a W with `synapses` non-zeros: event-driven from
    /// [`LIF_EVENT_MIN_SYNAPSES`] on, gather below.
    pub fn auto(synapses: usize) -> Self {
        if synapses >= LIF_EVENT_MIN_SYNAPSES {
            Self::EventDriven
        } else {
            Self::Gather
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auto_path_follows_the_synapse_count() {
        assert_eq!(LifStepPath::auto(0), LifStepPath::Gather);
        assert_eq!(
            LifStepPath::auto(LIF_EVENT_MIN_SYNAPSES - 1),
            LifStepPath::Gather
        );
        assert_eq!(
            LifStepPath::auto(LIF_EVENT_MIN_SYNAPSES),
            LifStepPath::EventDriven
        );
    }
}
