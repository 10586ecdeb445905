//! GPU benchmark of the single-sequence echo-state step: our persistent kernels next to the
//! baselines measured in the same process (one fused launch per step; cuBLAS SGEMV plus an
//! elementwise kernel, two launches per step), µs/step from CUDA events after a warm-up
//! (median of repeats), achieved GB/s of W read per step and the floor from the measured copy
//! bandwidth. Start-up (context, kernel modules, cuBLAS handle) is reported separately. Every figure
//! is also printed as a JSON line (`Recorder`).
//!
//! Build with `cargo build --release -p reservoir-benches --bins` and run on a machine with a
//! GPU: `target/release/gpu_bench` (`--batched-only`: the batched table only;
//! `--tensor-core-only`: the tensor-core run at N = 1000, B = 64 and 512 only; `--case=N`: the
//! single-sequence cases of size N only, e.g. under a profiler). Exits 0 with a message when
//! there is no GPU.

use std::time::Instant;

use cudarc::driver::DriverError;
use gpu_reservoir::internals::{capture, BatchedSteps, SingleSequenceSteps, TensorCoreSteps};
use gpu_reservoir::{
    probe, BatchKernel, GemmMath, GpuDevice, GpuError, GpuReservoirComputer, ManySequences,
    PersistentWeights, Result,
};
use ndarray::{Array2, ArrayView2};
use reservoir_benches::{copy_bandwidth, median_micros_per_step, Param, Recorder};
use reservoir_core::{
    EchoStateNetwork, HalfFormat, Reservoir, ReservoirConfig, ReservoirError, ReservoirParams,
    ReservoirWeights,
};

/// A timed run: median microseconds per step over the timed runs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StepTiming {
    micros_per_step: f64,
}

/// Median µs per step of `enqueue` on `bench` (which queues its steps), `repeats` timed runs.
fn time(
    device: &GpuDevice,
    bench: &mut SingleSequenceSteps,
    repeats: usize,
    mut enqueue: impl FnMut(&mut SingleSequenceSteps) -> Result<()>,
) -> Result<StepTiming> {
    let steps = bench.steps();
    Ok(StepTiming {
        micros_per_step: median_micros_per_step(device, steps, repeats, || enqueue(bench))?,
    })
}

/// A dense-or-sparse config of the benchmark: the defaults with `size`, `density`, `seed`.
fn bench_config(size: usize, density: f64, seed: u64) -> Result<ReservoirConfig> {
    Ok(ReservoirParams::new()
        .size(size)
        .connection_prob(density)
        .seed(seed)
        .check()
        .map_err(ReservoirError::from)?)
}

/// A single-sequence timing: its case (N, density, W's format) and path.
struct Row {
    n: usize,
    density: f64,
    w_format: &'static str,
    path: &'static str,
    timing: StepTiming,
    w_bytes: f64,
}

impl Row {
    /// The case as the table names it: `N=1000 dense`, `N=1000 10% CSR`, `N=4096 dense, bf16 W`.
    fn case(&self) -> String {
        let layout = if self.density >= 1.0 {
            "dense".to_string()
        } else {
            format!("{:.0}% CSR", self.density * 100.0)
        };
        match self.w_format {
            "f32" => format!("N={} {layout}", self.n),
            half => format!("N={} {layout}, {half} W", self.n),
        }
    }
}

