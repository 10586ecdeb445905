//! GPU spike encoding and pattern detection against the CPU reference on fresh random inputs:
//! encodings and detections must be identical.

use crate::common;

use common::{fresh_seed, gpu};
use gpu_reservoir::{detection as gpu_detection, encoding as gpu_encoding};
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reservoir_core::detection::{
    plant_patterns, random_template, DetectorOptions, PatternDetector,
};
use reservoir_core::encoding::{rate, rate_sequence, RateOptions, RateParams};

#[test]
fn rate_encoding_is_spike_for_spike_identical() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("rate_encoding"));
    for _ in 0..5 {
        let (steps, k) = (rng.random_range(1..400), rng.random_range(1..300));
        let x = Array2::from_shape_fn((steps, k), |_| rng.random_range(-0.2..1.2));
        let options = RateParams::new()
            .gain(rng.random_range(0.1..2.0))
            .offset(rng.random_range(-0.2..0.2))
            .check()
            .expect("options");
        let seed = rng.random();
        let cpu = rate_sequence(x.view(), options, seed).expect("cpu");
        let gpu = gpu_encoding::rate_sequence(&device, x.view(), options, seed).expect("gpu");
        assert_eq!(
            cpu, gpu,
            "rate_sequence differs ({steps} x {k}, seed {seed})"
        );
        let row = Array1::from_shape_fn(k, |_| rng.random_range(0.0..1.0));
        let repeat = rng.random_range(1..50);
        assert_eq!(
            rate(row.view(), repeat, options, seed).expect("cpu"),
            gpu_encoding::rate(&device, row.view(), repeat, options, seed).expect("gpu")
        );
    }
    let mut bad = Array2::zeros((3, 3));
    bad[(1, 2)] = f64::NAN;
    assert!(gpu_encoding::rate_sequence(&device, bad.view(), RateOptions::default(), 1).is_err());
}

#[test]
fn detection_scores_and_detections_are_identical() {
    let Some(device) = gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(fresh_seed("detection"));
    for _ in 0..3 {
        let channels = rng.random_range(10..60);
        let templates: Vec<_> = (0..rng.random_range(1..6))
            .map(|_| {
                random_template(
                    channels,
                    rng.random_range(20.0..80.0),
                    channels,
                    rng.random(),
                )
                .expect("template")
            })
            .collect();
        let (stream, planted) = plant_patterns(
            &templates,
            channels,
            5000.0,
            rng.random_range(2.0..15.0),
            10,
            1.0,
            rng.random(),
        )
        .expect("stream");
        let detector =
            PatternDetector::new(templates, DetectorOptions::default()).expect("detector");
        let cpu_scores = detector.scores(&stream).expect("cpu scores");
        let gpu_scores = gpu_detection::scores(&device, &detector, &stream).expect("gpu scores");
        let differing = cpu_scores
            .iter()
            .zip(&gpu_scores)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differing, 0, "{differing} scores differ in their bits");
        let cpu = detector.detect(&stream).expect("cpu detections");
        let gpu = gpu_detection::detect(&device, &detector, &stream).expect("gpu detections");
        assert_eq!(cpu, gpu);
        assert!(
            cpu.len() >= planted.len() * 9 / 10,
            "{} detections for {} planted",
            cpu.len(),
            planted.len()
        );
    }
}
