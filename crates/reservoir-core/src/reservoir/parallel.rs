//! `run_many` on the reservoir's threads, for CPU reservoirs whose clones share their weights.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::{run_one_by_one, Reservoir, SequenceVisitor};
use crate::checks::check_inputs;
use crate::error::Result;
use crate::par::Par;

/// Sequences per thread in a wave: a few, so that uneven lengths even out across threads,
/// while the states held before they are visited stay a few sequences per thread.
const SEQUENCES_PER_THREAD: usize = 4;

/// [`Reservoir::run_many`] on up to [`Reservoir::par`] of rayon's threads, with the same
/// results bit for bit as [`run_one_by_one`]: each sequence is run from the zero state by a
/// clone of `reservoir` (a worker, on one thread: the others run the other sequences), with
/// the same arithmetic. The sequences run in waves of a few per thread; each
/// wave's states are then visited in input order, so memory stays bounded whatever the number
/// of sequences. The first error in input order (a run's or the visitor's) is returned, after
/// the sequences before it were visited. Workers never touch `reservoir`, so a panicking one
/// (a bug) is resumed on this thread without leaving a half-run state behind.
///
/// One sequence or one thread runs [`run_one_by_one`]. Otherwise `reservoir` is reset before
/// the runs and stays so, the workers being clones.
///
/// # Errors
/// As [`Reservoir::run_many`].
pub(crate) fn run_on_threads<R: Reservoir + Clone + Sync>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    visit: &mut SequenceVisitor<'_>,
) -> Result<()> {
    let par = reservoir.par();
    let threads = par.threads();
    if threads < 2 || sequences.len() < 2 {
        return run_one_by_one(reservoir, sequences, visit);
    }
    for inputs in sequences {
        check_inputs(reservoir.input_size(), inputs)?;
    }
    reservoir.reset()?;
    let template: &R = reservoir;
    let wave = threads * SEQUENCES_PER_THREAD;
    for (first, chunk) in (0..).step_by(wave).zip(sequences.chunks(wave)) {
        let runs: Vec<Result<Array2<f64>>> = chunk
            .par_iter()
            .with_min_len(par.min_len(chunk.len()))
            .map_init(
                || {
                    let mut worker = template.clone();
                    worker.set_par(Par::Seq);
                    worker
                },
                |worker, inputs| {
                    worker.reset()?;
                    worker.run(*inputs)
                },
            )
            .collect();
        for (index, states) in (first..).zip(runs) {
            visit(index, states?.view())?;
        }
    }
    Ok(())
}