fn main() -> Result<()> {
    let support = probe();
    if let Some(problem) = support.problem {
        println!("no usable GPU ({problem}); nothing to measure");
        return Ok(());
    }
    let started = Instant::now();
    let device = GpuDevice::shared(0)?;
    let context_s = started.elapsed().as_secs_f64();
    let t = Instant::now();
    device.blas()?;
    let blas_s = t.elapsed().as_secs_f64();
    let rec = Recorder::new("gpu_bench", Some(device.info().name.clone()));
    if std::env::args().any(|a| a == "--many-only") {
        print_many(&rec, &many_sequences(&device)?);
        return Ok(());
    }
    if std::env::args().any(|a| a == "--tensor-core-only") {
        // The tensor-core run alone at N = 1000 (for a profiler).
        let config = bench_config(1000, 1.0, 9)?;
        let (weights, _) = ReservoirWeights::generate(&config)?;
        for batch in [64, 512] {
            let mut run = TensorCoreSteps::new(&device, &weights, batch, 200)?;
            let micros = median_micros_per_step(&device, run.steps(), 5, || run.enqueue())?;
            println!("tensor-core run, N=1000, B={batch}: {micros:.2} µs/step");
            record_batched(&rec, 1000, batch, GemmMath::F16, TENSOR_CORE_RUN, micros);
        }
        return Ok(());
    }
    let copy = copy_bandwidth(&device, 1 << 30)?;
    rec.figure(
        &[("buffer", "1 GiB".into())],
        "copy bandwidth, read + write",
        copy,
        "GB/s",
    );
    println!(
        "device: {} ({} SMs); copy bandwidth {:.0} GB/s (read + write, 1 GiB)",
        device.info().name,
        device.info().multiprocessors,
        copy
    );

    let mut rows = Vec::new();
    let mut cluster_shapes = Vec::new();
    let mut kernels_s = None;
    // `--batched-only` skips the single-sequence table (a shorter run on the device);
    // `--case=N` runs only the single-sequence cases of size N (for a profiler).
    let only_case: Option<usize> =
        std::env::args().find_map(|a| a.strip_prefix("--case=").and_then(|n| n.parse().ok()));
    let single_cases: &[(usize, f64, usize, bool)] =
        if std::env::args().any(|a| a == "--batched-only") {
            &[]
        } else {
            &[
                (1000, 1.0, 20_000, true),
                (1000, 0.1, 20_000, false),
                (10_000, 0.01, 10_000, false),
                (4096, 1.0, 2_000, true),
                (8192, 1.0, 1_000, true),
            ]
        };
    for &(n, density, steps, dense) in single_cases
        .iter()
        .filter(|case| only_case.is_none_or(|n| case.0 == n))
    {
        let config = bench_config(n, density, 3)?;
        let (weights, _) = ReservoirWeights::generate(&config)?;
        let nnz = weights.recurrent().nnz() as f64;
        let row = |w_format, path, timing, w_bytes| Row {
            n,
            density,
            w_format,
            path,
            timing,
            w_bytes,
        };
        let t = Instant::now();
        let mut buffers = SingleSequenceSteps::new(&device, &weights, steps, dense)?;
        kernels_s.get_or_insert(t.elapsed().as_secs_f64());
        if let Some(shape) = buffers.cluster_shape() {
            cluster_shapes.push((n, density, shape?));
            let timing = time(&device, &mut buffers, 5, |b| b.enqueue_cluster())?;
            rows.push(row("f32", CLUSTER, timing, nnz * 4.0));
        }
        if let Some(where_w) = buffers.persistent_weights() {
            let timing = time(&device, &mut buffers, 5, |b| b.enqueue_persistent())?;
            let (path, w_bytes) = persistent_path(where_w, nnz);
            rows.push(row("f32", path, timing, w_bytes));
        }
        // A large dense W rounded to 16 bits streams at half the bytes (same results as
        // the CPU on the rounded weights).
        if dense && n >= 4096 {
            for (format, w_format) in [(HalfFormat::Bf16, "bf16"), (HalfFormat::F16, "f16")] {
                let rounded = weights.with_recurrent_rounded(format)?;
                let mut half = SingleSequenceSteps::new(&device, &rounded, steps, false)?;
                if let Some(where_w) = half.persistent_weights() {
                    let timing = time(&device, &mut half, 5, |b| b.enqueue_persistent())?;
                    let (path, w_bytes) = persistent_path(where_w, nnz);
                    rows.push(row(w_format, path, timing, w_bytes));
                }
            }
        }
        if dense {
            let timing = time(&device, &mut buffers, 3, |b| b.enqueue_cublas_gemv())?;
            rows.push(row("f32", CUBLAS_BASELINE, timing, nnz * 4.0));
        }
        let timing = time(&device, &mut buffers, 3, |b| b.enqueue_fused())?;
        rows.push(row("f32", FUSED_BASELINE, timing, nnz * 8.0));
    }

    if only_case.is_some() {
        print_rows(&rec, &rows, copy);
        return Ok(());
    }

    // The headline: 100,000 steps at N = 1000 dense, the kernel alone (one launch) and through
    // the public reservoir (drive, chunks, copy-back), with parity against the CPU.
    let config = bench_config(1000, 1.0, 5)?;
    let (weights, _) = ReservoirWeights::generate(&config)?;
    let headline = if single_cases.is_empty() {
        None
    } else {
        let mut bench = SingleSequenceSteps::new(&device, &weights, 100_000, false)?;
        match bench.cluster_shape() {
            Some(shape) => {
                let shape = shape?;
                Some((
                    time(&device, &mut bench, 3, |b| b.enqueue_cluster())?,
                    shape,
                ))
            }
            None => None,
        }
    };
    let mut gpu = GpuReservoirComputer::from_weights(&config, weights.clone(), &device)?;
    let inputs = Array2::from_shape_fn((100_000, 1), |(t, _)| ((t as f64) * 0.01).sin());
    let t = Instant::now();
    let states = gpu.run(inputs.view())?;
    let run_s = t.elapsed().as_secs_f64();
    let cpu = EchoStateNetwork::<f32>::from_weights(&config, weights)?
        .run(inputs.slice(ndarray::s![..1000, ..]))?;
    let diff = (&states.slice(ndarray::s![..1000, ..]) - &cpu)
        .mapv(|d| d * d)
        .sum()
        .sqrt()
        / cpu.mapv(|v| v * v).sum().sqrt();

    // Batched: B sequences through one reservoir, one GEMM + one elementwise launch per step
    // (plain and from a CUDA graph), and the tensor-core run (a cooperative launch per up to
    // 512 sequences for all 200 steps).
    let mut batched_rows = Vec::new();
    let mut tensor_rows = Vec::new();
    for (n, batches) in [
        (1000, &[16, 64, 128, 256, 512, 1024, 2048][..]),
        (500, &[64, 512, 2048][..]),
        (100, &[64, 512, 2048][..]),
    ] {
        let config = bench_config(n, 1.0, 9)?;
        let (weights, _) = ReservoirWeights::generate(&config)?;
        for &batch in batches {
            let maths: &[GemmMath] = if n == 1000 && (batch == 64 || batch == 512) {
                &GemmMath::ALL
            } else {
                &[GemmMath::F16]
            };
            let mut graph_f16 = None;
            for &math in maths {
                let mut steps = BatchedSteps::new(&device, &config, &weights, batch, math)?;
                let plain = median_micros_per_step(&device, 200, 5, || steps.enqueue(200))?;
                batched_rows.push((n, batch, math, GEMM_LAUNCHES, plain));
                let graph = capture(&device, || steps.enqueue(200))?;
                let replayed = median_micros_per_step(&device, 200, 5, || {
                    graph
                        .launch()
                        .map_err(|source: DriverError| GpuError::Driver {
                            context: "replaying the graph",
                            source,
                        })
                })?;
                batched_rows.push((n, batch, math, GEMM_GRAPH, replayed));
                if math == GemmMath::F16 {
                    graph_f16 = Some(replayed);
                }
            }
            match TensorCoreSteps::new(&device, &weights, batch, 200) {
                Ok(mut run) => {
                    let steps = run.steps();
                    let micros = median_micros_per_step(&device, steps, 5, || run.enqueue())?;
                    tensor_rows.push((n, batch, micros, graph_f16.unwrap_or(f64::NAN)));
                }
                Err(GpuError::Unsupported { reason, .. }) => {
                    println!("tensor-core run, N={n}, B={batch}: not on this device ({reason})");
                }
                Err(e) => return Err(e),
            }
        }
    }

    // Many sequences end to end through the public run_many (drive, steps, states back to the
    // host), one after another and batched.
    let many = many_sequences(&device)?;

    let kernels_s = kernels_s.unwrap_or(0.0);
    println!("\nstart-up (excluded above): context {context_s:.3} s, cuBLAS handle {blas_s:.3} s, first kernel load + plans + uploads {kernels_s:.3} s");
    for (phase, seconds) in [
        ("context", context_s),
        ("cuBLAS handle", blas_s),
        ("first kernel load + plans + uploads", kernels_s),
    ] {
        rec.figure(&[("phase", phase.into())], "start-up", seconds, "s");
    }
    println!("GpuReservoirComputer::run ({:?} path), N=1000 dense, 100,000 steps incl. drive, transfers and copy-back: {:.3} s ({:.2} µs/step); relative error vs CPU over the first 1000 steps {:.1e}", gpu.step_path(), run_s, run_s * 1e6 / 1e5, diff);
    let headline_case = |path: &str| {
        [
            ("N", Param::from(1000)),
            ("density", 1.0.into()),
            ("steps", 100_000.into()),
            ("path", path.into()),
        ]
    };
    let public_run = headline_case("GpuReservoirComputer::run, drive, transfers and copy-back");
    rec.figure(&public_run, "wall time", run_s, "s");
    rec.figure(
        &public_run,
        "error vs CPU, first 1000 steps",
        diff,
        "relative",
    );
    if let Some((timing, shape)) = headline {
        println!(
            "cluster kernel alone, N=1000 dense, one launch of 100,000 steps: {:.3} µs/step ({} blocks)",
            timing.micros_per_step, shape.blocks
        );
        let case = headline_case("cluster kernel alone, one launch");
        rec.figure(&case, "step", timing.micros_per_step, "µs/step");
    }
    for (n, density, shape) in cluster_shapes {
        println!(
            "cluster plan N={n}, density {density}: {} blocks, {} registers/thread, {} bytes spilled/thread",
            shape.blocks, shape.registers, shape.spilled_bytes
        );
        let case = [("N", Param::from(n)), ("density", density.into())];
        rec.figure(&case, "cluster", shape.blocks as f64, "blocks");
        rec.figure(&case, "registers", shape.registers as f64, "per thread");
        rec.figure(
            &case,
            "spilled",
            shape.spilled_bytes as f64,
            "bytes per thread",
        );
    }
    print_rows(&rec, &rows, copy);
    print_many(&rec, &many);
    println!(
        "\n| batched: N, B | arithmetic | kernel | µs/step (all B sequences) | µs per sequence-step |"
    );
    println!("|---|---|---|---|---|");
    for (n, batch, math, kernel, micros) in batched_rows {
        println!(
            "| N={n}, B={batch} | {math} | {kernel} | {micros:.2} | {:.4} |",
            micros / batch as f64
        );
        record_batched(&rec, n, batch, math, kernel, micros);
    }
    println!("\n| tensor-core run: N, B | µs/step (all B sequences) | f16 GEMM graph µs/step | GEMM graph / tensor cores |");
    println!("|---|---|---|---|");
    for (n, batch, micros, graph) in tensor_rows {
        println!(
            "| N={n}, B={batch} | {micros:.2} | {graph:.2} | {:.2}× |",
            graph / micros
        );
        record_batched(&rec, n, batch, GemmMath::F16, TENSOR_CORE_RUN, micros);
    }
    Ok(())
}

