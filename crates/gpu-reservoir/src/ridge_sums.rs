//! Ridge sums on the device: XᵀX, XᵀY and ΣX of device-resident f32 states, in f64, without
//! copying the states to the host. The GPU reservoir's `accumulate_ridge` adds its states to
//! them, so a ridge fit on the GPU never moves states across the bus.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use reservoir_core::checks::check_targets;
use reservoir_core::readout::{RidgeAccumulator, TargetSums};
use reservoir_core::{Par, ReservoirError};

use crate::collective::Collective;
use crate::driver::blas::{add_grams_f64, add_product_f64};
use crate::driver::{staging, GpuDevice};
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
/// arithmetic in one launch on the tensor cores (docs/decisions.md, "Measured and not kept").
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
    /// The targets' shift s (the first row added, unless given), as `RidgeAccumulator` takes
    /// it: the sums are of y − s.
    target_shift: Vec<f64>,
    /// Whether the shift was given ([`DeviceRidgeSums::with_target_shift`]) rather than taken
    /// from the first row.
    shift_given: bool,
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
            shift_given: false,
            target_sums: vec![0.0; outputs],
            target_squares: vec![0.0; outputs],
            rows: 0,
        })
    }

    /// Rows added so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Features F of each block.
    pub fn features(&self) -> usize {
        self.features
    }

    /// Outputs M.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Blocks (reservoirs side by side).
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// The target side of the sums: the shift and the sums of the shifted targets.
    pub fn targets(&self) -> TargetSums<'_> {
        TargetSums {
            rows: self.rows,
            shift: &self.target_shift,
            sums: &self.target_sums,
            squares: &self.target_squares,
        }
    }

    pub(crate) fn device(&self) -> &GpuDevice {
        &self.device
    }

    pub(crate) fn kernels(&self) -> &RidgeKernels {
        &self.kernels
    }

    /// XᵀX of each block, F × F at b·F².
    pub(crate) fn gram(&self) -> &CudaSlice<f64> {
        &self.gram
    }

    /// Xᵀ[Y, 1], column-major (blocks·F) × (M + 1).
    pub(crate) fn cross(&self) -> &CudaSlice<f64> {
        &self.cross
    }

    /// Takes the targets' shift from `shift` (M values) rather than from the first row added.
    /// Sums that are to be added together ([`DeviceRidgeSums::all_reduce`]) need the same
    /// shift, and a GPU's sums may not see the first row of the whole fit.
    ///
    /// # Errors
    /// A shape error when `shift` does not have M values, an invalid-input error when one is
    /// not finite or rows were added already.
    pub fn with_target_shift(mut self, shift: &[f64]) -> Result<Self> {
        if shift.len() != self.outputs {
            return Err(ReservoirError::shape(
                "device ridge sums",
                format!("a target shift of {} values", self.outputs),
                format!("{} values", shift.len()),
            )
            .into());
        }
        if self.rows > 0 || shift.iter().any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(
                "device ridge sums",
                "the target shift must be finite and given before any rows",
            )
            .into());
        }
        self.target_shift = shift.to_vec();
        self.shift_given = true;
        Ok(self)
    }

    /// An error unless `rows` rows of `width` values and `targets` fit the sums.
    fn check_rows(&self, values: usize, targets: &ArrayView2<f64>) -> Result<()> {
        let (rows, width, m) = (targets.nrows(), self.blocks * self.features, self.outputs);
        if targets.ncols() != m || values != rows * width {
            return Err(ReservoirError::shape(
                "device ridge sums",
                format!("states {rows} x {width} and targets {rows} x {m}"),
                format!(
                    "{} state values and targets {} x {}",
                    values,
                    rows,
                    targets.ncols()
                ),
            )
            .into());
        }
        Ok(check_targets("device ridge sums", "targets", targets)?)
    }

    /// Adds rows of states (`rows × (blocks·F)`, row-major, on the device; e.g. a row range
    /// of a chunk's states) with their targets (`rows × M`, on the host).
    ///
    /// # Errors
    /// A shape error when the states or the targets do not fit the sums, an invalid-input
    /// error naming the first target that is not finite or beyond ±`MAX_TARGET`, any driver or
    /// cuBLAS error.
    pub fn add(&mut self, states: &CudaView<'_, f32>, targets: ArrayView2<f64>) -> Result<()> {
        self.check_rows(states.len(), &targets)?;
        let count = states.len();
        if count == 0 {
            return Ok(());
        }
        let mut widened = match self.widened.take() {
            Some(buffer) if buffer.len() >= count => buffer,
            _ => self
                .device
                .stream()
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
        let added = self.add_widened(&widened.slice(..count), targets);
        self.widened = Some(widened);
        added
    }

    /// Adds rows of f64 features that are on the host (`rows × (blocks·F)`): the features of
    /// whole sequences, say, which a GPU computed and the host holds.
    ///
    /// # Errors
    /// As [`DeviceRidgeSums::add`]; an invalid-input error naming the first feature that is
    /// not finite.
    pub fn add_host(&mut self, rows: ArrayView2<f64>, targets: ArrayView2<f64>) -> Result<()> {
        self.check_rows(rows.len(), &targets)?;
        if rows.is_empty() {
            return Ok(());
        }
        let copied;
        let values = match rows.as_slice() {
            Some(values) => values,
            None => {
                copied = rows.iter().copied().collect::<Vec<f64>>();
                &copied
            }
        };
        if let Some(at) = values.par_iter().position_first(|v| !v.is_finite()) {
            let width = rows.ncols();
            return Err(ReservoirError::invalid(
                "device ridge sums",
                format!("feature ({}, {}) is not finite", at / width, at % width),
            )
            .into());
        }
        let uploaded = staging::upload(&self.device, values, "uploading features")?;
        self.add_widened(&uploaded.slice(..), targets)
    }

    /// Adds f64 rows already on the device (checked by the caller) with their targets.
    fn add_widened(&mut self, x: &CudaView<'_, f64>, targets: ArrayView2<f64>) -> Result<()> {
        let (rows, width, m) = (targets.nrows(), self.blocks * self.features, self.outputs);
        let stream = self.device.stream().clone();
        if self.rows == 0 && !self.shift_given {
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
        add_grams_f64(
            blas,
            x,
            width,
            &mut self.gram.slice_mut(..),
            (f, rows, self.blocks),
            "adding XᵀX on the device",
        )?;
        add_product_f64(
            blas,
            x,
            width,
            &augmented.slice(..),
            &mut self.cross.slice_mut(..),
            (width, rows, m + 1),
            "adding XᵀY on the device",
        )?;
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

    /// Adds the sums of every rank of `collective` together (one all-reduce of XᵀX, one of
    /// Xᵀ[Y, 1] and one of the targets' sums and the row count, in f64): `sums` holds this
    /// process's, one per member of the collective, each on its member's GPU. Afterwards every
    /// rank holds the sums of all rows, as one set of sums that saw them all would (to f64
    /// rounding: the order of the additions differs).
    ///
    /// # Errors
    /// Sums of different shapes or shifts, sums whose shift was not given
    /// ([`DeviceRidgeSums::with_target_shift`]), the wrong number of sums; any driver or
    /// NCCL error.
    pub fn all_reduce(
        sums: &mut [&mut DeviceRidgeSums],
        collective: &mut Collective,
    ) -> Result<()> {
        let Some(first) = sums.first() else {
            return Err(ReservoirError::invalid("device ridge sums", "no sums to add").into());
        };
        let shape = (first.features, first.outputs, first.blocks);
        let shift = first.target_shift.clone();
        if sums.iter().any(|s| {
            !s.shift_given || (s.features, s.outputs, s.blocks) != shape || s.target_shift != shift
        }) {
            return Err(ReservoirError::invalid(
                "device ridge sums",
                "sums added over GPUs need the same shape and a given, equal target shift",
            )
            .into());
        }
        let mut hosts = sums
            .iter()
            .map(|s| {
                let mut values = s.target_sums.clone();
                values.extend(&s.target_squares);
                values.push(s.rows as f64);
                s.device
                    .stream()
                    .clone_htod(&values)
                    .context("uploading the targets' sums")
            })
            .collect::<Result<Vec<_>>>()?;
        {
            let mut grams: Vec<&mut CudaSlice<f64>> =
                sums.iter_mut().map(|s| &mut s.gram).collect();
            collective.all_reduce_sum(&mut grams)?;
        }
        {
            let mut crosses: Vec<&mut CudaSlice<f64>> =
                sums.iter_mut().map(|s| &mut s.cross).collect();
            collective.all_reduce_sum(&mut crosses)?;
        }
        {
            let mut host_refs: Vec<&mut CudaSlice<f64>> = hosts.iter_mut().collect();
            collective.all_reduce_sum(&mut host_refs)?;
        }
        for (s, host) in sums.iter_mut().zip(&hosts) {
            let values = s
                .device
                .stream()
                .clone_dtoh(host)
                .context("copying the targets' sums back")?;
            let m = s.outputs;
            s.target_sums = values[..m].to_vec();
            s.target_squares = values[m..2 * m].to_vec();
            s.rows = values[2 * m] as usize;
        }
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
        let threads = Par::all().threads();
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
