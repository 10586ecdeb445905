//! Hyper-parameter sweeps: a config's `[sweep]` lanes ([`reservoir_core::lanes`]) run over its
//! task, then a readout solved for every lane and ridge value from the lane's sums, and every
//! (lane, ridge) ranked by its validation score.

use std::cmp::Ordering;
use std::time::Instant;

use gpu_reservoir::GemmMath;
use reservoir_core::lanes::{Lane, LaneData, LaneRunner};
use reservoir_core::readout::SumScores;
use reservoir_core::{ConfigError, ReservoirConfig, ReservoirError};
use serde::Serialize;

use super::run::series_task;
use crate::config::{ExperimentConfig, SweepConfig, TaskConfig};
use crate::device::{Dispatch, Placement, Workload};
use crate::error::Result;

/// Host memory a sweep's lanes may take together: the grid, every (lane, ridge) result, and a
/// batch of lanes' sums (each lane holds two F × F Gram matrices in `f64`: 4 MB at N = 500,
/// 64 MB at N = 2000); larger sweeps run in batches of lanes. A batch has at least one lane.
pub const SWEEP_SUMS_BUDGET_BYTES: usize = 1 << 30;

/// What a sweep ranks its results by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepScore {
    /// NRMSE on the validation rows (narma10, mackey_glass): lower is better.
    ValidationNrmse,
    /// Memory capacity on the validation rows (memory_capacity): higher is better.
    MemoryCapacity,
    /// Accuracy on the validation sequences (sequence classification): higher is better.
    ValidationAccuracy,
}

impl SweepScore {
    /// `validation_nrmse` or `memory_capacity`.
    pub fn name(self) -> &'static str {
        match self {
            SweepScore::ValidationNrmse => "validation_nrmse",
            SweepScore::MemoryCapacity => "memory_capacity",
            SweepScore::ValidationAccuracy => "validation_accuracy",
        }
    }

    /// This score of a readout's validation scores.
    fn of(self, validation: &SumScores) -> reservoir_core::Result<f64> {
        match self {
            SweepScore::ValidationNrmse => Ok(validation.mean_nrmse()),
            SweepScore::MemoryCapacity => Ok(validation.total_squared_correlation()),
            SweepScore::ValidationAccuracy => Err(ReservoirError::invalid(
                "sweep",
                "a series task is not scored by accuracy",
            )),
        }
    }

    /// `Less` when `a` is the better score.
    pub(crate) fn compare(self, a: f64, b: f64) -> Ordering {
        match self {
            SweepScore::ValidationNrmse => a.total_cmp(&b),
            SweepScore::MemoryCapacity | SweepScore::ValidationAccuracy => b.total_cmp(&a),
        }
    }
}

/// One lane's readout for one ridge value, scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepResult {
    /// Index of the lane in grid order (see [`SweepConfig::lanes`]).
    pub lane: usize,
    /// The lane's hyper-parameters.
    #[serde(flatten)]
    pub params: Lane,
    /// Ridge penalty of the readout.
    pub ridge: f64,
    /// NRMSE on the training rows (averaged over outputs; memory capacity has one per delay).
    pub train_nrmse: f64,
    /// The validation score ([`SweepReport::score`]).
    pub score: f64,
}

/// A (lane, ridge) whose readout could not be solved or scored, e.g. a singular system with
/// ridge 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepFailure {
    /// Index of the lane in grid order.
    pub lane: usize,
    /// The lane's hyper-parameters.
    #[serde(flatten)]
    pub params: Lane,
    /// Ridge penalty.
    pub ridge: f64,
    /// Why it failed.
    pub error: String,
}

/// Wall-clock seconds of a sweep's phases.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SweepTimings {
    /// Building the task's data.
    pub data_seconds: f64,
    /// Running every lane (weights included) and solving and scoring every (lane, ridge)
    /// from its sums: on the host for CPU lanes, on the GPUs for GPU lanes.
    pub run_seconds: f64,
    /// The whole sweep.
    pub total_seconds: f64,
}

/// What a sweep measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    /// Task kind, e.g. `narma10`.
    pub task: String,
    /// Reservoir units N.
    pub size: usize,
    /// Where the lanes ran: `cpu`, `cuda` or `cuda:N`.
    pub backend: String,
    /// The arithmetic of the lanes' GEMM where they ran on GPUs (`[sweep] gpu_matmul`);
    /// absent on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_matmul: Option<GemmMath>,
    /// What `score` is.
    pub score: SweepScore,
    /// Number of lanes.
    pub lanes: usize,
    /// Ridge values solved for on every lane.
    pub ridges: usize,
    /// Rows (time steps) each lane ran.
    pub steps: usize,
    /// Training rows fitted per lane (after the washout).
    pub train_rows: usize,
    /// Validation rows scored per lane.
    pub validation_rows: usize,
    /// Number of best results to show (`[sweep] top`).
    pub top: usize,
    /// Every (lane, ridge) result, best first; ties keep grid order, lane then ridge.
    pub results: Vec<SweepResult>,
    /// The (lane, ridge) pairs that failed, in grid order.
    pub failures: Vec<SweepFailure>,
    /// Seconds per phase.
    pub timings: SweepTimings,
    /// lanes × steps / run seconds.
    pub lane_steps_per_second: f64,
}

