//! Lanes: echo-state reservoirs that share one base config and seed (hence one random W, W_in
//! and b) and differ only in spectral radius, leak rate and input scaling — the lanes of a
//! hyper-parameter sweep.
//!
//! A [`LaneRunner`] runs every lane over the same data into ridge sums over the training rows
//! and over the validation rows; readouts for any number of ridge values are then solved and
//! scored from the sums alone. [`CpuLaneRunner`] runs lanes as CPU reservoirs, several at a
//! time; the GPU backend steps them together, one batched product per step.

use ndarray::{s, ArrayView2};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::ReservoirConfig;
use crate::error::{ConfigError, ReservoirError, Result};
use crate::esn::cpu_reservoir;
use crate::fit::accumulate_run;
use crate::par::Par;
use crate::readout::{RidgeAccumulator, SumScores};
use crate::weights::WeightDraws;

/// One lane: a base config with its own spectral radius, leak rate and input scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    config: ReservoirConfig,
}

/// The values that tell lanes apart, as reports show them.
#[derive(Serialize)]
struct LaneValues {
    spectral_radius: f64,
    leak_rate: f64,
    input_scaling: f64,
}

impl Serialize for Lane {
    /// As its three values (`spectral_radius`, `leak_rate`, `input_scaling`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LaneValues {
            spectral_radius: self.spectral_radius(),
            leak_rate: self.leak_rate(),
            input_scaling: self.input_scaling(),
        }
        .serialize(serializer)
    }
}

impl Lane {
    /// `base` with these values.
    ///
    /// # Errors
    /// A value that breaks the rule of its field (the error names the field).
    pub fn new(
        base: &ReservoirConfig,
        spectral_radius: f64,
        leak_rate: f64,
        input_scaling: f64,
    ) -> Result<Self, ConfigError> {
        let config = base
            .to_params()
            .spectral_radius(spectral_radius)
            .leak_rate(leak_rate)
            .input_scaling(input_scaling)
            .check()?;
        Ok(Self { config })
    }

    /// The reservoir the lane stands for. Its weights are the base config's random draws
    /// (same seed) with W scaled to the lane's spectral radius and W_in to its input scaling.
    pub fn config(&self) -> &ReservoirConfig {
        &self.config
    }

    /// ρ(W) of the lane.
    pub fn spectral_radius(&self) -> f64 {
        self.config.spectral_radius()
    }

    /// Leak rate a of the lane.
    pub fn leak_rate(&self) -> f64 {
        self.config.leak_rate()
    }

    /// Scale of W_in of the lane.
    pub fn input_scaling(&self) -> f64 {
        self.config.input_scaling()
    }
}

/// What every lane runs over: one input sequence (T × K) with its targets (T × M). Rows
/// `washout..train_rows` train the readouts, rows `train_rows..T` score them.
#[derive(Debug, Clone, Copy)]
pub struct LaneData<'a> {
    /// Inputs, T × K.
    pub inputs: ArrayView2<'a, f64>,
    /// Targets, T × M.
    pub targets: ArrayView2<'a, f64>,
    /// Leading rows run but not accumulated.
    pub washout: usize,
    /// End of the training rows; the validation rows follow.
    pub train_rows: usize,
}

impl LaneData<'_> {
    /// Checks the shapes against `base` and that training and validation both have rows.
    ///
    /// # Errors
    /// A shape error naming the mismatch, an invalid-input error for an empty split.
    pub fn check(&self, base: &ReservoirConfig) -> Result<()> {
        let rows = self.inputs.nrows();
        if self.inputs.ncols() != base.input_size() {
            return Err(ReservoirError::shape(
                "sweep inputs",
                format!("{} columns (reservoir.input_size)", base.input_size()),
                format!("{} columns", self.inputs.ncols()),
            ));
        }
        if self.targets.nrows() != rows {
            return Err(ReservoirError::shape(
                "sweep targets",
                format!("{rows} rows"),
                format!("{} rows", self.targets.nrows()),
            ));
        }
        if !(self.washout < self.train_rows && self.train_rows < rows) {
            return Err(ReservoirError::invalid(
                "sweep data",
                format!(
                    "need washout < train rows < rows, got washout {}, train rows {}, rows {rows}",
                    self.washout, self.train_rows
                ),
            ));
        }
        Ok(())
    }
}

