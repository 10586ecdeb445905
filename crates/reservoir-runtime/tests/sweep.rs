//! `run_sweep`: one lane agrees with `jobs::run::run`, every (lane, ridge) is ranked,
//! lanes on several threads equal lanes on one, failures are reported, and bad requests are
//! errors naming the field.

use ndarray::{s, Array2};
use reservoir_core::fit::accumulate_run;
use reservoir_core::lanes::{CpuLaneRunner, Lane, LaneData, LaneRunner, LaneSums};
use reservoir_core::readout::RidgeAccumulator;
use reservoir_core::weights::WeightDraws;
use reservoir_core::{
    cpu_reservoir, ConfigError, ReservoirConfig, ReservoirError, ReservoirParams, ReservoirWeights,
    Result, WeightDistribution,
};
use reservoir_runtime::config::SweepParams;
use reservoir_runtime::config::{ExperimentConfig, TaskParams};
use reservoir_runtime::data::tasks::narma::narma10;
use reservoir_runtime::jobs::run::{self, ExperimentReport};
use reservoir_runtime::jobs::sweep::{run_sweep, SweepScore};
use reservoir_runtime::{Device, Dispatch, RuntimeError};

fn shipped(name: &str) -> ExperimentConfig {
    let path = format!("{}/../../configs/{name}", env!("CARGO_MANIFEST_DIR"));
    ExperimentConfig::from_toml(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

fn cpu() -> Dispatch {
    Dispatch::new(Device::Cpu)
}

fn metric(report: &ExperimentReport, name: &str) -> f64 {
    report
        .metrics
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .value
}

const SMALL_NARMA: &str = "
[task]
kind = \"narma10\"
train = 800
test = 400
seed = 3

[reservoir]
size = 60
spectral_radius = 0.9
leak_rate = 1.0
seed = 5

[readout]
washout = 50

[sweep]
spectral_radius = [0.6, 0.95]
leak_rate = [0.5, 1.0]
input_scaling = [0.3, 1.0]
ridge = [1e-7, 1e-3]
top = 3
";

#[test]
fn one_lane_sweep_gives_the_test_nrmse_of_run() {
    // No [sweep] table: one lane, the base config, and the [readout] ridge.
    let config = shipped("narma10.toml");
    let run = run::run(&config, &mut cpu()).unwrap();
    let sweep = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!((sweep.lanes, sweep.ridges, sweep.results.len()), (1, 1, 1));
    assert_eq!(
        (sweep.steps, sweep.train_rows, sweep.validation_rows),
        (3000, 1900, 1000)
    );
    let only = &sweep.results[0];
    assert_eq!(sweep.score, SweepScore::ValidationNrmse);
    let test_nrmse = metric(&run, "test_nrmse");
    // Measured: 3.7e-10 relative (the closed form on the sums against explicit predictions).
    assert!(
        (only.score - test_nrmse).abs() <= 1e-9 * test_nrmse,
        "sweep {} vs run {test_nrmse}",
        only.score
    );
    // Same weights, same sums, same solve: the training NRMSE is the same number.
    assert_eq!(only.train_nrmse, metric(&run, "train_nrmse"));
    assert_eq!(only.ridge, config.readout().ridge());
}

#[test]
fn one_lane_memory_capacity_sweep_gives_the_capacity_of_run() {
    let config = shipped("memory_capacity.toml");
    let run = run::run(&config, &mut cpu()).unwrap();
    let sweep = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!(sweep.score, SweepScore::MemoryCapacity);
    assert_eq!(sweep.results[0].score, metric(&run, "memory_capacity"));
}

#[test]
fn one_lane_mackey_glass_sweep_gives_the_test_nrmse_of_run() {
    let mut params = shipped("mackey_glass.toml").to_params();
    params.reservoir = params.reservoir.size(200);
    let config = params.check().unwrap();
    let run = run::run(&config, &mut cpu()).unwrap();
    let sweep = run_sweep(&config, &mut cpu()).unwrap();
    let (score, test_nrmse) = (sweep.results[0].score, metric(&run, "test_nrmse"));
    // NRMSE 2e-4: the residual is 4e-8 of ΣY², so the sums' rounding shows (measured 3.4e-7
    // relative; 1e-5 at NRMSE 1.9e-5 with 500 units).
    assert!(
        (score - test_nrmse).abs() <= 1e-5 * test_nrmse,
        "sweep {score} vs run {test_nrmse}"
    );
    assert_eq!(sweep.results[0].train_nrmse, metric(&run, "train_nrmse"));
}

#[test]
fn every_lane_and_ridge_is_ranked_best_first() {
    let config = ExperimentConfig::from_toml(SMALL_NARMA, "<test>").unwrap();
    let report = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!((report.lanes, report.ridges, report.top), (8, 2, 3));
    assert_eq!(report.results.len(), 16);
    assert!(report.failures.is_empty());
    assert_eq!(report.best().len(), 3);
    assert!(report.results.windows(2).all(|w| w[0].score <= w[1].score));
    let lanes = config.sweep().unwrap().lanes(config.reservoir()).unwrap();
    let mut seen = vec![0; 16];
    for result in &report.results {
        assert_eq!(result.params, lanes[result.lane]);
        let ridge = [1e-7, 1e-3]
            .iter()
            .position(|&r| r == result.ridge)
            .unwrap();
        seen[result.lane * 2 + ridge] += 1;
        assert!(result.score > 0.0 && result.train_nrmse > 0.0);
    }
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    // The best result is a lane of its own: the same score from a one-lane sweep.
    let best = &report.results[0];
    let mut alone = config.to_params();
    alone.reservoir = alone
        .reservoir
        .spectral_radius(best.params.spectral_radius())
        .leak_rate(best.params.leak_rate())
        .input_scaling(best.params.input_scaling());
    alone.readout = alone.readout.ridge(best.ridge);
    alone.sweep = None;
    let alone = alone.check().unwrap();
    let single = run_sweep(&alone, &mut cpu()).unwrap();
    assert_eq!(single.results[0].score, best.score);
    assert!(report.lane_steps_per_second > 0.0);
    let t = report.timings;
    assert!(t.total_seconds >= t.run_seconds + t.data_seconds);
}

#[test]
fn memory_capacity_ranks_the_largest_capacity_first() {
    let mut params = shipped("memory_capacity.toml").to_params();
    params.task = Some(TaskParams::MemoryCapacity {
        max_delay: 30,
        train: 1000,
        test: 500,
    });
    params.sweep = Some(SweepParams {
        spectral_radius: Some(vec![0.5, 0.99]),
        ..Default::default()
    });
    let config = params.check().unwrap();
    let report = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!(report.results.len(), 2);
    assert!(report.results[0].score > report.results[1].score);
}

#[test]
fn the_same_config_gives_the_same_results() {
    let config = ExperimentConfig::from_toml(SMALL_NARMA, "<test>").unwrap();
    let a = run_sweep(&config, &mut cpu()).unwrap();
    let b = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!(a.results, b.results);
}

fn solved(sums: &[LaneSums]) -> Vec<(Array2<f64>, f64, f64)> {
    sums.iter()
        .map(|s| {
            let fit = s.train.solve(1e-6).unwrap();
            let score = s.validation.score(&fit.readout).unwrap().mean_nrmse();
            (fit.readout.weights().clone(), fit.train_nrmse, score)
        })
        .collect()
}

#[test]
fn lanes_on_several_threads_equal_lanes_on_one_and_their_own_reservoirs() {
    let data = narma10(700, 2).unwrap();
    let base = ReservoirParams::new().size(50).seed(9).check().unwrap();
    let lanes: Vec<Lane> = [(0.5, 0.2, 1.0), (0.9, 1.0, 0.5), (1.2, 0.6, 2.0)]
        .iter()
        .flat_map(|&(r, a, s)| {
            [
                Lane::new(&base, r, a, s).unwrap(),
                Lane::new(&base, r * 0.5, a, s).unwrap(),
            ]
        })
        .collect();
    let lane_data = LaneData {
        inputs: data.inputs.view(),
        targets: data.targets.view(),
        washout: 50,
        train_rows: 500,
    };
    let one = solved(
        &CpuLaneRunner::new(reservoir_core::Par::Seq)
            .run_lanes(&base, &lanes, &lane_data)
            .unwrap(),
    );
    for threads in [2, 4] {
        let many = solved(
            &CpuLaneRunner::new(reservoir_core::Par::rayon(threads))
                .run_lanes(&base, &lanes, &lane_data)
                .unwrap(),
        );
        assert_eq!(one, many, "{threads} threads");
    }
    // Lane 3 with its own reservoir, built from its config as `reservoir run` builds one.
    let lane_config = lanes[3].config();
    let (weights, _) = ReservoirWeights::generate(lane_config).unwrap();
    let mut reservoir = cpu_reservoir(lane_config, weights, reservoir_core::Par::all()).unwrap();
    let mut train = RidgeAccumulator::new(50, 1, reservoir_core::Par::Seq).unwrap();
    accumulate_run(
        reservoir.as_mut(),
        data.inputs.slice(s![..500, ..]),
        data.targets.slice(s![..500, ..]),
        50,
        &mut train,
    )
    .unwrap();
    let validation = {
        let mut acc = RidgeAccumulator::new(50, 1, reservoir_core::Par::Seq).unwrap();
        let states = reservoir.run(data.inputs.slice(s![500.., ..])).unwrap();
        acc.add(states.view(), data.targets.slice(s![500.., ..]))
            .unwrap();
        acc
    };
    assert_eq!(solved(&[LaneSums { train, validation }])[0], one[3]);
}

#[test]
fn scaled_draws_equal_generated_weights() {
    for distribution in [WeightDistribution::Uniform, WeightDistribution::Normal] {
        let base = ReservoirParams::new()
            .size(70)
            .input_size(2)
            .bias_scaling(0.3)
            .weight_distribution(distribution)
            .seed(4)
            .check()
            .unwrap();
        let draws = WeightDraws::draw(&base).unwrap();
        for (radius, scaling) in [(0.5, 0.1), (1.3, 2.0), (0.95, 0.0)] {
            let config = base
                .to_params()
                .spectral_radius(radius)
                .input_scaling(scaling)
                .check()
                .unwrap();
            let (generated, estimate) = ReservoirWeights::generate(&config).unwrap();
            assert_eq!(draws.scaled(radius, scaling).unwrap(), generated);
            assert_eq!(draws.estimate().radius, estimate.radius);
        }
        let err = draws.scaled(0.0, 1.0).unwrap_err().to_string();
        assert!(err.contains("spectral_radius"), "{err}");
        let err = draws.scaled(0.9, -1.0).unwrap_err().to_string();
        assert!(err.contains("input_scaling"), "{err}");
    }
}

/// A runner whose lanes' states are all zero: the readout can only fit the mean, and ridge 0
/// leaves a singular system.
struct ZeroStates;

impl LaneRunner for ZeroStates {
    fn run_lanes(
        &mut self,
        base: &ReservoirConfig,
        lanes: &[Lane],
        data: &LaneData<'_>,
    ) -> Result<Vec<LaneSums>> {
        let n = base.size();
        // The target sums are taken from the first row (`RidgeAccumulator`'s shift).
        let sums = |rows: ndarray::ArrayView2<f64>| {
            let shift = rows[(0, 0)];
            let y = rows.column(0).mapv(|v| v - shift);
            RidgeAccumulator::from_sums(
                Array2::zeros((n, n)).view(),
                Array2::zeros((n, 1)).view(),
                &vec![0.0; n],
                &[shift],
                &[y.sum()],
                &[y.dot(&y)],
                rows.nrows(),
            )
        };
        lanes
            .iter()
            .map(|_| {
                Ok(LaneSums {
                    train: sums(data.targets.slice(s![data.washout..data.train_rows, ..]))?,
                    validation: sums(data.targets.slice(s![data.train_rows.., ..]))?,
                })
            })
            .collect()
    }
}

/// `SMALL_NARMA` with input scaling 0 (and no bias, the default): every state of every lane
/// is exactly zero, the sums of [`ZeroStates`]. The list holds 0 twice to keep 8 lanes.
fn zero_state_sweep(ridge: &[f64]) -> ExperimentConfig {
    let mut params = ExperimentConfig::from_toml(SMALL_NARMA, "<test>")
        .unwrap()
        .to_params();
    let sweep = params.sweep.as_mut().unwrap();
    sweep.input_scaling = Some(vec![0.0, 0.0]);
    sweep.ridge = Some(ridge.to_vec());
    params.check().unwrap()
}

#[test]
fn zero_input_scaling_lanes_have_the_sums_of_zero_states() {
    let config = zero_state_sweep(&[0.0, 1e-3]);
    assert_eq!(config.reservoir().bias_scaling(), 0.0);
    let lanes = config.sweep().unwrap().lanes(config.reservoir()).unwrap();
    assert_eq!(lanes.len(), 8);
    // The rows of `reservoir sweep` on SMALL_NARMA: train 800 after a washout of 50, test 400.
    let data = narma10(1200, 3).unwrap();
    let lane_data = LaneData {
        inputs: data.inputs.view(),
        targets: data.targets.view(),
        washout: 50,
        train_rows: 800,
    };
    let base = config.reservoir();
    let cpu_sums = CpuLaneRunner::new(reservoir_core::Par::rayon(2))
        .run_lanes(base, &lanes, &lane_data)
        .unwrap();
    let zero_sums = ZeroStates.run_lanes(base, &lanes, &lane_data).unwrap();
    assert_eq!(cpu_sums.len(), zero_sums.len());
    let close = |a: &[f64], b: &[f64]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs())
    };
    for (cpu, zero) in cpu_sums.iter().zip(&zero_sums) {
        for (c, z) in [
            (&cpu.train, &zero.train),
            (&cpu.validation, &zero.validation),
        ] {
            assert_eq!(c.rows(), z.rows());
            assert_eq!(c.gram(), z.gram());
            assert_eq!(c.cross(), z.cross());
            assert_eq!(c.feature_sums(), z.feature_sums());
            assert!(close(c.target_sums(), z.target_sums()));
            assert!(close(c.target_squares(), z.target_squares()));
        }
        let err = cpu.train.solve(0.0).unwrap_err().to_string();
        assert!(err.contains("positive definite"), "{err}");
    }
}

