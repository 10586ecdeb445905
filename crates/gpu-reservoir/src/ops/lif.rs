//! Launches of `lif.cu`: a LIF step by gather, an event-driven step and the delivery of its
//! spikes. Each checks its buffers' lengths first.

use std::sync::Arc;

use cudarc::driver::PushKernelArg;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchArgs, LaunchConfig,
};
use reservoir_core::lif::{LifConfig, LifConstants, LifFeatures};
use reservoir_kernels::lif;

use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{dim, fits, per_item};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernels of `lif.cu`.
#[derive(Debug)]
pub(crate) struct LifKernels {
    step: CudaFunction,
    event_step: CudaFunction,
    deliver: CudaFunction,
    flags_to_list: CudaFunction,
}

impl KernelSet for LifKernels {
    const MODULE: reservoir_kernels::Module = lif::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            step: module.function(lif::STEP)?,
            event_step: module.function(lif::EVENT_STEP)?,
            deliver: module.function(lif::DELIVER)?,
            flags_to_list: module.function(lif::FLAGS_TO_LIST)?,
        })
    }
}

/// The kernels' code of what a LIF reservoir reports.
pub(crate) fn feature_code(features: LifFeatures) -> i32 {
    match features {
        LifFeatures::Trace => reservoir_kernels::lif_feature::TRACE,
        LifFeatures::Membrane => reservoir_kernels::lif_feature::MEMBRANE,
        LifFeatures::Counts => reservoir_kernels::lif_feature::COUNTS,
    }
}

/// Most sequences one gather step runs at once (the grid's second dimension).
pub(crate) const MAX_SEQUENCES: usize = 65_535;

/// The neuron state of a LIF network on the device, for `sequences` independent sequences:
/// each array holds one row of N values per sequence.
#[derive(Debug)]
pub(crate) struct Neurons {
    pub v: CudaSlice<f32>,
    pub i_syn: CudaSlice<f32>,
    pub refractory: CudaSlice<u32>,
    pub trace: CudaSlice<f32>,
    pub counts: CudaSlice<u32>,
    /// The spike flags of the last `window_steps` steps (a ring of rows of sequences·N).
    pub window: CudaSlice<u8>,
    pub window_steps: usize,
    pub sequences: usize,
}

impl Neurons {
    /// The resting state of `neurons` neurons of `config`'s network (all of them, or a
    /// GPU's share), for `sequences` sequences.
    pub(crate) fn at_rest(
        stream: &Arc<CudaStream>,
        config: &LifConfig,
        neurons: usize,
        sequences: usize,
    ) -> Result<Self> {
        let values = neurons.saturating_mul(sequences);
        let window_steps = config.count_window_steps();
        let what = "allocating the LIF state";
        Ok(Self {
            v: stream
                .clone_htod(&vec![config.v_rest() as f32; values])
                .context(what)?,
            i_syn: stream.alloc_zeros(values).context(what)?,
            refractory: stream.alloc_zeros(values).context(what)?,
            trace: stream.alloc_zeros(values).context(what)?,
            counts: stream.alloc_zeros(values).context(what)?,
            window: stream
                .alloc_zeros(values.saturating_mul(window_steps))
                .context(what)?,
            window_steps,
            sequences,
        })
    }
}

impl Neurons {
    /// What the network reports as its state: the quantity of its features, per neuron.
    pub(crate) fn reported(
        &self,
        stream: &Arc<CudaStream>,
        features: LifFeatures,
    ) -> Result<Vec<f32>> {
        match features {
            LifFeatures::Trace => stream.clone_dtoh(&self.trace),
            LifFeatures::Membrane => stream.clone_dtoh(&self.v),
            LifFeatures::Counts => stream
                .clone_dtoh(&self.counts)
                .map(|c| c.into_iter().map(|x| x as f32).collect()),
        }
        .context("copying the state back")
    }
}

/// What both step kernels take after their recurrent-input arguments: last step's and this
/// step's spike flags, the input, the neuron state, the constants and this step's features,
/// each a row per sequence of the neurons.
pub(crate) struct NeuronUpdate<'v> {
    pub before: CudaView<'v, u8>,
    pub now: CudaViewMut<'v, u8>,
    pub input_by_channel: &'v CudaSlice<f32>,
    pub u_t: CudaView<'v, f32>,
    pub neurons: &'v mut Neurons,
    /// The ring row holding the oldest step of the window.
    pub head: usize,
    pub constants: LifConstants,
    pub synaptic_input: bool,
    pub features: LifFeatures,
    pub features_t: CudaViewMut<'v, f32>,
}

/// The scalar arguments of a step, kept alive while the launch is built.
struct Scalars {
    k: i32,
    head: i32,
    synaptic: i32,
    feature: i32,
    n: i32,
}

