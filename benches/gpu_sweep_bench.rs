//! GPU benchmark of a sweep's lanes (`GpuLaneRunner`): B echo-state lanes sharing one random
//! W, one GEMM (f32 by default) and one elementwise launch per step, per-lane ridge sums on the
//! device.
//!
//! For N = 500 and 1000 and B = 16, 64, 256 lanes it prints µs per step of the recurrence
//! (replayed from a CUDA graph, as `run_lanes` runs full chunks, and as plain launches) and of
//! the sums (CUDA events after a warm-up, median of 5), lane-steps/s, the seconds to copy one
//! set of sums back, and the wall time of a whole `run_lanes` over a 10,000-step NARMA-10
//! series (inputs, transfers, sums, download of training and validation sums; weights already
//! on the device, median of 3), next to `CpuLaneRunner` on a few lanes of the same series
//! measured in the same process. It checks itself: the GPU lanes' validation NRMSE must match the CPU
//! lanes' within 1e-3 relative, or it exits with status 1. Start-up is reported separately.
//!
//! It then times the recurrence at N = 1000 with each GEMM arithmetic (`f32`, `tf32`, `f16`:
//! `GpuLaneRunner::with_math`), f16 also on the tensor-core run
//! (`GpuLaneRunner::with_kernel`), B = 64, 128 and 256, and a whole `run_lanes` of 256 lanes
//! over the series with each, checking the tensor-core lanes' validation NRMSE against the
//! CPU lanes' within 2e-2 relative (`--math-only`: that table alone).
//!
//! With two or more GPUs it also times 256 lanes of N = 1000 over the series into readouts
//! solved on the GPUs (`score_lanes`) on GPU 0 alone and spread over every GPU
//! (`MultiGpuLaneRunner`), with the lanes alone and the first runs apart, and checks that both
//! give the same bits (`--multi-only`: that comparison alone).
//!
//! Every figure is also printed as a JSON line (`Recorder`).
//!
//! Build with `cargo build --release -p reservoir-benches --bins` and run on a machine with a
//! GPU: `target/release/gpu_sweep_bench`. Exits 0 with a message when there is no GPU.

use std::time::Instant;

use cudarc::driver::DriverError;
use gpu_reservoir::internals::LaneSteps;
use gpu_reservoir::{
    probe, BatchKernel, DeviceRidgeSums, GemmMath, GpuDevice, GpuError, GpuLaneRunner,
    MultiGpuLaneRunner, Result, LANE_GROUP,
};
use reservoir_benches::{median_micros_per_step, Param, Recorder};
use reservoir_core::lanes::{CpuLaneRunner, Lane, LaneData, LaneOutcomes, LaneRunner, LaneSums};
use reservoir_core::{ReservoirConfig, ReservoirParams};
use reservoir_runtime::data::tasks::narma::narma10;

/// Rows of the end-to-end runs: washout 100, training to row 8000, validation after.
const STEPS: usize = 10_000;
/// Lanes the CPU baseline runs (one after the other).
const CPU_LANES: usize = 4;
/// Timed runs per figure (median).
const REPEATS: usize = 5;

/// `count` lanes around `base` spread over ρ ∈ [0.5, 0.95], a ∈ [0.1, 1] and s ∈ [0.2, 1.4].
fn lanes(base: &ReservoirConfig, count: usize) -> Result<Vec<Lane>> {
    (0..count)
        .map(|i| {
            Ok(Lane::new(
                base,
                0.5 + 0.45 * (i % 8) as f64 / 7.0,
                0.1 + 0.9 * ((i / 8) % 8) as f64 / 7.0,
                0.2 + 0.3 * (i % 5) as f64,
            )
            .map_err(reservoir_core::ReservoirError::from)?)
        })
        .collect()
}

/// The base config of the lanes: `n` units, 10 % connected, with a bias, seed 3.
fn base(n: usize) -> Result<ReservoirConfig> {
    Ok(ReservoirParams::new()
        .size(n)
        .connection_prob(0.1)
        .bias_scaling(0.1)
        .seed(3)
        .check()
        .map_err(reservoir_core::ReservoirError::from)?)
}

