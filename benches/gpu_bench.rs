//! GPU benchmark of the single-sequence echo-state step: our persistent kernels next to the
//! baselines measured in the same process (one fused launch per step; cuBLAS SGEMV plus an
//! elementwise kernel, two launches per step), µs/step from CUDA events after a warm-up
//! (median of repeats), achieved GB/s of W read per step and the floor from the measured copy
//! bandwidth. Start-up (context, NVRTC, cuBLAS handle) is reported separately.
//!
//! Build here with `../shared/tools/gpu-bundle bins -p reservoir-benches`; run on the GPU
//! machine: `.gpu/bin/gpu_bench` (`--batched-only`: the batched table only; `--case=N`: the
//! single-sequence cases of size N only, e.g. under a profiler). Exits 0 with a message when
//! there is no GPU.

use std::time::Instant;

use gpu_reservoir::bench::{copy_bandwidth, BenchBuffers, StepTiming};
use gpu_reservoir::{
    probe, GemmMath, GpuBatchedReservoir, GpuDevice, GpuReservoirComputer, PersistentWeights,
    Result,
};
use ndarray::Array2;
use reservoir_core::{EchoStateNetwork, HalfFormat, Reservoir, ReservoirConfig, ReservoirWeights};

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
        let config = ReservoirConfig {
            size: n,
            connection_prob: density,
            seed: 3,
            ..Default::default()
        };
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
        let mut buffers = BenchBuffers::new(&device, &weights, steps, dense)?;
        nvrtc_s.get_or_insert(t.elapsed().as_secs_f64());
        if let Some((timing, shape)) = buffers.time_cluster(5)? {
            cluster_shapes.push((case.clone(), shape));
            rows.push(Row {
                case: case.clone(),
                path: "cluster, W in registers + smem",
                timing,
                w_bytes: nnz * 4.0,
            });
        }
        let (timing, where_w) = buffers.time_persistent(5)?;
        rows.push(persistent_row(case.clone(), timing, where_w, nnz));
        // A large dense W rounded to 16 bits streams at half the bytes (same results as
        // the CPU on the rounded weights).
        if dense && n >= 4096 {
            for format in [HalfFormat::Bf16, HalfFormat::F16] {
                let rounded = weights.with_recurrent_rounded(format)?;
                let mut half = BenchBuffers::new(&device, &rounded, steps, false)?;
                let (timing, where_w) = half.time_persistent(5)?;
                rows.push(persistent_row(
                    format!("{case}, {format:?} W"),
                    timing,
                    where_w,
                    nnz,
                ));
            }
        }
        if dense {
            rows.push(Row {
                case: case.clone(),
                path: "baseline cuBLAS SGEMV + elementwise",
                timing: buffers.time_cublas_gemv(3)?,
                w_bytes: nnz * 4.0,
            });
        }
        rows.push(Row {
            case,
            path: "baseline fused kernel, 1 launch/step",
            timing: buffers.time_fused_per_step(3)?,
            w_bytes: nnz * 8.0,
        });
    }

    if only_case.is_some() {
        print_rows(&rows, copy);
        return Ok(());
    }

    // The headline: 100,000 steps at N = 1000 dense, the kernel alone (one launch) and through
    // the public reservoir (drive, chunks, copy-back), with parity against the CPU.
    let config = ReservoirConfig {
        size: 1000,
        connection_prob: 1.0,
        seed: 5,
        ..Default::default()
    };
    let (weights, _) = ReservoirWeights::generate(&config)?;
    let headline = if single_cases.is_empty() {
        None
    } else {
        BenchBuffers::new(&device, &weights, 100_000, false)?.time_cluster(3)?
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
        let config = ReservoirConfig {
            size: n,
            connection_prob: 1.0,
            seed: 9,
            ..Default::default()
        };
        for math in [GemmMath::F32, GemmMath::Tf32, GemmMath::F16] {
            let mut reservoir = GpuBatchedReservoir::new_shared(&config, batch, math, &device)?;
            for graph in [false, true] {
                batched_rows.push((n, batch, math, graph, reservoir.time_steps(200, 5, graph)?));
            }
        }
    }

    println!("\nstart-up (excluded above): context + PTX {:.3} s, cuBLAS handle {:.3} s, first NVRTC compile + plans + uploads {:.3} s", context_s, blas_s, nvrtc_s.unwrap_or(0.0));
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
