use ndarray::Array2;
use reservoir_core::readout::fit_ridge;
use reservoir_core::*;
use std::time::Instant;
fn main() {
    let t0 = Instant::now();
    let config = ReservoirConfig {
        size: 1000,
        connection_prob: 0.1,
        ..Default::default()
    };
    let mut r = cpu_reservoir(&config).unwrap();
    let t1 = Instant::now();
    let u = Array2::from_shape_fn((10_000, 1), |(t, _)| ((t as f64) * 0.1).sin());
    let y = Array2::from_shape_fn((10_000, 1), |(t, _)| ((t as f64 + 1.0) * 0.1).sin());
    let t2 = Instant::now();
    let states = r.run(u.view()).unwrap();
    let t3 = Instant::now();
    r.reset();
    let fit = fit_ridge(r.as_mut(), u.view(), y.view(), &ReadoutConfig::default()).unwrap();
    let t4 = Instant::now();
    let (w, _) = ReservoirWeights::generate(&config).unwrap();
    let w32: CsrMatrix<f32> = w.recurrent().cast();
    let x = vec![0.1f32; 1000];
    let mut yv = vec![0f32; 1000];
    let t5 = Instant::now();
    for _ in 0..10_000 {
        w32.mul_vec(&x, &mut yv).unwrap();
    }
    let mut buf = Array2::zeros((64, 1000));
    r.reset();
    let t6 = Instant::now();
    for c in 0..(10_000 / 64) {
        r.run_into(
            u.slice(ndarray::s![c * 64..(c + 1) * 64, ..]),
            buf.view_mut(),
        )
        .unwrap();
    }
    println!(
        "run into reused 64-row buffer: {:.2} us/step",
        (Instant::now() - t6).as_secs_f64() * 1e6 / (64.0 * 156.0)
    );
    println!(
        "spmv only: {:.2} us/step",
        (Instant::now() - t5).as_secs_f64() * 1e6 / 1e4
    );
    println!("setup {:?} run {:?} ({:.0} steps/s) fit(run+acc+solve) {:?} total setup+fit {:?} nrmse {:.2e} {}", t1-t0, t3-t2, 10_000.0/(t3-t2).as_secs_f64(), t4-t3, (t1-t0)+(t4-t3), fit.train_nrmse, states[(9999,0)]);
}
#[allow(dead_code)]
fn spmv_only() {}
