//! The LIF network's steps queued on the device's stream: every step of a chunk in one cluster
//! launch, or the launched steps (gather, or the event-driven step and its delivery).

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use reservoir_core::lif::LifInputMode;
use reservoir_core::ReservoirError;

use super::{GpuLifNetwork, LifStepPath, DELIVER_THREADS, LIF_INBOX_CAPACITY};
use crate::error::{DriverContext, Result};
use crate::ops::lif::{deliver, event_step, gather_step, Inboxes, NeuronUpdate, SpikeList};
use crate::ops::lif_cluster::LifClusterRun;

impl GpuLifNetwork {
    /// Queues `steps` steps (≥ 1) on the device's stream: inputs `u` (steps × K), features and
    /// spike flags written to `features` and `flags` (steps × N each); keeps the last step's
    /// flags for the next call.
    pub(crate) fn enqueue_steps(
        &mut self,
        u: &CudaSlice<f32>,
        features: &mut CudaSlice<f32>,
        flags: &mut CudaSlice<u8>,
        steps: usize,
    ) -> Result<()> {
        if steps == 0 {
            return Ok(());
        }
        if self.path == LifStepPath::EventCluster && self.cluster_plan()?.is_none() {
            // The device cannot run the cluster: the launched path `auto` takes without it,
            // with the same results.
            self.path = LifStepPath::auto(self.synapses(), false);
        }
        if self.path == LifStepPath::EventCluster {
            self.enqueue_cluster_run(u, features, flags, steps)?;
        } else {
            self.enqueue_launched_steps(u, features, flags, steps)?;
        }
        let n = self.config.size();
        self.device
            .stream()
            .memcpy_dtod(&flags.slice((steps - 1) * n..), &mut self.last_spikes)
            .context("keeping the last spikes")
    }

    /// The steps of [`GpuLifNetwork::enqueue_steps`] in one cluster launch.
    fn enqueue_cluster_run(
        &mut self,
        u: &CudaSlice<f32>,
        features: &mut CudaSlice<f32>,
        flags: &mut CudaSlice<u8>,
        steps: usize,
    ) -> Result<()> {
        let k = self.config.input_size();
        let synaptic_input = self.config.input_mode() == LifInputMode::Synaptic;
        let features_kind = self.config.features();
        let Self {
            device,
            recurrent,
            events: ev,
            input_by_channel,
            neurons,
            head,
            last_spikes,
            constants,
            cluster,
            ..
        } = self;
        let Some(Some(plan)) = cluster.as_ref() else {
            return Err(ReservoirError::invalid(
                "LIF step path",
                "EventCluster needs compute capability 9.0 or later, at most \
                 LIF_CLUSTER_MAX_NEURONS neurons and a resident cluster",
            )
            .into());
        };
        plan.launch(
            device,
            LifClusterRun {
                recurrent,
                outgoing: &ev.outgoing,
                inbox_count: &mut ev.inbox_count,
                inbox: &mut ev.inbox,
                capacity: LIF_INBOX_CAPACITY,
                inbox_valid: ev.inbox_valid,
                initial_flags: last_spikes,
                flags,
                input_by_channel,
                u,
                k,
                neurons,
                head: *head,
                constants: *constants,
                synaptic_input,
                features_kind,
                features,
                steps,
            },
        )?;
        ev.inbox_valid = true;
        *head = (*head + steps) % neurons.window_steps;
        Ok(())
    }

    /// The steps of [`GpuLifNetwork::enqueue_steps`] launched one by one (gather or
    /// event-driven).
    fn enqueue_launched_steps(
        &mut self,
        u: &CudaSlice<f32>,
        features: &mut CudaSlice<f32>,
        flags: &mut CudaSlice<u8>,
        steps: usize,
    ) -> Result<()> {
        let (n, k) = (self.config.size(), self.config.input_size());
        let synaptic_input = self.config.input_mode() == LifInputMode::Synaptic;
        let features_kind = self.config.features();
        let Self {
            device,
            kernels,
            path,
            recurrent: w,
            events: ev,
            input_by_channel,
            neurons,
            head,
            last_spikes,
            constants,
            ..
        } = self;
        for t in 0..steps {
            let (before, now) = step_flags(flags, last_spikes, t, n);
            let update = NeuronUpdate {
                before,
                now,
                input_by_channel,
                u_t: u.slice(t * k..(t + 1) * k),
                neurons: &mut *neurons,
                head: *head,
                constants: *constants,
                synaptic_input,
                features: features_kind,
                features_t: features.slice_mut(t * n..(t + 1) * n),
            };
            match path {
                LifStepPath::Gather => {
                    gather_step(device, kernels, w, update)?;
                    ev.inbox_valid = false;
                }
                // EventCluster runs above.
                LifStepPath::EventDriven | LifStepPath::EventCluster => {
                    let [list_a, list_b] = &mut ev.lists;
                    let [total_a, total_b] = &mut ev.totals;
                    let (list, total, next_total) = if ev.parity == 0 {
                        (list_a, total_a, total_b)
                    } else {
                        (list_b, total_b, total_a)
                    };
                    let mut inboxes = Inboxes {
                        out_values: &ev.outgoing.values,
                        count: &mut ev.inbox_count,
                        slots: &mut ev.inbox,
                        capacity: LIF_INBOX_CAPACITY,
                    };
                    let mut list = SpikeList {
                        neurons: list,
                        total,
                    };
                    event_step(
                        device,
                        kernels,
                        w,
                        &mut inboxes,
                        ev.inbox_valid,
                        &mut list,
                        (update, n),
                    )?;
                    deliver(
                        device,
                        kernels,
                        &ev.outgoing,
                        &list,
                        &mut inboxes,
                        next_total,
                        (ev.deliver_blocks, DELIVER_THREADS, n),
                    )?;
                    ev.parity = 1 - ev.parity;
                    ev.inbox_valid = true;
                }
            }
            *head = (*head + 1) % neurons.window_steps;
        }
        Ok(())
    }
}

/// Step `t`'s spike flags in a run's `flags` (a row of `row` values per step): last step's
/// row (`initial` at t = 0) to read, and this step's to write.
pub(super) fn step_flags<'a>(
    flags: &'a mut CudaSlice<u8>,
    initial: &'a CudaSlice<u8>,
    t: usize,
    row: usize,
) -> (CudaView<'a, u8>, CudaViewMut<'a, u8>) {
    let (done, rest) = flags.split_at_mut(t * row);
    let before = if t == 0 {
        initial.slice(..)
    } else {
        done.into_view().slice((t - 1) * row..)
    };
    // The rest holds whole rows, this step's first; the step checks its length.
    (before, rest)
}
