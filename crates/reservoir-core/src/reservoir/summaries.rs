//! Sequence features from a reservoir's runs, whatever they ask for: summaries of the states
//! as they go by, the time-reversed sequence's states beside the forward ones, a projection
//! onto principal components (fitted here on training sequences), the model space.

use ndarray::{concatenate, s, Array1, Array2, ArrayView2, Axis};
use rayon::prelude::*;

use super::Reservoir;
use crate::error::{ReservoirError, Result};
use crate::features::{SequenceFeatures, StateCovariance};
use crate::memory::try_vec;

/// States held at once while features need each sequence's states whole (f64 values): the
/// sequences are run in chunks of about this many.
const CHUNK_VALUES: usize = 1 << 24;

/// Training states the projection is fitted on, at most: sequences evenly spaced through the
/// training set until about this many rows (their covariance costs rows × width²).
const PROJECTION_ROWS: usize = 20_000;

/// [`Reservoir::sequence_features`] from the states [`Reservoir::run_many`] hands out: the
/// provided method, and what an override falls back to for features it does not sum itself
/// (any but [plain](SequenceFeatures::is_plain) ones).
///
/// Bidirectional features without a projection or a model space ask the reservoir for the
/// plain features of each direction (so a backend's own summing serves both); the others run
/// the sequences in chunks and hand each one's states, forward beside reversed, to
/// [`SequenceFeatures::write`].
///
/// # Errors
/// As [`Reservoir::sequence_features`]; features whose projection is still to be fitted
/// ([`fit_features`]).
pub fn features_of_runs<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    features: &SequenceFeatures,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array2<f64>> {
    for (index, inputs) in sequences.iter().enumerate() {
        features.check_steps(index, inputs.nrows())?;
    }
    if features.needs_projection() {
        return Err(ReservoirError::invalid(
            "sequence features",
            "the projection onto principal components has not been fitted",
        ));
    }
    let (total, n) = (sequences.len(), reservoir.size());
    if features.bidirectional() && features.one_direction().is_plain() {
        return both_directions(reservoir, sequences, features, progress);
    }
    let mut rows = feature_rows(total, features.width(n))?;
    if features.is_plain() {
        reservoir.run_many(sequences, &mut |index, states| {
            features.write(states, index, rows.row_mut(index))?;
            progress(index + 1, total);
            Ok(())
        })?;
        return Ok(rows);
    }
    // A projection and a model space cost more per sequence than summing states: each
    // chunk's sequences are summarized on the reservoir's threads, each on one.
    let par = reservoir.par();
    each_chunk(
        reservoir,
        sequences,
        features.bidirectional(),
        &mut |first, states| {
            let summarized: Vec<Result<Array1<f64>>> = states
                .par_iter()
                .enumerate()
                .with_min_len(par.min_len(states.len()))
                .map(|(i, states)| features.of(states.view(), first + i))
                .collect();
            for (i, row) in summarized.into_iter().enumerate() {
                put_row(&mut rows, first + i, &row?)?;
            }
            progress(first + states.len(), total);
            Ok(())
        },
    )?;
    Ok(rows)
}

/// Room for `sequences` rows of `width` features, allocated fallibly (a model space of wide
/// states asks for many).
fn feature_rows(sequences: usize, width: usize) -> Result<Array2<f64>> {
    let cells = sequences.checked_mul(width).ok_or_else(|| {
        ReservoirError::invalid(
            "sequence features",
            format!("{sequences} sequences of {width} features are too many"),
        )
    })?;
    let values = try_vec("the sequence features", cells, 0.0)?;
    Array2::from_shape_vec((sequences, width), values)
        .map_err(|e| ReservoirError::invalid("sequence features", e.to_string()))
}

/// Bidirectional features summed by the reservoir itself, one direction at a time: each
/// summary's forward values, then the reversed sequence's, as [`SequenceFeatures::write`]
/// lays them out on the two directions' states side by side.
fn both_directions<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    features: &SequenceFeatures,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array2<f64>> {
    let total = sequences.len();
    let one = features.one_direction();
    let forward =
        reservoir.sequence_features(sequences, &one, &mut |d, _| progress(d / 2, total))?;
    let reversed = reversed_copies(sequences);
    let views: Vec<ArrayView2<f64>> = reversed.iter().map(|r| r.view()).collect();
    let backward = reservoir.sequence_features(&views, &one, &mut |d, _| {
        progress(total.div_ceil(2) + d / 2, total)
    })?;
    let n = reservoir.size();
    let blocks = forward.ncols() / n.max(1);
    let mut parts = Vec::with_capacity(2 * blocks);
    for k in 0..blocks {
        parts.push(forward.slice(s![.., k * n..(k + 1) * n]));
        parts.push(backward.slice(s![.., k * n..(k + 1) * n]));
    }
    concatenate(Axis(1), &parts)
        .map_err(|e| ReservoirError::invalid("sequence features", e.to_string()))
}

