//! Sequence features that need more than the sums of raw states, made on the device by the
//! batched engine: states projected onto fitted principal components (a GEMM per time chunk,
//! then centred), summaries of the projected states, and the reservoir model space (each
//! sequence's ridge model of its state dynamics, from its Grams and a Cholesky solve per
//! sequence). Only the features come back to the host.
//!
//! Precision: the states and their projection stay in f32 as the engine's states are (the
//! projection's f32 GEMM adds about √N·6e-8 relative to values that already differ from the
//! CPU's by their f32 sum order); the states a model reads are gathered in f64 and its Grams,
//! centring and solve are in f64, as the CPU's are: the Grams are taken uncentred and centred
//! afterwards (Σxxᵀ − R·x̄x̄ᵀ), which in f32 would lose the digits of the states' spread to
//! cancellation, and the solve's conditioning multiplies whatever error the system has.
//! `tests/features_parity.rs` holds the features within 1e-3 relative of the CPU's, a
//! difference a classifier on them cannot use.

use cudarc::driver::{CudaSlice, CudaView};
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};
use rand_chacha::ChaCha8Rng;
use reservoir_core::features::{SequenceFeatures, Summary};
use reservoir_core::ReservoirError;
use reservoir_kernels::sequence_features::MODEL_SPACE_MAX_WIDTH;

use super::batches::{features_limit, for_each_batch, BatchLimit};
use super::{BatchEngine, Shared};
use crate::driver::blas::{product_batched_f64, product_row_major, Stacked};
use crate::driver::launch::dim;
use crate::driver::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::features::SummaryRows;
use crate::ops::esn::{add_features, FeatureChunk};
use crate::ops::features::{
    centre, gather, model_space_solve, FeatureKernels, GatherChunk, ModelSpaceBatch,
};

const WHAT: &str = "sequence features";

/// Most bytes of a batch's model-space Grams and solutions on the device (2·d² + d² + d f64
/// values a sequence).
const MODEL_SPACE_BYTES: usize = 1 << 28;

/// How one direction's states (the forward sequences', or the reversed copies') enter the
/// summarized states: projected onto their rows of the basis and centred, or as they are.
#[derive(Debug, Clone, PartialEq)]
struct Pass {
    /// Whether this pass runs the time-reversed sequences.
    reversed: bool,
    /// With a projection: this direction's rows of the basis, transposed (d × N row-major),
    /// and their product with this direction's part of the training mean (d), in f32.
    projection: Option<(Vec<f32>, Vec<f32>)>,
    /// The first of the summarized state's rows this pass fills (0 when projected: both
    /// directions' projections add up).
    offset: usize,
}

/// The device's way to a [`SequenceFeatures`] that is not [plain](SequenceFeatures::is_plain):
/// one pass per direction, the plain summaries of each pass summed on the device, and the
/// model space solved once both passes are gathered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DevicePlan {
    features: SequenceFeatures,
    /// Units of the reservoir (N).
    n: usize,
    /// Width of the summarized states (d): the components, or the state width.
    d: usize,
    passes: Vec<Pass>,
    /// The summaries other than the model space, in the features' order.
    plain: Vec<Summary>,
    model_space: bool,
}

