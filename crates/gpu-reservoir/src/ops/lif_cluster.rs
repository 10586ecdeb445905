//! Launch plan for `lif_cluster.cu`: a whole event-driven LIF run of one sequence in one
//! thread-block cluster (sm_90 and later), one cluster barrier per step instead of two
//! launches: the state in registers, the inboxes in shared memory.

use cudarc::driver::{CudaFunction, CudaSlice};
use reservoir_core::lif::{LifConstants, LifFeatures};
use reservoir_kernels::lif_cluster;

use super::lif::{feature_code, Neurons};
use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{
    allow_large_clusters, clusters_available, dim, fits, ClusterLaunch, KernelArgs,
};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::Result;

/// The kernel of `lif_cluster.cu`.
#[derive(Debug)]
pub(crate) struct LifClusterKernels {
    run: CudaFunction,
}

impl KernelSet for LifClusterKernels {
    const MODULE: reservoir_kernels::Module = lif_cluster::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            run: module.function(lif_cluster::RUN)?,
        })
    }
}

/// Threads per block of the cluster run.
const THREADS: u32 = 1024;

/// Most neurons a cluster run takes: 16 blocks of 1024 threads, each keeping
/// `lif_cluster::PER_THREAD` neurons in registers.
pub(crate) const LIF_CLUSTER_MAX_NEURONS: usize = 16 * THREADS as usize * lif_cluster::PER_THREAD;

/// Fewest inbox entries a neuron keeps in shared memory; with fewer the plan is refused.
const MIN_SHARED_CAPACITY: usize = 2;

/// The plan of one network: the kernel, the cluster's shape and its shared inboxes.
#[derive(Debug)]
pub(crate) struct LifClusterPlan {
    function: CudaFunction,
    launch: ClusterLaunch,
    /// Neurons per block.
    per_block: usize,
    /// Inbox entries per neuron in shared memory.
    shared_capacity: usize,
}

/// The buffers and scalars of one cluster run of `steps` steps (see `lif_cluster.cu`).
pub(crate) struct LifClusterRun<'a> {
    pub recurrent: &'a DeviceCsr<f32>,
    pub outgoing: &'a DeviceCsr<f32>,
    pub inbox_count: &'a mut CudaSlice<u32>,
    pub inbox: &'a mut CudaSlice<u32>,
    pub capacity: usize,
    pub inbox_valid: bool,
    /// Last step's spike flags before the run (N).
    pub initial_flags: &'a CudaSlice<u8>,
    /// Every step's spike flags (steps × N).
    pub flags: &'a mut CudaSlice<u8>,
    pub input_by_channel: &'a CudaSlice<f32>,
    /// Every step's input (steps × K).
    pub u: &'a CudaSlice<f32>,
    pub k: usize,
    pub neurons: &'a mut Neurons,
    pub head: usize,
    pub constants: LifConstants,
    pub synaptic_input: bool,
    pub features_kind: LifFeatures,
    /// Every step's features (steps × N).
    pub features: &'a mut CudaSlice<f32>,
    pub steps: usize,
}

/// 4-byte words of shared memory per block: two inbox buffers (a count and `capacity` entries
/// of a synapse and its weight per neuron).
fn shared_words(per_block: usize, capacity: usize) -> usize {
    per_block * (2 + 4 * capacity)
}

/// Whether a cluster run of `n` neurons may be planned on `device` (compute capability 9.0 or
/// later with cluster launches, 0 < n ≤ [`LIF_CLUSTER_MAX_NEURONS`]), without loading the
/// kernel; whether the cluster can be resident is the plan's to find.
pub(crate) fn cluster_run_possible(device: &GpuDevice, n: usize) -> Result<bool> {
    Ok(n > 0 && n <= LIF_CLUSTER_MAX_NEURONS && clusters_available(device)?)
}

impl LifClusterPlan {
    /// A plan for a network of `n` neurons whose global inboxes hold `capacity` entries, or
    /// `None` when the device has no thread-block clusters (compute capability below 9.0),
    /// `n` exceeds [`LIF_CLUSTER_MAX_NEURONS`], or no cluster that holds it can be resident.
    pub(crate) fn for_network(
        device: &GpuDevice,
        n: usize,
        capacity: usize,
    ) -> Result<Option<Self>> {
        if !cluster_run_possible(device, n)? {
            return Ok(None);
        }
        let function = device.kernels::<LifClusterKernels>()?.run.clone();
        let max_blocks = allow_large_clusters(&function);
        let max_words = device.allow_shared_memory(&function)? / 4;
        // A power of two of blocks: a thread per neuron where 16 blocks allow it, else up to
        // PER_THREAD; halved while the device cannot hold the cluster. Each neuron's shared
        // inboxes take what the block's shared memory allows, up to the global capacity.
        let mut blocks = n
            .div_ceil(THREADS as usize)
            .next_power_of_two()
            .min(max_blocks as usize) as u32;
        while blocks >= 1 && (blocks * THREADS) as usize * lif_cluster::PER_THREAD >= n {
            let per_block = n.div_ceil(blocks as usize);
            let shared_capacity = ((max_words / per_block).saturating_sub(2) / 4).min(capacity);
            if shared_capacity >= MIN_SHARED_CAPACITY {
                let launch = ClusterLaunch {
                    blocks,
                    threads: THREADS,
                    shared_bytes: (4 * shared_words(per_block, shared_capacity)) as u32,
                };
                if launch.resident(device, &function)? > 0 {
                    return Ok(Some(Self {
                        function,
                        launch,
                        per_block,
                        shared_capacity,
                    }));
                }
            }
            blocks /= 2;
        }
        Ok(None)
    }

