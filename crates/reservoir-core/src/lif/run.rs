//! Running the LIF reservoir: the `Reservoir` interface, its own spikes as a pattern, state
//! accessors and throughput counters.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::config::{LifConfig, LifFeatures};
use super::constants::LifConstants;
use super::network::{check_finite_f32, LifNetwork};
use super::weights::LifWeights;
use crate::checks::check_run;
use crate::error::{ReservoirError, Result};
use crate::par::Par;
use crate::reservoir::{run_on_threads, Reservoir, SequenceVisitor};
use crate::spikes::{Spike, SpikePattern};

impl LifNetwork {
    /// The configuration the network was built from.
    pub fn config(&self) -> &LifConfig {
        &self.config
    }

    /// The weights (in `f64`, as generated; the network computes with them rounded to `f32`).
    pub fn weights(&self) -> &LifWeights {
        &self.weights
    }

    /// The `f32` constants of the update.
    pub fn constants(&self) -> LifConstants {
        self.constants
    }

    /// Membrane potentials v.
    pub fn membrane(&self) -> &[f32] {
        &self.v
    }

    /// Synaptic currents I_syn.
    pub fn synaptic_current(&self) -> &[f32] {
        &self.i_syn
    }

    /// Refractory steps left per neuron (0: integrating).
    pub fn refractory(&self) -> &[u32] {
        &self.refractory
    }

    /// Spike traces r.
    pub fn traces(&self) -> &[f32] {
        &self.trace
    }

    /// Spikes per neuron in the last `count_window_steps` steps.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// Threads a step is split over (see [`LifNetwork::set_step_par`]).
    pub fn step_threads(&self) -> usize {
        self.split.parts()
    }

    /// Neurons that spiked in the last step, ascending (delivered at the next step).
    pub fn last_spikes(&self) -> &[u32] {
        &self.spikes
    }

    /// Neuron updates (N per step) since construction or the last reset.
    pub fn neuron_updates(&self) -> u64 {
        self.neuron_updates
    }

    /// Spikes emitted since construction or the last reset.
    pub fn spike_count(&self) -> u64 {
        self.spike_count
    }

    /// Synaptic events (one per target of a delivered spike) since construction or the last
    /// reset; spikes of the last step are delivered by the next one.
    pub fn synaptic_events(&self) -> u64 {
        self.synaptic_events
    }

    /// Writes the chosen features of the current state into `out` (N entries).
    fn write_features(&self, mut out: ArrayViewMut1<f64>) {
        match self.config.features() {
            LifFeatures::Trace => out.iter_mut().zip(&self.trace).for_each(|(o, &x)| {
                *o = f64::from(x);
            }),
            LifFeatures::Membrane => out.iter_mut().zip(&self.v).for_each(|(o, &x)| {
                *o = f64::from(x);
            }),
            LifFeatures::Counts => out.iter_mut().zip(&self.counts).for_each(|(o, &x)| {
                *o = f64::from(x);
            }),
        }
    }

    /// Runs over `inputs` (T × K), returning the features (T × N) and the network's own
    /// spikes as a pattern over N neurons, amplitude 1, duration `max(T, 1)·dt_ms`. A spike
    /// in step t (counted from 0 in this run; v crossed θ during [t·dt, (t + 1)·dt)) is put
    /// at the middle of the step, `(t + 0.5)·dt_ms`, so that
    /// [`SpikePattern::to_input_matrix`] with `dt_ms` bins it back into row t whatever the
    /// rounding of t·dt / dt.
    ///
    /// # Errors
    /// As [`Reservoir::run_into`].
    pub fn run_recording(
        &mut self,
        inputs: ArrayView2<f64>,
    ) -> Result<(Array2<f64>, SpikePattern)> {
        let n = self.config.size();
        let mut states = Array2::zeros((inputs.nrows(), n));
        self.check_inputs(&inputs, &states.view_mut())?;
        let dt = self.config.dt_ms();
        let mut recorded = Vec::new();
        for (t, (u, out)) in inputs.rows().into_iter().zip(states.rows_mut()).enumerate() {
            self.step_trusted(u);
            self.write_features(out);
            recorded.extend(self.spikes.iter().map(|&j| Spike {
                neuron_id: j,
                time_ms: (t as f64 + 0.5) * dt,
                amplitude: 1.0,
            }));
        }
        let duration = inputs.nrows().max(1) as f64 * dt;
        let pattern = SpikePattern::new(recorded, n, duration)?;
        Ok((states, pattern))
    }

    fn check_inputs(&self, inputs: &ArrayView2<f64>, states: &ArrayViewMut2<f64>) -> Result<()> {
        check_run(self.config.size(), self.config.input_size(), inputs, states)?;
        check_finite_f32(inputs.iter(), "LIF reservoir inputs")
    }
}

impl Reservoir for LifNetwork {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn par(&self) -> Par {
        self.par
    }

    fn set_par(&mut self, par: Par) {
        self.par = par;
    }

    /// Back to rest: v = v_rest (0 by default); I_syn, traces, counts, refractory counters,
    /// undelivered spikes and the throughput counters zero.
    fn reset(&mut self) -> Result<()> {
        self.reset_state();
        Ok(())
    }

    /// The features chosen by `config.features()` (traces, membrane potentials or counts).
    fn state(&self) -> Result<Array1<f64>> {
        let mut out = Array1::zeros(self.config.size());
        self.write_features(out.view_mut());
        Ok(out)
    }

    /// Sets the membrane potentials v (rounded to `f32`); everything else is kept. With
    /// `features = "membrane"` this inverts [`Reservoir::state`].
    fn set_state(&mut self, state: ArrayView1<f64>) -> Result<()> {
        if state.len() != self.config.size() {
            return Err(ReservoirError::shape(
                "LIF membrane state",
                self.config.size(),
                state.len(),
            ));
        }
        check_finite_f32(state.iter(), "LIF membrane state")?;
        for (v, &x) in self.v.iter_mut().zip(state.iter()) {
            *v = x as f32;
        }
        Ok(())
    }

    fn run_into(&mut self, inputs: ArrayView2<f64>, mut states: ArrayViewMut2<f64>) -> Result<()> {
        self.check_inputs(&inputs, &states)?;
        for (u, out) in inputs.rows().into_iter().zip(states.rows_mut()) {
            self.step_trusted(u);
            self.write_features(out);
        }
        Ok(())
    }

    /// Runs the sequences on the network's threads ([`LifNetwork::with_par`]), on clones
    /// sharing the weights, with the same bits as one after another. The network is left reset, so its counters end at zero, as after
    /// the provided method.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> Result<()> {
        run_on_threads(self, sequences, visit)
    }
}