/// The single-sequence paths' labels.
const CLUSTER: &str = "cluster, W in registers + smem";
const CUBLAS_BASELINE: &str = "baseline cuBLAS SGEMV + elementwise";
const FUSED_BASELINE: &str = "baseline fused kernel, 1 launch/step";

/// The batched kernels' labels.
const GEMM_LAUNCHES: &str = "GEMM, 2 launches a step";
const GEMM_GRAPH: &str = "GEMM, CUDA graph of 200 steps";
const TENSOR_CORE_RUN: &str = "tensor-core run";

/// The record of a batched step: µs per step of all `batch` sequences.
fn record_batched(
    rec: &Recorder,
    n: usize,
    batch: usize,
    math: GemmMath,
    kernel: &str,
    micros: f64,
) {
    let case = [
        ("N", Param::from(n)),
        ("B", batch.into()),
        ("arithmetic", math.to_string().into()),
        ("kernel", kernel.into()),
    ];
    rec.figure(&case, "step, all B sequences", micros, "µs/step");
}

/// One row of the many-sequence table: N, sequences, steps each, and the median seconds of
/// `run_many` in each of [`MANY_MODES`].
type ManyRow = (usize, usize, usize, Vec<f64>);

/// The modes of the many-sequence table: one after another; batched with the F32, TF32 and
/// F16 GEMM; batched in f16 on the tensor-core kernel.
const MANY_MODES: [(ManySequences, BatchKernel); 5] = [
    (ManySequences::OneByOne, BatchKernel::Auto),
    (ManySequences::Batched(GemmMath::F32), BatchKernel::Auto),
    (ManySequences::Batched(GemmMath::Tf32), BatchKernel::Auto),
    (ManySequences::Batched(GemmMath::F16), BatchKernel::Gemm),
    (
        ManySequences::Batched(GemmMath::F16),
        BatchKernel::TensorCore,
    ),
];

