//! One echo-state reservoir over several GPUs of one process: W's rows split into equal
//! shards, one per GPU, the state gathered onto every GPU after each step (NCCL all-gather).
//! It pays where a step is bound by reading W (a dense W of tens of thousands of units): each
//! GPU reads its share of W, and only the N-value state crosses between them.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use ndarray::{s, Array1, ArrayView1, ArrayView2, ArrayViewMut2};
use reservoir_core::checks::{check_run, check_state};
use reservoir_core::{Precision, Reservoir, ReservoirConfig, ReservoirError, ReservoirWeights};

use crate::collective::Collective;
use crate::driver::blas::product_row_major;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::ops::esn::{activation_code, elementwise, input_drive, EsnKernels, Update};
use crate::ops::persistent::ShardStep;

/// Bytes of states a chunk may hold on each GPU: the states of a chunk are gathered on every
/// GPU and copied back from the first once per chunk.
const CHUNK_BYTES: usize = 64 << 20;

/// Fewest units for which [`shards_pay`] splits a reservoir: a dense W of 8192 units ran 1.1×
/// faster split over two H100s (0.97× over two H200s), of 16,384 1.3–1.5× (docs/decisions.md, "Other thresholds").
pub const SHARD_MIN_SIZE: usize = 16_384;

/// Lowest connection probability for which [`shards_pay`] splits a reservoir. Every shard is
/// dense, while one GPU reads a sparse W in CSR: at 16,384 units on two H100s a W 50 %
/// connected ran 1.35× faster split, one 25 % connected 0.94× (docs/decisions.md, "Other thresholds").
pub(crate) const SHARD_MIN_DENSITY: f64 = 0.5;

/// Whether `config` runs faster split over `gpus` GPUs than on one: at least two GPUs, a
/// reservoir of at least 16,384 units with W at least half connected, and a config a [`ShardedReservoir`] runs (f32, no state noise).
pub fn shards_pay(config: &ReservoirConfig, gpus: usize) -> bool {
    gpus >= 2
        && config.size() >= SHARD_MIN_SIZE
        && config.connection_prob() >= SHARD_MIN_DENSITY
        && config.precision() == Precision::F32
        && config.noise_level() == 0.0
}

/// One GPU's part: its rows of W, W_in and b, and its copy of the whole state.
#[derive(Debug)]
struct Shard {
    device: GpuDevice,
    kernels: Arc<EsnKernels>,
    /// Its `rows` rows of W, dense and row-major over the padded width.
    w: CudaSlice<f32>,
    /// Its rows of W_in (rows × K, row-major).
    w_in: CudaSlice<f32>,
    /// Its entries of b.
    bias: CudaSlice<f32>,
    /// The chunk's inputs (steps × K).
    u: CudaSlice<f32>,
    /// The chunk's drive of its rows (steps × rows).
    drive: CudaSlice<f32>,
    /// W·x of its rows, this step.
    pre: CudaSlice<f32>,
    /// Its rows of the new state, this step.
    own: CudaSlice<f32>,
    /// The whole state (padded) before the chunk.
    state: CudaSlice<f32>,
    /// The whole state (padded) after each step of the chunk (steps × padded).
    states: CudaSlice<f32>,
    /// The fused step that streams the shard's rows, where x fits the shared memory; else
    /// one cuBLAS product and one elementwise launch.
    step: Option<ShardStep>,
}

impl Shard {
    /// Its new rows (to send) and the row `range` of its chunk's states (to receive the
    /// whole state in).
    fn gather_buffers(
        &mut self,
        range: std::ops::Range<usize>,
    ) -> (CudaView<'_, f32>, CudaViewMut<'_, f32>) {
        let Shard { own, states, .. } = self;
        let own: &CudaSlice<f32> = own;
        (own.slice(..), states.slice_mut(range))
    }
}