impl DevicePlan {
    /// The plan for `features` of a reservoir of `n` units, or `None` where the host path (or
    /// the one-direction device sums) makes them: plain features, a projection still to fit
    /// or fitted on states of another width, a model space of states wider than
    /// [`MODEL_SPACE_MAX_WIDTH`], bidirectional features without a projection or a model space
    /// (the device sums each direction already), and bidirectional features of a noisy
    /// reservoir (the host path draws the noise of each chunk's forward then reversed runs,
    /// which batches of another size cannot match).
    pub(crate) fn new(features: &SequenceFeatures, n: usize, noise: bool) -> Option<Self> {
        if features.is_plain() || features.needs_projection() {
            return None;
        }
        let bidirectional = features.bidirectional();
        if bidirectional && (noise || features.one_direction().is_plain()) {
            return None;
        }
        let width = features.state_width(n);
        let projection = features.projection();
        if projection.is_some_and(|p| p.input_width() != width) {
            return None;
        }
        let d = projection.map_or(width, |p| p.components());
        let model_space = features.summaries().contains(&Summary::ModelSpace);
        if model_space && d > MODEL_SPACE_MAX_WIDTH {
            return None;
        }
        let directions: &[bool] = if bidirectional {
            &[false, true]
        } else {
            &[false]
        };
        let passes = directions
            .iter()
            .enumerate()
            .map(|(p, &reversed)| Pass {
                reversed,
                projection: projection.map(|projection| {
                    let (basis, mean) = (projection.basis(), projection.mean());
                    let rows = p * n..(p + 1) * n;
                    let mut transposed = Vec::with_capacity(d * n);
                    let mut shift = Vec::with_capacity(d);
                    for c in 0..d {
                        transposed.extend(rows.clone().map(|i| basis[[i, c]] as f32));
                        let part: f64 = rows.clone().map(|i| basis[[i, c]] * mean[i]).sum();
                        shift.push(part as f32);
                    }
                    (transposed, shift)
                }),
                offset: if projection.is_some() { 0 } else { p * n },
            })
            .collect();
        Some(Self {
            features: features.clone(),
            n,
            d,
            passes,
            plain: features
                .summaries()
                .iter()
                .copied()
                .filter(|&s| s != Summary::ModelSpace)
                .collect(),
            model_space,
        })
    }

    /// Width of one pass's values: d when projected, N otherwise.
    fn pass_width(&self) -> usize {
        if self.features.projection().is_some() {
            self.d
        } else {
            self.n
        }
    }

    /// `limit` narrowed for the model space: each sequence keeps d summarized values in f64
    /// for every step of its batch's longest sequence while the batch runs, and the batch's
    /// Grams and solutions fit [`MODEL_SPACE_BYTES`].
    fn limit(&self, limit: BatchLimit) -> BatchLimit {
        if !self.model_space {
            return limit;
        }
        let d = self.d;
        let per_sequence = (3 * d * d + d) * 8;
        BatchLimit {
            max_sequences: limit
                .max_sequences
                .min((MODEL_SPACE_BYTES / per_sequence).max(1)),
            padded_bytes_per_step: d * 8,
            ..limit
        }
    }

    /// Writes the features of a batch into `out` (B × F): each plain summary from the passes'
    /// values (`plain`, one B × S·w array a pass, S the plain summaries, w
    /// [`DevicePlan::pass_width`]), added up when projected, side by side (forward first)
    /// otherwise, as [`SequenceFeatures::write`] lays out the states of both directions; the
    /// model space from `models` (B × (d² + d), row after row).
    ///
    /// # Errors
    /// Values of another shape than the plan's.
    fn write(
        &self,
        plain: &[Array2<f64>],
        models: Option<&[f64]>,
        mut out: ArrayViewMut2<f64>,
    ) -> Result<()> {
        let (b, d, w) = (out.nrows(), self.d, self.pass_width());
        let model_width = d * d + d;
        let shapes_agree = out.ncols() == self.features.width(self.n)
            && plain.len() == self.passes.len()
            && plain.iter().all(|p| p.dim() == (b, self.plain.len() * w))
            && models.map_or(!self.model_space, |m| {
                self.model_space && m.len() == b * model_width
            });
        if !shapes_agree {
            return Err(ReservoirError::invalid(
                WHAT,
                "the device's values do not have the plan's shape",
            )
            .into());
        }
        for (j, mut row) in out.rows_mut().into_iter().enumerate() {
            let mut at = 0;
            let mut k = 0;
            for &summary in self.features.summaries() {
                if summary == Summary::ModelSpace {
                    if let Some(models) = models {
                        let model = &models[j * model_width..(j + 1) * model_width];
                        for (dst, &src) in row
                            .slice_mut(s![at..at + model_width])
                            .iter_mut()
                            .zip(model)
                        {
                            *dst = src;
                        }
                    }
                    at += model_width;
                    continue;
                }
                let mut slot = row.slice_mut(s![at..at + d]);
                slot.fill(0.0);
                for (pass, values) in self.passes.iter().zip(plain) {
                    let values = values.slice(s![j, k * w..(k + 1) * w]);
                    let mut part = slot.slice_mut(s![pass.offset..pass.offset + w]);
                    part += &values;
                }
                at += d;
                k += 1;
            }
        }
        Ok(())
    }
}

