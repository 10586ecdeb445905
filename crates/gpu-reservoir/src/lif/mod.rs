//! The LIF reservoir on the GPU, spike for spike the same as `reservoir_core::lif`.
//!
//! Three step paths ([`LifStepPath`]), all bit-identical to the CPU [`LifNetwork`]
//! (`reservoir_core::lif::LifNetwork`) in spike trains, features and state:
//!
//! * **gather**: one launch per step, a thread per neuron scanning its row of W against last
//!   step's spike flags. Reads every synapse every step.
//! * **event-driven**: the step kernel appends the neurons that spike to a list on the device
//!   (no host round trip), and a delivery kernel walks only their outgoing synapses (Wᵀ,
//!   uploaded once), dropping each synapse's index into its target's inbox with an atomic.
//!   The next step adds a neuron's inbox in ascending synapse index, which is ascending
//!   presynaptic neuron, the CPU's order; so the sum is the CPU's whatever order the atomics
//!   ran in, and runs repeat bit for bit. An inbox holds [`LIF_INBOX_CAPACITY`] events; a
//!   neuron that received more in one step (a synchronous burst) gathers over its row
//!   instead, with the same result. Two launches per step; the work follows N plus the
//!   synaptic events, not the synapse count.
//! * **event-driven in one cluster launch** (compute capability 9.0 and later, at most
//!   32,768 neurons): every step of a
//!   chunk inside one launch of one thread-block cluster, the state in registers and the
//!   inboxes in shared memory, one cluster barrier per step instead of two launches.
//!
//! [`LifStepPath::auto`] picks the path from the synapse count and whether the cluster run is
//! available (see there).
//!
//! [`LifNetwork`]: reservoir_core::lif::LifNetwork

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaSlice;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut2};
use reservoir_core::checks::check_run;
use reservoir_core::lif::{spectral_scale, LifConfig, LifConstants, LifWeights};
use reservoir_core::reservoir::{run_one_by_one, SequenceVisitor};
use reservoir_core::spectral::{Phases, SpectralEstimate, SpectralOptions};
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::CsrMatrix;
use reservoir_core::{Reservoir, ReservoirError};

use crate::driver::csr::DeviceCsr;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, GpuError, Result};
use crate::ops::csr::{scaled_to_f32, transposed_on_device};
use crate::ops::lif::{LifKernels, Neurons};
use crate::ops::lif_cluster::{cluster_run_possible, LifClusterPlan};

mod batch;
mod enqueue;
mod path;
mod sharded;

pub use path::{LifStepPath, LIF_EVENT_MIN_SYNAPSES};
pub use sharded::ShardedLifNetwork;

/// Synapses from which [`GpuLifNetwork::generate_weights`] runs the spectral estimate's
/// products on the GPU: below, the CPU's products are short, and the copies of x and y around
/// each product's kernel would be most of the GPU's time.
pub const LIF_GPU_ESTIMATE_SYNAPSES: usize = 1 << 20;

/// Most steps per chunk: the inputs, features and spike flags of a chunk live on the device
/// together and are copied back once per chunk.
pub(crate) const LIF_CHUNK_STEPS: usize = 4096;

/// Most bytes of features and spike flags (5 bytes per neuron and step) per chunk, which caps
/// the chunk below [`LIF_CHUNK_STEPS`] for large N (536 steps at N = 10^5).
pub(crate) const LIF_CHUNK_BYTES: usize = 256 << 20;

/// Synapse events one neuron's inbox holds per step on the event-driven path. Its mean load
/// is the in-degree times the fraction of neurons spiking per step (0.5 at 1000 synapses per
/// neuron and 5 Hz with dt = 0.1 ms); beyond the capacity the neuron gathers.
pub const LIF_INBOX_CAPACITY: usize = 32;

/// Threads per block of the delivery: a block per spike walks the neuron's outgoing synapses,
/// two passes at 1000 synapses per neuron (N = 10^5 at 1 %).
const DELIVER_THREADS: u32 = 512;

