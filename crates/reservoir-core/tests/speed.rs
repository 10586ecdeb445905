//! Speed the engine promises, timed alone: this executable runs by itself, so no other test
//! competes for the cores while it measures.

mod common;

use std::time::Instant;

use common::spectral::{check, dense_radius, estimate, random, Csr};

#[test]
fn n1000_density_10_percent_is_fast() {
    let a = random(1000, 0.1, 12, false);
    let (rho, csr) = (dense_radius(&a), Csr::from_dense(&a));
    let start = Instant::now();
    let e = estimate(&csr);
    let elapsed = start.elapsed();
    println!("N = 1000, 10 %: {elapsed:?}, {} products", e.iterations);
    check("N 1000 timed", e, rho, 1e-3);
    if cfg!(not(debug_assertions)) {
        assert!(elapsed.as_millis() < 100, "took {elapsed:?}");
    }
}