/// Copies of `sequences` with their steps in reverse order.
pub(crate) fn reversed_copies(sequences: &[ArrayView2<f64>]) -> Vec<Array2<f64>> {
    sequences
        .iter()
        .map(|u| u.slice(s![..;-1, ..]).to_owned())
        .collect()
}

/// A sequence's states with the reversed sequence's beside them: T × 2N.
pub(crate) fn side_by_side(
    forward: ArrayView2<f64>,
    backward: ArrayView2<f64>,
) -> Result<Array2<f64>> {
    concatenate(Axis(1), &[forward, backward])
        .map_err(|e| ReservoirError::invalid("sequence features", e.to_string()))
}

/// Puts sequence `index`'s feature `row` in `rows`, an error unless it is as wide.
pub(crate) fn put_row(rows: &mut Array2<f64>, index: usize, row: &Array1<f64>) -> Result<()> {
    if row.len() != rows.ncols() {
        return Err(ReservoirError::shape(
            "sequence features",
            rows.ncols(),
            row.len(),
        ));
    }
    rows.row_mut(index).assign(row);
    Ok(())
}

/// Hands `visit` the states of the sequences, a chunk of about [`CHUNK_VALUES`] state values
/// at a time: `(index of the chunk's first sequence, each one's states)`, T × N, or T × 2N
/// with the reversed sequence's states beside the forward ones when `bidirectional`. Every
/// sequence runs from the zero state.
fn each_chunk<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    bidirectional: bool,
    visit: &mut dyn FnMut(usize, Vec<Array2<f64>>) -> Result<()>,
) -> Result<()> {
    let width = reservoir.size().max(1) * if bidirectional { 2 } else { 1 };
    let mut first = 0;
    while first < sequences.len() {
        let mut end = first;
        let mut values = 0usize;
        while end < sequences.len() && (end == first || values < CHUNK_VALUES) {
            values = values.saturating_add(sequences[end].nrows().saturating_mul(width));
            end += 1;
        }
        let chunk = &sequences[first..end];
        let mut states: Vec<Array2<f64>> = Vec::with_capacity(chunk.len());
        reservoir.run_many(chunk, &mut |_, forward| {
            states.push(forward.to_owned());
            Ok(())
        })?;
        if bidirectional {
            let reversed = reversed_copies(chunk);
            let views: Vec<ArrayView2<f64>> = reversed.iter().map(|r| r.view()).collect();
            reservoir.run_many(&views, &mut |i, backward| {
                let forward = states.get_mut(i).ok_or_else(|| {
                    ReservoirError::invalid("run_many", "a sequence of the chunk was not run")
                })?;
                *forward = side_by_side(forward.view(), backward)?;
                Ok(())
            })?;
        }
        visit(first, states)?;
        first = end;
    }
    Ok(())
}

/// `features` ready to compute: when they ask for principal components, the projection
/// fitted on the states (forward beside reversed when bidirectional, after each sequence's
/// warm-up) of training `sequences`, evenly spaced through them up to about
/// 20,000 rows; otherwise the features as they are. The reservoir is left reset.
///
/// # Errors
/// More components than the states' width (naming `components`), a sequence too short for
/// the features, any error of the runs or of the eigendecomposition.
pub fn fit_features<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    features: &SequenceFeatures,
) -> Result<SequenceFeatures> {
    if !features.needs_projection() {
        return Ok(features.clone());
    }
    let width = features.state_width(reservoir.size());
    if features.components() > width {
        return Err(ReservoirError::invalid(
            "features.components",
            format!(
                "{} components of states {width} wide: at most {width}",
                features.components()
            ),
        ));
    }
    for (index, inputs) in sequences.iter().enumerate() {
        features.check_steps(index, inputs.nrows())?;
    }
    let rows: usize = sequences.iter().map(|u| u.nrows()).sum();
    let every = rows.div_ceil(PROJECTION_ROWS).max(1);
    let sample: Vec<ArrayView2<f64>> = sequences.iter().step_by(every).copied().collect();
    let warmup = features.warmup();
    let fitted_rows: usize = sample
        .iter()
        .map(|u| u.nrows().saturating_sub(warmup))
        .sum();
    if fitted_rows < 2 {
        return Err(ReservoirError::invalid(
            "features.warmup",
            format!(
                "leaves {fitted_rows} training state(s) after each sequence's first {warmup} \
                 to fit the projection on; at least 2 are needed"
            ),
        ));
    }
    let mut sums = StateCovariance::new(width, reservoir.par())?;
    each_chunk(
        reservoir,
        &sample,
        features.bidirectional(),
        &mut |_, chunk| {
            for states in &chunk {
                sums.add(states.slice(s![warmup.min(states.nrows()).., ..]))?;
            }
            Ok(())
        },
    )?;
    features.with_projection(sums.projection(features.components())?)
}