/// Wall seconds (median of 3, after a warm-up) of `count` sequences of `steps` steps through
/// `run_many` of a reservoir of N units (10 % connected), as a caller gets them (states back on
/// the host, each handed to a visitor that keeps its last state), one after another and
/// batched; checks that the modes agree to 1e-4 relative.
fn many_sequences(device: &GpuDevice) -> Result<Vec<ManyRow>> {
    let mut rows = Vec::new();
    for n in [500, 1000, 2000] {
        let config = bench_config(n, 0.1, 4)?;
        let (weights, _) = ReservoirWeights::generate(&config)?;
        for (count, steps) in [(8, 80), (64, 80), (400, 80), (8, 1000), (64, 1000)] {
            let inputs: Vec<Array2<f64>> = (0..count)
                .map(|i| {
                    Array2::from_shape_fn((steps, 1), |(t, _)| ((t + 7 * i) as f64 * 0.1).sin())
                })
                .collect();
            let views: Vec<ArrayView2<f64>> = inputs.iter().map(|a| a.view()).collect();
            let mut seconds = Vec::new();
            let mut last_states = Vec::new();
            for (many, kernel) in MANY_MODES {
                let reservoir =
                    GpuReservoirComputer::from_weights(&config, weights.clone(), device)?
                        .with_many_sequences(many)?;
                let mut reservoir = match reservoir.with_batch_kernel(kernel) {
                    Ok(reservoir) => reservoir,
                    Err(GpuError::Unsupported { .. }) => {
                        seconds.push(f64::NAN);
                        last_states.push(Array2::zeros((count, n)));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let mut samples = Vec::new();
                let mut last = Array2::zeros((count, n));
                for run in 0..4 {
                    let started = Instant::now();
                    reservoir.run_many(&views, &mut |index, states| {
                        last.row_mut(index).assign(&states.row(states.nrows() - 1));
                        Ok(())
                    })?;
                    if run > 0 {
                        samples.push(started.elapsed().as_secs_f64());
                    }
                }
                samples.sort_by(f64::total_cmp);
                seconds.push(samples[samples.len() / 2]);
                last_states.push(last);
            }
            let diff = (&last_states[1] - &last_states[0])
                .mapv(|d| d * d)
                .sum()
                .sqrt()
                / last_states[0]
                    .mapv(|v| v * v)
                    .sum()
                    .sqrt()
                    .max(f64::MIN_POSITIVE);
            if diff > 1e-4 {
                return Err(ReservoirError::numerical(
                    "gpu_bench",
                    format!("run_many batched and one by one differ by {diff:.2e} (N = {n})"),
                )
                .into());
            }
            rows.push((n, count, steps, seconds));
        }
    }
    Ok(rows)
}

/// The labels of [`MANY_MODES`] in the table and the records.
const MANY_LABELS: [&str; 5] = [
    "one after another",
    "batched, f32 GEMM",
    "batched, tf32 GEMM",
    "batched, f16 GEMM",
    "batched, f16 tensor cores",
];

/// The many-sequence table.
fn print_many(rec: &Recorder, rows: &[ManyRow]) {
    println!(
        "\n| run_many: N (10 %), sequences × steps | {} |",
        MANY_LABELS.map(|label| format!("{label} (s)")).join(" | ")
    );
    println!("|---|---|---|---|---|---|");
    for (n, count, steps, seconds) in rows {
        let cells: Vec<String> = seconds.iter().map(|s| format!("{s:.4}")).collect();
        println!("| N={n}, {count} × {steps} | {} |", cells.join(" | "));
        for (mode, &s) in MANY_LABELS.iter().zip(seconds) {
            let case = [
                ("N", Param::from(*n)),
                ("connection", 0.1.into()),
                ("sequences", (*count).into()),
                ("steps", (*steps).into()),
                ("mode", (*mode).into()),
            ];
            rec.figure(&case, "run_many", s, "s");
        }
    }
}

/// The path of a persistent-kernel timing and the bytes of W it reads per step.
fn persistent_path(where_w: PersistentWeights, nnz: f64) -> (&'static str, f64) {
    match where_w {
        PersistentWeights::CsrOnChip => ("persistent, CSR W in smem", nnz * 8.0),
        PersistentWeights::DenseStreamed => {
            ("persistent, dense W streamed (16-byte loads)", nnz * 4.0)
        }
        PersistentWeights::DenseStreamedHalf(_) => (
            "persistent, dense 16-bit W streamed (16-byte loads)",
            nnz * 2.0,
        ),
        PersistentWeights::CsrStreamed => ("persistent, CSR W from L2/HBM", nnz * 8.0),
    }
}

/// The single-sequence table: µs/step, GB/s of W and the bandwidth floor per path.
fn print_rows(rec: &Recorder, rows: &[Row], copy: f64) {
    println!("\n| case | path | µs/step | GB/s of W | floor µs (W bytes / copy BW) |");
    println!("|---|---|---|---|---|");
    for r in rows {
        let gbs = r.w_bytes / (r.timing.micros_per_step * 1e-6) / 1e9;
        let floor = r.w_bytes / (copy * 1e9) * 1e6;
        println!(
            "| {} | {} | {:.2} | {gbs:.0} | {floor:.2} |",
            r.case(),
            r.path,
            r.timing.micros_per_step,
        );
        let case = [
            ("N", Param::from(r.n)),
            ("density", r.density.into()),
            ("W", r.w_format.into()),
            ("path", r.path.into()),
        ];
        rec.figure(&case, "step", r.timing.micros_per_step, "µs/step");
        rec.figure(&case, "W read", gbs, "GB/s");
        rec.figure(&case, "floor, W bytes / copy bandwidth", floor, "µs/step");
    }
}