/// The event-driven path's buffers: Wᵀ, the inboxes and two spike lists (one being filled by
/// a step while the other's length is reset).
#[derive(Debug)]
struct EventBuffers {
    outgoing: DeviceCsr<f32>,
    inbox_count: CudaSlice<u32>,
    inbox: CudaSlice<u32>,
    lists: [CudaSlice<u32>; 2],
    totals: [CudaSlice<u32>; 2],
    /// The list the next event step appends to.
    parity: usize,
    /// Whether the inboxes hold the last step's spikes (false after a gather step).
    inbox_valid: bool,
    deliver_blocks: u32,
}

/// What [`GpuLifNetwork::count_events`] finds in a run's spike flags.
pub(crate) struct EventCount {
    pub(crate) spikes: u64,
    pub(crate) delivered: u64,
    pub(crate) undelivered: u64,
}

/// A current-based LIF reservoir on the GPU: state on the device for the whole run, features
/// and spike flags copied back once per chunk; stepped by gather or event-driven (module docs).
#[derive(Debug)]
pub struct GpuLifNetwork {
    device: GpuDevice,
    config: LifConfig,
    constants: LifConstants,
    kernels: Arc<LifKernels>,
    path: LifStepPath,
    recurrent: DeviceCsr<f32>,
    events: EventBuffers,
    /// Out-degree of every neuron, to count synaptic events from the spike flags.
    out_degree: Vec<u32>,
    input_by_channel: CudaSlice<f32>,
    neurons: Neurons,
    /// The window row that holds the oldest step.
    head: usize,
    /// Spike flags of the last step (N).
    last_spikes: CudaSlice<u8>,
    spike_count: u64,
    synaptic_events: u64,
    /// Synaptic events of the last step's spikes, delivered (and counted) in the next step.
    undelivered: u64,
    /// The cluster run's plan, made on the first cluster run or availability question
    /// (`Some(None)`: the device or N does not allow it).
    cluster: Option<Option<LifClusterPlan>>,
}

/// W's spectral-radius estimate for [`LifWeights::generate_with`]: on `device` from
/// [`LIF_GPU_ESTIMATE_SYNAPSES`] synapses on (with the copy of W it used there), else, or
/// where W does not fit on the device beside what it holds, on the CPU (no copy).
fn estimate(
    w: &CsrMatrix<f64>,
    options: &SpectralOptions,
    device: &GpuDevice,
    phases: &mut dyn Phases,
) -> reservoir_core::Result<(SpectralEstimate, Option<DeviceCsr<f64>>)> {
    if w.nnz() >= LIF_GPU_ESTIMATE_SYNAPSES {
        match crate::spectral::estimate_keeping_matrix(device, w, options, phases) {
            Err(GpuError::OutOfMemory { .. }) => {}
            Err(e) => return Err(e.into()),
            Ok((estimate, matrix)) => return Ok((estimate, Some(matrix))),
        }
    }
    Ok((w.spectral_radius_with(options, phases)?, None))
}

impl GpuLifNetwork {
    /// The network of `config` on `device`, its weights generated as in
    /// [`GpuLifNetwork::generate`] (the CPU network's).
    pub fn new_shared(config: &LifConfig, device: &GpuDevice) -> Result<Self> {
        Ok(Self::generate(config, device)?.0)
    }

    /// The network of `config` on `device` and its weights ([`GpuLifNetwork::generate_weights`]:
    /// the CPU network's, bit for bit). Where the GPU estimated W's spectral radius, the copy
    /// of W the estimate used on the device (f64) becomes the network's W, scaled and rounded
    /// to f32 there with the bits the upload would give, instead of being uploaded again.
    ///
    /// # Errors
    /// As [`GpuLifNetwork::generate_weights`] and [`GpuLifNetwork::from_weights`].
    pub fn generate(config: &LifConfig, device: &GpuDevice) -> Result<(Self, LifWeights)> {
        Self::generate_with(config, device, &mut ())
    }

