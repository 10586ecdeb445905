//! The LIF reservoir's state and its event-driven step.

use std::convert::Infallible;
use std::sync::Arc;

use ndarray::{Array1, ArrayView1};

use super::config::{LifConfig, LifInputMode};
use super::constants::LifConstants;
use super::step::{Kernel, Part, Split, StepInputs, MIN_PART_NEURONS};
use super::transpose::transposed;
use super::weights::LifWeights;
use crate::error::{ReservoirError, Result};
use crate::par::Par;
use crate::real::{fastest_of, Remembered};
use crate::sparse::CsrMatrix;

/// A current-based LIF reservoir with event-driven recurrent propagation (see [`crate::lif`]
/// for the exact update). Build it with [`LifNetwork::new`]; run it through
/// [`crate::Reservoir`] (spike patterns with [`crate::Reservoir::run_pattern`]) or
/// [`LifNetwork::run_recording`].
///
/// The weights are shared (`Arc`): a clone copies only the state, so that
/// [`crate::Reservoir::run_many`] can run sequences on clones, one per thread of those it was
/// given ([`LifNetwork::with_par`]).
#[derive(Debug, Clone)]
pub struct LifNetwork {
    pub(super) config: LifConfig,
    /// The threads `run_many` may spread its sequences over.
    pub(super) par: Par,
    pub(super) weights: Arc<LifWeights>,
    pub(super) constants: LifConstants,
    /// Wᵀ: row j = neuron j's targets and weights.
    pub(super) outgoing: Arc<CsrMatrix<f32>>,
    /// W_in transposed (K × N), one contiguous row per channel.
    pub(super) input_by_channel: Arc<[Vec<f32>]>,
    pub(super) v: Vec<f32>,
    pub(super) i_syn: Vec<f32>,
    pub(super) refractory: Vec<u32>,
    pub(super) trace: Vec<f32>,
    pub(super) counts: Vec<u32>,
    /// Spike lists of the last `count_window_steps` steps (a ring, `window_head` the oldest).
    pub(super) window: Vec<Vec<u32>>,
    pub(super) window_head: usize,
    /// Scratch: the channels k with u_k ≠ 0 of this step, with u_k in `f32`.
    pub(super) active: Vec<(usize, f32)>,
    /// The instruction set of the step (the widest this CPU has).
    pub(super) kernel: Kernel,
    /// How a step is split over threads (see [`LifNetwork::set_step_par`]); shared by
    /// clones, as the weights are.
    pub(super) split: Arc<Split>,
    /// Scratch: the spikes and synaptic events of the parts after the first of a split step.
    pub(super) part_results: Vec<(Vec<u32>, u64)>,
    /// Neurons that spiked in the last step, ascending.
    pub(super) spikes: Vec<u32>,
    /// Spikes of the step before the last, being delivered (kept to reuse its allocation).
    pub(super) previous: Vec<u32>,
    pub(super) neuron_updates: u64,
    pub(super) spike_count: u64,
    pub(super) synaptic_events: u64,
}

impl LifNetwork {
    /// Generates the weights for `config` and builds the network at rest.
    pub fn new(config: &LifConfig) -> Result<Self> {
        Self::from_weights(config, LifWeights::generate(config)?)
    }