/// An echo-state reservoir whose W is split by rows over the GPUs of a [`Collective`] (f32, as
/// every GPU reservoir): the GPUs of this process, or one GPU in each process of a launch,
/// each process holding the shards of its own GPUs. The shards are equal (N rounded up to a
/// multiple of 4 × the GPU count with zero rows and columns, which stay zero); every GPU holds
/// the whole state after each step.
///
/// Each step launches, on every GPU, one kernel that streams its rows of W from HBM and
/// updates them (`esn_shard_dense_step`, a warp per row summing in a fixed order), then its
/// part of one all-gather; all are queued from one host thread, so the GPUs overlap without
/// threads of their own. A row's sum does not depend on the shard and the gather moves values
/// unchanged, so every GPU count gives the same states, bit for bit, and they equal
/// [`crate::GpuReservoirComputer`]'s to f32 rounding. Where the state does not fit a block's
/// shared memory, a step is one cuBLAS product and one elementwise launch instead.
#[derive(Debug)]
pub struct ShardedReservoir {
    collective: Collective,
    /// The shards of this process's GPUs, for ranks `first_rank..` of the collective.
    shards: Vec<Shard>,
    first_rank: usize,
    /// GPUs over all processes.
    world: usize,
    size: usize,
    input_size: usize,
    /// Rows per shard.
    rows: usize,
    /// Steps per chunk.
    chunk: usize,
    update: Update,
}

impl ShardedReservoir {
    /// The reservoir of `config` with `weights`, split over the GPUs of `collective`: this
    /// process builds the shards of its own ranks. Every process of a collective that spans
    /// several must build it from the same config and weights, and run the same inputs.
    ///
    /// # Errors
    /// Weights that do not match the config; a config asking for f64 or for state noise
    /// (neither runs sharded); any error of uploading the shards or compiling the kernels.
    pub fn new(
        config: &ReservoirConfig,
        weights: &ReservoirWeights,
        collective: Collective,
    ) -> Result<Self> {
        let (devices, ranks, world) =
            (collective.devices(), collective.ranks(), collective.world());
        if config.precision() == Precision::F64 {
            return Err(ReservoirError::invalid(
                "precision",
                "a sharded reservoir computes in f32; set precision = \"f32\"",
            )
            .into());
        }
        if config.noise_level() > 0.0 {
            return Err(ReservoirError::invalid(
                "noise_level",
                "a sharded reservoir runs without state noise; set noise_level = 0",
            )
            .into());
        }
        let (n, k) = (config.size(), config.input_size());
        if weights.size() != n || weights.input_size() != k {
            return Err(ReservoirError::shape(
                "sharded reservoir",
                format!("weights of {n} units and {k} inputs"),
                format!(
                    "{} units and {} inputs",
                    weights.size(),
                    weights.input_size()
                ),
            )
            .into());
        }
        // Rows of a multiple of 4 make every row whole 16-byte groups for the streamed step.
        let rows = n.div_ceil(world).next_multiple_of(4);
        let padded = rows * world;
        let chunk = (CHUNK_BYTES / (padded * 4)).clamp(1, crate::esn::CHUNK_STEPS);
        let csr = weights.recurrent();
        let (row_ptr, col_idx, values) = (csr.row_ptr(), csr.col_idx(), csr.values());
        let shards = devices
            .into_iter()
            .zip(ranks.clone())
            .map(|(device, rank)| {
                let first = rank * rows;
                let mut w = vec![0f32; rows * padded];
                let mut w_in = vec![0f32; rows * k];
                let mut bias = vec![0f32; rows];
                for local in 0..rows.min(n.saturating_sub(first)) {
                    let row = first + local;
                    let (start, end) = (row_ptr[row] as usize, row_ptr[row + 1] as usize);
                    for (&column, &value) in col_idx[start..end].iter().zip(&values[start..end]) {
                        w[local * padded + column as usize] = value as f32;
                    }
                    for (c, &value) in weights.input().row(row).iter().enumerate() {
                        w_in[local * k + c] = value as f32;
                    }
                    bias[local] = weights.bias()[row] as f32;
                }
                let stream = device.stream().clone();
                let upload = |host: &[f32], what: &'static str| {
                    stream
                        .clone_htod(host)
                        .alloc_context::<f32>(what, host.len())
                };
                let zeros = |len: usize, what: &'static str| {
                    stream
                        .alloc_zeros::<f32>(len.max(1))
                        .alloc_context::<f32>(what, len)
                };
                Ok(Shard {
                    step: ShardStep::for_columns(&device, padded)?,
                    kernels: device.kernels::<EsnKernels>()?,
                    w: upload(&w, "uploading a shard of W")?,
                    w_in: upload(&w_in, "uploading a shard of W_in")?,
                    bias: upload(&bias, "uploading a shard of b")?,
                    u: zeros(chunk * k, "allocating the chunk's inputs")?,
                    drive: zeros(chunk * rows, "allocating the chunk's drive")?,
                    pre: zeros(rows, "allocating a shard's product")?,
                    own: zeros(rows, "allocating a shard's state")?,
                    state: zeros(padded, "allocating the state")?,
                    states: zeros(chunk * padded, "allocating the chunk's states")?,
                    device,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            collective,
            shards,
            first_rank: ranks.start,
            world,
            size: n,
            input_size: k,
            rows,
            chunk,
            update: Update {
                leak: config.leak_rate() as f32,
                activation: activation_code(config.activation()),
            },
        })
    }

