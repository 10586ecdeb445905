//! A LIF network split over the GPUs of a [`Collective`] by postsynaptic neuron: each GPU
//! steps its share of the neurons event-driven, the spike flags of every share are gathered
//! to every GPU each step (NCCL), and each GPU delivers every spike to its own neurons.

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use ndarray::{s, Array1, ArrayView1, ArrayView2, ArrayViewMut2};
use reservoir_core::checks::check_run;
use reservoir_core::lif::{LifConfig, LifConstants, LifInputMode, LifWeights};
use reservoir_core::{CsrMatrix, Reservoir, ReservoirError};

use super::{check_finite, chunk_steps, DELIVER_THREADS, LIF_INBOX_CAPACITY};
use crate::collective::Collective;
use crate::driver::csr::DeviceCsr;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::ops::csr::transposed_on_device;
use crate::ops::lif::{
    deliver, event_step, flags_to_list, Inboxes, LifKernels, NeuronUpdate, Neurons, SpikeList,
};

/// One GPU's share of the neurons, `first..first + count`, and what it needs to step them.
#[derive(Debug)]
struct LifShard {
    device: GpuDevice,
    kernels: Arc<LifKernels>,
    count: usize,
    /// Its neurons' rows of W (every presynaptic neuron as a column).
    recurrent: DeviceCsr<f32>,
    /// Wᵀ restricted to its neurons: row j = neuron j's targets among them (local indices,
    /// ascending, so ascending synapse index is ascending j at a target, as on one GPU).
    outgoing: DeviceCsr<f32>,
    inbox_count: CudaSlice<u32>,
    inbox: CudaSlice<u32>,
    /// The list the step appends its own spikes to (the delivery walks `spikes`).
    own_list: CudaSlice<u32>,
    own_total: CudaSlice<u32>,
    /// Every neuron that spiked last step, from the gathered flags, and its length.
    spikes: CudaSlice<u32>,
    spikes_total: CudaSlice<u32>,
    /// Its neurons' new spike flags (`rows`, padded), sent to the gather.
    own_flags: CudaSlice<u8>,
    /// Every neuron's flags of the last step and of this one (`rows × world` each).
    flags: [CudaSlice<u8>; 2],
    input_by_channel: CudaSlice<f32>,
    neurons: Neurons,
    /// A chunk's inputs (steps × K) and its neurons' features (steps × count).
    u: CudaSlice<f32>,
    features: CudaSlice<f32>,
    deliver_blocks: u32,
}

/// A current-based LIF network split by postsynaptic neuron over the GPUs of a
/// [`Collective`] (of this process, or one GPU per process of a launch, each process holding
/// its own shares), always event-driven.
///
/// Each step: on every GPU, the event-driven step of its neurons (their recurrent input from
/// the inboxes the last delivery filled), then an all-gather of every share's spike flags,
/// then on every GPU a list of every neuron that spiked and its delivery to that GPU's
/// neurons. A neuron's synapses are added in ascending presynaptic order on every GPU, as on
/// one, so the spikes and features are [`crate::GpuLifNetwork`]'s event-driven ones, bit for
/// bit, for any number of GPUs.
#[derive(Debug)]
pub struct ShardedLifNetwork {
    collective: Collective,
    shards: Vec<LifShard>,
    config: LifConfig,
    constants: LifConstants,
    /// Neurons per share (the last may hold fewer real ones).
    rows: usize,
    world: usize,
    first_rank: usize,
    chunk: usize,
    /// The window row that holds the oldest step.
    head: usize,
    /// Which of each shard's `flags` holds the last step's spikes.
    parity: usize,
}

