//! A sweep's lanes spread over several GPUs of one host.

use reservoir_core::lanes::{Lane, LaneData, LaneOutcomes, LaneRunner, LaneSums};
use reservoir_core::{ReservoirConfig, ReservoirError};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::collective::check_ordinals;
use crate::driver::GpuDevice;
use crate::error::Result;
use crate::gemm::GemmMath;
use crate::lanes::{GpuLaneRunner, LANE_GROUP};

/// Runs a sweep's lanes on several GPUs: each GPU runs groups of [`LANE_GROUP`] lanes in a
/// thread of its own, taking the next group not yet taken whenever it is free, and the sums
/// (or, for a sweep, the readouts' scores, solved on the GPU that ran the group) come back in
/// the order of the lanes. Every GPU draws the same W from the seed, and a lane's results
/// depend only on its group, never on the GPU that ran it, so they are those of a
/// [`GpuLaneRunner`] on one GPU of the same model, bit for bit.
///
/// The first GPU is opened at once; the others in their threads when a run first has more
/// than one group, so their start-up overlaps the first GPU's work instead of delaying it (a
/// GPU still opening takes no group until it is ready).
#[derive(Debug)]
pub struct MultiGpuLaneRunner {
    /// Each GPU's ordinal and, once opened, its runner.
    runners: Vec<(usize, Option<GpuLaneRunner>)>,
    math: GemmMath,
}

impl MultiGpuLaneRunner {
    /// A runner over the GPUs `ordinals` (in this order).
    ///
    /// # Errors
    /// No ordinal, one listed twice, or one the driver does not list; any error of opening
    /// the first GPU ([`GpuDevice::shared`], [`GpuLaneRunner::new`]).
    pub fn new(ordinals: &[usize]) -> Result<Self> {
        check_ordinals(ordinals)?;
        let mut runners: Vec<(usize, Option<GpuLaneRunner>)> =
            ordinals.iter().map(|&o| (o, None)).collect();
        runners[0].1 = Some(GpuLaneRunner::new(&GpuDevice::shared(ordinals[0])?)?);
        Ok(Self {
            runners,
            math: GemmMath::F32,
        })
    }

    /// This runner with every GPU's steps in `math` ([`GpuLaneRunner::with_math`]).
    pub fn with_math(mut self, math: GemmMath) -> Self {
        self.math = math;
        for (_, runner) in &mut self.runners {
            *runner = runner.take().map(|r| r.with_math(math));
        }
        self
    }

    /// Runs every lane over `data` and returns its sums, in the order of `lanes`.
    ///
    /// # Errors
    /// As [`GpuLaneRunner::run`], from whichever GPU failed first in the order of the groups;
    /// an error opening one of the GPUs.
    pub fn run(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        data.check(base)?;
        let groups = self.per_group(lanes, &|runner, group| runner.run_group(base, group, data))?;
        Ok(groups.into_iter().flatten().collect())
    }

    /// Runs every lane over `data` and solves and scores its readouts for every ridge value
    /// on the GPU that ran it ([`GpuLaneRunner::score`]); the outcomes of each group go to
    /// `visit(first_lane, outcomes)` in the order of the lanes, once every group has run.
    ///
    /// # Errors
    /// As [`MultiGpuLaneRunner::run`]; the first error `visit` returns.
    pub fn score(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> reservoir_core::Result<()>,
    ) -> Result<()> {
        data.check(base)?;
        let groups = self.per_group(lanes, &|runner, group| {
            runner.score_group(base, group, data, ridges)
        })?;
        for (index, outcomes) in groups.into_iter().enumerate() {
            visit(index * LANE_GROUP, outcomes)?;
        }
        Ok(())
    }

    /// Runs `work` on every group of [`LANE_GROUP`] lanes, a thread per GPU, each GPU taking
    /// the next group when it is free (after opening, where it was not open), and returns the
    /// results in the order of the groups.
    fn per_group<T: Send>(
        &mut self,
        lanes: &[Lane],
        work: &(dyn Fn(&mut GpuLaneRunner, &[Lane]) -> Result<T> + Sync),
    ) -> Result<Vec<T>> {
        let groups: Vec<&[Lane]> = lanes.chunks(LANE_GROUP).collect();
        let used = groups.len().min(self.runners.len());
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let mut done: Vec<Option<Result<T>>> = groups.iter().map(|_| None).collect();
        let mut open_error = None;
        let math = self.math;
        std::thread::scope(|scope| {
            let threads: Vec<_> = self.runners[..used]
                .iter_mut()
                .map(|(ordinal, slot)| {
                    let (groups, next, stop) = (&groups, &next, &stop);
                    scope.spawn(move || -> Result<Vec<(usize, Result<T>)>> {
                        let runner = match slot {
                            Some(runner) => runner,
                            None => slot.insert(
                                GpuLaneRunner::new(&GpuDevice::shared(*ordinal)?)?.with_math(math),
                            ),
                        };
                        let mut results = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            let index = next.fetch_add(1, Ordering::Relaxed);
                            let Some(group) = groups.get(index) else {
                                break;
                            };
                            let result = work(runner, group);
                            if result.is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                            results.push((index, result));
                        }
                        Ok(results)
                    })
                })
                .collect();
            for thread in threads {
                // The groups of a thread that panicked stay None, reported below.
                match thread.join() {
                    Ok(Ok(results)) => {
                        for (index, result) in results {
                            done[index] = Some(result);
                        }
                    }
                    Ok(Err(e)) => {
                        open_error.get_or_insert(e);
                    }
                    Err(_) => {}
                }
            }
        });
        if let Some(e) = open_error {
            return Err(e);
        }
        done.into_iter()
            .enumerate()
            .map(|(index, result)| match result {
                Some(result) => result,
                // Groups are taken in order, so only a panic leaves one untaken before the
                // first error.
                None => Err(ReservoirError::invalid(
                    "sweep on several GPUs",
                    format!("the thread of lane group {index} panicked"),
                )
                .into()),
            })
            .collect()
    }
}

impl LaneRunner for MultiGpuLaneRunner {
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> reservoir_core::Result<Vec<LaneSums>> {
        Ok(self.run(base, lanes, data)?)
    }

    /// Solves on the GPUs; `host_bytes` does not apply (only scores come back).
    fn score_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        _host_bytes: usize,
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> reservoir_core::Result<()>,
    ) -> reservoir_core::Result<()> {
        Ok(self.score(base, lanes, data, ridges, visit)?)
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
