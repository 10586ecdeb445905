//! The CPU engine's speeds in one run: the product of every kernel this CPU has (at 10 % for
//! N = 100, 1000 and 4000, and from 25 % to full for N = 100 and 1000, with the kernel the
//! timed choice takes), `Reservoir::run` steps per second for every kernel on one thread and
//! all of them, and the end-to-end fit of the ReservoirPy comparison (N = 1000, 10 %,
//! T = 10,000). Each figure is a line of text and a JSON line (`Recorder`).
//!
//! `cargo run --release -p reservoir-benches --bin cpu_bench [-- --repeat 5]`

use std::time::Instant;

use reservoir_benches::{sine_input, Param, Recorder};
use reservoir_core::fit::fit_ridge;
use reservoir_core::real::ProductKernel;
use reservoir_core::sparse::SparseProduct;
use reservoir_core::{
    CsrMatrix, EchoStateNetwork, Par, Precision, ReadoutConfig, Reservoir, ReservoirParams,
    ReservoirWeights,
};

fn main() {
    let repeat = std::env::args()
        .skip_while(|a| a != "--repeat")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize);
    let rec = Recorder::new("cpu_bench", None);
    let cores = Par::all().threads();
    for (size, steps) in [(100, 20_000), (1000, 10_000), (4000, 2_000)] {
        let config = ReservoirParams::new()
            .size(size)
            .connection_prob(0.1)
            .precision(Precision::F32)
            .check()
            .expect("config");
        let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
        let mut reservoir =
            EchoStateNetwork::<f32>::from_weights(&config, weights).expect("reservoir");
        let chosen = reservoir.product_kernel().name();
        let inputs = sine_input(steps);
        products_at_density(&rec, size, 0.1, repeat);
        for kernel in ProductKernel::available::<f32>() {
            reservoir.set_product_kernel(kernel).expect("kernel");
            for threads in [1, cores] {
                reservoir.set_par(Par::rayon(threads));
                let mut times: Vec<f64> = (0..repeat)
                    .map(|_| {
                        reservoir.reset().expect("reset");
                        let start = Instant::now();
                        reservoir.run(inputs.view()).expect("run");
                        start.elapsed().as_secs_f64()
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                let median = steps as f64 / times[times.len() / 2];
                println!(
                    "run N={size} 10 % f32, {kernel} (timed choice {chosen}), {threads} threads: \
                     {median:.0} steps/s (best {:.0})",
                    steps as f64 / times[0]
                );
                let case = [
                    ("N", Param::from(size)),
                    ("density", 0.1.into()),
                    ("kernel", kernel.name().into()),
                    ("threads", threads.into()),
                ];
                rec.figure(&case, "Reservoir::run, f32", median, "steps/s");
            }
        }
    }
    for size in [100, 1000] {
        for density in [0.25, 0.5, 0.7, 1.0] {
            products_at_density(&rec, size, density, repeat);
        }
    }
    let inputs = sine_input(10_000);
    let targets = sine_input(10_001).slice_move(ndarray::s![1.., ..]);
    let mut times: Vec<f64> = (0..repeat)
        .map(|_| {
            let start = Instant::now();
            let config = ReservoirParams::new()
                .size(1000)
                .connection_prob(0.1)
                .check()
                .expect("config");
            let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
            let mut reservoir =
                EchoStateNetwork::<f32>::from_weights(&config, weights).expect("reservoir");
            fit_ridge(
                &mut reservoir,
                inputs.view(),
                targets.view(),
                &ReadoutConfig::default(),
            )
            .expect("fit");
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "fit N=1000 10 %, 10,000 steps, weights to readout, {cores} threads: {median:.4} s (best {:.4})",
        times[0]
    );
    let case = [
        ("N", Param::from(1000)),
        ("density", 0.1.into()),
        ("steps", 10_000.into()),
        ("threads", cores.into()),
    ];
    rec.figure(&case, "fit, weights to readout", median, "s");
}

/// The product of every kernel on a random W of `size` units and `density` (f32), and the
/// kernel the timed choice takes for it.
fn products_at_density(rec: &Recorder, size: usize, density: f64, repeat: usize) {
    let config = ReservoirParams::new()
        .size(size)
        .connection_prob(density)
        .precision(Precision::F32)
        .check()
        .expect("config");
    let (weights, _) = ReservoirWeights::generate(&config).expect("weights");
    let w: CsrMatrix<f32> = weights.recurrent().cast();
    let chosen = SparseProduct::new(&w).expect("layout").kernel();
    let x: Vec<f32> = (0..size).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut y = vec![0.0f32; size];
    for kernel in ProductKernel::available::<f32>() {
        let product = SparseProduct::with_kernel(&w, kernel).expect("layout");
        let products = (2_000_000_000 / product.work().max(1)).clamp(10, 100_000);
        let mut times: Vec<f64> = (0..repeat)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..products {
                    product.mul_vec(&x, &mut y).expect("product");
                }
                start.elapsed().as_secs_f64() / products as f64
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let micros = times[times.len() / 2] * 1e6;
        println!(
            "product N={size} density {density} f32, {kernel} (timed choice {chosen}): {micros:.2} µs"
        );
        let case = [
            ("N", Param::from(size)),
            ("density", density.into()),
            ("kernel", kernel.name().into()),
        ];
        rec.figure(&case, "product, f32", micros, "µs");
    }
}