/// A pass's projection on the device.
struct DeviceProjection {
    basis: CudaSlice<f32>,
    shift: CudaSlice<f32>,
}

impl BatchEngine {
    /// The features of `sequences` (checked: K columns, finite, long enough) on `plan`'s
    /// device path, each run from the zero state: B × F rows, a batch at a time, only each
    /// batch's features copied back. `progress(done, total)` after each batch; noise as in
    /// [`BatchEngine::run`] (a plan has no noise with two passes).
    pub(crate) fn summarized_features(
        &self,
        shared: &Shared<'_>,
        sequences: &[ArrayView2<f64>],
        plan: &DevicePlan,
        noise: Option<(&mut ChaCha8Rng, f64)>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Array2<f64>> {
        let n = shared.config.size();
        let total = sequences.len();
        let mut out = Array2::zeros((total, plan.features.width(n)));
        let kernels = shared.device.kernels::<FeatureKernels>()?;
        let stream = shared.device.stream();
        let mut projections = Vec::with_capacity(plan.passes.len());
        for pass in &plan.passes {
            projections.push(match &pass.projection {
                Some((basis, shift)) => Some(DeviceProjection {
                    basis: stream
                        .clone_htod(basis)
                        .alloc_context::<f32>("uploading the projection's basis", basis.len())?,
                    shift: stream
                        .clone_htod(shift)
                        .alloc_context::<f32>("uploading the projection's shift", shift.len())?,
                }),
                None => None,
            });
        }
        let limit = plan.limit(features_limit(n, noise.is_some()));
        for_each_batch(sequences, limit, noise, n, |batch, first_index, noise| {
            let end = first_index + batch.len();
            let batch_out = out.slice_mut(s![first_index..end, ..]);
            let context = BatchContext {
                shared,
                kernels: &kernels,
                plan,
                projections: &projections,
            };
            self.summarized_batch(&context, batch, first_index, noise, batch_out)?;
            progress(end, total);
            Ok(())
        })?;
        Ok(out)
    }

    /// One batch of [`BatchEngine::summarized_features`], into `out` (B × F).
    fn summarized_batch(
        &self,
        context: &BatchContext<'_>,
        batch: &[ArrayView2<f64>],
        first_index: usize,
        noise: Option<&[Vec<f32>]>,
        out: ArrayViewMut2<f64>,
    ) -> Result<()> {
        let BatchContext {
            shared,
            kernels,
            plan,
            projections,
        } = *context;
        let (b, d, w) = (batch.len(), plan.d, plan.pass_width());
        let device = shared.device;
        let stream = device.stream();
        let longest = batch.iter().map(|u| u.nrows()).max().unwrap_or(0);
        let lengths = batch
            .iter()
            .map(|u| dim(u.nrows(), WHAT))
            .collect::<Result<Vec<i32>>>()?;
        let device_lengths = stream
            .clone_htod(&lengths)
            .alloc_context::<i32>("uploading the sequences' lengths", b)?;
        let rows = if plan.plain.is_empty() {
            None
        } else {
            let rows = SummaryRows::new(
                &plan.features,
                &plan.plain,
                batch.iter().map(|u| u.nrows()),
                first_index,
            )?;
            let pairs = stream
                .clone_htod(rows.pairs())
                .alloc_context::<i32>("uploading the summaries' rows", rows.pairs().len())?;
            Some((rows, pairs))
        };
        let summarized_len = b * longest * d;
        let mut summarized = if plan.model_space {
            Some(
                stream
                    .alloc_zeros::<f64>(summarized_len)
                    .alloc_context::<f64>("allocating the summarized states", summarized_len)?,
            )
        } else {
            None
        };
        let reversed: Vec<Array2<f64>> = if plan.passes.iter().any(|p| p.reversed) {
            batch
                .iter()
                .map(|u| u.slice(s![..;-1, ..]).to_owned())
                .collect()
        } else {
            Vec::new()
        };
        let reversed_views: Vec<ArrayView2<f64>> = reversed.iter().map(|r| r.view()).collect();
        let blas = device.blas()?;
        let mut plain_values = Vec::with_capacity(plan.passes.len());
        for (pass, projection) in plan.passes.iter().zip(projections) {
            let (inputs, pass_noise) = if pass.reversed {
                (&reversed_views[..], None)
            } else {
                (batch, noise)
            };
            let sums_len = b * plan.plain.len() * w;
            let mut sums = match rows {
                Some(_) => Some(
                    stream
                        .alloc_zeros::<f32>(sums_len)
                        .alloc_context::<f32>("allocating the feature sums", sums_len)?,
                ),
                None => None,
            };
            let mut projected: Option<CudaSlice<f32>> = None;
            self.step_batch(shared, inputs, pass_noise, &mut |states, first, steps| {
                let touched = rows.as_ref().is_some_and(|(r, _)| r.touch(first, steps));
                if !touched && !plan.model_space {
                    return Ok(());
                }
                let columns = steps * b;
                let values: CudaView<'_, f32> = match projection {
                    Some(projection) => {
                        // Made for the first chunk projected, the longest but for the last.
                        let buffer = match projected.take() {
                            Some(buffer) if buffer.len() >= columns * d => projected.insert(buffer),
                            _ => projected.insert(
                                stream
                                    .alloc_zeros::<f32>(columns * d)
                                    .alloc_context::<f32>(
                                        "allocating the projected states",
                                        columns * d,
                                    )?,
                            ),
                        };
                        let mut target = buffer.slice_mut(..columns * d);
                        product_row_major(
                            blas,
                            &projection.basis.slice(..),
                            &states,
                            &mut target,
                            (d, plan.n, columns),
                            "projecting the states",
                        )?;
                        centre(
                            device,
                            kernels,
                            &mut target,
                            &projection.shift.slice(..),
                            columns,
                        )?;
                        buffer.slice(..columns * d)
                    }
                    None => states,
                };
                if let (true, Some((_, pairs)), Some(sums)) =
                    (touched, rows.as_ref(), sums.as_mut())
                {
                    let chunk = FeatureChunk {
                        first,
                        steps,
                        batch: b,
                        summaries: plan.plain.len(),
                        n: w,
                    };
                    add_features(
                        device,
                        shared.kernels,
                        &values,
                        &pairs.slice(..),
                        &mut sums.slice_mut(..),
                        chunk,
                    )?;
                }
                if let Some(summarized) = summarized.as_mut() {
                    let chunk = GatherChunk {
                        first,
                        steps,
                        batch: b,
                        width: w,
                        longest,
                        d,
                        offset: pass.offset,
                    };
                    gather(
                        device,
                        kernels,
                        &values,
                        &device_lengths.slice(..),
                        &mut summarized.slice_mut(..),
                        chunk,
                    )?;
                }
                Ok(())
            })?;
            let mut values = Array2::zeros((b, plan.plain.len() * w));
            if let (Some((rows, _)), Some(sums)) = (&rows, &sums) {
                let host = stream
                    .clone_dtoh(sums)
                    .context("copying the feature sums back")?;
                rows.write(&host, values.view_mut())?;
            }
            plain_values.push(values);
        }
        let models = match summarized {
            Some(summarized) => Some(solve_models(
                device,
                kernels,
                plan,
                &summarized,
                &device_lengths,
                (b, longest),
                first_index,
            )?),
            None => None,
        };
        plan.write(&plain_values, models.as_deref(), out)
    }
}

