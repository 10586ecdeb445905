//! Hyper-parameter sweeps: lanes of echo-state reservoirs that share one seed (hence one random
//! W, W_in and b structure) and differ in spectral radius, leak rate and input scaling.
//!
//! A [`LaneRunner`] runs every lane over the same data and returns each lane's ridge sums over
//! the training rows and the validation rows; readouts for any number of ridge values are then
//! solved and scored from the sums alone. [`CpuLaneRunner`] runs the lanes on the CPU, as many
//! at a time as there are cores; the GPU backend runs them together, one batched product per
//! step.
//!
//! [`run_sweep`] does it for a config's `[sweep]` table ([`SweepConfig`]) and ranks every
//! (lane, ridge) by its validation score ([`SweepReport`]).

mod config;
mod parallel;
mod run;

pub use config::SweepConfig;
pub use run::{
    run_sweep, SweepFailure, SweepReport, SweepResult, SweepScore, SweepTimings,
    SWEEP_SUMS_BUDGET_BYTES,
};

use ndarray::{s, ArrayView2};
use serde::Serialize;

use crate::config::ReservoirConfig;
use crate::error::{ReservoirError, Result};
use crate::esn::cpu_reservoir_from_weights;
use crate::readout::{accumulate_run, RidgeAccumulator};
use crate::weights::WeightDraws;

/// The hyper-parameters of one lane; every other field comes from the sweep's base config.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Lane {
    /// ρ(W) of the lane.
    pub spectral_radius: f64,
    /// Leak rate a of the lane.
    pub leak_rate: f64,
    /// Scale of W_in of the lane.
    pub input_scaling: f64,
}

impl Lane {
    /// `base` with this lane's hyper-parameters: the reservoir a lane stands for. Its weights
    /// are `base`'s random draws (same seed) with W scaled to the lane's spectral radius and
    /// W_in to its input scaling.
    pub fn config(&self, base: &ReservoirConfig) -> ReservoirConfig {
        ReservoirConfig {
            spectral_radius: self.spectral_radius,
            leak_rate: self.leak_rate,
            input_scaling: self.input_scaling,
            ..base.clone()
        }
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
        if self.inputs.ncols() != base.input_size {
            return Err(ReservoirError::shape(
                "sweep inputs",
                format!("{} columns (reservoir.input_size)", base.input_size),
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

/// Runs the lanes of a sweep.
pub trait LaneRunner {
    /// Runs every lane from the zero state over `data.inputs` and returns its sums, in the
    /// order of `lanes`.
    ///
    /// # Errors
    /// The errors of [`LaneData::check`], an invalid lane config, any error of the runs.
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>>;

    /// Where the lanes run, for reports: `cpu` (the default) or `cuda`.
    fn backend(&self) -> &'static str {
        "cpu"
    }
}

/// Runs each lane as its own CPU reservoir, as many lanes at a time as the machine has cores
/// ([`run_lanes_on_cpu`] with `std::thread::available_parallelism`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuLaneRunner;

impl LaneRunner for CpuLaneRunner {
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        run_lanes_on_cpu(base, lanes, data, parallel::cpu_threads())
    }
}

/// Runs `lanes` on CPU reservoirs, up to `threads` lanes at a time (each lane also streams its
/// states to a second thread that adds them to its sums, see [`accumulate_run`]).
///
/// The random weights are drawn once ([`WeightDraws`]) and scaled for each lane, so a lane's
/// reservoir is bit for bit the one `cpu_reservoir(&lane.config(base))` builds. Each lane is
/// computed the same way whatever `threads` is: the sums are bit-identical to a sequential
/// run, and in the order of `lanes`.
///
/// # Errors
/// The errors of [`LaneData::check`], an invalid lane config, and the first error of a lane
/// in lane order.
pub fn run_lanes_on_cpu(
    base: &ReservoirConfig,
    lanes: &[Lane],
    data: &LaneData<'_>,
    threads: usize,
) -> Result<Vec<LaneSums>> {
    data.check(base)?;
    let draws = WeightDraws::draw(base)?;
    parallel::try_map(lanes, threads, |lane| run_lane(base, &draws, lane, data))
}

/// One lane's training and validation sums.
fn run_lane(
    base: &ReservoirConfig,
    draws: &WeightDraws,
    lane: &Lane,
    data: &LaneData<'_>,
) -> Result<LaneSums> {
    let config = lane.config(base);
    let weights = draws.scaled(lane.spectral_radius, lane.input_scaling)?;
    let mut reservoir = cpu_reservoir_from_weights(&config, weights)?;
    let (split, outputs) = (data.train_rows, data.targets.ncols());
    let mut train = RidgeAccumulator::new(base.size, outputs, 1);
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![..split, ..]),
        data.targets.slice(s![..split, ..]),
        data.washout,
        &mut train,
    )?;
    let mut validation = RidgeAccumulator::new(base.size, outputs, 1);
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![split.., ..]),
        data.targets.slice(s![split.., ..]),
        0,
        &mut validation,
    )?;
    Ok(LaneSums { train, validation })
}