impl ShardedLifNetwork {
    /// The network of `config` with `weights`, split over the GPUs of `collective`: this
    /// process builds the shares of its own ranks. Every process of a collective that spans
    /// several must build it from the same config and weights and run the same inputs.
    ///
    /// # Errors
    /// Weights that do not fit the config; any error of uploading or compiling the kernels.
    pub fn new(config: &LifConfig, weights: &LifWeights, collective: Collective) -> Result<Self> {
        weights.check_fits(config)?;
        let n = config.size();
        let (ranks, world) = (collective.ranks(), collective.world());
        let rows = n.div_ceil(world);
        let chunk = chunk_steps(rows);
        // Wᵀ on the host, made only for a share its GPU cannot transpose.
        let mut outgoing = None;
        let shards = collective
            .devices()
            .into_iter()
            .zip(ranks.clone())
            .map(|(device, rank)| {
                let first = (rank * rows).min(n);
                let count = rows.min(n - first);
                LifShard::new(
                    &device,
                    config,
                    weights,
                    &mut outgoing,
                    (first, count, rows, world),
                    chunk,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            first_rank: ranks.start,
            collective,
            shards,
            constants: LifConstants::new(config),
            config: config.clone(),
            rows,
            world,
            chunk,
            head: 0,
            parity: 0,
        })
    }

    /// The GPUs of this process the network is split over.
    pub fn devices(&self) -> Vec<GpuDevice> {
        self.collective.devices()
    }

    /// Steps per chunk: the most one [`ShardedLifNetwork::upload_chunk`] takes.
    #[cfg(feature = "internals")]
    pub(crate) fn chunk_steps(&self) -> usize {
        self.chunk
    }

    /// Uploads a chunk's inputs (at most [`ShardedLifNetwork::chunk_steps`] rows of K) to
    /// every shard's device.
    pub(crate) fn upload_chunk(&mut self, inputs: ArrayView2<f64>) -> Result<()> {
        let k = self.config.input_size();
        if inputs.nrows() > self.chunk || inputs.ncols() != k {
            return Err(ReservoirError::shape(
                "a chunk's LIF inputs",
                format!("at most {} rows x {k}", self.chunk),
                format!("{} x {}", inputs.nrows(), inputs.ncols()),
            )
            .into());
        }
        let host: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
        for shard in &mut self.shards {
            shard
                .device
                .stream()
                .memcpy_htod(&host, &mut shard.u.slice_mut(..host.len()))
                .context("uploading inputs")?;
        }
        Ok(())
    }

    /// Waits until every shard's device has finished what was queued.
    #[cfg(feature = "internals")]
    pub(crate) fn synchronize(&self) -> Result<()> {
        for shard in &self.shards {
            shard
                .device
                .stream()
                .synchronize()
                .context("waiting for the steps")?;
        }
        Ok(())
    }

    /// Runs `steps` steps of the chunk's inputs (already on every shard's device), leaving
    /// each shard's features in its `features`.
    pub(crate) fn run_chunk(&mut self, steps: usize) -> Result<()> {
        let k = self.config.input_size();
        let synaptic_input = self.config.input_mode() == LifInputMode::Synaptic;
        let padded = self.rows * self.world;
        for t in 0..steps {
            let (before, now) = (self.parity, 1 - self.parity);
            for shard in &mut self.shards {
                let count = shard.count;
                let LifShard {
                    device,
                    kernels,
                    recurrent,
                    outgoing,
                    inbox_count,
                    inbox,
                    own_list,
                    own_total,
                    own_flags,
                    flags,
                    input_by_channel,
                    neurons,
                    u,
                    features,
                    ..
                } = shard;
                let update = NeuronUpdate {
                    before: flags[before].slice(..),
                    now: own_flags.slice_mut(..count),
                    input_by_channel,
                    u_t: u.slice(t * k..(t + 1) * k),
                    neurons,
                    head: self.head,
                    constants: self.constants,
                    synaptic_input,
                    features: self.config.features(),
                    features_t: features.slice_mut(t * count..(t + 1) * count),
                };
                let mut inboxes = Inboxes {
                    out_values: &outgoing.values,
                    count: inbox_count,
                    slots: inbox,
                    capacity: LIF_INBOX_CAPACITY,
                };
                let mut list = SpikeList {
                    neurons: own_list,
                    total: own_total,
                };
                // The step's own list is not delivered; the delivery below empties it for
                // the next step.
                event_step(
                    device,
                    kernels,
                    recurrent,
                    &mut inboxes,
                    // Every step is event-driven, so the inboxes always hold the last step's
                    // spikes (none before the first).
                    true,
                    &mut list,
                    (update, padded),
                )?;
            }
            {
                let (sends, mut receives): (Vec<_>, Vec<_>) = self
                    .shards
                    .iter_mut()
                    .map(|shard| {
                        let [first, second] = &mut shard.flags;
                        let target = if now == 0 { first } else { second };
                        (shard.own_flags.slice(..), target.slice_mut(..))
                    })
                    .unzip();
                self.collective.all_gather(&sends, &mut receives)?;
            }
            for shard in &mut self.shards {
                let stream = shard.device.stream().clone();
                stream
                    .memset_zeros(&mut shard.spikes_total)
                    .context("emptying the spike list")?;
                let mut spikes = SpikeList {
                    neurons: &mut shard.spikes,
                    total: &mut shard.spikes_total,
                };
                flags_to_list(
                    &shard.device,
                    &shard.kernels,
                    &shard.flags[now].slice(..),
                    padded,
                    &mut spikes,
                )?;
                let mut inboxes = Inboxes {
                    out_values: &shard.outgoing.values,
                    count: &mut shard.inbox_count,
                    slots: &mut shard.inbox,
                    capacity: LIF_INBOX_CAPACITY,
                };
                deliver(
                    &shard.device,
                    &shard.kernels,
                    &shard.outgoing,
                    &spikes,
                    &mut inboxes,
                    &mut shard.own_total,
                    (shard.deliver_blocks, DELIVER_THREADS, shard.count),
                )?;
            }
            self.parity = now;
            self.head = (self.head + 1) % self.config.count_window_steps();
        }
        Ok(())
    }

    fn reset_state(&mut self) -> Result<()> {
        for shard in &mut self.shards {
            shard.reset(&self.config)?;
        }
        (self.head, self.parity) = (0, 0);
        Ok(())
    }
}

impl LifShard {
    /// The share `first..first + count` of the network, whose shares hold `rows` neurons each
    /// over `world` GPUs (flags of rows·world neurons), on `device`, for chunks of up to
    /// `chunk` steps.
    fn new(
        device: &GpuDevice,
        config: &LifConfig,
        weights: &LifWeights,
        outgoing: &mut Option<CsrMatrix<f32>>,
        (first, count, rows, world): (usize, usize, usize, usize),
        chunk: usize,
    ) -> Result<Self> {
        let (n, k, padded) = (config.size(), config.input_size(), rows * world);
        let s = device.stream();
        let what = "allocating a LIF share";
        // W's rows of the share, every column kept (sources up to `padded`).
        let recurrent = DeviceCsr::upload_rows(
            device,
            weights.recurrent(),
            first..first + count,
            padded,
            |v| v as f32,
        )?;
        // Wᵀ's synapses onto the share are the transpose of its rows of W (sources by local
        // target), built on the GPU; from the host's Wᵀ where it cannot.
        let outgoing = match transposed_on_device(device, &recurrent)? {
            Some((transposed, _)) => transposed,
            None => {
                let outgoing = match outgoing {
                    Some(outgoing) => outgoing,
                    None => outgoing.insert(weights.outgoing_f32()?),
                };
                let share = share_of_outgoing(outgoing, (first, count), padded, n)?;
                DeviceCsr::upload_exact(device, &share)?
            }
        };
        let input = weights.input();
        let input_by_channel: Vec<f32> = (0..k)
            .flat_map(|c| (first..first + count).map(move |i| (c, i)))
            .map(|(c, i)| input[(i, c)] as f32)
            .collect();
        let lists = |len: usize| s.alloc_zeros::<u32>(len.max(1)).context(what);
        Ok(Self {
            kernels: device.kernels::<LifKernels>()?,
            count,
            recurrent,
            outgoing,
            inbox_count: lists(count)?,
            inbox: lists(count * LIF_INBOX_CAPACITY)?,
            own_list: lists(count)?,
            own_total: lists(1)?,
            spikes: lists(padded)?,
            spikes_total: lists(1)?,
            own_flags: s.alloc_zeros::<u8>(rows.max(1)).context(what)?,
            flags: [
                s.alloc_zeros::<u8>(padded).context(what)?,
                s.alloc_zeros::<u8>(padded).context(what)?,
            ],
            input_by_channel: s
                .clone_htod(&input_by_channel)
                .context("uploading a share of W_in")?,
            neurons: Neurons::at_rest(s, config, count, 1)?,
            u: s.alloc_zeros::<f32>((chunk * k).max(1)).context(what)?,
            features: s.alloc_zeros::<f32>((chunk * count).max(1)).context(what)?,
            deliver_blocks: (2 * device.info().multiprocessors.max(1)) as u32,
            device: device.clone(),
        })
    }

