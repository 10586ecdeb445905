//! Ridge sums on the device: XᵀX, XᵀY and ΣX of device-resident f32 states, in f64, without
//! copying the states to the host. The GPU reservoir's `accumulate_ridge` adds its states to
//! them, so a ridge fit on the GPU never moves states across the bus.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView};
use ndarray::{Array2, ArrayView2};
use reservoir_core::checks::check_targets;
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::ReservoirError;

use crate::driver::blas::{add_grams_f64, add_product_f64};
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::ops::ridge::{widen, RidgeKernels};

/// Running ridge sums of f32 states that live on the GPU, accumulated in f64 on the device.
///
/// The states of a call are `rows × (blocks·F)` (row-major): `blocks` independent reservoirs of
/// F units side by side (the lanes of a sweep; one block for a single reservoir), all with the
/// same targets. Each `add` widens the states to f64 on the device, adds XᵀX of every block
/// (one strided-batched DGEMM for all blocks) and Xᵀ[Y, 1] of all columns at once (one DGEMM:
/// XᵀY, and ΣX as the product with the column of ones); ΣY and ΣY² are summed on the host,
/// which holds the targets. [`DeviceRidgeSums::download`] copies the sums back once, as one
/// [`RidgeAccumulator`] per block; they equal the CPU's sums of the same f32 states to f64
/// rounding (the order of the additions differs).
///
/// One DGEMM for all blocks rather than a DSYRK per block: with hundreds of blocks the DSYRK
/// launches cost more than the lanes' recurrence, while the batched DGEMM does twice the
/// arithmetic in one launch on the tensor cores (docs/performance.md).
#[derive(Debug)]
pub struct DeviceRidgeSums {
    device: GpuDevice,
    features: usize,
    outputs: usize,
    blocks: usize,
    kernels: Arc<RidgeKernels>,
    /// XᵀX of each block: `blocks` F × F matrices (symmetric, so row- or column-major alike).
    gram: CudaSlice<f64>,
    /// Xᵀ[Y, 1] of every column: column-major (blocks·F) × (M + 1), the last column ΣX.
    cross: CudaSlice<f64>,
    /// The widened states of the latest `add`, kept to be reused by the next.
    widened: Option<CudaSlice<f64>>,
    /// The targets' shift s (the first row added), as `RidgeAccumulator` takes it: the sums
    /// are of y − s.
    target_shift: Vec<f64>,
    target_sums: Vec<f64>,
    target_squares: Vec<f64>,
    rows: usize,
}

impl DeviceRidgeSums {
    /// Empty sums for `blocks` reservoirs of `features` units each and `outputs` targets.
    ///
    /// # Errors
    /// An invalid-input error for zero features or blocks; the driver's error allocating the
    /// sums or compiling the widening kernel.
    pub fn new(device: &GpuDevice, features: usize, outputs: usize, blocks: usize) -> Result<Self> {
        if features == 0 || blocks == 0 {
            return Err(ReservoirError::invalid(
                "device ridge sums",
                format!("need at least one feature and one block, got {features} and {blocks}"),
            )
            .into());
        }
        let stream = device.stream();
        let width = blocks * features;
        Ok(Self {
            kernels: device.kernels::<RidgeKernels>()?,
            gram: stream
                .alloc_zeros(blocks * features * features)
                .context("allocating XᵀX")?,
            cross: stream
                .alloc_zeros(width * (outputs + 1))
                .context("allocating XᵀY")?,
            widened: None,
            device: device.clone(),
            features,
            outputs,
            blocks,
            target_shift: vec![0.0; outputs],
            target_sums: vec![0.0; outputs],
            target_squares: vec![0.0; outputs],
            rows: 0,
        })
    }