impl SweepReport {
    /// The `top` best results.
    pub fn best(&self) -> &[SweepResult] {
        &self.results[..self.top.min(self.results.len())]
    }
}

/// Runs the sweep of `config`: the lanes of its `[sweep]` table (one lane, the base config,
/// without one) over the rows of its `[task]`, on the device `dispatch` picks, then solves a
/// readout for every lane and ridge value from the lane's training sums and scores it on the
/// lane's validation sums ([`reservoir_core::readout::RidgeAccumulator::score`]).
///
/// The rows are those of `reservoir run` on the same config: narma10 and mackey_glass
/// (one-step) train on the `train` rows after `[readout] washout` and are scored by NRMSE on
/// the `test` rows; memory_capacity is scored by MC on its held-out rows. A sweep of one lane
/// and one ridge gives `reservoir run`'s test NRMSE to rounding.
///
/// # Errors
/// No `[task]` or the spike task (config errors naming `task` and `task.kind`), any error of
/// the lane runner, and, when every (lane, ridge) fails, the first failure.
pub fn run_sweep(config: &ExperimentConfig, dispatch: &mut Dispatch) -> Result<SweepReport> {
    let math = config
        .sweep()
        .map_or(GemmMath::F32, SweepConfig::gpu_matmul);
    let mut on_gpu = false;
    let mut runner = |base: &ReservoirConfig,
                      lanes: usize,
                      work: Workload|
     -> Result<(Box<dyn LaneRunner>, String)> {
        let runner = dispatch.lane_runner(base, lanes, work, math)?;
        let placement = dispatch.placements().last().map(|(_, placement)| placement);
        on_gpu = matches!(placement, Some(Placement::Cuda { .. }));
        let placed = placement.map_or_else(|| "cpu".to_string(), Placement::name);
        Ok((runner, placed))
    };
    let mut report = sweep_in_batches(config, &mut runner, SWEEP_HELD_BYTES)?;
    report.gpu_matmul = on_gpu.then_some(math);
    Ok(report)
}

/// What a sweep's grid, results and batch of lanes' sums may hold, out of
/// [`SWEEP_SUMS_BUDGET_BYTES`]: the rest is room for what the process holds besides (its code,
/// the task's rows, the reservoir and states of each lane running) and for what the allocator
/// keeps of the batches before, so the whole process stays within the budget
/// (docs/decisions.md, "Other thresholds", has the peak measured).
const SWEEP_HELD_BYTES: usize = SWEEP_SUMS_BUDGET_BYTES / 3 * 2;

/// Makes the lane runner of a sweep around a base config, with the name of where it runs.
/// Builds the lane runner for a base config, the number of lanes and the job's steps.
type RunnerFor<'a> =
    dyn FnMut(&ReservoirConfig, usize, Workload) -> Result<(Box<dyn LaneRunner>, String)> + 'a;

/// [`run_sweep`] with lanes run in batches whose sums fit in `budget_bytes`.
fn sweep_in_batches(
    config: &ExperimentConfig,
    runner_for: &mut RunnerFor<'_>,
    budget_bytes: usize,
) -> Result<SweepReport> {
    let start = Instant::now();
    let task = config.task().ok_or_else(|| {
        ConfigError::new(
            "task",
            "a [task] table is required to sweep a config",
            "none",
        )
    })?;
    if let TaskConfig::SpikeClassification(_) = task {
        return Err(ConfigError::new(
            "task.kind",
            "cannot be swept: sweeps run narma10, mackey_glass and memory_capacity",
            "spike_classification",
        )
        .into());
    }
    let score = match task {
        TaskConfig::MemoryCapacity { .. } => SweepScore::MemoryCapacity,
        _ => SweepScore::ValidationNrmse,
    };
    let sweep = config.sweep().cloned().unwrap_or_default();
    if sweep.names_validation() {
        return Err(ConfigError::new(
            "sweep.folds",
            "and `sweep.validation` apply to sequence datasets (`reservoir sweep --train`); a \
             [task] sweep validates on its test rows",
            "set",
        )
        .into());
    }
    let base = config.lanes_base(1)?;
    let lanes = sweep.lanes(&base)?;
    let ridges = sweep.ridges(config.readout());
    let rows = series_task(config, task)?;
    let data = LaneData {
        inputs: rows.data.inputs.view(),
        targets: rows.data.targets.view(),
        washout: rows.washout,
        train_rows: rows.train_rows,
    };
    data.check(&base)?;
    let data_seconds = start.elapsed().as_secs_f64();

    let work = Workload::single(rows.data.inputs.nrows());
    let (mut runner, backend) = runner_for(&base, lanes.len(), work)?;
    let grid = lanes.len() * std::mem::size_of::<Lane>()
        + lanes.len() * ridges.len() * std::mem::size_of::<SweepResult>();
    let (mut results, mut failures) = (Vec::new(), Vec::new());
    let started = Instant::now();
    runner.score_lanes(
        &base,
        &lanes,
        &data,
        &ridges,
        budget_bytes.saturating_sub(grid),
        &mut |first, outcomes| {
            for (offset, per_ridge) in outcomes.into_iter().enumerate() {
                let lane = first + offset;
                let params = lanes
                    .get(lane)
                    .ok_or_else(|| {
                        ReservoirError::shape(
                            "sweep lane scores",
                            format!("{} lanes", lanes.len()),
                            format!("lane {lane}"),
                        )
                    })?
                    .clone();
                for (&ridge, outcome) in ridges.iter().zip(per_ridge) {
                    let scored =
                        outcome.and_then(|s| Ok((s.train_nrmse, score.of(&s.validation)?)));
                    match scored {
                        Ok((train_nrmse, value)) => results.push(SweepResult {
                            lane,
                            params: params.clone(),
                            ridge,
                            train_nrmse,
                            score: value,
                        }),
                        Err(e) => failures.push(SweepFailure {
                            lane,
                            params: params.clone(),
                            ridge,
                            error: e.to_string(),
                        }),
                    }
                }
            }
            Ok(())
        },
    )?;
    let run_seconds = started.elapsed().as_secs_f64();
    if results.is_empty() {
        let first = failures.first().map_or("no lanes", |f| f.error.as_str());
        return Err(ReservoirError::numerical(
            "sweep",
            format!("no (lane, ridge) could be solved and scored; the first: {first}"),
        )
        .into());
    }
    // A stable sort: equal scores keep grid order.
    results.sort_by(|a, b| score.compare(a.score, b.score));
    let steps = rows.data.len();
    Ok(SweepReport {
        task: rows.kind.to_string(),
        size: base.size(),
        backend,
        gpu_matmul: None,
        score,
        lanes: lanes.len(),
        ridges: ridges.len(),
        steps,
        train_rows: rows.train_rows - rows.washout,
        validation_rows: steps - rows.train_rows,
        top: sweep.top(),
        results,
        failures,
        timings: SweepTimings {
            data_seconds,
            run_seconds,
            total_seconds: start.elapsed().as_secs_f64(),
        },
        lane_steps_per_second: (lanes.len() * steps) as f64 / run_seconds,
    })
}

