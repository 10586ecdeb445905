//! A sweep's lanes spread over several GPUs of one host.

use reservoir_core::lanes::{Lane, LaneData, LaneRunner, LaneSums};
use reservoir_core::{ReservoirConfig, ReservoirError};

use crate::driver::GpuDevice;
use crate::error::Result;
use crate::lanes::{GpuLaneRunner, LANE_GROUP};

/// Runs a sweep's lanes on several GPUs: the groups of [`LANE_GROUP`] lanes go to the GPUs in
/// turn (group g to GPU g mod the count), each GPU runs its groups one after another in a
/// thread of its own, and the sums come back in the order of the lanes. Every GPU draws the
/// same W from the seed, and a lane's results depend only on its group, so the sums are those
/// of a [`GpuLaneRunner`] on one GPU of the same model, bit for bit.
#[derive(Debug)]
pub struct MultiGpuLaneRunner {
    runners: Vec<GpuLaneRunner>,
}

impl MultiGpuLaneRunner {
    /// A runner over `devices` (each compiles the lane kernel on first use).
    ///
    /// # Errors
    /// No device, or one device listed twice; any error of [`GpuLaneRunner::new`].
    pub fn new(devices: &[GpuDevice]) -> Result<Self> {
        if devices.is_empty() {
            return Err(ReservoirError::invalid("devices", "list at least one GPU").into());
        }
        let mut ordinals: Vec<usize> = devices.iter().map(|d| d.info().ordinal).collect();
        ordinals.sort_unstable();
        if let Some(twice) = ordinals.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ReservoirError::invalid(
                "devices",
                format!("GPU {} is listed twice", twice[0]),
            )
            .into());
        }
        Ok(Self {
            runners: devices
                .iter()
                .map(GpuLaneRunner::new)
                .collect::<Result<_>>()?,
        })
    }

    /// The GPUs, in the order given.
    pub fn devices(&self) -> impl Iterator<Item = &GpuDevice> {
        self.runners.iter().map(GpuLaneRunner::device)
    }

    /// Runs every lane over `data` and returns its sums, in the order of `lanes`.
    ///
    /// # Errors
    /// As [`GpuLaneRunner::run`], from whichever GPU failed first in the order of the groups.
    pub fn run(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        data.check(base)?;
        let groups: Vec<&[Lane]> = lanes.chunks(LANE_GROUP).collect();
        let count = self.runners.len();
        let mut done: Vec<Option<Result<Vec<LaneSums>>>> =
            (0..groups.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let threads: Vec<_> = self
                .runners
                .iter_mut()
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

impl LaneRunner for MultiGpuLaneRunner {
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> reservoir_core::Result<Vec<LaneSums>> {
        Ok(self.run(base, lanes, data)?)
    }
}