    /// Back to rest: the state, the flags, the inboxes and the lists.
    fn reset(&mut self, config: &LifConfig) -> Result<()> {
        let s = self.device.stream().clone();
        let what = "resetting a LIF share";
        self.neurons = Neurons::at_rest(&s, config, self.count, 1)?;
        for flags in &mut self.flags {
            s.memset_zeros(flags).context(what)?;
        }
        s.memset_zeros(&mut self.inbox_count).context(what)?;
        s.memset_zeros(&mut self.own_total).context(what)?;
        s.memset_zeros(&mut self.spikes_total).context(what)
    }
}

impl Reservoir for ShardedLifNetwork {
    fn size(&self) -> usize {
        self.config.size()
    }

    fn input_size(&self) -> usize {
        self.config.input_size()
    }

    fn reset(&mut self) -> reservoir_core::Result<()> {
        Ok(self.reset_state()?)
    }

    /// The state [`crate::GpuLifNetwork`] reports (the features' quantity), of the neurons of
    /// this process's shares (all of them unless the network spans processes).
    fn state(&self) -> reservoir_core::Result<Array1<f64>> {
        let mut state = Vec::with_capacity(self.config.size());
        for shard in &self.shards {
            let values = shard
                .neurons
                .reported(shard.device.stream(), self.config.features())?;
            state.extend(values.into_iter().map(f64::from));
        }
        Ok(Array1::from(state))
    }

