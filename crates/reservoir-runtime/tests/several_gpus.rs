//! Jobs over several GPUs through `Dispatch`: a sequence classifier fitted on a GPU (its ridge
//! sums on the device) and spread over every GPU of the host (sums added by an NCCL
//! all-reduce) against the same fit on the CPU, and a large dense reservoir split over the
//! GPUs against one GPU, and a sweep's lanes spread over the GPUs against one GPU. Skips with a printed reason without a GPU (or, for the spread, without
//! NCCL or a second GPU); fails instead with `RESERVOIR_REQUIRE_GPU=1`.

use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_conformance::{free_port, harness_name};
use reservoir_core::sparse::CsrMatrix;
use reservoir_core::{ReservoirConfig, ReservoirWeights};
use reservoir_runtime::config::ExperimentConfig;
use reservoir_runtime::jobs::sequences::{fit_classifier, ClassifierOutcome, Labelled};
use reservoir_runtime::{Device, Devices, Dispatch, Workload};

fn required() -> bool {
    std::env::var("RESERVOIR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Sequences whose class sets the frequency of a noisy sine, and their labels.
fn dataset(count: usize, seed: u64) -> (Vec<Array2<f64>>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let class = rng.random_range(0..3usize);
            let phase: f64 = rng.random_range(0.0..6.0);
            let steps = rng.random_range(40..80);
            let inputs = Array2::from_shape_fn((steps, 1), |(t, _)| {
                (0.1 * (class + 1) as f64 * t as f64 + phase).sin()
                    + 0.2 * rng.random_range(-1.0..1.0)
            });
            (inputs, format!("class{class}"))
        })
        .unzip()
}

fn fit(dispatch: &mut Dispatch, train: &[Array2<f64>], labels: &[String]) -> ClassifierOutcome {
    let config = ExperimentConfig::from_toml(
        "[reservoir]\nsize = 120\nconnection_prob = 0.2\nleak_rate = 0.5\nseed = 3\n\
         [readout]\nridge = 1e-3\n[features]\nsummaries = [\"last\", \"mean\"]\n",
        "<test>",
    )
    .expect("config");
    let views: Vec<ArrayView2<f64>> = train.iter().map(|a| a.view()).collect();
    let ids: Vec<String> = (0..train.len()).map(|i| format!("s{i}")).collect();
    let train = Labelled {
        ids: &ids,
        inputs: &views,
        labels,
    };
    fit_classifier(
        &config,
        &["u".to_string()],
        train,
        Some(train),
        dispatch,
        &mut |_, _, _| {},
    )
    .expect("fit")
}

/// The largest difference between the readouts' weights, relative to `b`'s largest weight.
fn largest_difference(a: &ClassifierOutcome, b: &ClassifierOutcome) -> f64 {
    let (a, b) = (a.model.readout.weights(), b.model.readout.weights());
    let largest = b.iter().fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
    (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs())) / largest
}

#[test]
fn a_classifier_on_one_gpu_and_spread_over_all_fits_the_cpus_readout() {
    let Some(gpus) = usable_gpus() else { return };
    let (train, labels) = dataset(700, 5);
    let cpu = fit(&mut Dispatch::new(Device::Cpu), &train, &labels);
    let mut one_gpu = Dispatch::new(Device::Cuda(0));
    let gpu = fit(&mut one_gpu, &train, &labels);
    assert_eq!(one_gpu.placements()[0].1.name(), "cuda");
    let d = largest_difference(&gpu, &cpu);
    eprintln!(
        "one GPU: readout within {d:e} of the CPU's; accuracy {} against {}",
        gpu.train.accuracy, cpu.train.accuracy
    );
    assert!(d < 1e-3, "{d}");
    assert!((gpu.train.accuracy - cpu.train.accuracy).abs() <= 0.01);
    if gpus < 2 || !nccl_loads() {
        eprintln!("the spread over several GPUs is not tested here");
        return;
    }
    let mut all = Dispatch::new(Device::Cuda(0)).with_devices(Some(Devices::All));
    let spread = fit(&mut all, &train, &labels);
    assert!(all.placements()[0].1.name().starts_with("cuda:0,1"));
    let d = largest_difference(&spread, &gpu);
    eprintln!("all GPUs: readout within {d:e} of one GPU's");
    assert!(d < 1e-3, "{d}");
    assert_eq!(
        spread.test_predictions.as_ref().map(Vec::len),
        Some(train.len())
    );
    let agree = spread
        .test_predictions
        .iter()
        .flatten()
        .zip(gpu.test_predictions.iter().flatten())
        .filter(|(a, b)| a == b)
        .count();
    assert!(
        agree * 100 >= train.len() * 99,
        "{agree} of {} agree",
        train.len()
    );
}