    /// Builds a network on existing weights (e.g. `LifWeights::from_parts` with W = 0).
    ///
    /// # Errors
    /// An invalid config, or weights whose sizes differ from `config.size()` / `input_size`.
    pub fn from_weights(config: &LifConfig, weights: LifWeights) -> Result<Self> {
        weights.check_fits(config)?;
        let n = config.size();
        let constants = LifConstants::new(config);
        let mut network = Self {
            outgoing: Arc::new(transposed(weights.recurrent(), |v| v as f32)?),
            input_by_channel: weights
                .input()
                .columns()
                .into_iter()
                .map(|c| c.iter().map(|&w| w as f32).collect())
                .collect(),
            v: vec![constants.v_rest; n],
            i_syn: vec![0.0; n],
            refractory: vec![0; n],
            trace: vec![0.0; n],
            counts: vec![0; n],
            window: vec![Vec::new(); config.count_window_steps()],
            window_head: 0,
            active: Vec::with_capacity(config.input_size()),
            kernel: Kernel::Portable,
            split: Arc::new(Split::whole(n)),
            part_results: Vec::new(),
            spikes: Vec::new(),
            previous: Vec::new(),
            neuron_updates: 0,
            spike_count: 0,
            synaptic_events: 0,
            constants,
            config: config.clone(),
            par: Par::Seq,
            weights: Arc::new(weights),
        };
        network.kernel = network.fastest_kernel();
        network.reset_state();
        Ok(network)
    }

    /// Lets [`crate::Reservoir::run_many`] spread its sequences over the threads of `par`
    /// (a step's own split is [`LifNetwork::set_step_par`]'s). The spikes are the same
    /// bits whatever `par`.
    pub fn with_par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// The step kernel timed fastest for networks of this one's kind (orders of magnitude of
    /// the neurons and synapses) on this machine, once per process: all give the same bits,
    /// and which is fastest is a property of the core, not of its feature flags. Timed on
    /// clones stepping from rest.
    fn fastest_kernel(&self) -> Kernel {
        static CHOICES: Remembered<(u32, u32), Kernel> = Remembered::new();
        let log2 = |n: usize| n.max(1).next_power_of_two().trailing_zeros();
        let kind = (log2(self.v.len()), log2(self.outgoing.nnz()));
        let Ok(chosen) = CHOICES.get_or_choose(kind, || {
            let u = Array1::zeros(self.config.input_size());
            let steps = Kernel::available()
                .into_iter()
                .map(|kernel| {
                    let mut clone = self.clone();
                    clone.kernel = kernel;
                    let u = u.clone();
                    let step: Box<dyn FnMut()> = Box::new(move || clone.step_trusted(u.view()));
                    (kernel, step)
                })
                .collect();
            Ok::<_, Infallible>(fastest_of(steps).unwrap_or(Kernel::Portable))
        });
        chosen
    }

    /// Back to rest: v = v_rest, I_syn, traces, counts, refractory counters, pending spikes
    /// and the counters all zero.
    pub(super) fn reset_state(&mut self) {
        self.v.fill(self.constants.v_rest);
        self.i_syn.fill(0.0);
        self.refractory.fill(0);
        self.trace.fill(0.0);
        self.counts.fill(0);
        self.window.iter_mut().for_each(Vec::clear);
        self.window_head = 0;
        self.spikes.clear();
        self.previous.clear();
        self.neuron_updates = 0;
        self.spike_count = 0;
        self.synaptic_events = 0;
    }

    /// Advances one step with input `u` (K entries) and returns the neurons that spiked in
    /// it, ascending.
    ///
    /// # Errors
    /// A shape error when `u` does not have K entries, an invalid-input error when one is not
    /// finite (in `f32`).
    pub fn step(&mut self, u: ArrayView1<f64>) -> Result<&[u32]> {
        if u.len() != self.config.input_size() {
            return Err(ReservoirError::shape(
                "LIF step input",
                self.config.input_size(),
                u.len(),
            ));
        }
        check_finite_f32(u.iter(), "LIF step input")?;
        self.step_trusted(u);
        Ok(&self.spikes)
    }

