//! A sweep's lanes spread over several GPUs of one host.

use reservoir_core::lanes::{Lane, LaneData, LaneRunner, LaneSums};
use reservoir_core::{ReservoirConfig, ReservoirError};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

use crate::collective::check_ordinals;
use crate::driver::GpuDevice;
use crate::error::{GpuError, Result};
use crate::lanes::{GpuLaneRunner, LANE_GROUP};

/// Runs a sweep's lanes on several GPUs: the groups of [`LANE_GROUP`] lanes go to the GPUs in
/// turn (group g to GPU g mod the count), each GPU runs its groups one after another in a
/// thread of its own, and the sums come back in the order of the lanes. Every GPU draws the
/// same W from the seed, and a lane's results depend only on its group, so the sums are those
/// of a [`GpuLaneRunner`] on one GPU of the same model, bit for bit.
///
/// The first GPU is opened at once; the others when a run first has a group for them, so a
/// sweep of one group costs no other GPU's start-up.
#[derive(Debug)]
pub struct MultiGpuLaneRunner {
    /// Each GPU's ordinal and, once opened, its runner.
    runners: Vec<(usize, Option<GpuLaneRunner>)>,
}

impl MultiGpuLaneRunner {
    /// A runner over the GPUs `ordinals` (in this order).
    ///
    /// # Errors
    /// No ordinal, one listed twice, or one the driver does not list; any error of opening
    /// the first GPU ([`GpuDevice::shared`], [`GpuLaneRunner::new`]).
    pub fn new(ordinals: &[usize]) -> Result<Self> {
        check_ordinals(ordinals)?;
        let first = ordinals[0];
        let mut runners: Vec<(usize, Option<GpuLaneRunner>)> =
            ordinals.iter().map(|&o| (o, None)).collect();
        runners[0].1 = Some(GpuLaneRunner::new(&GpuDevice::shared(first)?)?);
        Ok(Self { runners })
    }

    /// Runs every lane over `data` and returns its sums, in the order of `lanes`.
    ///
    /// # Errors
    /// As [`GpuLaneRunner::run`], from whichever GPU failed first in the order of the groups;
    /// an error opening a GPU that a group went to.
    pub fn run(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        data.check(base)?;
        let groups: Vec<&[Lane]> = lanes.chunks(LANE_GROUP).collect();
        let used = groups.len().min(self.runners.len());
        self.open(used)?;
        let count = used.max(1);
        let mut done: Vec<Option<Result<Vec<LaneSums>>>> = groups.iter().map(|_| None).collect();
        std::thread::scope(|scope| {
            let threads: Vec<_> = self.runners[..used]
                .iter_mut()
                .filter_map(|(_, runner)| runner.as_mut())
                .enumerate()
                .map(|(first, runner)| {
                    let groups = &groups;
                    scope.spawn(move || {
                        let mut results = Vec::new();
                        for index in (first..groups.len()).step_by(count) {
                            let result = runner.run_group(base, groups[index], data);
                            let failed = result.is_err();
                            results.push((index, result));
                            if failed {
                                break;
                            }
                        }
                        results
                    })
                })
                .collect();
            for thread in threads {
                // The groups of a thread that panicked stay None, reported below.
                if let Ok(results) = thread.join() {
                    for (index, result) in results {
                        done[index] = Some(result);
                    }
                }
            }
        });
        let mut sums = Vec::with_capacity(lanes.len());
        for (index, result) in done.into_iter().enumerate() {
            match result {
                Some(result) => sums.extend(result?),
                // Only a panic leaves a group unrun before the first error in group order.
                None => {
                    return Err(ReservoirError::invalid(
                        "sweep on several GPUs",
                        format!("the thread of lane group {index} panicked"),
                    )
                    .into())
                }
            }
        }
        Ok(sums)
    }
}

impl MultiGpuLaneRunner {
    /// Opens the first `count` GPUs' runners, where they are not open yet.
    fn open(&mut self, count: usize) -> Result<()> {
        for (ordinal, runner) in &mut self.runners[..count] {
            if runner.is_none() {
                *runner = Some(GpuLaneRunner::new(&GpuDevice::shared(*ordinal)?)?);
            }
        }
        Ok(())
    }