impl NeuronUpdate<'_> {
    /// Checks every buffer against N neurons and K channels (the input holds K values per
    /// sequence).
    fn check(&self, n: usize) -> Result<Scalars> {
        const WHAT: &str = "LIF step";
        let ns = &self.neurons;
        if ns.sequences == 0 || ns.sequences > MAX_SEQUENCES {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                format!("{} sequences (1 to {MAX_SEQUENCES})", ns.sequences),
            )
            .into());
        }
        if self.u_t.len() % ns.sequences != 0 {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                format!(
                    "{} input values for {} sequences",
                    self.u_t.len(),
                    ns.sequences
                ),
            )
            .into());
        }
        let k = self.u_t.len() / ns.sequences;
        let values = n.saturating_mul(ns.sequences);
        for len in [
            self.before.len(),
            self.now.len(),
            self.features_t.len(),
            ns.v.len(),
            ns.i_syn.len(),
            ns.refractory.len(),
            ns.trace.len(),
            ns.counts.len(),
        ] {
            fits(len, values, WHAT)?;
        }
        fits(self.input_by_channel.len(), k.saturating_mul(n), WHAT)?;
        fits(
            ns.window.len(),
            ns.window_steps.saturating_mul(values),
            WHAT,
        )?;
        if self.head >= ns.window_steps {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                format!("window row {} of {}", self.head, ns.window_steps),
            )
            .into());
        }
        Ok(Scalars {
            k: dim(k, WHAT)?,
            head: dim(self.head, WHAT)?,
            synaptic: i32::from(self.synaptic_input),
            feature: feature_code(self.features),
            n: dim(n, WHAT)?,
        })
    }

    fn push<'a>(&'a mut self, scalars: &'a Scalars, launch: &mut LaunchArgs<'a>) {
        let c = &self.constants;
        let ns = &mut *self.neurons;
        launch
            .arg(&self.before)
            .arg(&mut self.now)
            .arg(self.input_by_channel)
            .arg(&self.u_t)
            .arg(&scalars.k)
            .arg(&mut ns.v)
            .arg(&mut ns.i_syn)
            .arg(&mut ns.refractory)
            .arg(&mut ns.trace)
            .arg(&mut ns.counts)
            .arg(&mut ns.window)
            .arg(&scalars.head)
            .arg(&c.alpha_m)
            .arg(&c.alpha_syn)
            .arg(&c.alpha_trace)
            .arg(&c.drive_gain)
            .arg(&c.v_rest)
            .arg(&c.v_reset)
            .arg(&c.threshold)
            .arg(&c.bias)
            .arg(&c.refractory_steps)
            .arg(&scalars.synaptic)
            .arg(&scalars.feature)
            .arg(&mut self.features_t)
            .arg(&scalars.n);
    }
}

/// One step by gather of every sequence of `update`: each neuron scans its row of `w`
/// (N × N) against last step's flags of its sequence.
pub(crate) fn gather_step(
    device: &GpuDevice,
    kernels: &LifKernels,
    w: &DeviceCsr<f32>,
    mut update: NeuronUpdate<'_>,
) -> Result<()> {
    let n = w.rows();
    let scalars = update.check(n)?;
    let mut config = per_item(n)?;
    // At most MAX_SEQUENCES (checked), which fits the grid's second dimension.
    config.grid_dim.1 = update.neurons.sequences as u32;
    let mut launch = device.stream().launch_builder(&kernels.step);
    launch.arg(&w.row_ptr).arg(&w.col_idx).arg(&w.values);
    update.push(&scalars, &mut launch);
    // SAFETY: W's CSR is n×n with row_ptr ending at len(col_idx) = len(values) and every
    // column < n; for S = gridDim.y sequences the flags, the state and the features hold S·n
    // values, input_by_channel k·n, u_t S·k, the window window_steps·S·n with head <
    // window_steps (checked); guarded i < n.
    unsafe { launch.launch(config) }.context("launching lif_step_kernel")?;
    Ok(())
}

/// The inboxes of the event-driven path: per neuron a count and `capacity` synapse indices.
pub(crate) struct Inboxes<'a> {
    /// Wᵀ's values, indexed by synapse.
    pub out_values: &'a CudaSlice<f32>,
    pub count: &'a mut CudaSlice<u32>,
    pub slots: &'a mut CudaSlice<u32>,
    pub capacity: usize,
}

/// A spike list: up to N neuron indices and its length (one value).
pub(crate) struct SpikeList<'a> {
    pub neurons: &'a mut CudaSlice<u32>,
    pub total: &'a mut CudaSlice<u32>,
}