/// One lane's ridge sums over the training rows and over the validation rows.
#[derive(Debug, Clone)]
pub struct LaneSums {
    /// Sums over rows `washout..train_rows`.
    pub train: RidgeAccumulator,
    /// Sums over rows `train_rows..T`.
    pub validation: RidgeAccumulator,
}

impl LaneSums {
    /// Host bytes one lane's sums take for `features` features and `outputs` outputs.
    pub fn bytes(features: usize, outputs: usize) -> usize {
        // faer stores each column of a matrix padded to 64 bytes (8 values).
        let column = features.div_ceil(8) * 8;
        2 * 8 * (column * (features + outputs) + features + 2 * outputs)
    }

    /// Solves the readout for `ridge` from the training sums and scores it on both sets.
    ///
    /// # Errors
    /// [`RidgeAccumulator::solve`]'s and [`RidgeAccumulator::score`]'s.
    pub fn score(&self, ridge: f64) -> Result<LaneScores> {
        let fit = self.train.solve(ridge)?;
        Ok(LaneScores {
            train_nrmse: fit.train_nrmse,
            validation: self.validation.score(&fit.readout)?,
        })
    }
}

/// A lane's readout for one ridge value, scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneScores {
    /// NRMSE on the training rows, averaged over the outputs.
    pub train_nrmse: f64,
    /// Scores on the validation rows.
    pub validation: SumScores,
}

/// The outcome of every ridge value of consecutive lanes: `outcomes[lane][ridge]`.
pub type LaneOutcomes = Vec<Vec<Result<LaneScores>>>;

/// Runs the lanes of a sweep; the CPU and the GPU backends implement it.
pub trait LaneRunner {
    /// Runs every lane (each made from `base` by [`Lane::new`]) from the zero state over
    /// `data.inputs` and returns its sums, in the order of `lanes`.
    ///
    /// # Errors
    /// The errors of [`LaneData::check`] and any error of the runs.
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>>;

    /// [`LaneRunner::run_lanes`] with each lane's run its own outcome: a lane whose run fails
    /// (its activity overflowed, say) is an `Err` among the others' sums, not an error of
    /// the call. The provided method fails as `run_lanes` does; a runner that can tell one
    /// lane's failure from the others' overrides it.
    ///
    /// # Errors
    /// What stops every lane: [`LaneRunner::run_lanes`]'s errors where it is not overridden.
    fn run_each_lane(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<Result<LaneSums>>> {
        Ok(self
            .run_lanes(base, lanes, data)?
            .into_iter()
            .map(Ok)
            .collect())
    }

    /// Runs `batches` of lanes as [`LaneRunner::run_each_lane`] runs each, and hands each
    /// batch's sums to `visit(batch_index, sums)` in the order of the batches. At most one
    /// batch's sums are handed out at a time, so a caller that drops them in `visit` holds one
    /// batch on the host. The provided method runs the batches one after another; a runner
    /// over several devices overrides it to run batches side by side with the same sums.
    ///
    /// # Errors
    /// Any error of [`LaneRunner::run_each_lane`], and the first error `visit` returns.
    fn run_batches(
        &mut self,
        base: &ReservoirConfig,
        batches: &[&[Lane]],
        data: &LaneData<'_>,
        visit: &mut dyn FnMut(usize, Vec<Result<LaneSums>>) -> Result<()>,
    ) -> Result<()> {
        for (index, batch) in batches.iter().enumerate() {
            let sums = self.run_each_lane(base, batch, data)?;
            visit(index, sums)?;
        }
        Ok(())
    }

    /// Runs `lanes`, solves a readout for every ridge value of every lane from its training
    /// sums and scores it ([`LaneSums::score`]), and hands the outcomes of consecutive lanes to
    /// `visit(first_lane, outcomes)`, in the order of the lanes. A (lane, ridge) that cannot
    /// be run, solved or scored is an `Err` among the outcomes, not an error of the run.
    ///
    /// The provided method runs the lanes in batches whose sums take at most `host_bytes` on
    /// the host ([`LaneSums::bytes`]; at least one lane a batch) and solves them there, on all
    /// cores. A GPU runner solves on its devices and copies back only the scores.
    ///
    /// # Errors
    /// Any error of [`LaneRunner::run_batches`], and the first error `visit` returns.
    fn score_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
        ridges: &[f64],
        host_bytes: usize,
        visit: &mut dyn FnMut(usize, LaneOutcomes) -> Result<()>,
    ) -> Result<()> {
        let per_lane = LaneSums::bytes(base.size(), data.targets.ncols());
        let batch = (host_bytes / per_lane).max(1);
        let batches: Vec<&[Lane]> = lanes.chunks(batch).collect();
        self.run_batches(base, &batches, data, &mut |index, sums| {
            if sums.len() != batches[index].len() {
                return Err(ReservoirError::shape(
                    "lane sums",
                    format!("{} lanes", batches[index].len()),
                    format!("{} lanes", sums.len()),
                ));
            }
            let pairs: Vec<(usize, f64)> = (0..sums.len())
                .flat_map(|lane| ridges.iter().map(move |&ridge| (lane, ridge)))
                .collect();
            let mut scored = pairs
                .par_iter()
                .map(|&(lane, ridge)| match &sums[lane] {
                    Ok(sums) => sums.score(ridge),
                    Err(failed) => Err(ReservoirError::Reported {
                        message: failed.to_string(),
                    }),
                })
                .collect::<Vec<_>>()
                .into_iter();
            let outcomes = sums
                .iter()
                .map(|_| scored.by_ref().take(ridges.len()).collect())
                .collect();
            visit(index * batch, outcomes)
        })
    }
}