// `run_sweep` takes a `Dispatch`, which builds the CPU or a GPU lane runner and cannot be given
// another one: the sweep runs zero-state lanes (above) instead of `ZeroStates`.
#[test]
fn the_dispatch_runs_the_lanes_and_unsolvable_pairs_are_failures() {
    let config = zero_state_sweep(&[0.0, 1e-3]);
    let report = run_sweep(&config, &mut cpu()).unwrap();
    assert_eq!(report.backend, "cpu");
    assert_eq!((report.results.len(), report.failures.len()), (8, 8));
    for result in &report.results {
        assert_eq!(result.ridge, 1e-3);
        // The mean of the training targets: NRMSE 1 on the training rows.
        assert!((result.train_nrmse - 1.0).abs() < 1e-9, "{result:?}");
    }
    for (lane, failure) in report.failures.iter().enumerate() {
        assert_eq!((failure.lane, failure.ridge), (lane, 0.0));
        assert!(failure.error.contains("positive definite"), "{failure:?}");
    }
    let config = zero_state_sweep(&[0.0]);
    let err = run_sweep(&config, &mut cpu()).unwrap_err().to_string();
    assert!(
        err.contains("no (lane, ridge)") && err.contains("positive definite"),
        "{err}"
    );
}

fn config_error(err: RuntimeError) -> (String, String, String) {
    match err {
        RuntimeError::Core(ReservoirError::Config(ConfigError { field, rule, value })) => {
            (field, rule, value)
        }
        other => panic!("expected a config error, got {other}"),
    }
}

#[test]
fn a_sweep_needs_a_time_series_task() {
    let config = shipped("spike_classification.toml");
    let (field, rule, _) = config_error(run_sweep(&config, &mut cpu()).unwrap_err());
    assert_eq!(field, "task.kind");
    assert!(rule.contains("narma10"), "{rule}");
    let mut params = config.to_params();
    params.task = None;
    let config = params.check().unwrap();
    let (field, ..) = config_error(run_sweep(&config, &mut cpu()).unwrap_err());
    assert_eq!(field, "task");
}