    /// [`GpuLifNetwork::generate`], telling `phases` the time of each phase of the weights
    /// and, as `network`, of the network's making on the device (enqueued, not waited for).
    pub(crate) fn generate_with(
        config: &LifConfig,
        device: &GpuDevice,
        phases: &mut dyn Phases,
    ) -> Result<(Self, LifWeights)> {
        let mut on_device = None;
        let weights = LifWeights::generate_with(
            config,
            |w, options, phases| {
                let (estimate, matrix) = estimate(w, options, device, phases)?;
                on_device = matrix.map(|matrix| (matrix, estimate.radius));
                Ok(estimate)
            },
            phases,
        )?;
        let started = Instant::now();
        let recurrent = match on_device {
            Some((matrix, radius)) => {
                scaled_to_f32(device, matrix, spectral_scale(config, radius))?
            }
            None => DeviceCsr::upload(device, weights.recurrent(), |v| v as f32)?,
        };
        let network = Self::with_recurrent(config, &weights, recurrent, device, started)?;
        phases.spent("network", started.elapsed());
        Ok((network, weights))
    }

    /// [`LifWeights::generate`], with the products of W's spectral-radius estimate on
    /// `device` from 2^20 synapses on: the same weights bit for bit
    /// (each product sums its rows in the CPU's order, see [`crate::spectral`]), where the
    /// estimate is most of the CPU's time. Where W does not fit on the device beside what it
    /// holds, the CPU estimates.
    ///
    /// # Errors
    /// As [`LifWeights::generate`], and a driver error of the estimate.
    pub fn generate_weights(config: &LifConfig, device: &GpuDevice) -> Result<LifWeights> {
        let estimate = |w: &CsrMatrix<f64>, options: &SpectralOptions, phases: &mut dyn Phases| {
            Ok(estimate(w, options, device, phases)?.0)
        };
        Ok(LifWeights::generate_with(config, estimate, &mut ())?)
    }

    /// Uploads existing weights to `device`: W (for the gather), and Wᵀ (for the events)
    /// built from it on the device (on the host where a neuron has more targets than
    /// `reservoir_kernels::csr::SORT_CAPACITY`, 4096), on the path [`LifStepPath::auto`] picks
    /// for them.
    pub fn from_weights(
        config: &LifConfig,
        weights: &LifWeights,
        device: &GpuDevice,
    ) -> Result<Self> {
        weights.check_fits(config)?;
        let started = Instant::now();
        let recurrent = DeviceCsr::upload(device, weights.recurrent(), |v| v as f32)?;
        Self::with_recurrent(config, weights, recurrent, device, started)
    }

    /// The network on `weights` (checked to fit `config`) whose W is already on the device
    /// (`recurrent`, its values in f32): Wᵀ built from it, W_in uploaded, the state at rest.
    /// The uploads' time since `started` is recorded.
    fn with_recurrent(
        config: &LifConfig,
        weights: &LifWeights,
        recurrent: DeviceCsr<f32>,
        device: &GpuDevice,
        started: Instant,
    ) -> Result<Self> {
        let kernels = device.kernels::<LifKernels>()?;
        let s = device.stream();
        let n = config.size();
        let (outgoing, out_degree) = match transposed_on_device(device, &recurrent)? {
            Some(transposed) => transposed,
            None => {
                let on_host = Instant::now();
                let outgoing = weights.outgoing_f32()?;
                device.record("lif Wᵀ on the host", on_host);
                let out_degree = outgoing.row_ptr().windows(2).map(|w| w[1] - w[0]).collect();
                (DeviceCsr::upload_exact(device, &outgoing)?, out_degree)
            }
        };
        let input_t: Vec<f32> = weights.input().t().iter().map(|&x| x as f32).collect();
        let cluster_possible = cluster_run_possible(device, n)?;
        let alloc = |len| {
            s.alloc_zeros::<u32>(len)
                .context("allocating the spike lists")
        };
        let network = Self {
            kernels,
            path: LifStepPath::auto(weights.recurrent().nnz(), cluster_possible),
            recurrent,
            events: EventBuffers {
                outgoing,
                inbox_count: s.alloc_zeros(n).context("allocating the inboxes")?,
                inbox: s
                    .alloc_zeros(n * LIF_INBOX_CAPACITY)
                    .context("allocating the inboxes")?,
                lists: [alloc(n.max(1))?, alloc(n.max(1))?],
                totals: [alloc(1)?, alloc(1)?],
                parity: 0,
                inbox_valid: true,
                deliver_blocks: (2 * device.info().multiprocessors.max(1)) as u32,
            },
            out_degree,
            input_by_channel: s.clone_htod(&input_t).context("uploading W_in")?,
            neurons: Neurons::at_rest(s, config, n, 1)?,
            head: 0,
            last_spikes: s.alloc_zeros(n).context("allocating the state")?,
            constants: LifConstants::new(config),
            config: config.clone(),
            device: device.clone(),
            spike_count: 0,
            synaptic_events: 0,
            undelivered: 0,
            cluster: None,
        };
        device.record("lif uploads", started);
        Ok(network)
    }

