//! A sweep's lanes over the processes of a launch, one GPU each, on one host or many: rank r
//! runs the groups of lanes g with g mod world = r and solves and scores them on its GPU, then
//! every rank gathers every rank's scores through NCCL (the lengths, then the encoded
//! outcomes: two all-gathers), so each holds the whole sweep in lane order, with the numbers
//! one GPU gives.

use gpu_reservoir::{Collective, GpuLaneRunner, LANE_GROUP};
use reservoir_core::lanes::{Lane, LaneData, LaneOutcomes, LaneRunner, LaneScores, LaneSums};
use reservoir_core::{ReservoirConfig, ReservoirError, Result};

/// What one rank sends: the outcomes of its groups by group index (a failed (lane, ridge) as
/// its message), or the message of the error that stopped it. Every rank sends, whatever
/// happened to it, so no rank waits in a gather for one that gave up.
type Sent =
    std::result::Result<Vec<(usize, Vec<Vec<std::result::Result<LaneScores, String>>>)>, String>;

/// The lane runner of a process that is one rank of a launch (see the module).
pub(crate) struct RankLaneRunner {
    runner: GpuLaneRunner,
    collective: Collective,
}

impl RankLaneRunner {
    /// A runner of this process's share of a sweep's lanes on `runner`'s GPU, gathering over
    /// `collective` (one rank per process).
    pub(crate) fn new(runner: GpuLaneRunner, collective: Collective) -> Self {
        Self { runner, collective }
    }

    /// This rank's outcomes of the groups it runs.
    fn run_mine(
        &mut self,
        base: &ReservoirConfig,
        groups: &[&[Lane]],
        data: &LaneData<'_>,
        ridges: &[f64],
    ) -> Sent {
        let (rank, world) = (self.collective.ranks().start, self.collective.world());
        (rank..groups.len())
            .step_by(world)
            .map(|index| {
                let outcomes = self
                    .runner
                    .score_group(base, groups[index], data, ridges)
                    .map_err(|e| e.to_string())?;
                let sent = outcomes
                    .into_iter()
                    .map(|lane| {
                        lane.into_iter()
                            .map(|o| o.map_err(|e| e.to_string()))
                            .collect()
                    })
                    .collect();
                Ok((index, sent))
            })
            .collect()
    }

    /// Every rank's `sent`, gathered on every rank, in rank order.
    fn gather(&mut self, sent: &Sent) -> Result<Vec<Sent>> {
        let config = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(sent, config)
            .map_err(|e| ReservoirError::invalid("sweep over ranks", e))?;
        let lengths = self
            .collective
            .gather_to_host(&[&[bytes.len() as u64]], 1)?;
        let width = lengths.iter().copied().max().unwrap_or(0) as usize;
        let gathered = self.collective.gather_to_host(&[&bytes], width)?;
        lengths
            .iter()
            .enumerate()
            .map(|(rank, &length)| {
                let start = rank * width.max(1);
                let part = gathered
                    .get(start..start + length as usize)
                    .ok_or_else(|| {
                        ReservoirError::invalid("sweep over ranks", "a rank's part is cut short")
                    })?;
                bincode::serde::decode_from_slice(part, config)
                    .map(|(sent, _)| sent)
                    .map_err(|e| {
                        ReservoirError::invalid(
                            "sweep over ranks",
                            format!("rank {rank}'s outcomes do not decode: {e}"),
                        )
                    })
            })
            .collect()
    }
}

impl LaneRunner for RankLaneRunner {
    /// Sums stay with the process that asks for them: every lane runs on this rank's GPU.
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        Ok(self.runner.run(base, lanes, data)?)
    }

    /// Solves on the GPUs of every rank; `host_bytes` does not apply.
    ///
    /// # Errors
    /// The error that stopped the lowest rank that failed (`rank R: …`), or of the
    /// collectives; `visit`'s.
    fn score_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        _host_bytes: usize,
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> Result<()>,
    ) -> Result<()> {
        let groups: Vec<&[Lane]> = lanes.chunks(LANE_GROUP).collect();
        let sent = self.run_mine(base, &groups, data, ridges);
        let mut outcomes: Vec<Option<LaneOutcomes>> = groups.iter().map(|_| None).collect();
        for (rank, sent) in self.gather(&sent)?.into_iter().enumerate() {
            let parts = sent.map_err(|message| ReservoirError::Reported {
                message: format!("rank {rank}: {message}"),
            })?;
            for (index, lanes) in parts {
                let slot = outcomes.get_mut(index).ok_or_else(|| {
                    ReservoirError::invalid(
                        "sweep over ranks",
                        format!("rank {rank} sent lane group {index} of {}", groups.len()),
                    )
                })?;
                *slot = Some(
                    lanes
                        .into_iter()
                        .map(|lane| {
                            lane.into_iter()
                                .map(|o| o.map_err(|message| ReservoirError::Reported { message }))
                                .collect()
                        })
                        .collect(),
                );
            }
        }
        for (index, group) in outcomes.into_iter().enumerate() {
            let group = group.ok_or_else(|| {
                ReservoirError::invalid(
                    "sweep over ranks",
                    format!("no rank sent lane group {index}"),
                )
            })?;
            visit(index * LANE_GROUP, group)?;
        }
        Ok(())
    }
}
