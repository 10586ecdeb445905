//! Which of the two LIF step paths a network takes.

/// Synapse count from which [`LifStepPath::auto`] picks the event-driven path: the smallest
/// network `gpu_lif_bench` measures, where the event-driven step was already the faster one
/// (docs/decisions.md, "Other thresholds"); below it nothing was measured, so the gather (one launch) stays.
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
    /// one cluster barrier per step (compute capability 9.0 and later, at most
    /// 32,768 neurons: see
    /// [`GpuLifNetwork::cluster_run_available`](super::GpuLifNetwork::cluster_run_available);
    /// elsewhere a run takes the launched path `auto` picks without it, and keeps it).
    EventCluster,
}

impl LifStepPath {
    /// The path for a W with `synapses` non-zeros: the cluster run where the device and N
    /// allow it (`cluster_run`), which `gpu_lif_bench` measured faster than both launched
    /// paths at every size it takes; otherwise event-driven from 100,000 synapses on,
    /// gather below (docs/benchmarks.md, `gpu_lif_bench`).
    pub fn auto(synapses: usize, cluster_run: bool) -> Self {
        if cluster_run {
            Self::EventCluster
        } else if synapses >= LIF_EVENT_MIN_SYNAPSES {
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
    fn the_auto_path_follows_the_cluster_run_and_the_synapse_count() {
        assert_eq!(LifStepPath::auto(0, false), LifStepPath::Gather);
        assert_eq!(
            LifStepPath::auto(LIF_EVENT_MIN_SYNAPSES - 1, false),
            LifStepPath::Gather
        );
        assert_eq!(
            LifStepPath::auto(LIF_EVENT_MIN_SYNAPSES, false),
            LifStepPath::EventDriven
        );
        for synapses in [0, LIF_EVENT_MIN_SYNAPSES, 10 * LIF_EVENT_MIN_SYNAPSES] {
            assert_eq!(LifStepPath::auto(synapses, true), LifStepPath::EventCluster);
        }
    }
}
