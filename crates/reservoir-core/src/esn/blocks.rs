//! Many sequences through the CPU echo-state reservoir in blocks of [`LANES`]: the states of a
//! block are an N × LANES matrix, so each step reads every weight of a sparse W once for all of
//! them, in SIMD lanes, instead of gathering the state once per sequence.
//!
//! A lane's arithmetic is that of one sequence alone (each row of W·x summed in the order all
//! product kernels follow), except that a zero input is added rather than skipped, which can
//! only change the sign of a zero: states equal those of [`Reservoir::run`], and are the same
//! bits whatever the thread count, the order of the sequences or the others in the block.

use ndarray::{s, Array1, Array2, ArrayView2};
use rayon::prelude::*;

use super::EchoStateNetwork;
use crate::activation::apply_in_place;
use crate::checks::check_inputs;
use crate::error::{ReservoirError, Result};
use crate::features::SequenceFeatures;
use crate::real::{Real, LANES};
use crate::reservoir::{put_row, reversed_copies, side_by_side, Reservoir, SequenceVisitor};
use crate::sparse::CsrMatrix;

/// Blocks per thread in a wave: enough that uneven blocks even out across threads, while the
/// states held before they are visited stay a few blocks per thread.
const BLOCKS_PER_THREAD: usize = 4;

/// [`Reservoir::run_many`] in blocks of [`LANES`] sequences on up to [`Reservoir::par`] of
/// rayon's threads. The sequences
/// run in waves of consecutive ones; within a wave, blocks take them longest first (so a
/// block's lanes end at about the same step), and the wave's states are then visited in input
/// order, so memory stays bounded whatever the number of sequences. The first error in input
/// order is returned, after the sequences before it were visited.
///
/// # Errors
/// As [`Reservoir::run_many`].
pub(super) fn run_in_blocks<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    sequences: &[ArrayView2<f64>],
    visit: &mut SequenceVisitor<'_>,
) -> Result<()> {
    for inputs in sequences {
        check_inputs(reservoir.input_size(), inputs)?;
    }
    let par = reservoir.par;
    let wave = par.threads() * BLOCKS_PER_THREAD * LANES;
    for (first, chunk) in (0..).step_by(wave).zip(sequences.chunks(wave)) {
        let order = longest_first(chunk);
        let blocks: Vec<Vec<Array2<f64>>> = order
            .par_chunks(LANES)
            .with_min_len(par.min_len(chunk.len().div_ceil(LANES)))
            .map(|members| {
                let block: Vec<ArrayView2<f64>> = members.iter().map(|&i| chunk[i]).collect();
                block_states(reservoir, w, &block)
            })
            .collect();
        let mut states: Vec<Option<Array2<f64>>> = vec![None; chunk.len()];
        for (members, block) in order.chunks(LANES).zip(blocks) {
            for (&i, s) in members.iter().zip(block) {
                states[i] = Some(s);
            }
        }
        for (offset, s) in states.into_iter().enumerate() {
            let s = s.ok_or_else(|| {
                ReservoirError::invalid("run_many", "a sequence of a block was not run")
            })?;
            visit(first + offset, s.view())?;
        }
    }
    Ok(())
}

/// [`Reservoir::sequence_features`] in blocks of [`LANES`] sequences on up to
/// [`Reservoir::par`] of rayon's threads: [plain](SequenceFeatures::is_plain) features summed
/// as the states go by (no sequence's states are ever held), others (a fitted projection, the
/// model space, both directions) from each block's states on the thread that ran it, so no
/// state is copied or summarized on one thread. The same bits as [`run_in_blocks`] followed by
/// [`SequenceFeatures::write`].
///
/// # Errors
/// As [`Reservoir::sequence_features`].
pub(super) fn features_in_blocks<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    sequences: &[ArrayView2<f64>],
    features: &SequenceFeatures,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Array2<f64>> {
    for (index, inputs) in sequences.iter().enumerate() {
        features.check_steps(index, inputs.nrows())?;
        check_inputs(reservoir.input_size(), inputs)?;
    }
    let total = sequences.len();
    let mut rows = Array2::zeros((total, features.width(reservoir.size())));
    let par = reservoir.par;
    let wave = par.threads() * BLOCKS_PER_THREAD * LANES;
    for (first, chunk) in (0..).step_by(wave).zip(sequences.chunks(wave)) {
        let order = longest_first(chunk);
        let blocks: Vec<Result<Vec<Array1<f64>>>> = order
            .par_chunks(LANES)
            .with_min_len(par.min_len(chunk.len().div_ceil(LANES)))
            .map(|members| {
                let block: Vec<ArrayView2<f64>> = members.iter().map(|&i| chunk[i]).collect();
                if features.is_plain() {
                    return Ok(block_features(reservoir, w, &block, features));
                }
                let indices: Vec<usize> = members.iter().map(|&i| first + i).collect();
                block_summaries(reservoir, w, &block, &indices, features)
            })
            .collect();
        for (members, block) in order.chunks(LANES).zip(blocks) {
            for (&i, row) in members.iter().zip(block?) {
                put_row(&mut rows, first + i, &row)?;
            }
        }
        progress(first + chunk.len(), total);
    }
    Ok(rows)
}

/// The indices of `chunk`, longest sequence first (ties in input order), so that each block's
/// lanes end at about the same step.
fn longest_first(chunk: &[ArrayView2<f64>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..chunk.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(chunk[i].nrows()));
    order
}