    /// Runs `run.steps` steps in one cluster launch.
    pub(crate) fn launch(&self, device: &GpuDevice, run: LifClusterRun<'_>) -> Result<()> {
        const WHAT: &str = "LIF cluster run";
        let n = run.recurrent.rows();
        let values = run.steps.saturating_mul(n);
        run.recurrent.check_columns(n, WHAT)?;
        run.outgoing.check_columns(n, WHAT)?;
        fits(run.outgoing.rows(), n, WHAT)?;
        fits(run.outgoing.values.len(), run.recurrent.values.len(), WHAT)?;
        fits(run.inbox_count.len(), n, WHAT)?;
        fits(run.inbox.len(), n.saturating_mul(run.capacity), WHAT)?;
        fits(run.initial_flags.len(), n, WHAT)?;
        fits(run.flags.len(), values, WHAT)?;
        fits(run.features.len(), values, WHAT)?;
        fits(run.u.len(), run.steps.saturating_mul(run.k), WHAT)?;
        fits(run.input_by_channel.len(), run.k.saturating_mul(n), WHAT)?;
        let ns = &*run.neurons;
        if ns.sequences != 1 {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                "runs one sequence at a time",
            )
            .into());
        }
        for len in [
            ns.v.len(),
            ns.i_syn.len(),
            ns.refractory.len(),
            ns.trace.len(),
            ns.counts.len(),
        ] {
            fits(len, n, WHAT)?;
        }
        fits(ns.window.len(), ns.window_steps.saturating_mul(n), WHAT)?;
        if run.head >= ns.window_steps {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                format!("window row {} of {}", run.head, ns.window_steps),
            )
            .into());
        }
        let c = run.constants;
        if run.capacity < self.shared_capacity
            || self.per_block * (self.launch.blocks as usize) < n
            || self.per_block > THREADS as usize * lif_cluster::PER_THREAD
        {
            return Err(reservoir_core::ReservoirError::invalid(
                WHAT,
                format!(
                    "a plan for another network ({n} neurons, capacity {})",
                    run.capacity
                ),
            )
            .into());
        }
        let args = KernelArgs::new()
            .buffer(&run.recurrent.row_ptr, device)
            .buffer(&run.recurrent.col_idx, device)
            .buffer(&run.recurrent.values, device)
            .buffer(&run.outgoing.row_ptr, device)
            .buffer(&run.outgoing.col_idx, device)
            .buffer(&run.outgoing.values, device)
            .buffer(&*run.inbox_count, device)
            .buffer(&*run.inbox, device)
            .int(dim(run.capacity, WHAT)?)
            .int(i32::from(run.inbox_valid))
            .int(dim(self.shared_capacity, WHAT)?)
            .int(dim(self.per_block, WHAT)?)
            .buffer(run.initial_flags, device)
            .buffer(&*run.flags, device)
            .buffer(run.input_by_channel, device)
            .buffer(run.u, device)
            .int(dim(run.k, WHAT)?)
            .buffer(&ns.v, device)
            .buffer(&ns.i_syn, device)
            .buffer(&ns.refractory, device)
            .buffer(&ns.trace, device)
            .buffer(&ns.counts, device)
            .buffer(&ns.window, device)
            .int(dim(run.head, WHAT)?)
            .int(dim(ns.window_steps, WHAT)?)
            .float(c.alpha_m)
            .float(c.alpha_syn)
            .float(c.alpha_trace)
            .float(c.drive_gain)
            .float(c.v_rest)
            .float(c.v_reset)
            .float(c.threshold)
            .float(c.bias)
            .int(dim(c.refractory_steps as usize, WHAT)?)
            .int(i32::from(run.synaptic_input))
            .int(feature_code(run.features_kind))
            .buffer(&*run.features, device)
            .int(dim(n, WHAT)?)
            .int(dim(run.steps, WHAT)?);
        // SAFETY: the arguments follow lif_event_cluster_run's signature in order and type
        // (the unsigned refractory_steps passed as its bits); W and Wᵀ are n×n CSR matrices
        // with the same synapse count, every column < n (checked); the inbox counts hold n
        // values and the slots n·capacity, with shared_capacity ≤ capacity; the flags and
        // features hold steps·n values, u steps·k, W_in k·n, the state n and the window
        // window_steps·n with head < window_steps (checked); one sequence; the grid is one
        // cluster of blocks·1024 threads, a multiple of 32, with blocks·per_block ≥ n and
        // per_block ≤ 1024·PER_THREAD (checked), and the dynamic shared memory is
        // shared_words(per_block, shared_capacity) u32, within the limit the plan was made
        // under.
        unsafe { self.launch.launch(device, &self.function, &args) }
    }
}