    fn set_state(&mut self, _state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        Err(ReservoirError::invalid(
            "LIF network split over GPUs",
            "its state cannot be set; reset it or run it on one GPU",
        ))
    }

    /// Features of every neuron (N per step) where this process holds every share; where the
    /// network spans processes, the columns of other processes' neurons are left as they were.
    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        check_run(
            self.config.size(),
            self.config.input_size(),
            &inputs,
            &states,
        )?;
        check_finite(&inputs)?;
        for start in (0..inputs.nrows()).step_by(self.chunk) {
            let end = (start + self.chunk).min(inputs.nrows());
            let steps = end - start;
            self.upload_chunk(inputs.slice(s![start..end, ..]))?;
            self.run_chunk(steps)?;
            for (rank, shard) in (self.first_rank..).zip(&self.shards) {
                let features = shard
                    .device
                    .stream()
                    .clone_dtoh(&shard.features.slice(..steps * shard.count))
                    .context("copying the features back")?;
                let first = rank * self.rows;
                let mut block = states.slice_mut(s![start..end, first..first + shard.count]);
                for (dst, &src) in block.iter_mut().zip(&features) {
                    *dst = f64::from(src);
                }
            }
        }
        Ok(())
    }
}

/// Wᵀ's synapses onto the neurons `first..first + count` (a share of `padded` sources, the
/// first `n` real), their targets counted from `first`: each source's targets are ascending,
/// so those in the share are one run of them.
fn share_of_outgoing(
    outgoing: &CsrMatrix<f32>,
    (first, count): (usize, usize),
    padded: usize,
    n: usize,
) -> Result<CsrMatrix<f32>> {
    let (out_ptr, out_targets, out_values) =
        (outgoing.row_ptr(), outgoing.col_idx(), outgoing.values());
    let mut ptr = Vec::with_capacity(padded + 1);
    let (mut targets, mut kept) = (Vec::new(), Vec::new());
    ptr.push(0u32);
    for source in 0..padded {
        if source < n {
            let (a, b) = (out_ptr[source] as usize, out_ptr[source + 1] as usize);
            let row = &out_targets[a..b];
            let lo = a + row.partition_point(|&t| (t as usize) < first);
            let hi = a + row.partition_point(|&t| (t as usize) < first + count);
            targets.extend(out_targets[lo..hi].iter().map(|&t| t - first as u32));
            kept.extend_from_slice(&out_values[lo..hi]);
        }
        ptr.push(u32::try_from(targets.len()).map_err(|_| {
            ReservoirError::invalid("LIF share", "more than 2^32 - 1 synapses onto one GPU")
        })?);
    }
    Ok(CsrMatrix::from_parts(
        padded,
        count.max(1),
        ptr,
        targets,
        kept,
    )?)
}
