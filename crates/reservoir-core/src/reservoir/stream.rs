//! The CPU way to run a reservoir into ridge sums: states in chunks, added on a second thread.

use std::sync::mpsc;

use ndarray::{s, Array2, ArrayView2};

use super::Reservoir;
use crate::error::{ReservoirError, Result};
use crate::readout::RidgeAccumulator;

/// Rows of states produced per chunk while streaming into a [`RidgeAccumulator`].
pub(crate) const STREAM_CHUNK_ROWS: usize = 512;

/// Runs `reservoir` over `inputs` from its current state and adds every (state, target) row
/// after the first `washout` rows to `acc` (the arguments checked by the caller).
///
/// States are produced in chunks of [`STREAM_CHUNK_ROWS`], so memory stays O(chunk · N)
/// whatever T is. A second thread adds chunk i to the accumulator while this one computes
/// chunk i + 1, so the cost is close to the larger of the run and the XᵀX update; the run
/// gets the reservoir's threads ([`Reservoir::par`]) but the one the accumulating thread
/// keeps busy. Where a run may use one thread only (one core, or a lane among others), the
/// chunks are run and added in turn on this thread: no other core is free for the sums.
pub(super) fn accumulate_on_cpu<R: Reservoir + ?Sized>(
    reservoir: &mut R,
    inputs: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    washout: usize,
    acc: &mut RidgeAccumulator,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let total = inputs.nrows();
    let add = |acc: &mut RidgeAccumulator, start: usize, states: Array2<f64>| {
        let skip = washout.saturating_sub(start).min(states.nrows());
        let end = start + states.nrows();
        acc.add(
            states.slice(s![skip.., ..]),
            targets.slice(s![start + skip..end, ..]),
        )
    };
    let par = reservoir.par();
    if par.threads() == 1 {
        for start in (0..total).step_by(STREAM_CHUNK_ROWS) {
            let end = (start + STREAM_CHUNK_ROWS).min(total);
            let states = reservoir.run(inputs.slice(s![start..end, ..]))?;
            progress(end, total);
            add(acc, start, states)?;
        }
        return Ok(());
    }
    reservoir.set_par(par.less_one());
    let (sender, receiver) = mpsc::sync_channel::<(usize, Array2<f64>)>(1);
    let summed = std::thread::scope(|scope| {
        let consumer = scope.spawn(move || -> Result<()> {
            for (start, states) in receiver {
                add(acc, start, states)?;
            }
            Ok(())
        });
        let mut produced = Ok(());
        for start in (0..total).step_by(STREAM_CHUNK_ROWS) {
            let end = (start + STREAM_CHUNK_ROWS).min(total);
            match reservoir.run(inputs.slice(s![start..end, ..])) {
                Ok(states) => {
                    progress(end, total);
                    if sender.send((start, states)).is_err() {
                        break; // the consumer stopped on an error, reported below
                    }
                }
                Err(e) => {
                    produced = Err(e);
                    break;
                }
            }
        }
        drop(sender);
        let consumed = consumer.join().unwrap_or_else(|_| {
            Err(ReservoirError::numerical(
                "training",
                "the accumulation thread panicked",
            ))
        });
        produced.and(consumed)
    });
    reservoir.set_par(par);
    summed
}
