//! Which of the two LIF step paths a network takes.

/// Synapse count from which [`LifStepPath::auto`] picks the event-driven path: the smallest
/// network `gpu_lif_bench` measures, where the event-driven step was already the faster one
/// (docs/performance.md); below it nothing was measured, so the gather (one launch) stays.
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
    /// The event-driven steps of a whole chunk in one launch of one thread-block cluster,
    /// two cluster barriers per step (compute capability 9.0 and later, at most
    /// [`LIF_CLUSTER_MAX_NEURONS`](crate::LIF_CLUSTER_MAX_NEURONS) neurons: see
    /// [`GpuLifNetwork::cluster_run_available`](super::GpuLifNetwork::cluster_run_available);
    /// a run on this path fails elsewhere). Not picked by [`LifStepPath::auto`].
    EventCluster,
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