/// Median timings of one set of lanes.
struct LaneTiming {
    /// µs per step of the recurrence of all lanes replayed from a CUDA graph, as `run_lanes`
    /// runs full chunks (the inputs already projected).
    micros_per_step: f64,
    /// The same steps as plain launches, one GEMM and one elementwise launch per step.
    launch_micros_per_step: f64,
    /// µs per step of the ridge sums of all lanes over those states.
    sums_micros_per_step: f64,
    /// Seconds to copy one set of the lanes' sums back and assemble their accumulators.
    download_seconds: f64,
    /// Steps per chunk (the timed runs have at most this many).
    chunk_steps: usize,
}

/// The case of `width` lanes of N units stepped with `math` on `kernel`.
fn lanes_case(n: usize, width: usize, math: GemmMath, kernel: &str) -> [(&'static str, Param); 4] {
    [
        ("N", n.into()),
        ("B", width.into()),
        ("arithmetic", math.to_string().into()),
        ("kernel", kernel.into()),
    ]
}

impl LaneTiming {
    /// Records the timings of `case`.
    fn record(&self, rec: &Recorder, case: &[(&str, Param)]) {
        let recurrence = "recurrence, as run_lanes runs it";
        rec.figure(case, recurrence, self.micros_per_step, "µs/step");
        let plain = "recurrence, plain launches";
        rec.figure(case, plain, self.launch_micros_per_step, "µs/step");
        rec.figure(case, "sums", self.sums_micros_per_step, "µs/step");
        let copy_back = "copy-back of one set of sums";
        rec.figure(case, copy_back, self.download_seconds, "s");
    }
}

/// The metric of a whole `run_lanes` over the series.
const RUN_LANES: &str = "run_lanes, 10,000 steps";

/// Times `lanes` around `base` over `steps` steps (at most one chunk), median of `repeats`.
fn time_lanes(
    runner: &mut GpuLaneRunner,
    base: &ReservoirConfig,
    lanes: &[Lane],
    steps: usize,
) -> Result<LaneTiming> {
    let device = runner.device().clone();
    let chunk_steps = GpuLaneRunner::chunk_steps(base.size(), lanes.len());
    let mut bench = LaneSteps::new(runner, base, lanes, steps)?;
    let steps = bench.steps();
    let launch_micros_per_step =
        median_micros_per_step(&device, steps, REPEATS, || bench.enqueue())?;
    // The tensor-core run is one launch: as run_lanes runs it, without a graph.
    let micros_per_step = if bench.on_tensor_cores() {
        launch_micros_per_step
    } else {
        let graph = bench.capture()?;
        median_micros_per_step(&device, steps, REPEATS, || {
            graph
                .launch()
                .map_err(|source: DriverError| GpuError::Driver {
                    context: "replaying the lanes' steps",
                    source,
                })
        })?
    };
    let mut sums = DeviceRidgeSums::new(&device, base.size(), 1, lanes.len())?;
    let sums_micros_per_step =
        median_micros_per_step(&device, steps, REPEATS, || bench.add_to(&mut sums))?;
    let started = Instant::now();
    sums.download()?;
    Ok(LaneTiming {
        micros_per_step,
        launch_micros_per_step,
        sums_micros_per_step,
        download_seconds: started.elapsed().as_secs_f64(),
        chunk_steps,
    })
}

/// Validation NRMSE of each lane's readout (ridge 1e-6) trained on its training sums.
fn scores(sums: &[LaneSums]) -> Result<Vec<f64>> {
    sums.iter()
        .map(|lane| {
            let fit = lane.train.solve(1e-6)?;
            Ok(lane.validation.score(&fit.readout)?.mean_nrmse())
        })
        .collect()
}

/// Median wall seconds of `repeats` calls of `run`.
fn median_seconds(repeats: usize, mut run: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        run()?;
        samples.push(t.elapsed().as_secs_f64());
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

struct Row {
    n: usize,
    lanes: usize,
    timing: LaneTiming,
    run_s: f64,
    cpu_lane_steps: f64,
}

fn main() -> Result<()> {
    let support = probe();
    if let Some(problem) = support.problem {
        println!("no usable GPU ({problem}); nothing to measure");
        return Ok(());
    }
    let t = Instant::now();
    let device = GpuDevice::shared(0)?;
    let context_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    device.blas()?;
    let blas_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut runner = GpuLaneRunner::new(&device)?;
    DeviceRidgeSums::new(&device, 1, 1, 1)?;
    let kernels_s = t.elapsed().as_secs_f64();
    let rec = Recorder::new("gpu_sweep_bench", Some(device.info().name.clone()));
    for (phase, seconds) in [
        ("context", context_s),
        ("cuBLAS handle", blas_s),
        ("kernels lanes.cu + ridge.cu", kernels_s),
    ] {
        rec.figure(&[("phase", phase.into())], "start-up", seconds, "s");
    }
    println!(
        "device: {} ({} SMs); start-up (excluded below): context {context_s:.3} s, cuBLAS handle {blas_s:.3} s, kernels lanes.cu + ridge.cu {kernels_s:.3} s",
        device.info().name,
        device.info().multiprocessors
    );

    let series = narma10(STEPS, 1)?;
    let data = LaneData {
        inputs: series.inputs.view(),
        targets: series.targets.view(),
        washout: 100,
        train_rows: 8000,
    };
    if std::env::args().any(|a| a == "--multi-only") {
        return several_gpus(&rec, &mut runner, &data);
    }
    if std::env::args().any(|a| a == "--math-only") {
        return arithmetic(&rec, &device, &data);
    }
    let mut rows = Vec::new();
    let mut worst_check: f64 = 0.0;
    for n in [500, 1000] {
        let base = base(n)?;
        // The CPU baseline (its lanes one after another), and the check of the GPU lanes
        // against it.
        let few = lanes(&base, CPU_LANES)?;
        let mut cpu_sums = Vec::new();
        let cpu_s = median_seconds(3, || {
            cpu_sums =
                CpuLaneRunner::new(reservoir_core::Par::Seq).run_lanes(&base, &few, &data)?;
            Ok(())
        })?;
        let gpu_sums = runner.run_lanes(&base, &few, &data)?;
        for (g, c) in scores(&gpu_sums)?.iter().zip(scores(&cpu_sums)?) {
            worst_check = worst_check.max((g - c).abs() / c);
        }
        let cpu_lane_steps = (CPU_LANES * STEPS) as f64 / cpu_s;
        for count in [16, 64, 256] {
            let all = lanes(&base, count)?;
            let timing = time_lanes(&mut runner, &base, &all, 1000)?;
            let run_s = median_seconds(3, || {
                runner.run_lanes(&base, &all, &data)?;
                Ok(())
            })?;
            rows.push(Row {
                n,
                lanes: count,
                timing,
                run_s,
                cpu_lane_steps,
            });
        }
    }

    println!(
        "\n| N | B | steps/chunk | recurrence µs/step (graph) | (plain launches) | lane-steps/s (graph) | sums µs/step | copy-back of one set of sums (s) | run_lanes, {STEPS} steps (s) | lane-steps/s end to end | CPU lane-steps/s ({CPU_LANES} lanes, same run) | end-to-end speed-up |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let t = &r.timing;
        let end_to_end = (r.lanes * STEPS) as f64 / r.run_s;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.3e} | {:.2} | {:.3} | {:.3} | {:.3e} | {:.3e} | {:.1}× |",
            r.n,
            r.lanes,
            t.chunk_steps,
            t.micros_per_step,
            t.launch_micros_per_step,
            r.lanes as f64 * 1e6 / t.micros_per_step,
            t.sums_micros_per_step,
            t.download_seconds,
            r.run_s,
            end_to_end,
            r.cpu_lane_steps,
            end_to_end / r.cpu_lane_steps
        );
        let case = lanes_case(r.n, r.lanes, GemmMath::F32, "GEMM");
        t.record(&rec, &case);
        rec.figure(&case, RUN_LANES, r.run_s, "s");
        let cpu = format!("CPU lanes, {CPU_LANES} on one thread");
        rec.figure(&case, &cpu, r.cpu_lane_steps, "lane-steps/s");
    }
    println!(
        "\ncheck: validation NRMSE (ridge 1e-6) of {CPU_LANES} GPU lanes vs the CPU lanes, worst relative difference {worst_check:.2e} (bound 1e-3)"
    );
    if worst_check.is_nan() || worst_check >= 1e-3 {
        println!("FAILED: the GPU lanes do not match the CPU lanes");
        std::process::exit(1);
    }
    arithmetic(&rec, &device, &data)?;
    several_gpus(&rec, &mut runner, &data)
}