/// The number of GPUs, or `None` (said why) without a usable one.
fn usable_gpus() -> Option<usize> {
    let support = gpu_reservoir::probe();
    if let Some(problem) = support.problem {
        assert!(
            !required(),
            "RESERVOIR_REQUIRE_GPU=1 but no usable GPU: {problem}"
        );
        eprintln!("skipping GPU test: {problem}");
        return None;
    }
    Some(support.devices.len())
}

/// Whether NCCL loads (said why not).
fn nccl_loads() -> bool {
    match gpu_reservoir::collective::nccl_loadable() {
        Ok(()) => true,
        Err(e) => {
            assert!(!required(), "RESERVOIR_REQUIRE_GPU=1 but {e}");
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// Every GPU, where there are two or more and NCCL loads; `None` (said why) otherwise.
fn several_gpus() -> Option<usize> {
    let count = usable_gpus()?;
    if count < 2 {
        eprintln!("one GPU: nothing to split over");
        return None;
    }
    nccl_loads().then_some(count)
}

#[test]
fn devices_split_a_large_dense_reservoir_and_leave_a_small_one_on_one_gpu() {
    let Some(count) = several_gpus() else { return };
    // The fewest units `shards_pay` splits.
    let n = 16_384;
    let config = ReservoirConfig::default()
        .to_params()
        .size(n)
        .input_size(1)
        .connection_prob(1.0)
        .check()
        .expect("config");
    assert!(gpu_reservoir::shards_pay(&config, count));
    // A dense W drawn directly (the spectral estimate of 16,384 dense units is not the point).
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let scale = 0.9 / (n as f64 / 3.0).sqrt();
    let values: Vec<f64> = (0..n * n)
        .map(|_| scale * rng.random_range(-1.0..1.0))
        .collect();
    let recurrent = CsrMatrix::from_parts(
        n,
        n,
        (0..=n).map(|r| (r * n) as u32).collect(),
        (0..n * n).map(|i| (i % n) as u32).collect(),
        values,
    )
    .expect("W");
    let input = Array2::from_shape_fn((n, 1), |_| rng.random_range(-1.0..1.0));
    let bias = ndarray::Array1::zeros(n);
    let weights = ReservoirWeights::from_parts(recurrent, input, bias).expect("weights");
    let inputs = Array2::from_shape_fn((50, 1), |(t, _)| (0.3 * t as f64).sin());

    let mut one = Dispatch::new(Device::Cuda(0));
    let mut alone = one
        .echo_state(&config, weights.clone(), Workload::single(50))
        .expect("one GPU");
    let expected = alone.run(inputs.view()).expect("run");
    drop(alone);
    let mut all = Dispatch::new(Device::Cuda(0)).with_devices(Some(Devices::All));
    let mut split = all
        .echo_state(&config, weights, Workload::single(50))
        .expect("split");
    let name = all.placements()[0].1.name();
    assert_eq!(name.split(',').count(), count, "{name}");
    let got = split.run(inputs.view()).expect("run");
    let max = (&got - &expected)
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    eprintln!("{n} units over {name}: states within {max:e} of one GPU's");
    assert!(max < 1e-5, "{max}");

    // A small reservoir stays on the first GPU, and says so.
    let small = config.to_params().size(200).check().expect("config");
    let (weights, _) = ReservoirWeights::generate(&small).expect("weights");
    let mut all = Dispatch::new(Device::Cuda(0)).with_devices(Some(Devices::All));
    all.echo_state(&small, weights, Workload::single(50))
        .expect("small");
    assert_eq!(all.placements()[0].1.name(), "cuda");
}

/// A sweep config of 17 spectral radii × `leaks` leak rates (17 × 17 = 289 lanes: three
/// groups of lanes), and the text of its leak rates.
fn sweep_config(leaks: usize) -> (String, String) {
    let radii: Vec<String> = (0..17)
        .map(|i| format!("{}", 0.5 + 0.03 * i as f64))
        .collect();
    let leaks: Vec<String> = (0..leaks)
        .map(|i| format!("{}", 0.2 + 0.05 * i as f64))
        .collect();
    let leaks = format!("leak_rate = [{}]", leaks.join(", "));
    let toml = format!(
        "[task]\nkind = \"narma10\"\ntrain = 300\ntest = 100\nseed = 4\n\
         [reservoir]\nsize = 40\nseed = 5\n[readout]\nwashout = 30\n\
         [sweep]\nspectral_radius = [{}]\n{leaks}\nridge = [1e-8, 1e-4]\n",
        radii.join(", "),
    );
    (toml, leaks)
}

#[test]
fn a_sweep_spreads_its_lane_groups_over_the_gpus_with_one_gpus_results() {
    let Some(count) = usable_gpus() else { return };
    let (toml, leaks) = sweep_config(17);
    let config = ExperimentConfig::from_toml(&toml, "<test>").expect("config");
    let mut one = Dispatch::new(Device::Cuda(0));
    let alone = reservoir_runtime::jobs::sweep::run_sweep(&config, &mut one).expect("one GPU");
    let first = Device::Cuda(0).to_string();
    assert_eq!(one.placements()[0].1.name(), first);
    let mut all = Dispatch::new(Device::Cuda(0)).with_devices(Some(Devices::All));
    let spread = reservoir_runtime::jobs::sweep::run_sweep(&config, &mut all).expect("all GPUs");
    let name = all.placements()[0].1.name();
    // Three groups go to up to three GPUs.
    assert_eq!(name.split(',').count(), count.min(3), "{name}");
    assert_eq!(spread.results, alone.results, "{name}");
    assert_eq!(spread.results.len(), 2 * 289);
    // One group of lanes leaves the other GPUs out, and says so.
    let small = ExperimentConfig::from_toml(&toml.replace(&leaks, "leak_rate = [0.5]"), "<test>")
        .expect("config");
    let mut all = Dispatch::new(Device::Cuda(0)).with_devices(Some(Devices::All));
    reservoir_runtime::jobs::sweep::run_sweep(&small, &mut all).expect("one group");
    assert_eq!(all.placements()[0].1.name(), first);
}

/// Set in the second rank of the two-process sweep, which this test binary runs as a child.
const SWEEP_CHILD: &str = "RESERVOIR_TEST_SWEEP_RANK";

#[test]
fn a_sweep_over_two_processes_gives_every_rank_one_gpus_results() {
    let child = std::env::var(SWEEP_CHILD).is_ok();
    let Some(_) = several_gpus() else { return };
    let port = match std::env::var("RESERVOIR_TEST_PORT") {
        Ok(port) => port,
        Err(_) => free_port().to_string(),
    };
    let rank = usize::from(child);
    let spawned = (!child).then(|| {
        std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                &harness_name(
                    module_path!(),
                    "a_sweep_over_two_processes_gives_every_rank_one_gpus_results",
                ),
                "--nocapture",
            ])
            .env(SWEEP_CHILD, "1")
            .env("RESERVOIR_TEST_PORT", &port)
            .spawn()
            .expect("the second rank")
    });
    let config = ExperimentConfig::from_toml(&sweep_config(17).0, "<test>").expect("config");
    let launch = reservoir_runtime::Launch {
        launcher: reservoir_runtime::Launcher::Torchrun,
        rank,
        world: 2,
        local_rank: rank,
        address: format!("127.0.0.1:{port}"),
        token: "the two-process sweep".to_string(),
        timeout: std::time::Duration::from_secs(60),
    };
    let mut ranked = Dispatch::new(Device::Cuda(0)).with_launch(Some(launch));
    let spread = reservoir_runtime::jobs::sweep::run_sweep(&config, &mut ranked).expect("launch");
    let name = ranked.placements()[0].1.name();
    assert!(name.ends_with(&format!("rank {rank} of 2")), "{name}");
    let mut one = Dispatch::new(Device::Cuda(rank));
    let alone = reservoir_runtime::jobs::sweep::run_sweep(&config, &mut one).expect("one GPU");
    assert_eq!(spread.results, alone.results, "rank {rank}");
    assert_eq!(spread.results.len(), 2 * 289);
    if let Some(mut other) = spawned {
        assert!(
            other.wait().expect("second rank").success(),
            "the second rank failed"
        );
    }
}