/// Runs each lane as its own CPU reservoir on one thread, up to [`Par::threads`] lanes at a
/// time.
///
/// The random weights are drawn once ([`WeightDraws`]) and scaled for each lane, so a lane's
/// reservoir is bit for bit the one [`cpu_reservoir`] builds for [`Lane::config`]. A lane is
/// computed the same way whatever the threads: the sums are bit-identical to a sequential
/// run, and in the order of the lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuLaneRunner {
    par: Par,
}

impl CpuLaneRunner {
    /// A runner of up to `par.threads()` lanes at a time (`Par::all()`: one per core).
    pub fn new(par: Par) -> Self {
        Self { par }
    }
}

impl LaneRunner for CpuLaneRunner {
    /// # Errors
    /// The errors of [`LaneData::check`], and the first error of a lane in lane order.
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        self.run_each_lane(base, lanes, data)?.into_iter().collect()
    }

    /// Each lane runs on its own: one that fails leaves the others' sums.
    ///
    /// # Errors
    /// The errors of [`LaneData::check`], drawing the weights or starting the threads.
    fn run_each_lane(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<Result<LaneSums>>> {
        data.check(base)?;
        let draws = WeightDraws::draw(base)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.par.threads())
            .build()
            .map_err(|e| ReservoirError::numerical("lane threads", e))?;
        Ok(pool.install(|| {
            lanes
                .par_iter()
                .map(|lane| run_lane(&draws, lane, data))
                .collect()
        }))
    }
}

/// One lane's training and validation sums.
fn run_lane(draws: &WeightDraws, lane: &Lane, data: &LaneData<'_>) -> Result<LaneSums> {
    let config = lane.config();
    let weights = draws.scaled(lane.spectral_radius(), lane.input_scaling())?;
    // On one thread: the other threads run the other lanes.
    let mut reservoir = cpu_reservoir(config, weights, Par::Seq)?;
    let (split, outputs) = (data.train_rows, data.targets.ncols());
    let mut train = RidgeAccumulator::new(config.size(), outputs, Par::Seq)?;
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![..split, ..]),
        data.targets.slice(s![..split, ..]),
        data.washout,
        &mut train,
    )?;
    let mut validation = RidgeAccumulator::new(config.size(), outputs, Par::Seq)?;
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![split.., ..]),
        data.targets.slice(s![split.., ..]),
        0,
        &mut validation,
    )?;
    Ok(LaneSums { train, validation })
}