/// The recurrence at N = 1000 with each GEMM arithmetic, and a whole `run_lanes` of 256 lanes
/// with each; exits 1 when a tensor-core arithmetic's validation NRMSE (ridge 1e-6, the first
/// lanes) is more than 2e-2 from the CPU lanes'.
fn arithmetic(rec: &Recorder, device: &GpuDevice, data: &LaneData<'_>) -> Result<()> {
    let base = base(1000)?;
    let few = lanes(&base, CPU_LANES)?;
    let cpu =
        scores(&CpuLaneRunner::new(reservoir_core::Par::all()).run_lanes(&base, &few, data)?)?;
    let widths = [64, 128, 256];
    let all = lanes(&base, 256)?;
    println!(
        "\nGEMM arithmetic: N = 1000, recurrence µs/step (graph, median of {REPEATS}) at B = {widths:?}; run_lanes of 256 lanes over {STEPS} steps (median of 3); validation NRMSE of {CPU_LANES} lanes against the CPU lanes"
    );
    println!(
        "| arithmetic, kernel | B = 64 | B = 128 | B = 256 | run_lanes, 256 lanes (s) | worst NRMSE difference |"
    );
    println!("|---|---|---|---|---|---|");
    let mut worst_check: f64 = 0.0;
    let kinds = [
        (GemmMath::F32, BatchKernel::Gemm),
        (GemmMath::Tf32, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::Gemm),
        (GemmMath::F16, BatchKernel::Auto),
    ];
    for (math, kernel) in kinds {
        let mut runner = GpuLaneRunner::new(device)?
            .with_math(math)
            .with_kernel(kernel);
        let ran = match runner.kernel(base.size(), LANE_GROUP)? {
            BatchKernel::TensorCore => "tensor-core run",
            BatchKernel::Gemm | BatchKernel::Auto => "GEMM",
        };
        let mut cells = Vec::new();
        for width in widths {
            let timing = time_lanes(&mut runner, &base, &all[..width], 1000)?;
            cells.push(format!("{:.2}", timing.micros_per_step));
            timing.record(rec, &lanes_case(base.size(), width, math, ran));
        }
        let run_s = median_seconds(3, || {
            runner.run_lanes(&base, &all, data)?;
            Ok(())
        })?;
        let got = scores(&runner.run_lanes(&base, &few, data)?)?;
        let worst = got
            .iter()
            .zip(&cpu)
            .map(|(g, c)| (g - c).abs() / c)
            .fold(0.0f64, f64::max);
        worst_check = worst_check.max(worst);
        let case = lanes_case(base.size(), all.len(), math, ran);
        rec.figure(&case, RUN_LANES, run_s, "s");
        let check = format!("validation NRMSE vs CPU lanes, worst of {CPU_LANES}");
        rec.figure(&case, &check, worst, "relative");
        println!(
            "| {math}, {ran} | {} | {run_s:.3} | {worst:.2e} |",
            cells.join(" | ")
        );
    }
    if worst_check.is_nan() || worst_check >= 2e-2 {
        println!("FAILED: a GEMM arithmetic's lanes drift more than 2e-2 from the CPU lanes");
        std::process::exit(1);
    }
    Ok(())
}