    /// Runs `batches` of lanes and hands each batch's sums to `visit` in order, as
    /// [`LaneRunner::run_batches`] says: batch k on GPU k mod the count, each GPU running its
    /// batches in turn in a thread of its own, a batch's groups as one GPU runs them (so the
    /// sums are one GPU's, bit for bit). A GPU keeps a batch's sums on the device until
    /// `visit` has had every batch before it, then copies them back, so the host holds one
    /// batch's sums at a time while the GPUs run side by side. A single batch spreads its
    /// groups over the GPUs instead ([`MultiGpuLaneRunner::run`]).
    ///
    /// # Errors
    /// As [`MultiGpuLaneRunner::run`]; the first error of a batch in batch order, or of
    /// `visit`.
    pub fn run_in_batches(
        &mut self,
        base: &ReservoirConfig,
        batches: &[&[Lane]],
        data: &LaneData<'_>,
        visit: &mut dyn FnMut(usize, Vec<LaneSums>) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        data.check(base)?;
        let used = self.runners.len().min(batches.len());
        if used < 2 {
            for (index, batch) in batches.iter().enumerate() {
                let sums = self.run(base, batch, data)?;
                visit(index, sums)?;
            }
            return Ok(());
        }
        self.open(used)?;
        let runners: Vec<&mut GpuLaneRunner> = self.runners[..used]
            .iter_mut()
            .filter_map(|(_, runner)| runner.as_mut())
            .collect();
        std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel::<(usize, Result<Vec<LaneSums>>)>();
            let mut turns = Vec::with_capacity(used);
            for (first, runner) in runners.into_iter().enumerate() {
                let (turn, my_turn) = mpsc::channel::<()>();
                turns.push(turn);
                let done = done.clone();
                scope.spawn(move || {
                    for index in (first..batches.len()).step_by(used) {
                        let copied = catch_unwind(AssertUnwindSafe(|| {
                            let groups = batches[index]
                                .chunks(LANE_GROUP)
                                .map(|group| runner.sum_group(base, group, data))
                                .collect::<Result<Vec<_>>>();
                            // The batches before this one have been visited (or the run ended).
                            my_turn.recv().ok()?;
                            Some(groups.and_then(|groups| {
                                let mut sums = Vec::new();
                                for group in groups.iter().flatten() {
                                    sums.extend(group.download()?);
                                }
                                Ok(sums)
                            }))
                        }));
                        let copied = match copied {
                            Ok(Some(copied)) => copied,
                            Ok(None) => return,
                            Err(_) => Err(panicked(index)),
                        };
                        let failed = copied.is_err();
                        if done.send((index, copied)).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            drop(done);
            let outcome = (|| -> Result<()> {
                for (index, turn) in (0..batches.len()).zip(turns.iter().cycle()) {
                    let (sent, sums) = turn
                        .send(())
                        .ok()
                        .and_then(|()| finished.recv().ok())
                        .ok_or_else(|| panicked(index))?;
                    // Only batch `index` was given its turn; another batch's message is the
                    // error of a thread that panicked before its turn.
                    let sums = sums?;
                    if sent != index {
                        return Err(panicked(sent));
                    }
                    visit(index, sums)?;
                }
                Ok(())
            })();
            // Threads still waiting for a turn end once their channel closes.
            drop(turns);
            outcome
        })
    }
}

/// The error of a batch whose GPU thread panicked.
fn panicked(index: usize) -> GpuError {
    ReservoirError::invalid(
        "sweep on several GPUs",
        format!("the thread running lane batch {index} panicked"),
    )
    .into()
}

impl LaneRunner for MultiGpuLaneRunner {
    fn run_batches(
        &mut self,
        base: &ReservoirConfig,
        batches: &[&[Lane]],
        data: &LaneData<'_>,
        visit: &mut dyn FnMut(usize, Vec<LaneSums>) -> reservoir_core::Result<()>,
    ) -> reservoir_core::Result<()> {
        Ok(self.run_in_batches(base, batches, data, visit)?)
    }

    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> reservoir_core::Result<Vec<LaneSums>> {
        Ok(self.run(base, lanes, data)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_repeated_list_of_gpus_is_refused_before_any_gpu_is_opened() {
        let empty = MultiGpuLaneRunner::new(&[]).expect_err("no GPU");
        assert!(empty.to_string().contains("at least one GPU"), "{empty}");
        let twice = MultiGpuLaneRunner::new(&[1, 0, 1]).expect_err("GPU 1 twice");
        assert!(
            twice.to_string().contains("GPU 1 is listed twice"),
            "{twice}"
        );
    }
}
