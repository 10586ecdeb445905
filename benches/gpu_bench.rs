//! GPU benchmark of the single-sequence echo-state step: our persistent kernels next to the
//! baselines measured in the same process (one fused launch per step; cuBLAS SGEMV plus an
//! elementwise kernel, two launches per step), µs/step from CUDA events after a warm-up
//! (median of repeats), achieved GB/s of W read per step and the floor from the measured copy
//! bandwidth. Start-up (context, NVRTC, cuBLAS handle) is reported separately.
//!
//! Build with `cargo build --release -p reservoir-benches --bins` and run on a machine with a
//! GPU: `target/release/gpu_bench` (`--batched-only`: the batched table only; `--case=N`: the
//! single-sequence cases of size N only, e.g. under a profiler). Exits 0 with a message when
//! there is no GPU.

use std::time::Instant;

use cudarc::driver::DriverError;
use gpu_reservoir::internals::{capture, BatchedSteps, SingleSequenceSteps};
use gpu_reservoir::{
    probe, GemmMath, GpuDevice, GpuError, GpuReservoirComputer, PersistentWeights, Result,
};
use ndarray::{Array2, ArrayView2};
use reservoir_benches::{copy_bandwidth, median_micros_per_step};
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

struct Row {
    case: String,
    path: &'static str,
    timing: StepTiming,
    w_bytes: f64,
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
    let copy = copy_bandwidth(&device, 1 << 30)?;
    println!(
        "device: {} ({} SMs); copy bandwidth {:.0} GB/s (read + write, 1 GiB)",
        device.info().name,
        device.info().multiprocessors,
        copy
    );

    let mut rows = Vec::new();
    let mut cluster_shapes = Vec::new();
    let mut nvrtc_s = None;
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
        let case = format!(
            "N={n} {}",
            if dense {
                "dense".to_string()
            } else {
                format!("{:.0}% CSR", density * 100.0)
            }
        );
        let t = Instant::now();
        let mut buffers = SingleSequenceSteps::new(&device, &weights, steps, dense)?;
        nvrtc_s.get_or_insert(t.elapsed().as_secs_f64());
        if let Some(shape) = buffers.cluster_shape() {
            cluster_shapes.push((case.clone(), shape?));
            rows.push(Row {
                case: case.clone(),
                path: "cluster, W in registers + smem",
                timing: time(&device, &mut buffers, 5, |b| b.enqueue_cluster())?,
                w_bytes: nnz * 4.0,
            });
        }
        if let Some(where_w) = buffers.persistent_weights() {
            let timing = time(&device, &mut buffers, 5, |b| b.enqueue_persistent())?;
            rows.push(persistent_row(case.clone(), timing, where_w, nnz));
        }
        // A large dense W rounded to 16 bits streams at half the bytes (same results as
        // the CPU on the rounded weights).
        if dense && n >= 4096 {
            for format in [HalfFormat::Bf16, HalfFormat::F16] {
                let rounded = weights.with_recurrent_rounded(format)?;
                let mut half = SingleSequenceSteps::new(&device, &rounded, steps, false)?;
                if let Some(where_w) = half.persistent_weights() {
                    let timing = time(&device, &mut half, 5, |b| b.enqueue_persistent())?;
                    rows.push(persistent_row(
                        format!("{case}, {format:?} W"),
                        timing,
                        where_w,
                        nnz,
                    ));
                }
            }
        }
        if dense {
            rows.push(Row {
                case: case.clone(),
                path: "baseline cuBLAS SGEMV + elementwise",
                timing: time(&device, &mut buffers, 3, |b| b.enqueue_cublas_gemv())?,
                w_bytes: nnz * 4.0,
            });
        }
        rows.push(Row {
            case,
            path: "baseline fused kernel, 1 launch/step",
            timing: time(&device, &mut buffers, 3, |b| b.enqueue_fused())?,
            w_bytes: nnz * 8.0,
        });
    }

    if only_case.is_some() {
        print_rows(&rows, copy);
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

    // Batched: B sequences through one reservoir, one GEMM + one elementwise launch per step.
    let mut batched_rows = Vec::new();
    for (n, batch) in [(1000, 512), (1000, 64)] {
        let config = bench_config(n, 1.0, 9)?;
        let (weights, _) = ReservoirWeights::generate(&config)?;
        for math in [GemmMath::F32, GemmMath::Tf32, GemmMath::F16] {
            let mut steps = BatchedSteps::new(&device, &config, &weights, batch, math)?;
            let plain = median_micros_per_step(&device, 200, 5, || steps.enqueue(200))?;
            batched_rows.push((n, batch, math, false, plain));
            let graph = capture(&device, || steps.enqueue(200))?;
            let replayed = median_micros_per_step(&device, 200, 5, || {
                graph
                    .launch()
                    .map_err(|source: DriverError| GpuError::Driver {
                        context: "replaying the graph",
                        source,
                    })
            })?;
            batched_rows.push((n, batch, math, true, replayed));
        }
    }

    // Many sequences end to end through the public run_many (drive, steps, states back to the
    // host), against the sequences one after another on the single-sequence path.
    let many = many_sequences(&device)?;

    println!("\nstart-up (excluded above): context {:.3} s, cuBLAS handle {:.3} s, first NVRTC compile + plans + uploads {:.3} s", context_s, blas_s, nvrtc_s.unwrap_or(0.0));
    println!("GpuReservoirComputer::run ({:?} path), N=1000 dense, 100,000 steps incl. drive, transfers and copy-back: {:.3} s ({:.2} µs/step); relative error vs CPU over the first 1000 steps {:.1e}", gpu.step_path(), run_s, run_s * 1e6 / 1e5, diff);
    if let Some((timing, shape)) = headline {
        println!(
            "cluster kernel alone, N=1000 dense, one launch of 100,000 steps: {:.3} µs/step ({} blocks)",
            timing.micros_per_step, shape.blocks
        );
    }
    for (case, shape) in cluster_shapes {
        println!(
            "cluster plan {case}: {} blocks, {} registers/thread, {} bytes spilled/thread",
            shape.blocks, shape.registers, shape.spilled_bytes
        );
    }
    print_rows(&rows, copy);
    println!("\n| sequences × steps (N = 500, 10 %) | one after another (s) | run_many, F32 GEMM (s) | speed-up |");
    println!("|---|---|---|---|");
    for (count, steps, one_by_one, together) in many {
        println!(
            "| {count} × {steps} | {one_by_one:.4} | {together:.4} | {:.1}× |",
            one_by_one / together
        );
    }
    println!(
        "\n| batched: N, B | GEMM | launches | µs/step (all B sequences) | µs per sequence-step |"
    );
    println!("|---|---|---|---|---|");
    for (n, batch, math, graph, micros) in batched_rows {
        let launches = if graph {
            "CUDA graph of 200 steps"
        } else {
            "2 per step"
        };
        println!(
            "| N={n}, B={batch} | {math:?} | {launches} | {micros:.2} | {:.4} |",
            micros / batch as f64
        );
    }
    Ok(())
}