/// 256 lanes of N = 1000 over the whole series, into readouts solved and scored on the GPUs
/// for two ridge values (`score_lanes`, as `reservoir sweep` runs them), on GPU 0 alone and
/// spread over every GPU of the host: median of 5 each, taken in turns after a first run of
/// each (the first run of the spread runner opens the other GPUs), with the lanes alone
/// (no ridge value: the recurrence and the sums) timed the same way. Checks that both give the
/// same bits, or exits 1.
fn several_gpus(rec: &Recorder, one: &mut GpuLaneRunner, data: &LaneData<'_>) -> Result<()> {
    let count = probe().devices.len();
    if count < 2 {
        println!("\nseveral GPUs: only {count} GPU here; not measured");
        return Ok(());
    }
    let base = base(1000)?;
    let all = lanes(&base, 256)?;
    let ordinals: Vec<usize> = (0..count).collect();
    let mut multi = MultiGpuLaneRunner::new(&ordinals)?;
    let ridges = [1e-8, 1e-6];
    let bits = |outcomes: &LaneOutcomes| -> Vec<u64> {
        outcomes
            .iter()
            .flatten()
            .flat_map(|o| match o {
                Ok(s) => vec![s.train_nrmse.to_bits(), s.validation.mean_nrmse().to_bits()],
                Err(_) => vec![u64::MAX],
            })
            .collect()
    };
    let devices = ordinals
        .iter()
        .map(|&ordinal| GpuDevice::shared(ordinal))
        .collect::<Result<Vec<_>>>()?;
    // Without readouts nothing waits for the lanes' last chunks: every GPU is synchronized
    // before the clock stops.
    let timed = |runner: &mut dyn LaneRunner, ridges: &[f64]| -> Result<(f64, Vec<u64>)> {
        let mut outcomes = Vec::new();
        let t = Instant::now();
        runner.score_lanes(&base, &all, data, ridges, 0, &mut |_, scored| {
            outcomes.extend(scored);
            Ok(())
        })?;
        for device in &devices {
            device
                .stream()
                .synchronize()
                .map_err(|source| GpuError::Driver {
                    context: "waiting for the lanes",
                    source,
                })?;
        }
        Ok((t.elapsed().as_secs_f64(), bits(&outcomes)))
    };
    let (first_one, _) = timed(one, &ridges)?;
    let (first_multi, _) = timed(&mut multi, &ridges)?;
    // Taken in turns, so that a drift of the host hits both alike.
    let mut times = [(); 4].map(|()| Vec::new());
    let mut scores = (Vec::new(), Vec::new());
    for _ in 0..REPEATS {
        times[0].push(timed(one, &[])?.0);
        let (seconds, got) = timed(one, &ridges)?;
        times[1].push(seconds);
        scores.0 = got;
        times[2].push(timed(&mut multi, &[])?.0);
        let (seconds, got) = timed(&mut multi, &ridges)?;
        times[3].push(seconds);
        scores.1 = got;
    }
    let [lanes_one, scored_one, lanes_multi, scored_multi] = times.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    let same = scores.0 == scores.1;
    println!(
        "\nseveral GPUs: 256 lanes, N = 1000, {STEPS} steps, groups of {LANE_GROUP} lanes, readouts for 2 ridge values solved on the GPUs (median of {REPEATS} in turns):"
    );
    println!("| | GPU 0 alone | {count} GPUs | speed-up |");
    println!("|---|---|---|---|");
    for (what, a, b) in [
        ("lanes into scores (s)", scored_one, scored_multi),
        ("lanes alone, no readout (s)", lanes_one, lanes_multi),
        (
            "solving and scoring 512 readouts (difference, s)",
            scored_one - lanes_one,
            scored_multi - lanes_multi,
        ),
        ("first run (s)", first_one, first_multi),
    ] {
        println!("| {what} | {a:.3} | {b:.3} | {:.2}× |", a / b);
    }
    for (gpus, scored, lanes, first) in [
        (1, scored_one, lanes_one, first_one),
        (count, scored_multi, lanes_multi, first_multi),
    ] {
        let case = [
            ("N", Param::from(1000)),
            ("B", 256.into()),
            ("GPUs", gpus.into()),
        ];
        rec.figure(&case, "lanes into scores, 2 ridge values", scored, "s");
        rec.figure(&case, "lanes alone, no readout", lanes, "s");
        rec.figure(&case, "first run", first, "s");
    }
    println!("the same bits: {same}");
    if !same {
        println!("FAILED: the lanes over several GPUs differ from one GPU's");
        std::process::exit(1);
    }
    Ok(())
}