/// What a block does with the state of lane `lane` after step `t` (only while the lane's
/// sequence lasts): the states, `x[i][lane]` for unit i.
type Sink<'a, T> = dyn FnMut(usize, usize, &[[T; LANES]]) + 'a;

/// Runs up to [`LANES`] sequences (checked) together from the zero state, handing each lane's
/// state after each of its steps to `sink`. Lanes past the block's sequences, and lanes whose
/// sequence has ended, step on unread.
fn run_block<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
    sink: &mut Sink<'_, T>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2; the function is safe code compiled for it.
            return unsafe { run_block_avx2(reservoir, w, block, sink) };
        }
    }
    run_block_portable(reservoir, w, block, sink)
}

/// [`run_block`] with the lanes as 256-bit vectors: the same operations, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_block_avx2<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
    sink: &mut Sink<'_, T>,
) {
    run_block_portable(reservoir, w, block, sink)
}

#[inline(always)]
fn run_block_portable<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
    sink: &mut Sink<'_, T>,
) {
    let (n, k) = (reservoir.size(), reservoir.input_size());
    let longest = block.iter().map(|s| s.nrows()).max().unwrap_or(0);
    let mut x = vec![[T::zero(); LANES]; n];
    let mut pre = vec![[T::zero(); LANES]; n];
    // The block's inputs of one step, a row per channel (zero in a lane whose sequence has
    // ended), and W_in a row per unit.
    let mut u = vec![[T::zero(); LANES]; k];
    let w_in: Vec<T> = reservoir.input_by_channel.t().iter().copied().collect();
    let leak = reservoir.leak;
    let keep = T::one() - leak;
    for t in 0..longest {
        w.mul_block_trusted(x.as_flattened(), pre.as_flattened_mut());
        for (row, &b) in pre.iter_mut().zip(reservoir.bias.iter()) {
            for p in row {
                *p += b;
            }
        }
        for (lane, inputs) in block.iter().enumerate() {
            let row = (t < inputs.nrows()).then(|| inputs.row(t));
            for (channel, lanes) in u.iter_mut().enumerate() {
                lanes[lane] = row.map_or(T::zero(), |r| T::from_f64(r[channel]));
            }
        }
        // Channel after channel, as one sequence alone adds them.
        for (row, weights) in pre.iter_mut().zip(w_in.chunks_exact(k)) {
            for (&weight, lanes) in weights.iter().zip(&u) {
                for (p, &value) in row.iter_mut().zip(lanes) {
                    *p += weight * value;
                }
            }
        }
        apply_in_place(reservoir.config.activation(), pre.as_flattened_mut());
        for (xs, ps) in x.iter_mut().zip(&pre) {
            for (xv, &p) in xs.iter_mut().zip(ps) {
                *xv = keep * *xv + leak * p;
            }
        }
        for (lane, inputs) in block.iter().enumerate() {
            if t < inputs.nrows() {
                sink(lane, t, &x);
            }
        }
    }
}

/// The states of a block's sequences (Tᵢ × N each).
fn block_states<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
) -> Vec<Array2<f64>> {
    let n = reservoir.size();
    let mut out: Vec<Array2<f64>> = block
        .iter()
        .map(|s| Array2::zeros((s.nrows(), n)))
        .collect();
    run_block(reservoir, w, block, &mut |lane, t, x| {
        for (o, xs) in out[lane].row_mut(t).iter_mut().zip(x) {
            *o = xs[lane].as_f64();
        }
    });
    out
}

/// The features of a block's sequences (`indices` in the call, for errors) from their states,
/// with the time-reversed sequences' states beside them when the features are bidirectional:
/// what [`SequenceFeatures::of`] makes of them.
fn block_summaries<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
    indices: &[usize],
    features: &SequenceFeatures,
) -> Result<Vec<Array1<f64>>> {
    let forward = block_states(reservoir, w, block);
    let states = if features.bidirectional() {
        let reversed = reversed_copies(block);
        let views: Vec<ArrayView2<f64>> = reversed.iter().map(|r| r.view()).collect();
        let backward = block_states(reservoir, w, &views);
        forward
            .iter()
            .zip(&backward)
            .map(|(f, b)| side_by_side(f.view(), b.view()))
            .collect::<Result<Vec<_>>>()?
    } else {
        forward
    };
    states
        .iter()
        .zip(indices)
        .map(|(states, &index)| features.of(states.view(), index))
        .collect()
}

/// The features of a block's sequences, summed as the states go by (the same additions, in
/// the same order, as [`SequenceFeatures::write`] on the states, so the same bits).
fn block_features<T: Real>(
    reservoir: &EchoStateNetwork<T>,
    w: &CsrMatrix<T>,
    block: &[ArrayView2<f64>],
    features: &SequenceFeatures,
) -> Vec<Array1<f64>> {
    let n = reservoir.size();
    let mut out: Vec<Array1<f64>> = block
        .iter()
        .map(|_| Array1::zeros(features.width(n)))
        .collect();
    run_block(reservoir, w, block, &mut |lane, t, x| {
        let steps = block[lane].nrows();
        for (slot, &summary) in features.summaries().iter().enumerate() {
            if features.rows(summary, steps).contains(&t) {
                let mut sums = out[lane].slice_mut(s![slot * n..(slot + 1) * n]);
                for (sum, xs) in sums.iter_mut().zip(x) {
                    *sum += xs[lane].as_f64();
                }
            }
        }
    });
    for (row, inputs) in out.iter_mut().zip(block) {
        features.scale_sums(row.view_mut(), n, inputs.nrows());
    }
    out
}