#[cfg(test)]
mod tests {
    use reservoir_core::lanes::{CpuLaneRunner, LaneSums};

    use super::*;

    fn config() -> ExperimentConfig {
        ExperimentConfig::from_toml(
            "[task]\nkind = \"narma10\"\ntrain = 300\ntest = 100\nseed = 1\n\
             [reservoir]\nsize = 20\nseed = 2\n[readout]\nwashout = 20\n\
             [sweep]\nspectral_radius = [0.5, 0.9, 1.2]\nleak_rate = [0.4, 1.0]\n\
             ridge = [1e-6, 1e-2]\n",
            "<test>",
        )
        .unwrap()
    }

    fn cpu_runner(
        _: &ReservoirConfig,
        _: usize,
        _: Workload,
    ) -> Result<(Box<dyn LaneRunner>, String)> {
        Ok((
            Box::new(CpuLaneRunner::new(reservoir_core::Par::rayon(2))),
            "cpu".into(),
        ))
    }

    #[test]
    fn lanes_in_batches_give_the_results_of_one_batch() {
        let config = config();
        // One lane's two accumulators of 20 features (columns padded to 24) and 1 output take
        // 8,416 bytes; the grid of 6 lanes and 12 results comes first: six lanes run one at a
        // time, or as a batch of four and a batch of two.
        let grid = 6 * std::mem::size_of::<Lane>() + 12 * std::mem::size_of::<SweepResult>();
        let four = grid + 8_416 * 4;
        assert_eq!(LaneSums::bytes(20, 1), 8_416);
        let whole = sweep_in_batches(&config, &mut cpu_runner, SWEEP_SUMS_BUDGET_BYTES).unwrap();
        for budget in [1, four - 1, four] {
            let batched = sweep_in_batches(&config, &mut cpu_runner, budget).unwrap();
            assert_eq!(batched.results, whole.results, "budget {budget}");
        }
        assert_eq!(whole.results.len(), 12);
    }

    /// A runner that loses the last lane of every batch.
    struct OneLaneShort;

    impl LaneRunner for OneLaneShort {
        fn run_lanes(
            &mut self,
            base: &ReservoirConfig,
            lanes: &[Lane],
            data: &LaneData<'_>,
        ) -> reservoir_core::Result<Vec<LaneSums>> {
            let mut sums =
                CpuLaneRunner::new(reservoir_core::Par::Seq).run_lanes(base, lanes, data)?;
            sums.pop();
            Ok(sums)
        }
    }

    #[test]
    fn a_runner_that_returns_too_few_lanes_is_an_error_not_a_misattribution() {
        let mut short =
            |_: &ReservoirConfig, _: usize, _: Workload| -> Result<(Box<dyn LaneRunner>, String)> {
                Ok((Box::new(OneLaneShort), "cpu".into()))
            };
        let error = sweep_in_batches(&config(), &mut short, SWEEP_SUMS_BUDGET_BYTES)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("6 lanes") && error.contains("5 lanes"),
            "{error}"
        );
    }
}