    /// Splits each step over up to `par.threads()` threads by neuron range: the calling thread
    /// takes the first part, rayon's pool the others, and each part decays, receives and
    /// updates its own neurons, so the bits are those of one thread. Parts have at least
    /// [`MIN_PART_NEURONS`] neurons, so a smaller network steps on fewer threads
    /// ([`LifNetwork::step_threads`] says how many). Default [`Par::Seq`]. It keeps, for every
    /// neuron, where each part's targets begin among its synapses: `threads − 1` indices per
    /// neuron.
    ///
    /// # Errors
    /// Out of memory for those indices.
    pub fn set_step_par(&mut self, par: Par) -> Result<()> {
        self.split = Arc::new(Split::new(&self.outgoing, par.threads(), MIN_PART_NEURONS)?);
        Ok(())
    }

    /// One step with an input already checked; see the module docs for the order.
    pub(super) fn step_trusted(&mut self, u: ArrayView1<f64>) {
        std::mem::swap(&mut self.spikes, &mut self.previous);
        self.spikes.clear();
        self.active.clear();
        let active = u.iter().enumerate().filter(|(_, &u_k)| u_k != 0.0);
        self.active.extend(active.map(|(k, &u_k)| (k, u_k as f32)));
        let split = Arc::clone(&self.split);
        let shared = StepInputs {
            constants: self.constants,
            outgoing: &self.outgoing,
            split: &split,
            previous: &self.previous,
            input_by_channel: &self.input_by_channel,
            active: &self.active,
            synaptic: self.config.input_mode() == LifInputMode::Synaptic,
        };
        let kernel = self.kernel;
        let events = if split.parts() == 1 {
            let whole = Part {
                index: 0,
                v: &mut self.v,
                i_syn: &mut self.i_syn,
                refractory: &mut self.refractory,
                trace: &mut self.trace,
            };
            kernel.step_part(&shared, whole, &mut self.spikes)
        } else {
            let size = split.size();
            let mut parts = self
                .v
                .chunks_mut(size)
                .zip(self.i_syn.chunks_mut(size))
                .zip(self.refractory.chunks_mut(size))
                .zip(self.trace.chunks_mut(size))
                .enumerate()
                .map(|(index, (((v, i_syn), refractory), trace))| Part {
                    index,
                    v,
                    i_syn,
                    refractory,
                    trace,
                });
            self.part_results
                .resize_with(split.parts() - 1, Default::default);
            let (shared, spikes) = (&shared, &mut self.spikes);
            let first_events = rayon::in_place_scope(|scope| {
                let first = parts.next();
                for (part, (part_spikes, events)) in parts.zip(self.part_results.iter_mut()) {
                    scope.spawn(move |_| {
                        part_spikes.clear();
                        *events = kernel.step_part(shared, part, part_spikes);
                    });
                }
                first.map_or(0, |part| kernel.step_part(shared, part, spikes))
            });
            for (part_spikes, _) in &self.part_results {
                self.spikes.extend_from_slice(part_spikes);
            }
            first_events + self.part_results.iter().map(|(_, e)| e).sum::<u64>()
        };
        self.synaptic_events += events;
        self.record_spikes();
    }

    /// Step 4: the spike counts over the window drop the oldest step and add this one's
    /// spikes; the counters add this step.
    pub(super) fn record_spikes(&mut self) {
        let slot = &mut self.window[self.window_head];
        for &j in slot.iter() {
            self.counts[j as usize] -= 1;
        }
        slot.clear();
        slot.extend_from_slice(&self.spikes);
        for &j in &self.spikes {
            self.counts[j as usize] += 1;
        }
        self.window_head = (self.window_head + 1) % self.window.len();
        self.neuron_updates += self.v.len() as u64;
        self.spike_count += self.spikes.len() as u64;
    }
}

/// An invalid-input error when a value is not finite once rounded to `f32`.
pub(super) fn check_finite_f32<'a>(
    values: impl Iterator<Item = &'a f64>,
    context: &str,
) -> Result<()> {
    match values.enumerate().find(|(_, &v)| !(v as f32).is_finite()) {
        Some((index, v)) => Err(ReservoirError::invalid(
            context,
            format!("entry {index} ({v}) is not finite in f32"),
        )),
        None => Ok(()),
    }
}
