//! `run_many` on every core, for CPU reservoirs whose clones share their weights.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::threads::with_run_threads;
use super::{run_one_by_one, Reservoir, SequenceVisitor};
use crate::checks::check_inputs;
use crate::error::Result;

/// Sequences per thread in a wave: a few, so that uneven lengths even out across threads,
/// while the states held before they are visited stay a few sequences per thread.
const SEQUENCES_PER_THREAD: usize = 4;

/// [`Reservoir::run_many`] on rayon's threads, with the same results bit for bit as
/// [`run_one_by_one`]: each sequence is run from the zero state by a clone of `reservoir` (a
/// worker), with the same arithmetic. The sequences run in waves of a few per thread; each
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
pub(crate) fn run_on_all_cores<R: Reservoir + Clone + Sync>(
    reservoir: &mut R,
    sequences: &[ArrayView2<f64>],
    visit: &mut SequenceVisitor<'_>,
) -> Result<()> {
    let threads = rayon::current_num_threads();
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
            .map_init(
                || template.clone(),
                |worker, inputs| {
                    worker.reset()?;
                    // The other threads run the other sequences.
                    with_run_threads(1, || worker.run(*inputs))
                },
            )
            .collect();
        for (index, states) in (first..).zip(runs) {
            visit(index, states?.view())?;
        }
    }
    Ok(())
}
