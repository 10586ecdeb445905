//! Spectral radius: known spectra, random sparse matrices against a dense eigensolver,
//! determinism (its speed: `speed.rs`). Run with `cargo test --release -p reservoir-core --test
//! core spectral -- --nocapture` to see the errors and product counts.

#![allow(clippy::field_reassign_with_default)] // options are tweaked one field at a time

use ndarray::{array, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::spectral::{spectral_radius, SpectralEstimate, SpectralOptions};
use reservoir_core::ReservoirError;

use crate::common::spectral::{check, dense_radius, estimate, random, Csr};

/// The estimate with the CSR operator.
fn sparse(a: &Array2<f64>) -> SpectralEstimate {
    estimate(&Csr::from_dense(a))
}

/// Which error (or "ok") a call gave.
fn kind(r: Result<SpectralEstimate, ReservoirError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(ReservoirError::Shape { .. }) => "shape",
        Err(ReservoirError::InvalidInput { .. }) => "invalid",
        Err(ReservoirError::Numerical { .. }) => "numerical",
        Err(_) => "other",
    }
}

/// A single n-cycle i → i + 1 (mod n) with weight w(i): n eigenvalues of modulus (Π|w|)^{1/n}.
fn cycle(n: usize, w: impl Fn(usize) -> f64) -> Array2<f64> {
    let mut a = Array2::zeros((n, n));
    for i in 0..n {
        a[(i, (i + 1) % n)] = w(i);
    }
    a
}

/// Block-diagonal 2×2 rotations by random angles, block b scaled by radii[b].
fn rotation_blocks(radii: &[f64], seed: u64) -> Array2<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut a = Array2::zeros((2 * radii.len(), 2 * radii.len()));
    for (b, &r) in radii.iter().enumerate() {
        let (s, c) = rng.random_range(0.1f64..3.0).sin_cos();
        let i = 2 * b;
        (a[(i, i)], a[(i, i + 1)], a[(i + 1, i)], a[(i + 1, i + 1)]) =
            (r * c, -r * s, r * s, r * c);
    }
    a
}

#[test]
fn rotation_blocks_give_the_largest_scale() {
    // 100 blocks with radii 0.3 … 1.0: a dominant complex pair, the next pair at 0.993.
    let radii: Vec<f64> = (0..100).map(|i| 0.3 + 0.7 * i as f64 / 99.0).collect();
    let a = rotation_blocks(&radii, 1);
    check("rotations (CSR)", sparse(&a), 1.0, 1e-6);
    check("rotations (dense)", estimate(&a), 1.0, 1e-6);
    // A near-degenerate cluster: three pairs within 1e-3 of the top, plus filler below 0.9.
    let mut radii: Vec<f64> = (0..60).map(|i| 0.9 * i as f64 / 59.0).collect();
    radii.extend([0.999, 1.0, 0.9995]);
    let cluster = rotation_blocks(&radii, 2);
    check("rotation cluster", sparse(&cluster), 1.0, 1e-6);
}

#[test]
fn triangular_matrices_give_max_abs_diagonal() {
    let (n, mut rng) = (60, ChaCha8Rng::seed_from_u64(3));
    let mut a = Array2::<f64>::zeros((n, n));
    for i in 0..n {
        a[(i, i)] = rng.random_range(-1.0..1.0);
        for j in i + 1..n {
            a[(i, j)] = rng.random_range(-1.0..1.0) / (n as f64).sqrt();
        }
    }
    a[(17, 17)] = -1.3;
    check("upper triangular", estimate(&a), 1.3, 1e-6);
    check("lower triangular", sparse(&a.t().to_owned()), 1.3, 1e-6);
}

#[test]
fn real_dominant_eigenvalue_above_a_complex_pair() {
    // Quasi-upper-triangular: 1×1 block 1.0, a 2×2 block with |λ| = 0.995, diagonal below 0.9,
    // coupled by small entries above the diagonal blocks.
    let (n, mut rng) = (120, ChaCha8Rng::seed_from_u64(4));
    let mut a = Array2::<f64>::zeros((n, n));
    a[(0, 0)] = 1.0;
    a.slice_mut(ndarray::s![1..3, 1..3])
        .assign(&rotation_blocks(&[0.995], 5));
    for i in 0..n {
        if i >= 3 {
            a[(i, i)] = rng.random_range(-0.9..0.9);
        }
        for j in (i + 1).max(3)..n {
            a[(i, j)] = 0.05 * rng.random_range(-1.0..1.0);
        }
    }
    check("real above complex pair", estimate(&a), 1.0, 1e-6);
    a[(0, 0)] = 0.99; // now the pair is on top
    check("complex pair above real", sparse(&a), 0.995, 1e-6);
}

#[test]
fn scaled_permutations_have_all_moduli_equal() {
    // Cycles of lengths 1, 2, 3, 4, 6, 12 (all divide 12), five times: n = 140, all |λ| = 0.7.
    let mut a = Array2::zeros((140, 140));
    let mut start = 0;
    for len in [1usize, 2, 3, 4, 6, 12].repeat(5) {
        a.slice_mut(ndarray::s![start..start + len, start..start + len])
            .assign(&cycle(len, |_| 0.7));
        start += len;
    }
    check("scaled permutation", sparse(&a), 0.7, 1e-12);
    // One cycle of length 500: far more equal moduli than krylov_dim.
    check("long cycle", sparse(&cycle(500, |_| -2.0)), 2.0, 1e-12);
}

