//! Many sequences through one LIF network as batches on the gather kernel: one launch a step
//! for all of them, with the same spikes and features bit for bit as one after another.

use ndarray::{Array2, ArrayView2};
use reservoir_core::checks::check_inputs;
use reservoir_core::lif::LifInputMode;
use reservoir_core::reservoir::SequenceVisitor;
use reservoir_core::Reservoir;

use super::enqueue::step_flags;
use super::{check_finite, GpuLifNetwork, LIF_CHUNK_BYTES};
use crate::error::{DriverContext, Result};
use crate::ops::lif::{gather_step, NeuronUpdate, Neurons, MAX_SEQUENCES};

impl GpuLifNetwork {
    /// Runs `sequences` from the resting state in consecutive batches of up to
    /// [`LIF_CHUNK_BYTES`] of flags, features and state (and at most `MAX_SEQUENCES`), handing
    /// each sequence's features to `visit` in order. A sequence too long for a batch of two runs
    /// alone on the network's path. Leaves the network at rest.
    pub(super) fn run_in_batches(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        for inputs in sequences {
            check_inputs(self.config.input_size(), inputs)?;
            check_finite(inputs)?;
        }
        self.reset()?;
        let (n, window) = (self.config.size().max(1), self.config.count_window_steps());
        // A sequence's device bytes for `steps` steps: flags and features (5 bytes per neuron
        // and step), its count window (1 byte per neuron and window step) and its state.
        let sequence_bytes =
            |steps: usize| n.saturating_mul(steps.saturating_mul(5).saturating_add(window + 20));
        let mut first = 0;
        while first < sequences.len() {
            let (mut end, mut steps) = (first, 0);
            while end < sequences.len() && end - first < MAX_SEQUENCES {
                let longest = steps.max(sequences[end].nrows());
                let bytes = (end + 1 - first).saturating_mul(sequence_bytes(longest));
                if end > first && bytes > LIF_CHUNK_BYTES {
                    break;
                }
                (end, steps) = (end + 1, longest);
            }
            let batch = &sequences[first..end];
            if batch.len() == 1 || steps == 0 {
                for (index, inputs) in (first..).zip(batch) {
                    let states = self.run(*inputs)?;
                    self.reset()?;
                    visit(index, states.view())?;
                }
            } else {
                self.run_batch(first, batch, steps, visit)?;
            }
            first = end;
        }
        Ok(())
    }

    /// Runs `batch` (at least two sequences, the longest `steps` steps, their flags,
    /// features and state within [`LIF_CHUNK_BYTES`]) from the resting state as one batch: a
    /// gather step per time step for all of them, the shorter ones fed zeros past their end.
    /// Hands each sequence's features to `visit` as sequence `first + its place in the
    /// batch`. Leaves the network's own state untouched.
    fn run_batch(
        &mut self,
        first: usize,
        batch: &[ArrayView2<f64>],
        steps: usize,
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        let (n, sequences) = (self.config.size(), batch.len());
        let features = self.run_batch_on_device(batch, steps)?;
        // Features are [step][sequence][neuron].
        for (place, inputs) in batch.iter().enumerate() {
            let states = Array2::from_shape_fn((inputs.nrows(), n), |(t, i)| {
                f64::from(features[(t * sequences + place) * n + i])
            });
            visit(first + place, states.view())?;
        }
        Ok(())
    }

    /// The device side of [`GpuLifNetwork::run_batch`]: returns the features,
    /// `[step][sequence][neuron]`.
    fn run_batch_on_device(&mut self, batch: &[ArrayView2<f64>], steps: usize) -> Result<Vec<f32>> {
        let (n, k, sequences) = (self.config.size(), self.config.input_size(), batch.len());
        let s = self.device.stream().clone();
        let row = sequences * n;
        let mut host_u = vec![0.0f32; steps * sequences * k];
        for (place, inputs) in batch.iter().enumerate() {
            for (t, step) in inputs.rows().into_iter().enumerate() {
                let at = (t * sequences + place) * k;
                for (u, &v) in host_u[at..at + k].iter_mut().zip(step) {
                    *u = v as f32;
                }
            }
        }
        let u = s
            .clone_htod(&host_u)
            .context("uploading the batch's inputs")?;
        let mut neurons = Neurons::at_rest(&s, &self.config, self.config.size(), sequences)?;
        let no_spikes = s
            .alloc_zeros::<u8>(row)
            .context("allocating the spike flags")?;
        let mut flags = s
            .alloc_zeros::<u8>(steps * row)
            .context("allocating the spike flags")?;
        let mut features = s
            .alloc_zeros::<f32>(steps * row)
            .context("allocating the features")?;
        let synaptic_input = self.config.input_mode() == LifInputMode::Synaptic;
        for t in 0..steps {
            let (before, now) = step_flags(&mut flags, &no_spikes, t, row);
            let update = NeuronUpdate {
                before,
                now,
                input_by_channel: &self.input_by_channel,
                u_t: u.slice(t * sequences * k..(t + 1) * sequences * k),
                neurons: &mut neurons,
                head: t % self.config.count_window_steps(),
                constants: self.constants,
                synaptic_input,
                features: self.config.features(),
                features_t: features.slice_mut(t * row..(t + 1) * row),
            };
            gather_step(&self.device, &self.kernels, &self.recurrent, update)?;
        }
        s.clone_dtoh(&features)
            .context("copying the batch's features back")
    }
}
