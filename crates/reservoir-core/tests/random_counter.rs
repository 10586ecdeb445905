//! The counter-based RNG that the rate encoder (and its GPU port) draws from: known answers,
//! the 2^-24 grid, uniformity and independence of neighbouring counters.

use reservoir_core::encoding::STREAM_RATE;
use reservoir_core::random::counter::{
    keyed_u64, stream_key, u32_to_unit_f32, uniform_f32, uniform_u32,
};

// ---------------------------------------------------------------- counter RNG

#[test]
fn counter_rng_known_answers() {
    // Computed once with an independent Python implementation of the documented formula.
    assert_eq!(uniform_u32(0, 0, 0), 0x568a_9b0b);
    assert_eq!(uniform_u32(0, 0, 1), 0x44e5_b8b1);
    assert_eq!(uniform_u32(42, 0, 0), 0xc5a5_7e81);
    assert_eq!(uniform_u32(42, 1, 0), 0x8173_55f1);
    assert_eq!(uniform_u32(42, 0x5241_5445, 7), 0xb0ed_d2e4);
    assert_eq!(uniform_u32(u64::MAX, u64::MAX, u64::MAX), 0x5158_6113);
    assert_eq!(uniform_u32(12345, 3, 1_000_000), 0xd34f_67b9);
    assert_eq!(uniform_f32(0, 0, 0), 0.338_052_45);
    // Key 0, counter 0 is the first output of the reference SplitMix64 seeded with 0.
    assert_eq!(keyed_u64(0, 0), 0xE220_A839_7B1D_CDAF);
}

#[test]
fn counter_rng_f32_is_on_the_24_bit_grid_in_unit_interval() {
    assert_eq!(u32_to_unit_f32(0), 0.0);
    assert_eq!(u32_to_unit_f32(u32::MAX), 1.0 - 2f32.powi(-24));
    for c in 0..10_000 {
        let u = uniform_f32(7, 9, c);
        assert!((0.0..1.0).contains(&u));
        let scaled = u * (1u32 << 24) as f32;
        assert_eq!(scaled, scaled.trunc());
        assert_eq!(scaled as u32, uniform_u32(7, 9, c) >> 8);
    }
}

fn chi_square_16(draws: impl Iterator<Item = u32>, n: usize) -> f64 {
    let mut bins = [0usize; 16];
    for u in draws.take(n) {
        bins[(u >> 28) as usize] += 1;
    }
    let expected = n as f64 / 16.0;
    bins.iter()
        .map(|&b| (b as f64 - expected).powi(2) / expected)
        .sum()
}

#[test]
fn counter_rng_is_uniform_chi_square() {
    // 15 degrees of freedom: P(χ² > 44.3) ≈ 1e-4.
    let n = 1_000_000;
    for (seed, stream) in [(0u64, 0u64), (42, STREAM_RATE), (u64::MAX, 1)] {
        let chi = chi_square_16((0..).map(|c| uniform_u32(seed, stream, c)), n);
        assert!(chi < 44.3, "seed {seed} stream {stream}: chi^2 {chi}");
        // Low bits too.
        let chi = chi_square_16((0..).map(|c| uniform_u32(seed, stream, c) << 28), n);
        assert!(chi < 44.3, "low bits, seed {seed}: chi^2 {chi}");
    }
    // Across streams at a fixed counter.
    let chi = chi_square_16((0..).map(|s| uniform_u32(5, s, 0)), n);
    assert!(chi < 44.3, "across streams: chi^2 {chi}");
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

#[test]
fn counter_rng_neighbours_are_uncorrelated() {
    let n = 200_000u64;
    let bound = 5.0 / (n as f64).sqrt();
    let draw = |seed, stream, c| uniform_f32(seed, stream, c) as f64;
    let base: Vec<f64> = (0..n).map(|c| draw(1, 2, c)).collect();
    let next_counter: Vec<f64> = (0..n).map(|c| draw(1, 2, c + 1)).collect();
    let next_stream: Vec<f64> = (0..n).map(|c| draw(1, 3, c)).collect();
    let next_seed: Vec<f64> = (0..n).map(|c| draw(2, 2, c)).collect();
    for (name, other) in [
        ("counter + 1", &next_counter),
        ("stream + 1", &next_stream),
        ("seed + 1", &next_seed),
    ] {
        let r = correlation(&base, other);
        assert!(r.abs() < bound, "{name}: correlation {r}");
    }
    // Streams at the same counter, counter running over streams.
    let a: Vec<f64> = (0..n).map(|s| draw(9, s, 0)).collect();
    let b: Vec<f64> = (0..n).map(|s| draw(9, s + 1, 0)).collect();
    assert!(correlation(&a, &b).abs() < bound);
    assert_ne!(stream_key(1, 2), stream_key(1, 3));
}