    /// The GPUs the reservoir is split over.
    pub fn devices(&self) -> Vec<GpuDevice> {
        self.collective.devices()
    }

    /// Runs `inputs` (steps × K, at most a chunk) from each shard's `state`, leaving every
    /// step's whole state in each shard's `states` and the last in `state`.
    fn run_chunk(&mut self, inputs: &[f32], steps: usize) -> Result<()> {
        let (rows, k) = (self.rows, self.input_size);
        let padded = rows * self.world;
        for shard in &mut self.shards {
            let stream = shard.device.stream().clone();
            stream
                .memcpy_htod(inputs, &mut shard.u.slice_mut(..steps * k))
                .context("uploading the chunk's inputs")?;
            input_drive(
                &shard.device,
                &shard.kernels,
                &shard.u.slice(..steps * k),
                None,
                &shard.w_in.slice(..),
                &shard.bias.slice(..),
                None,
                &mut shard.drive.slice_mut(..steps * rows),
                (steps, rows, k),
            )?;
        }
        for t in 0..steps {
            for (rank, shard) in (self.first_rank..).zip(self.shards.iter_mut()) {
                let previous = if t == 0 {
                    shard.state.slice(..)
                } else {
                    shard.states.slice((t - 1) * padded..t * padded)
                };
                let drive_t = shard.drive.slice(t * rows..(t + 1) * rows);
                match &shard.step {
                    Some(step) => step.launch(
                        &shard.device,
                        &shard.w.slice(..),
                        &drive_t,
                        &previous,
                        &mut shard.own.slice_mut(..),
                        (rows, padded, rank * rows),
                        self.update,
                    )?,
                    None => {
                        product_row_major(
                            shard.device.blas()?,
                            &shard.w.slice(..),
                            &previous,
                            &mut shard.pre.slice_mut(..),
                            (rows, padded, 1),
                            "the product of a shard of W",
                        )?;
                        elementwise(
                            &shard.device,
                            &shard.kernels,
                            &shard.pre.slice(..),
                            &drive_t,
                            &previous.slice(rank * rows..(rank + 1) * rows),
                            &mut shard.own.slice_mut(..),
                            None,
                            rows,
                            self.update,
                        )?;
                    }
                }
            }
            let (sends, mut targets): (Vec<_>, Vec<_>) = self
                .shards
                .iter_mut()
                .map(|shard| shard.gather_buffers(t * padded..(t + 1) * padded))
                .unzip();
            self.collective.all_gather(&sends, &mut targets)?;
        }
        for shard in &mut self.shards {
            let stream = shard.device.stream().clone();
            stream
                .memcpy_dtod(
                    &shard.states.slice((steps - 1) * padded..steps * padded),
                    &mut shard.state,
                )
                .context("keeping the chunk's last state")?;
        }
        Ok(())
    }
}