#[test]
fn zero_and_nilpotent_matrices_have_radius_zero() {
    for n in [10, 300] {
        let e = sparse(&Array2::zeros((n, n)));
        assert!(e.converged && e.radius == 0.0, "zero {n}: {e:?}");
    }
    for n in [5, 50, 200] {
        let mut a = random(n, 1.0, n as u64, false);
        a.indexed_iter_mut()
            .filter(|((i, j), _)| j <= i)
            .for_each(|(_, v)| *v = 0.0);
        let e = estimate(&a);
        println!("nilpotent n = {n}: {e:?}");
        assert!(e.converged && e.radius == 0.0, "nilpotent n = {n}: {e:?}");
    }
}

#[test]
fn tiny_matrices_and_extreme_scales() {
    check("1x1", estimate(&array![[-2.5]]), 2.5, 1e-15);
    let a = array![[0.0, 1.0], [-4.0, 0.0]];
    check("2x2, λ = ±2i", estimate(&a), 2.0, 1e-12);
    let a = array![[2.0, 1.0, 0.0], [0.0, -3.0, 1.0], [0.0, 0.0, 1.0]];
    check("3x3 triangular", estimate(&a), 3.0, 1e-12);
    let a = random(100, 0.1, 5, false);
    let rho = dense_radius(&a);
    for s in [1e-300, 1e-150, 1e150] {
        let name = format!("scaled by {s:e}");
        check(&name, estimate(&(&a * s)), rho * s, 1e-6);
    }
}

#[test]
fn bad_input_is_an_error() {
    let d = SpectralOptions::default();
    let run = |a: &Array2<f64>, o: &SpectralOptions| kind(spectral_radius(a, o));
    assert_eq!(run(&Array2::zeros((3, 4)), &d), "shape");
    assert_eq!(run(&Array2::zeros((0, 0)), &d), "invalid");
    let eye = Array2::<f64>::eye(3);
    for (tol, dim, max) in [(0.0, 8, 9), (f64::NAN, 8, 9), (1.0, 0, 9), (1.0, 8, 0)] {
        let mut bad = d;
        (bad.tolerance, bad.krylov_dim, bad.max_matvecs) = (tol, dim, max);
        assert_eq!(run(&eye, &bad), "invalid", "{bad:?}");
    }
    let mut nan = eye.clone();
    nan[(1, 2)] = f64::NAN;
    assert_eq!(run(&nan, &d), "numerical");
}

#[test]
fn max_matvecs_stops_without_convergence() {
    let mut options = SpectralOptions::default();
    options.max_matvecs = 30;
    let e = spectral_radius(&Csr::from_dense(&random(300, 0.1, 9, false)), &options).unwrap();
    assert!(
        !e.converged && e.iterations == 30 && e.radius > 0.0,
        "{e:?}"
    );
    // A 500-cycle with unequal weights: 500 equal moduli, not an isometry, so the Ritz values do
    // not converge; the growth-rate fallback is still close to ρ = (Π|w|)^{1/500}.
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let w: Vec<f64> = (0..500).map(|_| rng.random_range(0.5..1.5)).collect();
    let rho = (w.iter().map(|v| v.ln()).sum::<f64>() / 500.0).exp();
    let e = sparse(&cycle(500, |i| w[i]));
    println!("weighted 500-cycle: ρ = {rho}, {e:?}");
    assert!(!e.converged && e.iterations == 5000, "{e:?}");
    assert!((e.radius - rho).abs() <= 1e-4 * rho, "{e:?} vs {rho}");
}

#[test]
fn random_sparse_matrices_match_a_dense_eigensolver() {
    let mut cases: Vec<_> = (0..6).map(|seed| (200, 0.1, seed, false)).collect();
    cases.extend([
        (1000, 0.1, 100, false),
        (400, 0.1, 7, true),
        (1000, 0.01, 8, false),
    ]);
    cases.extend([(500, 0.02, 10, true), (2000, 0.01, 11, false)]);
    let mut worst = 0.0f64;
    for (n, density, seed, normal) in cases {
        let a = random(n, density, seed, normal);
        let rho = dense_radius(&a);
        let name = format!("N {n}, density {density}, seed {seed}, normal {normal}");
        worst = worst.max(check(&name, sparse(&a), rho, 1e-3));
        if n <= 400 {
            check(&format!("{name} (dense)"), estimate(&a), rho, 1e-3);
        }
    }
    println!("worst relative error: {worst:.2e}");
}

#[test]
fn results_are_bit_identical() {
    let a = Csr::from_dense(&random(400, 0.05, 13, false));
    let mut o = SpectralOptions::default();
    o.seed = 77;
    let (x, y) = (
        spectral_radius(&a, &o).unwrap(),
        spectral_radius(&a, &o).unwrap(),
    );
    assert_eq!(x.radius.to_bits(), y.radius.to_bits());
    assert_eq!(x, y);
    o.seed = 78; // another start vector: same answer to the tolerance, not bit for bit
    let z = spectral_radius(&a, &o).unwrap();
    assert!(
        (z.radius - x.radius).abs() <= 1e-5 * x.radius,
        "{z:?} vs {x:?}"
    );
}
