use ndarray::Array2;
use reservoir_core::*;
use std::time::Instant;
fn main() {
    for (n, p) in [
        (100usize, 0.3f64),
        (100, 1.0),
        (300, 0.3),
        (300, 1.0),
        (1000, 0.3),
        (1000, 1.0),
    ] {
        let config = ReservoirConfig {
            size: n,
            connection_prob: p,
            ..Default::default()
        };
        let (w, _) = ReservoirWeights::generate(&config).unwrap();
        let s: CsrMatrix<f32> = w.recurrent().cast();
        let d = s.to_dense();
        let x: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
        let mut y = vec![0f32; n];
        let reps = 2_000_000 / n;
        let t = Instant::now();
        for _ in 0..reps {
            s.mul_vec(&x, &mut y).unwrap();
            std::hint::black_box(&y);
        }
        let ts = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
        let mut yv = ndarray::Array1::zeros(n);
        let xv = ndarray::Array1::from(x.clone());
        let t = Instant::now();
        for _ in 0..reps {
            ndarray::linalg::general_mat_vec_mul(1.0, &d, &xv, 0.0, &mut yv);
            std::hint::black_box(&yv);
        }
        let td = t.elapsed().as_secs_f64() / reps as f64 * 1e6;
        println!("N {n} p {p}: sparse {ts:.2} us dense {td:.2} us");
    }
    let _ = Array2::<f64>::zeros((1, 1));
}