    /// The device the network runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The configuration the network was built from.
    pub fn config(&self) -> &LifConfig {
        &self.config
    }

    /// How the network steps: [`LifStepPath::auto`] of its synapse count unless forced.
    pub fn step_path(&self) -> LifStepPath {
        self.path
    }

    /// Forces a step path (tests and benchmarks compare them). All give the same results, and
    /// a network may switch between runs: the first event-driven step after gather steps
    /// gathers.
    pub fn with_step_path(mut self, path: LifStepPath) -> Self {
        self.path = path;
        self
    }

    /// Whether this device and network allow [`LifStepPath::EventCluster`] (compute
    /// capability 9.0 and later, at most 32,768 neurons, a resident cluster). The first call
    /// loads the cluster kernel.
    pub fn cluster_run_available(&mut self) -> Result<bool> {
        Ok(self.cluster_plan()?.is_some())
    }

    fn cluster_plan(&mut self) -> Result<Option<&LifClusterPlan>> {
        if self.cluster.is_none() {
            let plan =
                LifClusterPlan::for_network(&self.device, self.config.size(), LIF_INBOX_CAPACITY)?;
            self.cluster = Some(plan);
        }
        Ok(self.cluster.as_ref().and_then(Option::as_ref))
    }

    /// Number of recurrent synapses (non-zeros of W).
    pub fn synapses(&self) -> usize {
        self.recurrent.values.len()
    }

    /// Spikes emitted since construction or the last reset.
    pub fn spike_count(&self) -> u64 {
        self.spike_count
    }

    /// Synaptic events delivered since construction or the last reset (each spike's
    /// out-degree, counted in the step after the spike, when it is delivered); the CPU
    /// network's `synaptic_events` for the same run.
    pub fn synaptic_events(&self) -> u64 {
        self.synaptic_events
    }

    /// Bytes this network holds on the device between runs: W and Wᵀ (8 bytes per synapse
    /// each, plus row pointers), W_in, the neuron state with its count window, the inboxes
    /// (4·(1 + 32) bytes per neuron) and the spike lists. A run adds its chunk: at most
    /// 256 MiB of features and flags, plus the inputs.
    pub fn device_bytes(&self) -> usize {
        fn bytes<T>(slice: &CudaSlice<T>) -> usize {
            slice.len() * std::mem::size_of::<T>()
        }
        let csr = |m: &DeviceCsr<f32>| bytes(&m.row_ptr) + bytes(&m.col_idx) + bytes(&m.values);
        let (st, ev) = (&self.neurons, &self.events);
        csr(&self.recurrent)
            + csr(&ev.outgoing)
            + bytes(&ev.inbox_count)
            + bytes(&ev.inbox)
            + ev.lists.iter().chain(&ev.totals).map(bytes).sum::<usize>()
            + bytes(&self.input_by_channel)
            + bytes(&st.v)
            + bytes(&st.i_syn)
            + bytes(&st.refractory)
            + bytes(&st.trace)
            + bytes(&st.counts)
            + bytes(&st.window)
            + bytes(&self.last_spikes)
    }