/// What every batch of [`BatchEngine::summarized_features`] shares.
#[derive(Clone, Copy)]
struct BatchContext<'a> {
    shared: &'a Shared<'a>,
    kernels: &'a FeatureKernels,
    plan: &'a DevicePlan,
    projections: &'a [Option<DeviceProjection>],
}

/// The model space of every sequence of a batch (`b` sequences of at most `longest` steps)
/// from its gathered states: their Grams by two strided-batched DGEMMs, then the solve
/// kernel; B × (d² + d) values copied back.
///
/// # Errors
/// A system that is not positive definite or a model that is not finite (as the CPU's
/// model space), naming the sequence by its index in the call (`first_index + j`).
fn solve_models(
    device: &GpuDevice,
    kernels: &FeatureKernels,
    plan: &DevicePlan,
    summarized: &CudaSlice<f64>,
    lengths: &CudaSlice<i32>,
    (b, longest): (usize, usize),
    first_index: usize,
) -> Result<Vec<f64>> {
    let stream = device.stream();
    let (d, warmup) = (plan.d, plan.features.warmup());
    let ridge = plan.features.model_ridge();
    if longest < warmup + 2 {
        return Err(ReservoirError::invalid(WHAT, "a batch too short for the model space").into());
    }
    let squares = b * d * d;
    let alloc = |len: usize, what: &'static str| {
        stream
            .alloc_zeros::<f64>(len)
            .alloc_context::<f64>(what, len)
    };
    let mut gram = alloc(squares, "allocating the sequences' Grams")?;
    let mut cross = alloc(squares, "allocating the sequences' Grams")?;
    let mut models = alloc(b * (d * d + d), "allocating the model space")?;
    let mut status = stream
        .alloc_zeros::<i32>(b)
        .alloc_context::<i32>("allocating the solves' status", b)?;
    let blas = device.blas()?;
    let states = summarized.slice(warmup * d..);
    let next = summarized.slice((warmup + 1) * d..);
    let stride = longest * d;
    let all = Stacked::new(d, longest - warmup, d, stride);
    let pairs = Stacked::new(d, longest - warmup - 1, d, stride);
    let square = Stacked::new(d, d, d, d * d);
    product_batched_f64(
        blas,
        (&states, all),
        (&states, all.t()),
        (&mut gram.slice_mut(..), square),
        (1.0, 0.0),
        b,
        "the sequences' state Grams",
    )?;
    product_batched_f64(
        blas,
        (&states, pairs),
        (&next, pairs.t()),
        (&mut cross.slice_mut(..), square),
        (1.0, 0.0),
        b,
        "the sequences' state cross products",
    )?;
    model_space_solve(
        device,
        kernels,
        &summarized.slice(..),
        (&mut gram.slice_mut(..), &mut cross.slice_mut(..)),
        &lengths.slice(..),
        &mut models.slice_mut(..),
        &mut status.slice_mut(..),
        ModelSpaceBatch {
            batch: b,
            longest,
            d,
            warmup,
            ridge,
        },
    )?;
    let status = stream
        .clone_dtoh(&status)
        .context("copying the solves' status back")?;
    let models = stream
        .clone_dtoh(&models)
        .context("copying the model space back")?;
    let width = d * d + d;
    for (j, &code) in status.iter().enumerate() {
        let index = first_index + j;
        let why = match code {
            0 if models[j * width..(j + 1) * width]
                .iter()
                .all(|v| v.is_finite()) =>
            {
                continue
            }
            0 => "the state model is not finite".to_string(),
            1 | 2 => {
                format!("the state model's system is not positive definite (model_ridge {ridge})")
            }
            _ => "the sequence's length does not fit its batch".to_string(),
        };
        return Err(ReservoirError::invalid(WHAT, format!("sequence {index}: {why}")).into());
    }
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{concatenate, Array1, Axis};
    use rand::{Rng, SeedableRng};
    use reservoir_core::features::{FeatureParams, Projection};

    /// The model-space solve kernel on the host, step for step: the uncentred Grams of a
    /// sequence's states padded with zeros to `longest` rows (as the strided-batched DGEMMs
    /// take them), centred afterwards, the Cholesky factor column by column, the two
    /// substitutions, then the biases. `states` is the sequence's own rows (T × d).
    fn model_space_reference(
        states: ArrayView2<f64>,
        longest: usize,
        warmup: usize,
        ridge: f64,
    ) -> Vec<f64> {
        let (length, d) = states.dim();
        let mut padded = Array2::<f64>::zeros((longest, d));
        padded.slice_mut(s![..length, ..]).assign(&states);
        let mut a = vec![0.0; d * d];
        let mut b = vec![0.0; d * d];
        for t in warmup..longest {
            for k in 0..d {
                for i in 0..d {
                    a[k * d + i] += padded[[t, i]] * padded[[t, k]];
                    if t + 1 < longest {
                        b[k * d + i] += padded[[t, i]] * padded[[t + 1, k]];
                    }
                }
            }
        }
        let pairs = (length - warmup - 1) as f64;
        let x_mean: Vec<f64> = (0..d)
            .map(|i| (warmup..length - 1).map(|t| states[[t, i]]).sum::<f64>() / pairs)
            .collect();
        let y_mean: Vec<f64> = (0..d)
            .map(|i| (warmup + 1..length).map(|t| states[[t, i]]).sum::<f64>() / pairs)
            .collect();
        let last = states.row(length - 1);
        for k in 0..d {
            for i in 0..d {
                let e = k * d + i;
                a[e] -= last[i] * last[k] + pairs * x_mean[i] * x_mean[k];
                if i == k {
                    a[e] += ridge;
                }
                b[e] -= pairs * x_mean[i] * y_mean[k];
            }
        }
        for c in 0..d {
            a[c * d + c] = a[c * d + c].sqrt();
            let pivot = a[c * d + c];
            for i in c + 1..d {
                a[c * d + i] /= pivot;
            }
            for k in c + 1..d {
                for i in k..d {
                    a[k * d + i] -= a[c * d + i] * a[c * d + k];
                }
            }
        }
        for k in 0..d {
            let z = &mut b[k * d..(k + 1) * d];
            for i in 0..d {
                let s: f64 = (0..i).map(|m| a[m * d + i] * z[m]).sum();
                z[i] = (z[i] - s) / a[i * d + i];
            }
            for i in (0..d).rev() {
                let s: f64 = (i + 1..d).map(|m| a[i * d + m] * z[m]).sum();
                z[i] = (z[i] - s) / a[i * d + i];
            }
        }
        let mut out = vec![0.0; d * d + d];
        for i in 0..d {
            for k in 0..d {
                out[i * d + k] = b[k * d + i];
            }
        }
        for k in 0..d {
            let shift: f64 = (0..d).map(|i| x_mean[i] * b[k * d + i]).sum();
            out[d * d + k] = y_mean[k] - shift;
        }
        out
    }

    fn random_states(rng: &mut ChaCha8Rng, rows: usize, cols: usize) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |_| rng.random_range(-1.0..1.0))
    }

    /// A projection of states `width` wide onto `components`, with a mean away from zero.
    fn random_projection(rng: &mut ChaCha8Rng, width: usize, components: usize) -> Projection {
        let mean = Array1::from_shape_fn(width, |_| rng.random_range(-0.5..0.5));
        let basis = random_states(rng, width, components);
        Projection::new(mean, basis).expect("projection")
    }

    /// The device path on the host: each pass's states projected with the plan's f32 basis
    /// and shift (or as they are), the plain summaries of each pass, the states gathered per
    /// sequence, the model space by the kernel's reference, then [`DevicePlan::write`];
    /// against [`SequenceFeatures::of`] on the forward beside the reversed states.
    #[test]
    fn the_plans_passes_and_layout_give_the_cpu_features() {
        let mut rng = ChaCha8Rng::seed_from_u64(crate::driver::test_seed("device_plan"));
        let (n, warmup) = (5, 2);
        let summaries = vec![
            Summary::Mean,
            Summary::ModelSpace,
            Summary::Last,
            Summary::MeanLast,
        ];
        for (bidirectional, components) in [(false, 0), (false, 3), (true, 0), (true, 4)] {
            let params = FeatureParams::new()
                .summaries(summaries.clone())
                .last_k(3)
                .warmup(warmup)
                .bidirectional(bidirectional)
                .components(components)
                .model_ridge(0.5);
            let mut features = params.check().expect("features");
            let width = features.state_width(n);
            if components > 0 {
                let projection = random_projection(&mut rng, width, components);
                features = features.with_projection(projection).expect("projection");
            }
            let plan = DevicePlan::new(&features, n, false).expect("a device plan");
            assert_eq!(plan.passes.len(), if bidirectional { 2 } else { 1 });
            let d = plan.d;
            let lengths: Vec<usize> = (0..6).map(|_| rng.random_range(warmup + 2..=15)).collect();
            let longest = lengths.iter().copied().max().unwrap_or(0);
            // Each sequence's states in each direction (the reversed run's own states).
            let directions: Vec<Vec<Array2<f64>>> = (0..plan.passes.len())
                .map(|_| {
                    lengths
                        .iter()
                        .map(|&t| random_states(&mut rng, t, n))
                        .collect()
                })
                .collect();
            let mut plain = Vec::new();
            let mut summarized: Vec<Array2<f64>> =
                lengths.iter().map(|&t| Array2::zeros((t, d))).collect();
            let w = plan.pass_width();
            for (pass, states) in plan.passes.iter().zip(&directions) {
                let mut values = Array2::zeros((lengths.len(), plan.plain.len() * w));
                for (j, x) in states.iter().enumerate() {
                    let part = match &pass.projection {
                        Some((basis, shift)) => Array2::from_shape_fn((x.nrows(), d), |(t, c)| {
                            let dot: f64 = (0..n)
                                .map(|i| f64::from(basis[c * n + i]) * x[[t, i]])
                                .sum();
                            dot - f64::from(shift[c])
                        }),
                        None => x.clone(),
                    };
                    for (k, &summary) in plan.plain.iter().enumerate() {
                        let rows = features.rows(summary, x.nrows());
                        let count = rows.len() as f64;
                        let mean = part.slice(s![rows, ..]).sum_axis(Axis(0)) / count;
                        values.slice_mut(s![j, k * w..(k + 1) * w]).assign(&mean);
                    }
                    let mut target = summarized[j].slice_mut(s![.., pass.offset..pass.offset + w]);
                    target += &part;
                }
                plain.push(values);
            }
            let models: Vec<f64> = summarized
                .iter()
                .flat_map(|x| model_space_reference(x.view(), longest, warmup, 0.5))
                .collect();
            let mut got = Array2::zeros((lengths.len(), features.width(n)));
            plan.write(&plain, Some(&models), got.view_mut())
                .expect("shapes");
            for (j, _) in lengths.iter().enumerate() {
                let parts: Vec<ArrayView2<f64>> = directions.iter().map(|s| s[j].view()).collect();
                let states = concatenate(Axis(1), &parts).expect("same lengths");
                let expected = features.of(states.view(), j).expect("features");
                for (g, e) in got.row(j).iter().zip(&expected) {
                    assert!(
                        (g - e).abs() < 1e-5 * (1.0 + e.abs()),
                        "bidirectional {bidirectional}, {components} components, sequence {j}: \
                         {g} vs {e}"
                    );
                }
            }
            assert!(
                plan.write(&plain, None, got.view_mut()).is_err(),
                "no models"
            );
        }
    }

    #[test]
    fn plain_narrow_or_noisy_bidirectional_features_stay_off_the_device_path() {
        let check = |params: FeatureParams| params.check().expect("features");
        let n = 200;
        assert!(DevicePlan::new(&SequenceFeatures::default(), n, false).is_none());
        let model = FeatureParams::new().summaries(vec![Summary::ModelSpace]);
        // States of 200 units are too wide to model on the device; 100 are not.
        assert!(DevicePlan::new(&check(model.clone()), n, false).is_none());
        assert!(DevicePlan::new(&check(model.clone()), 100, false).is_some());
        // A projection to fit first is the host path's error to report.
        let projected = check(model.clone().components(10));
        assert!(DevicePlan::new(&projected, n, false).is_none());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let fitted = projected
            .with_projection(random_projection(&mut rng, n, 10))
            .expect("projection");
        assert!(
            DevicePlan::new(&fitted, n, true).is_some(),
            "noise, one pass"
        );
        let both = check(model.components(10).bidirectional(true))
            .with_projection(random_projection(&mut rng, 2 * n, 10))
            .expect("projection");
        assert!(DevicePlan::new(&both, n, false).is_some());
        assert!(
            DevicePlan::new(&both, n, true).is_none(),
            "noise, two passes"
        );
        // Plain summaries of both directions are summed on the device one direction at a time.
        let sides = check(FeatureParams::new().bidirectional(true));
        assert!(DevicePlan::new(&sides, n, false).is_none());
        // A projection fitted on states of another width.
        assert!(DevicePlan::new(&fitted, n + 1, false).is_none());
    }

    #[test]
    fn model_space_batches_keep_their_grams_within_budget() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let features = FeatureParams::new()
            .summaries(vec![Summary::ModelSpace])
            .components(128)
            .check()
            .expect("features")
            .with_projection(random_projection(&mut rng, 512, 128))
            .expect("projection");
        let plan = DevicePlan::new(&features, 512, false).expect("plan");
        let limit = plan.limit(features_limit(512, false));
        assert!(limit.max_sequences * (3 * 128 * 128 + 128) * 8 <= MODEL_SPACE_BYTES);
        assert_eq!(limit.padded_bytes_per_step, 128 * 8);
    }

    /// The solve kernel, with the batch's Grams from the DGEMMs, against its host reference
    /// on sequences of unequal lengths padded to the longest.
    #[test]
    fn the_model_space_kernel_matches_its_host_reference() {
        let Some(device) = crate::driver::test_gpu() else {
            return;
        };
        let mut rng = ChaCha8Rng::seed_from_u64(crate::driver::test_seed("model_space_kernel"));
        for (d, warmup) in [(1, 0), (7, 3), (33, 1), (MODEL_SPACE_MAX_WIDTH, 2)] {
            let lengths: Vec<usize> = (0..9).map(|_| rng.random_range(warmup + 2..=40)).collect();
            let longest = lengths.iter().copied().max().unwrap_or(0);
            let states: Vec<Array2<f64>> = lengths
                .iter()
                .map(|&t| random_states(&mut rng, t, d))
                .collect();
            let mut padded = vec![0.0f64; lengths.len() * longest * d];
            for (j, x) in states.iter().enumerate() {
                for t in 0..x.nrows() {
                    for i in 0..d {
                        padded[(j * longest + t) * d + i] = x[[t, i]];
                    }
                }
            }
            let stream = device.stream();
            let summarized = stream.clone_htod(&padded).expect("upload");
            let lengths_i: Vec<i32> = lengths.iter().map(|&t| t as i32).collect();
            let device_lengths = stream.clone_htod(&lengths_i).expect("upload");
            let kernels = device.kernels::<FeatureKernels>().expect("kernels");
            let features = FeatureParams::new()
                .summaries(vec![Summary::ModelSpace])
                .warmup(warmup)
                .model_ridge(0.3)
                .check()
                .expect("features");
            let plan = DevicePlan {
                features,
                n: d,
                d,
                passes: Vec::new(),
                plain: Vec::new(),
                model_space: true,
            };
            let models = solve_models(
                &device,
                &kernels,
                &plan,
                &summarized,
                &device_lengths,
                (lengths.len(), longest),
                0,
            )
            .expect("models");
            for (j, x) in states.iter().enumerate() {
                let expected = model_space_reference(x.view(), longest, warmup, 0.3);
                let got = &models[j * (d * d + d)..(j + 1) * (d * d + d)];
                for (g, e) in got.iter().zip(&expected) {
                    assert!(
                        (g - e).abs() < 1e-9 * (1.0 + e.abs()),
                        "d {d}, sequence {j}: {g} vs {e}"
                    );
                }
            }
        }
    }
}
