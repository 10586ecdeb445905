//! Ridge readouts solved where their sums are: for every block (a sweep's lane) of a
//! [`DeviceRidgeSums`] and every ridge value, the augmented normal equations of
//! [`RidgeAccumulator::solve`](reservoir_core::readout::RidgeAccumulator::solve) are built on
//! the device, factorised by blocks (a kernel factors and inverts each diagonal block;
//! strided-batched DGEMMs do the panels, the trailing updates and both substitutions) and
//! scored on the training and validation sums. Only the scores' products come back: for a
//! sweep of 256 lanes of 1000 units, kilobytes instead of 4 GB of sums, and no solve on the
//! host.

use cudarc::driver::CudaSlice;
use reservoir_core::lanes::{LaneOutcomes, LaneScores};
use reservoir_core::readout::{check_solvable, not_positive_definite, ReadoutProducts};
use reservoir_core::ReservoirError;
use reservoir_kernels::ridge::SOLVE_BLOCK;

use crate::driver::blas::{product_batched_f64, Stacked};
use crate::error::{DriverContext, Result};
use crate::ops::ridge::{build_systems, factor_diagonal, readout_products, Systems};
use crate::ridge_sums::DeviceRidgeSums;

/// Device bytes the systems of one turn may take; more lanes are solved in turns. A turn's
/// lanes depend on the shapes alone, so every GPU solves a lane the same way, bit for bit.
const SOLVE_BYTES: usize = 1 << 30;

/// Values per (system, output) that `ridge_readout_products` writes.
const PRODUCTS: usize = 7;

impl DeviceRidgeSums {
    /// Solves the readout of every block of these (training) sums for every value of
    /// `ridges`, as [`RidgeAccumulator::solve`](reservoir_core::readout::RidgeAccumulator::solve)
    /// does on the host (the same equations, factorised in another order), and scores it on
    /// these sums and on `validation`'s: `outcomes[block][ridge]`. A (block, ridge) whose
    /// system is not positive definite, or whose sums cannot score it, is an `Err` among the
    /// outcomes with the host's message.
    ///
    /// # Errors
    /// Sums of different shapes or on different GPUs; any driver or cuBLAS error (out of
    /// memory included).
    pub fn solve_and_score(
        &self,
        validation: &DeviceRidgeSums,
        ridges: &[f64],
    ) -> Result<LaneOutcomes> {
        let (f, m, lanes) = (self.features(), self.outputs(), self.blocks());
        if (
            validation.features(),
            validation.outputs(),
            validation.blocks(),
        ) != (f, m, lanes)
            || validation.device().info().ordinal != self.device().info().ordinal
        {
            return Err(ReservoirError::invalid(
                "device ridge solve",
                "the training and validation sums differ in shape or GPU",
            )
            .into());
        }
        if ridges.is_empty() || m == 0 {
            return Ok((0..lanes)
                .map(|_| ridges.iter().map(|&r| Err(empty(r, m))).collect())
                .collect());
        }
        let r = ridges.len();
        let padded = (f + 1).div_ceil(SOLVE_BLOCK) * SOLVE_BLOCK;
        let per_system = 2 * padded * padded + padded * SOLVE_BLOCK + 2 * padded * m + 2 * f * m;
        let per_turn = (SOLVE_BYTES / (8 * per_system * r)).clamp(1, lanes);
        let mut work = Work::new(self, per_turn * r, padded, ridges)?;
        let mut outcomes = Vec::with_capacity(lanes);
        for first in (0..lanes).step_by(per_turn) {
            let systems = Systems {
                lanes: per_turn.min(lanes - first),
                ridges: r,
                features: f,
                outputs: m,
                padded,
                width: lanes * f,
            };
            let (status, products) = work.solve(self, validation, first, &systems)?;
            for lane in 0..systems.lanes {
                let scored = ridges.iter().enumerate().map(|(index, &ridge)| {
                    let system = lane * r + index;
                    let values = &products[system * m * PRODUCTS..(system + 1) * m * PRODUCTS];
                    self.outcome(validation, ridge, status[system], values)
                });
                outcomes.push(scored.collect());
            }
        }
        Ok(outcomes)
    }

    /// One (lane, ridge)'s scores from its system's status and products.
    fn outcome(
        &self,
        validation: &DeviceRidgeSums,
        ridge: f64,
        status: i32,
        values: &[f64],
    ) -> reservoir_core::Result<LaneScores> {
        check_solvable(ridge, self.rows())?;
        match status {
            0 => {}
            1 => return Err(not_positive_definite(ridge)),
            _ => {
                return Err(ReservoirError::numerical(
                    "ridge solve",
                    "the ridge sums are not finite (a state or a target overflowed)",
                ))
            }
        }
        let shift = self.targets().shift;
        let side = |first: usize| -> Vec<ReadoutProducts> {
            values
                .chunks(PRODUCTS)
                .zip(shift)
                .map(|(v, &s)| ReadoutProducts {
                    intercept: v[0] + s,
                    gram: v[first],
                    sums: v[first + 1],
                    cross: v[first + 2],
                })
                .collect()
        };
        Ok(LaneScores {
            train_nrmse: self.targets().score(&side(1))?.mean_nrmse(),
            validation: validation.targets().score(&side(4))?,
        })
    }
}