    /// Runs `inputs` (T × K) and returns the features (T × N) and the network's own spikes.
    pub fn run_recording(
        &mut self,
        inputs: ArrayView2<f64>,
    ) -> reservoir_core::Result<(Array2<f64>, SpikePattern)> {
        let (steps, n, dt) = (inputs.nrows(), self.config.size(), self.config.dt_ms());
        let mut features = Array2::zeros((steps, n));
        let mut spikes = Vec::new();
        self.run_chunks(inputs, features.view_mut(), |start, flags| {
            for (e, _) in flags.iter().enumerate().filter(|(_, &f)| f != 0) {
                // Mid-step, as the CPU network records its spikes.
                let time_ms = ((start + e / n) as f64 + 0.5) * dt;
                spikes.push(Spike {
                    neuron_id: (e % n) as u32,
                    time_ms,
                    amplitude: 1.0,
                });
            }
        })?;
        let pattern = SpikePattern::new(spikes, n, steps.max(1) as f64 * dt)?;
        Ok((features, pattern))
    }

    /// Runs a spike pattern from the current state, binned at the network's `dt_ms` (one
    /// step per bin): [`Reservoir::run_pattern`] with the config's step.
    pub fn process_gpu(&mut self, pattern: &SpikePattern) -> reservoir_core::Result<Array2<f64>> {
        self.run_pattern(pattern, self.config.dt_ms())
    }

    /// Counts a run's spike flags (steps × N) as the CPU network does: a spike's synaptic
    /// events (its out-degree) count when they are delivered, in the next step. `carried` is
    /// the events of the spikes of the step before the run. Returns (spikes, events delivered
    /// during the run, events of the last step's spikes, delivered by the next run).
    pub(crate) fn count_events(&self, flags: &[u8], carried: u64) -> EventCount {
        let n = self.config.size().max(1);
        let last_step = flags.len().saturating_sub(n);
        let mut count = EventCount {
            spikes: 0,
            delivered: carried,
            undelivered: 0,
        };
        for (e, _) in flags.iter().enumerate().filter(|(_, &f)| f != 0) {
            let events = u64::from(self.out_degree[e % n]);
            count.spikes += 1;
            if e < last_step {
                count.delivered += events;
            } else {
                count.undelivered += events;
            }
        }
        count
    }

    /// Checks the call, then runs chunk by chunk, handing each chunk's spike flags
    /// (steps × N, row-major) and its first step to `on_flags`.
    fn run_chunks(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
        mut on_flags: impl FnMut(usize, &[u8]),
    ) -> reservoir_core::Result<()> {
        check_run(
            self.config.size(),
            self.config.input_size(),
            &inputs,
            &states,
        )?;
        check_finite(&inputs)?;
        for start in (0..inputs.nrows()).step_by(chunk_steps(self.config.size())) {
            let end = (start + chunk_steps(self.config.size())).min(inputs.nrows());
            let rows = ndarray::s![start..end, ..];
            let flags = self
                .run_chunk(inputs.slice(rows), states.slice_mut(rows))
                .map_err(ReservoirError::from)?;
            on_flags(start, &flags);
        }
        Ok(())
    }

    /// One chunk: uploads the inputs, runs its steps, copies the features into `out` and
    /// returns the chunk's spike flags (steps × N).
    fn run_chunk(
        &mut self,
        inputs: ArrayView2<f64>,
        mut out: ArrayViewMut2<f64>,
    ) -> Result<Vec<u8>> {
        let (steps, n) = (inputs.nrows(), self.config.size());
        let s = self.device.stream().clone();
        let host_u: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        let u = s.clone_htod(&host_u).context("uploading inputs")?;
        let mut features = s
            .alloc_zeros::<f32>(steps * n)
            .context("allocating the features")?;
        let mut flags = s
            .alloc_zeros::<u8>(steps * n)
            .context("allocating the spike flags")?;
        self.enqueue_steps(&u, &mut features, &mut flags, steps)?;
        let host_features = s
            .clone_dtoh(&features)
            .context("copying the features back")?;
        for (dst, &src) in out.iter_mut().zip(&host_features) {
            *dst = f64::from(src);
        }
        let host_flags = s.clone_dtoh(&flags).context("copying the spikes back")?;
        let count = self.count_events(&host_flags, self.undelivered);
        self.spike_count += count.spikes;
        self.synaptic_events += count.delivered;
        self.undelivered = count.undelivered;
        Ok(host_flags)
    }

