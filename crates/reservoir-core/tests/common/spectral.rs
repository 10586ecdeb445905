//! Shared by the spectral-radius tests: a minimal CSR operator, random matrices, the dense
//! eigensolver's radius, and the check of an estimate.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use reservoir_core::spectral::{
    spectral_radius, LinearOperator, SpectralEstimate, SpectralOptions,
};

/// Minimal CSR matrix (the mat-vec that the timing target is about).
pub struct Csr {
    row_ptr: Vec<usize>,
    col: Vec<usize>,
    val: Vec<f64>,
}

impl Csr {
    pub fn from_dense(a: &Array2<f64>) -> Self {
        let (mut row_ptr, mut col, mut val) = (vec![0], vec![], vec![]);
        for row in a.rows() {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                col.push(j);
                val.push(v);
            }
            row_ptr.push(col.len());
        }
        Csr { row_ptr, col, val }
    }
}

impl LinearOperator for Csr {
    fn dim(&self) -> usize {
        self.row_ptr.len() - 1
    }
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        for (i, yi) in y.iter_mut().enumerate() {
            let (a, b) = (self.row_ptr[i], self.row_ptr[i + 1]);
            let (vals, cols) = (&self.val[a..b], &self.col[a..b]);
            *yi = vals.iter().zip(cols).map(|(v, &c)| v * x[c]).sum();
        }
    }
}

/// Each entry non-zero with probability `density`; values uniform(-1, 1) or N(0, 1).
pub fn random(n: usize, density: f64, seed: u64, normal: bool) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Array2::from_shape_fn((n, n), |_| match rng.random::<f64>() < density {
        false => 0.0,
        true if normal => StandardNormal.sample(&mut rng),
        true => rng.random_range(-1.0..1.0),
    })
}

/// ρ from faer's dense eigensolver.
pub fn dense_radius(a: &Array2<f64>) -> f64 {
    let m = faer::Mat::<f64>::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)]);
    let eigenvalues = m.eigenvalues().expect("dense eigenvalues");
    eigenvalues.iter().map(|z| z.norm()).fold(0.0, f64::max)
}

pub fn estimate(op: &impl LinearOperator) -> SpectralEstimate {
    spectral_radius(op, &SpectralOptions::default()).expect("spectral radius")
}

/// Asserts convergence and a relative error ≤ `tol`; returns the error.
pub fn check(name: &str, e: SpectralEstimate, expected: f64, tol: f64) -> f64 {
    let err = (e.radius - expected).abs() / expected;
    let msg = format!("{name}: {e:?}, expected {expected:e}, rel err {err:.1e}");
    println!("{msg}");
    assert!(e.converged && err <= tol, "{msg}");
    err
}