/// Wall seconds (median of 3, after a warm-up) of `count` sequences of `steps` steps through a
/// reservoir of N = 500 (10 % connected), one after another and through `run_many`, for
/// counts around the batching threshold; checks that both agree to 1e-4 relative.
fn many_sequences(device: &GpuDevice) -> Result<Vec<(usize, usize, f64, f64)>> {
    let config = bench_config(500, 0.1, 4)?;
    let mut reservoir = GpuReservoirComputer::new_shared(&config, device)?;
    let mut rows = Vec::new();
    for (count, steps) in [(2, 80), (8, 80), (32, 80), (400, 80), (4, 2000)] {
        let inputs: Vec<Array2<f64>> = (0..count)
            .map(|i| Array2::from_shape_fn((steps, 1), |(t, _)| ((t + 7 * i) as f64 * 0.1).sin()))
            .collect();
        let views: Vec<ArrayView2<f64>> = inputs.iter().map(|a| a.view()).collect();
        let mut last = (Vec::new(), Vec::new());
        let mut seconds = |together: bool, out: &mut Vec<f64>| -> Result<f64> {
            let mut samples = Vec::new();
            for run in 0..4 {
                let mut states: Vec<f64> = Vec::new();
                let started = Instant::now();
                if together {
                    reservoir.run_many(&views, &mut |_, s| {
                        states.extend(s.iter());
                        Ok(())
                    })?;
                } else {
                    for v in &views {
                        reservoir.reset()?;
                        states.extend(reservoir.run(*v)?.iter());
                    }
                }
                if run > 0 {
                    samples.push(started.elapsed().as_secs_f64());
                }
                *out = states;
            }
            samples.sort_by(f64::total_cmp);
            Ok(samples[samples.len() / 2])
        };
        let one_by_one = seconds(false, &mut last.0)?;
        let together = seconds(true, &mut last.1)?;
        let (a, b) = (&last.0, &last.1);
        let diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt();
        let norm = a
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt()
            .max(f64::MIN_POSITIVE);
        if diff / norm > 1e-4 {
            return Err(ReservoirError::numerical(
                "gpu_bench",
                format!("run_many and one-by-one runs differ by {:.2e}", diff / norm),
            )
            .into());
        }
        rows.push((count, steps, one_by_one, together));
    }
    Ok(rows)
}

/// The row of a persistent-kernel timing: its path and the bytes of W it reads per step.
fn persistent_row(case: String, timing: StepTiming, where_w: PersistentWeights, nnz: f64) -> Row {
    let (path, w_bytes) = match where_w {
        PersistentWeights::CsrOnChip => ("persistent, CSR W in smem", nnz * 8.0),
        PersistentWeights::DenseStreamed => {
            ("persistent, dense W streamed (16-byte loads)", nnz * 4.0)
        }
        PersistentWeights::DenseStreamedHalf(_) => (
            "persistent, dense 16-bit W streamed (16-byte loads)",
            nnz * 2.0,
        ),
        PersistentWeights::CsrStreamed => ("persistent, CSR W from L2/HBM", nnz * 8.0),
    };
    Row {
        case,
        path,
        timing,
        w_bytes,
    }
}

/// The single-sequence table: µs/step, GB/s of W and the bandwidth floor per path.
fn print_rows(rows: &[Row], copy: f64) {
    println!("\n| case | path | µs/step | GB/s of W | floor µs (W bytes / copy BW) |");
    println!("|---|---|---|---|---|");
    for r in rows {
        let gbs = r.w_bytes / (r.timing.micros_per_step * 1e-6) / 1e9;
        println!(
            "| {} | {} | {:.2} | {:.0} | {:.2} |",
            r.case,
            r.path,
            r.timing.micros_per_step,
            gbs,
            r.w_bytes / (copy * 1e9) * 1e6
        );
    }
}