impl Reservoir for ShardedReservoir {
    fn size(&self) -> usize {
        self.size
    }

    fn input_size(&self) -> usize {
        self.input_size
    }

    fn reset(&mut self) -> reservoir_core::Result<()> {
        for shard in &mut self.shards {
            shard
                .device
                .stream()
                .memset_zeros(&mut shard.state)
                .context("resetting the state")?;
        }
        Ok(())
    }

    fn state(&self) -> reservoir_core::Result<Array1<f64>> {
        let first = self
            .shards
            .first()
            .ok_or_else(|| ReservoirError::invalid("sharded reservoir", "it has no GPU"))?;
        let host = first
            .device
            .stream()
            .clone_dtoh(&first.state)
            .context("copying the state back")?;
        Ok(host[..self.size].iter().map(|&v| f64::from(v)).collect())
    }

    fn set_state(&mut self, state: ArrayView1<f64>) -> reservoir_core::Result<()> {
        check_state(self.size, &state)?;
        let mut host = vec![0f32; self.rows * self.world];
        for (d, &v) in host.iter_mut().zip(state.iter()) {
            *d = v as f32;
        }
        for shard in &mut self.shards {
            shard
                .device
                .stream()
                .memcpy_htod(&host, &mut shard.state)
                .context("uploading the state")?;
        }
        Ok(())
    }

    fn run_into(
        &mut self,
        inputs: ArrayView2<f64>,
        mut states: ArrayViewMut2<f64>,
    ) -> reservoir_core::Result<()> {
        check_run(self.size, self.input_size, &inputs, &states)?;
        let padded = self.rows * self.world;
        let mut first = 0;
        while first < inputs.nrows() {
            let steps = self.chunk.min(inputs.nrows() - first);
            let chunk: Vec<f32> = inputs
                .slice(s![first..first + steps, ..])
                .iter()
                .map(|&v| v as f32)
                .collect();
            self.run_chunk(&chunk, steps)?;
            let shard = self
                .shards
                .first()
                .ok_or_else(|| ReservoirError::invalid("sharded reservoir", "it has no GPU"))?;
            let host = shard
                .device
                .stream()
                .clone_dtoh(&shard.states.slice(..steps * padded))
                .context("copying the chunk's states back")?;
            for (t, mut row) in states
                .slice_mut(s![first..first + steps, ..])
                .rows_mut()
                .into_iter()
                .enumerate()
            {
                for (d, &v) in row.iter_mut().zip(&host[t * padded..]) {
                    *d = f64::from(v);
                }
            }
            first += steps;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_large_dense_noiseless_f32_reservoir_on_several_gpus_is_split() {
        let config = |size: usize, density: f64, noise: f64, precision: Precision| {
            ReservoirConfig::default()
                .to_params()
                .size(size)
                .connection_prob(density)
                .noise_level(noise)
                .precision(precision)
                .check()
                .expect("config")
        };
        let large = config(SHARD_MIN_SIZE, 1.0, 0.0, Precision::F32);
        assert!(shards_pay(&large, 2));
        assert!(!shards_pay(&large, 1));
        assert!(!shards_pay(
            &config(SHARD_MIN_SIZE - 1, 1.0, 0.0, Precision::F32),
            2
        ));
        assert!(!shards_pay(
            &config(SHARD_MIN_SIZE, 0.25, 0.0, Precision::F32),
            2
        ));
        assert!(!shards_pay(
            &config(SHARD_MIN_SIZE, 1.0, 0.01, Precision::F32),
            2
        ));
        assert!(!shards_pay(
            &config(SHARD_MIN_SIZE, 1.0, 0.0, Precision::F64),
            2
        ));
    }
}