/// The error of a (lane, ridge) with nothing to solve for.
fn empty(ridge: f64, outputs: usize) -> ReservoirError {
    ReservoirError::invalid(
        "ridge solve",
        format!("no outputs to solve for (ridge {ridge}, {outputs} outputs)"),
    )
}

/// The device buffers of a solve, for up to `capacity` systems a turn.
struct Work {
    /// The systems (p × p each, column-major), overwritten by the factorisation.
    a: CudaSlice<f64>,
    /// Their Cholesky factors (lower blocks only).
    l: CudaSlice<f64>,
    /// The inverses of the factors' diagonal blocks.
    inverse: CudaSlice<f64>,
    /// Right-hand sides (p × M), then the solutions.
    b: CudaSlice<f64>,
    /// The forward substitution's results.
    y: CudaSlice<f64>,
    /// G·w of the training and of the validation sums (F × M per system).
    gram_w: [CudaSlice<f64>; 2],
    products: CudaSlice<f64>,
    status: CudaSlice<i32>,
    ridges: CudaSlice<f64>,
    target_sums: CudaSlice<f64>,
}

impl Work {
    fn new(sums: &DeviceRidgeSums, capacity: usize, padded: usize, ridges: &[f64]) -> Result<Self> {
        let (f, m) = (sums.features(), sums.outputs());
        let s = sums.device().stream();
        let zeros = |len: usize, what: &'static str| -> Result<CudaSlice<f64>> {
            s.alloc_zeros::<f64>(len).alloc_context::<f64>(what, len)
        };
        let square = capacity * padded * padded;
        Ok(Self {
            a: zeros(square, "allocating the ridge systems")?,
            l: zeros(square, "allocating the ridge systems' factors")?,
            inverse: zeros(
                capacity * padded * SOLVE_BLOCK,
                "allocating the factors' inverses",
            )?,
            b: zeros(
                capacity * padded * m,
                "allocating the ridge right-hand sides",
            )?,
            y: zeros(
                capacity * padded * m,
                "allocating the ridge right-hand sides",
            )?,
            gram_w: [
                zeros(capacity * f * m, "allocating the readouts' products")?,
                zeros(capacity * f * m, "allocating the readouts' products")?,
            ],
            products: zeros(capacity * m * PRODUCTS, "allocating the readouts' products")?,
            status: s
                .alloc_zeros::<i32>(capacity)
                .alloc_context::<i32>("allocating the solve's status", capacity)?,
            ridges: s.clone_htod(ridges).context("uploading the ridge values")?,
            target_sums: s
                .clone_htod(sums.targets().sums)
                .context("uploading the target sums")?,
        })
    }

    /// Solves the systems of the lanes `first..first + systems.lanes` and copies back each
    /// system's status and products.
    fn solve(
        &mut self,
        train: &DeviceRidgeSums,
        validation: &DeviceRidgeSums,
        first: usize,
        systems: &Systems,
    ) -> Result<(Vec<i32>, Vec<f64>)> {
        let device = train.device();
        let kernels = train.kernels();
        let s = device.stream();
        let blas = device.blas()?;
        let (f, m, p, nb) = (
            systems.features,
            systems.outputs,
            systems.padded,
            SOLVE_BLOCK,
        );
        let (count, blocks) = (systems.count(), systems.blocks());
        let (square, column) = (p * p, p * m);
        s.memset_zeros(&mut self.status.slice_mut(..count))
            .context("clearing the solve's status")?;
        build_systems(
            device,
            kernels,
            systems,
            (
                &train.gram().slice(first * f * f..),
                &train.cross().slice(first * f..),
            ),
            (
                &self.ridges.slice(..),
                &self.target_sums.slice(..),
                train.rows() as f64,
            ),
            &mut self.a.slice_mut(..),
            &mut self.b.slice_mut(..),
        )?;
        let gemm = |(a, a_at, a_shape): (&CudaSlice<f64>, usize, Stacked),
                    (b, b_at, b_shape): (&CudaSlice<f64>, usize, Stacked),
                    (c, c_at, c_shape): (&mut CudaSlice<f64>, usize, Stacked),
                    (alpha, beta): (f64, f64),
                    context: &'static str|
         -> Result<()> {
            product_batched_f64(
                blas,
                (&a.slice(a_at..), a_shape),
                (&b.slice(b_at..), b_shape),
                (&mut c.slice_mut(c_at..), c_shape),
                (alpha, beta),
                count,
                context,
            )
        };
        let diagonal_inverse = |k: usize| (k * nb * nb, Stacked::new(nb, nb, nb, blocks * nb * nb));
        // Cholesky by blocks, right-looking: block column k is factored, then the trailing
        // matrix is updated with it.
        for k in 0..blocks {
            factor_diagonal(
                device,
                kernels,
                systems,
                k,
                (
                    &self.a.slice(..),
                    &mut self.l.slice_mut(..),
                    &mut self.inverse.slice_mut(..),
                ),
                &mut self.status.slice_mut(..),
            )?;
            let rest = p - (k + 1) * nb;
            if rest == 0 {
                continue;
            }
            let panel = (k + 1) * nb + k * nb * p;
            let (inverse_at, inverse_shape) = diagonal_inverse(k);
            // L₂₁ = A₂₁·L₁₁⁻ᵀ
            gemm(
                (&self.a, panel, Stacked::new(rest, nb, p, square)),
                (&self.inverse, inverse_at, inverse_shape.t()),
                (&mut self.l, panel, Stacked::new(rest, nb, p, square)),
                (1.0, 0.0),
                "the ridge factor's panel",
            )?;
            // A₂₂ −= L₂₁·L₂₁ᵀ
            gemm(
                (&self.l, panel, Stacked::new(rest, nb, p, square)),
                (&self.l, panel, Stacked::new(rest, nb, p, square).t()),
                (
                    &mut self.a,
                    (k + 1) * nb * (p + 1),
                    Stacked::new(rest, rest, p, square),
                ),
                (-1.0, 1.0),
                "the ridge factor's trailing update",
            )?;
        }
        // L·y = b by blocks: y_k = L_kk⁻¹·b_k, then b below −= L_{·k}·y_k.
        for k in 0..blocks {
            let (inverse_at, inverse_shape) = diagonal_inverse(k);
            gemm(
                (&self.inverse, inverse_at, inverse_shape),
                (&self.b, k * nb, Stacked::new(nb, m, p, column)),
                (&mut self.y, k * nb, Stacked::new(nb, m, p, column)),
                (1.0, 0.0),
                "the ridge forward substitution",
            )?;
            let rest = p - (k + 1) * nb;
            if rest > 0 {
                gemm(
                    (
                        &self.l,
                        (k + 1) * nb + k * nb * p,
                        Stacked::new(rest, nb, p, square),
                    ),
                    (&self.y, k * nb, Stacked::new(nb, m, p, column)),
                    (&mut self.b, (k + 1) * nb, Stacked::new(rest, m, p, column)),
                    (-1.0, 1.0),
                    "the ridge forward substitution",
                )?;
            }
        }
        // Lᵀ·x = y by blocks, x into b: x_k = L_kk⁻ᵀ·y_k, then y above −= L_{k·}ᵀ·x_k.
        for k in (0..blocks).rev() {
            let (inverse_at, inverse_shape) = diagonal_inverse(k);
            gemm(
                (&self.inverse, inverse_at, inverse_shape.t()),
                (&self.y, k * nb, Stacked::new(nb, m, p, column)),
                (&mut self.b, k * nb, Stacked::new(nb, m, p, column)),
                (1.0, 0.0),
                "the ridge backward substitution",
            )?;
            if k > 0 {
                gemm(
                    (&self.l, k * nb, Stacked::new(nb, k * nb, p, square).t()),
                    (&self.b, k * nb, Stacked::new(nb, m, p, column)),
                    (&mut self.y, 0, Stacked::new(k * nb, m, p, column)),
                    (-1.0, 1.0),
                    "the ridge backward substitution",
                )?;
            }
        }
        // G·w of both sets of sums, a batch of lanes per ridge value (the lane's G is shared
        // by its ridge values).
        let r = systems.ridges;
        for (sums, gram_w) in [train, validation].into_iter().zip(&mut self.gram_w) {
            for index in 0..r {
                product_batched_f64(
                    blas,
                    (
                        &sums.gram().slice(first * f * f..),
                        Stacked::new(f, f, f, f * f),
                    ),
                    (
                        &self.b.slice(index * column..),
                        Stacked::new(f, m, p, r * column),
                    ),
                    (
                        &mut gram_w.slice_mut(index * f * m..),
                        Stacked::new(f, m, f, r * f * m),
                    ),
                    (1.0, 0.0),
                    systems.lanes,
                    "the readouts' products with XᵀX",
                )?;
            }
        }
        readout_products(
            device,
            kernels,
            systems,
            &self.b.slice(..),
            [&self.gram_w[0].slice(..), &self.gram_w[1].slice(..)],
            [
                &train.cross().slice(first * f..),
                &validation.cross().slice(first * f..),
            ],
            &mut self.products.slice_mut(..),
        )?;
        let status = s
            .clone_dtoh(&self.status.slice(..count))
            .context("copying the solve's status back")?;
        let products = s
            .clone_dtoh(&self.products.slice(..count * m * PRODUCTS))
            .context("copying the readouts' products back")?;
        Ok((status, products))
    }
}