    /// Rows added so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds rows of states (`rows × (blocks·F)`, row-major, on the device; e.g. a row range
    /// of a chunk's states) with their targets (`rows × M`, on the host).
    ///
    /// # Errors
    /// A shape error when the states or the targets do not fit the sums, an invalid-input
    /// error naming the first target that is not finite or beyond ±`MAX_TARGET`, any driver or
    /// cuBLAS error.
    pub fn add(&mut self, states: &CudaView<'_, f32>, targets: ArrayView2<f64>) -> Result<()> {
        let (rows, width, m) = (targets.nrows(), self.blocks * self.features, self.outputs);
        if targets.ncols() != m || states.len() != rows * width {
            return Err(ReservoirError::shape(
                "device ridge sums",
                format!("states {rows} x {width} and targets {rows} x {m}"),
                format!(
                    "{} state values and targets {} x {}",
                    states.len(),
                    rows,
                    targets.ncols()
                ),
            )
            .into());
        }
        check_targets("device ridge sums", "targets", &targets)?;
        if rows == 0 {
            return Ok(());
        }
        let stream = self.device.stream().clone();
        let count = rows * width;
        let mut widened = match self.widened.take() {
            Some(buffer) if buffer.len() >= count => buffer,
            _ => stream
                .alloc_zeros::<f64>(count)
                .context("allocating the widened states")?,
        };
        widen(
            &self.device,
            &self.kernels,
            states,
            &mut widened.slice_mut(..),
            count,
        )?;
        if self.rows == 0 {
            self.target_shift = targets.row(0).to_vec();
        }
        // [Y − s, 1], column-major rows × (M + 1).
        let mut augmented = Vec::with_capacity(rows * (m + 1));
        for (column, &shift) in targets.columns().into_iter().zip(&self.target_shift) {
            augmented.extend(column.iter().map(|&y| y - shift));
        }
        augmented.extend(std::iter::repeat_n(1.0, rows));
        let augmented = stream
            .clone_htod(&augmented)
            .context("uploading the targets")?;
        let blas = self.device.blas()?;
        let f = self.features;
        let x = widened.slice(..count);
        add_grams_f64(
            blas,
            &x,
            width,
            &mut self.gram.slice_mut(..),
            (f, rows, self.blocks),
            "adding XᵀX on the device",
        )?;
        add_product_f64(
            blas,
            &x,
            width,
            &augmented.slice(..),
            &mut self.cross.slice_mut(..),
            (width, rows, m + 1),
            "adding XᵀY on the device",
        )?;
        self.widened = Some(widened);
        for row in targets.rows() {
            for (((s, q), v), shift) in self
                .target_sums
                .iter_mut()
                .zip(&mut self.target_squares)
                .zip(row)
                .zip(&self.target_shift)
            {
                let v = v - shift;
                *s += v;
                *q += v * v;
            }
        }
        self.rows += rows;
        Ok(())
    }

    /// Copies the sums back: one [`RidgeAccumulator`] per block, in order. Many blocks are
    /// assembled on all cores (a sweep of 256 lanes of 1000 units has 256 million sums each
    /// for training and validation).
    ///
    /// # Errors
    /// The driver's error copying, or [`RidgeAccumulator::from_sums`]'s when a sum is not
    /// finite (a state was not finite).
    pub fn download(&self) -> Result<Vec<RidgeAccumulator>> {
        let stream = self.device.stream();
        let gram = stream.clone_dtoh(&self.gram).context("copying XᵀX back")?;
        let cross = stream.clone_dtoh(&self.cross).context("copying XᵀY back")?;
        let (f, m, width) = (self.features, self.outputs, self.blocks * self.features);
        let assemble = |block: usize| -> Result<RidgeAccumulator> {
            let gram = ArrayView2::from_shape((f, f), &gram[block * f * f..(block + 1) * f * f])
                .map_err(|e| ReservoirError::invalid("device ridge sums", e))?;
            let column = |i: usize, k: usize| cross[block * f + i + k * width];
            let cross_block = Array2::from_shape_fn((f, m), |(i, k)| column(i, k));
            let feature_sums: Vec<f64> = (0..f).map(|i| column(i, m)).collect();
            Ok(RidgeAccumulator::from_sums(
                gram,
                cross_block.view(),
                &feature_sums,
                &self.target_shift,
                &self.target_sums,
                &self.target_squares,
                self.rows,
            )?)
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per_thread = self.blocks.div_ceil(threads.min(self.blocks));
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.blocks)
                .step_by(per_thread)
                .map(|first| {
                    let last = (first + per_thread).min(self.blocks);
                    scope.spawn(move || (first..last).map(assemble).collect::<Result<Vec<_>>>())
                })
                .collect();
            let mut blocks = Vec::with_capacity(self.blocks);
            for worker in workers {
                let assembled = worker.join().map_err(|_| {
                    ReservoirError::numerical(
                        "device ridge sums",
                        "a thread assembling the sums panicked",
                    )
                })??;
                blocks.extend(assembled);
            }
            Ok(blocks)
        })
    }
}