/// One event-driven step: the recurrent input from the inboxes (or the gather over `w` where
/// an inbox overflowed, or for every neuron when `inboxes_valid` is false), the update, and
/// the neurons that spiked appended to `list` (whose length must be 0). `w` has a row per
/// neuron stepped and a column per neuron of the network (a GPU's share of the rows, when the
/// network is split), whose last flags `update.before` holds: `columns` of them.
pub(crate) fn event_step(
    device: &GpuDevice,
    kernels: &LifKernels,
    w: &DeviceCsr<f32>,
    inboxes: &mut Inboxes<'_>,
    inboxes_valid: bool,
    list: &mut SpikeList<'_>,
    (mut update, columns): (NeuronUpdate<'_>, usize),
) -> Result<()> {
    const WHAT: &str = "event-driven LIF step";
    let n = w.rows();
    let scalars = update.check(n)?;
    fits(update.before.len(), columns, WHAT)?;
    w.check_columns(columns, WHAT)?;
    if update.neurons.sequences != 1 {
        return Err(
            reservoir_core::ReservoirError::invalid(WHAT, "runs one sequence at a time").into(),
        );
    }
    fits(inboxes.out_values.len(), w.values.len(), WHAT)?;
    fits(inboxes.count.len(), n, WHAT)?;
    fits(
        inboxes.slots.len(),
        n.saturating_mul(inboxes.capacity),
        WHAT,
    )?;
    fits(list.neurons.len(), n, WHAT)?;
    fits(list.total.len(), 1, WHAT)?;
    let capacity = dim(inboxes.capacity, WHAT)?;
    let valid = i32::from(inboxes_valid);
    let mut launch = device.stream().launch_builder(&kernels.event_step);
    launch
        .arg(&w.row_ptr)
        .arg(&w.col_idx)
        .arg(&w.values)
        .arg(inboxes.out_values)
        .arg(&mut *inboxes.count)
        .arg(&*inboxes.slots)
        .arg(&capacity)
        .arg(&valid)
        .arg(&mut *list.neurons)
        .arg(&mut *list.total);
    update.push(&scalars, &mut launch);
    // SAFETY: as for gather_step, with every column of W < columns ≤ len(before) (checked);
    // in addition out_values holds nnz values and every inbox
    // entry is a synapse index < nnz written by the delivery; the counts hold n, the slots
    // n·capacity; the list holds n entries, enough for every neuron, and its length (one
    // u32) is 0 (zeroed by the last delivery or at allocation). The grid covers whole warps,
    // so every lane of a warp reaches the ballot.
    unsafe { launch.launch(per_item(n)?) }.context("launching lif_event_step_kernel")?;
    Ok(())
}

/// Delivers the spikes of `list` through `outgoing` (Wᵀ: row j = neuron j's targets, of
/// `targets` neurons: all, or a GPU's share) into the inboxes, `blocks` blocks of `threads`,
/// and zeroes `next_total`, the length of the list the next step appends to.
pub(crate) fn deliver(
    device: &GpuDevice,
    kernels: &LifKernels,
    outgoing: &DeviceCsr<f32>,
    list: &SpikeList<'_>,
    inboxes: &mut Inboxes<'_>,
    next_total: &mut CudaSlice<u32>,
    (blocks, threads, targets): (u32, u32, usize),
) -> Result<()> {
    const WHAT: &str = "LIF spike delivery";
    let n = outgoing.rows();
    fits(list.neurons.len(), n, WHAT)?;
    fits(list.total.len(), 1, WHAT)?;
    outgoing.check_columns(targets, WHAT)?;
    fits(inboxes.count.len(), targets, WHAT)?;
    fits(
        inboxes.slots.len(),
        targets.saturating_mul(inboxes.capacity),
        WHAT,
    )?;
    fits(next_total.len(), 1, WHAT)?;
    let capacity = dim(inboxes.capacity, WHAT)?;
    let mut launch = device.stream().launch_builder(&kernels.deliver);
    launch
        .arg(&outgoing.row_ptr)
        .arg(&outgoing.col_idx)
        .arg(&*list.neurons)
        .arg(&*list.total)
        .arg(&mut *inboxes.count)
        .arg(&mut *inboxes.slots)
        .arg(&capacity)
        .arg(next_total);
    let config = LaunchConfig {
        grid_dim: (blocks.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: Wᵀ's CSR has n rows (row j = targets of neuron j, all < targets (checked),
    // row_ptr ending at nnz < 2^31); the list holds *total ≤ n neuron indices < n (written
    // by a step or by flags_to_list); the counts hold targets values, the slots
    // targets·capacity, and slots ≥ capacity are not written; next_total is one u32 (checked
    // above).
    unsafe { launch.launch(config) }.context("launching lif_deliver_kernel")?;
    Ok(())
}

/// Sets `list` (its length must be 0) to the neurons whose flag is set among the first `n` of
/// `flags`: the spikes of every GPU's neurons, gathered, for the delivery of a network split
/// over GPUs.
pub(crate) fn flags_to_list(
    device: &GpuDevice,
    kernels: &LifKernels,
    flags: &CudaView<'_, u8>,
    n: usize,
    list: &mut SpikeList<'_>,
) -> Result<()> {
    const WHAT: &str = "listing the spikes";
    fits(flags.len(), n, WHAT)?;
    fits(list.neurons.len(), n, WHAT)?;
    fits(list.total.len(), 1, WHAT)?;
    let n_i = dim(n, WHAT)?;
    let mut launch = device.stream().launch_builder(&kernels.flags_to_list);
    launch
        .arg(flags)
        .arg(&n_i)
        .arg(&mut *list.neurons)
        .arg(&mut *list.total);
    // SAFETY: flags hold n values and the list n entries, enough for every neuron, its length
    // one u32 (0, as the caller ensures); the grid covers whole warps, so every lane of a
    // warp reaches the ballot; guarded i < n.
    unsafe { launch.launch(per_item(n)?) }.context("launching lif_flags_to_list")?;
    Ok(())
}