    fn reset_state(&mut self) -> Result<()> {
        let s = self.device.stream();
        let n = self.config.size();
        let st = &mut self.neurons;
        s.memcpy_htod(&vec![self.config.v_rest() as f32; n], &mut st.v)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.i_syn)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.refractory)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.trace)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.counts)
            .context("resetting the state")?;
        s.memset_zeros(&mut st.window)
            .context("resetting the state")?;
        s.memset_zeros(&mut self.last_spikes)
            .context("resetting the state")?;
        let ev = &mut self.events;
        s.memset_zeros(&mut ev.inbox_count)
            .context("resetting the inboxes")?;
        for total in &mut ev.totals {
            s.memset_zeros(total).context("resetting the spike lists")?;
        }
        (ev.parity, ev.inbox_valid) = (0, true);
        self.head = 0;
        self.spike_count = 0;
        self.synaptic_events = 0;
        self.undelivered = 0;
        Ok(())
    }
}

/// Steps per chunk for N neurons: [`LIF_CHUNK_BYTES`] of features and flags, at most
/// [`LIF_CHUNK_STEPS`], at least 1.
pub(crate) fn chunk_steps(n: usize) -> usize {
    (LIF_CHUNK_BYTES / (5 * n).max(1)).clamp(1, LIF_CHUNK_STEPS)
}

/// An invalid-input error unless every input is finite in `f32`.
fn check_finite(inputs: &ArrayView2<f64>) -> reservoir_core::Result<()> {
    if inputs.iter().any(|v| !(*v as f32).is_finite()) {
        return Err(ReservoirError::invalid(
            "LIF inputs",
            "values must be finite in f32",
        ));
    }
    Ok(())
}

impl Reservoir for GpuLifNetwork {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn reset(&mut self) -> reservoir_core::Result<()> {
        Ok(self.reset_state()?)
    }

    fn state(&self) -> reservoir_core::Result<Array1<f64>> {
        let values = self
            .neurons
            .reported(self.device.stream(), self.config.features())?;
        Ok(values.into_iter().map(f64::from).collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        if state.len() != self.config.size() {
            return Err(ReservoirError::shape(
                "LIF membrane state",
                self.config.size(),
                state.len(),
            ));
        }
        if state.iter().any(|v| !(*v as f32).is_finite()) {
            return Err(ReservoirError::invalid(
                "LIF membrane state",
                "values must be finite in f32",
            ));
        }
        let host: Vec<f32> = state.iter().map(|&v| v as f32).collect();
        self.device
            .stream()
            .memcpy_htod(&host, &mut self.neurons.v)
            .context("uploading the membrane state")
            .map_err(ReservoirError::from)
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        self.run_chunks(inputs, states, |_, _| {})
    }

    /// On the gather path, and on the cluster run of a W below 100,000 synapses (where `auto`
    /// would gather without clusters), consecutive sequences run on the gather kernel as
    /// batches of up to 256 MiB of flags, features and state (see
    /// the `batch` module): one launch a step for all of them, with the same spikes
    /// and features bit for bit as one after another. A sequence too long for a batch of two,
    /// and the other cases, run one after another on the network's path.
    fn run_many(
        &mut self,
        sequences: &[ArrayView2<f64>],
        visit: &mut SequenceVisitor<'_>,
    ) -> reservoir_core::Result<()> {
        let batches = match self.path {
            LifStepPath::Gather => true,
            LifStepPath::EventCluster => self.synapses() < LIF_EVENT_MIN_SYNAPSES,
            LifStepPath::EventDriven => false,
        };
        if !batches {
            return run_one_by_one(self, sequences, visit);
        }
        self.run_in_batches(sequences, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_at_most_their_bytes() {
        assert_eq!(chunk_steps(1), LIF_CHUNK_STEPS);
        assert_eq!(chunk_steps(100_000), 536);
        assert!(chunk_steps(100_000) * 100_000 * 5 <= LIF_CHUNK_BYTES);
        assert_eq!(chunk_steps(usize::MAX / 8), 1);
    }
}
