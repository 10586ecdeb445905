//! Pattern detection, population events and the seeded test data of `detection`.

use std::time::Instant;

use reservoir_core::detection::{
    plant_patterns, population_events, random_template, Detection, DetectorOptions, DetectorParams,
    EventKind, PatternDetector, PopulationOptions, PopulationParams,
};
use reservoir_core::spikes::{Spike, SpikePattern};
use reservoir_core::ReservoirError;

/// `pattern`'s spikes moved by `shift_ms`.
fn shifted(pattern: &SpikePattern, shift_ms: f64) -> Vec<Spike> {
    pattern
        .spikes()
        .iter()
        .map(|s| Spike {
            time_ms: s.time_ms + shift_ms,
            ..*s
        })
        .collect()
}

#[test]
fn a_stream_that_is_the_template_scores_one_at_its_end() {
    let template = random_template(40, 50.0, 40, 7).unwrap();
    let detector =
        PatternDetector::new(vec![template.clone()], DetectorOptions::default()).unwrap();
    let found = detector.detect(&template).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].time_ms, 50.0);
    assert_eq!(found[0].template, 0);
    assert!((found[0].score - 1.0).abs() < 1e-12, "{}", found[0].score);
}

#[test]
fn a_shifted_template_is_found_at_the_shifted_time() {
    let template = random_template(40, 50.0, 40, 8).unwrap();
    let stream = SpikePattern::new(shifted(&template, 73.0), 40, 200.0).unwrap();
    let detector = PatternDetector::new(vec![template], DetectorOptions::default()).unwrap();
    let found = detector.detect(&stream).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].time_ms, 123.0);
    assert!((found[0].score - 1.0).abs() < 1e-12, "{}", found[0].score);
}

#[test]
fn two_templates_are_told_apart() {
    let a = random_template(40, 50.0, 40, 11).unwrap();
    let b = random_template(40, 50.0, 40, 12).unwrap();
    let mut spikes = shifted(&a, 20.0);
    spikes.extend(shifted(&b, 150.0));
    let stream = SpikePattern::new(spikes, 40, 300.0).unwrap();
    let detector = PatternDetector::new(vec![a, b], DetectorOptions::default()).unwrap();
    let found = detector.detect(&stream).unwrap();
    let summary: Vec<(f64, usize)> = found.iter().map(|d| (d.time_ms, d.template)).collect();
    assert_eq!(summary, vec![(70.0, 0), (200.0, 1)], "{found:?}");
    assert!(found.iter().all(|d| (d.score - 1.0).abs() < 1e-12));
    // The cross scores stay far below the threshold.
    let scores = detector.scores(&stream).unwrap();
    assert!(scores[(69, 1)] < 0.3 && scores[(199, 0)] < 0.3);
}

/// (true positives, detections, planted) with one-to-one matching: a detection is a true
/// positive if it names the template of a not yet matched occurrence whose end is within
/// `tolerance_ms` of its time.
fn score_detections(
    found: &[Detection],
    planted: &[(f64, usize)],
    duration_ms: f64,
    tolerance_ms: f64,
) -> (usize, usize, usize) {
    let mut matched = vec![false; planted.len()];
    let mut hits = 0;
    for d in found {
        let hit = planted.iter().enumerate().position(|(i, &(onset, j))| {
            !matched[i]
                && j == d.template
                && (onset + duration_ms - d.time_ms).abs() <= tolerance_ms
        });
        if let Some(i) = hit {
            matched[i] = true;
            hits += 1;
        }
    }
    (hits, found.len(), planted.len())
}

/// (true positives, detections, planted) of one seed of the benchmark: 5 random templates of
/// 50 ms with 40 spikes on 40 channels, 20 occurrences each with ±1 ms uniform jitter in a
/// 10 s stream of Poisson background, default options, ±5 ms tolerance.
fn benchmark_seed(seed: u64, background_hz: f64) -> (usize, usize, usize) {
    let templates: Vec<SpikePattern> = (0..5)
        .map(|j| random_template(40, 50.0, 40, 1000 * seed + j).unwrap())
        .collect();
    let (stream, planted) =
        plant_patterns(&templates, 40, 10_000.0, background_hz, 20, 1.0, seed).unwrap();
    let detector = PatternDetector::new(templates, DetectorOptions::default()).unwrap();
    let found = detector.detect(&stream).unwrap();
    score_detections(&found, &planted, 50.0, 5.0)
}

#[test]
fn planted_patterns_in_noise_are_found_at_the_default_threshold() {
    const SEEDS: u64 = 20;
    for background_hz in [5.0, 10.0] {
        // Seeds run on parallel threads: the debug build is slow.
        let results: Vec<(usize, usize, usize)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..SEEDS)
                .map(|seed| scope.spawn(move || benchmark_seed(seed, background_hz)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let (mut hits, mut reported, mut planted) = (0, 0, 0);
        let (mut worst_recall, mut worst_precision) = (1.0f64, 1.0f64);
        for &(h, r, p) in &results {
            worst_recall = worst_recall.min(h as f64 / p as f64);
            worst_precision = worst_precision.min(h as f64 / r.max(1) as f64);
            hits += h;
            reported += r;
            planted += p;
        }
        let recall = hits as f64 / planted as f64;
        let precision = hits as f64 / reported as f64;
        println!(
            "background {background_hz} Hz, {SEEDS} seeds, {planted} planted, {reported} \
             detections: recall {recall:.4} (worst seed {worst_recall:.3}), precision \
             {precision:.4} (worst seed {worst_precision:.3})"
        );
        assert!(recall >= 0.95, "recall {recall}");
        assert!(precision >= 0.95, "precision {precision}");
    }
}

#[test]
fn detections_are_deterministic() {
    let templates: Vec<SpikePattern> = (0..3)
        .map(|j| random_template(20, 30.0, 20, j).unwrap())
        .collect();
    let (s1, p1) = plant_patterns(&templates, 20, 3000.0, 8.0, 5, 1.0, 42).unwrap();
    let (s2, p2) = plant_patterns(&templates, 20, 3000.0, 8.0, 5, 1.0, 42).unwrap();
    assert_eq!((&s1, &p1), (&s2, &p2));
    let (s3, _) = plant_patterns(&templates, 20, 3000.0, 8.0, 5, 1.0, 43).unwrap();
    assert_ne!(s1, s3);
    let d1 = PatternDetector::new(templates.clone(), DetectorOptions::default()).unwrap();
    let d2 = PatternDetector::new(templates, DetectorOptions::default()).unwrap();
    let found = d1.detect(&s1).unwrap();
    assert!(!found.is_empty());
    assert_eq!(found, d2.detect(&s2).unwrap());
    assert_eq!(found, d1.detect(&s1).unwrap());
}

#[test]
fn plant_patterns_places_non_overlapping_occurrences() {
    let templates: Vec<SpikePattern> = (0..4)
        .map(|j| random_template(10, 25.0, 10, j).unwrap())
        .collect();
    let (stream, planted) = plant_patterns(&templates, 10, 1500.0, 0.0, 10, 0.0, 3).unwrap();
    assert_eq!(planted.len(), 40);
    assert_eq!(stream.spikes().len(), 400);
    assert!(planted.windows(2).all(|w| w[1].0 >= w[0].0 + 25.0 - 1e-9));
    assert!(planted
        .last()
        .is_some_and(|&(onset, _)| onset + 25.0 <= 1500.0));
    for j in 0..4 {
        assert_eq!(planted.iter().filter(|p| p.1 == j).count(), 10);
    }
    assert!(plant_patterns(&templates, 10, 900.0, 0.0, 10, 0.0, 3).is_err());
}

#[test]
fn errors_name_the_bad_argument() {
    let t40 = random_template(40, 50.0, 40, 1).unwrap();
    let t30 = random_template(30, 50.0, 30, 2).unwrap();
    let opts = DetectorOptions::default();
    let err = PatternDetector::new(vec![], opts).unwrap_err();
    assert!(err.to_string().contains("templates is empty"), "{err}");
    let err = PatternDetector::new(vec![t40.clone(), t40.clone(), t30], opts).unwrap_err();
    assert!(matches!(err, ReservoirError::Shape { .. }), "{err}");
    assert!(err.to_string().contains("template 2"), "{err}");
    let silent = SpikePattern::new(vec![], 40, 50.0).unwrap();
    let err = PatternDetector::new(vec![t40.clone(), silent], opts).unwrap_err();
    assert!(
        err.to_string().contains("template 1 has no spikes"),
        "{err}"
    );

    let detector = PatternDetector::new(vec![t40.clone()], opts).unwrap();
    let err = detector
        .detect(&random_template(39, 500.0, 50, 3).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("stream channel count"), "{err}");

    // Bad settings are refused by `check`, naming the field.
    let bad = |o: DetectorParams| o.check().unwrap_err().field;
    let params = opts.to_params();
    assert_eq!(bad(params.dt_ms(0.0)), "dt_ms");
    assert_eq!(bad(params.dt_ms(-1.0)), "dt_ms");
    assert_eq!(bad(params.tau_ms(f64::NAN)), "tau_ms");
    assert_eq!(bad(params.threshold(1.5)), "threshold");
    assert_eq!(bad(params.threshold(-0.1)), "threshold");
    assert_eq!(
        bad(params.min_separation_ms(Some(-2.0))),
        "min_separation_ms"
    );

    let bad_pop = |o: PopulationParams| o.check().unwrap_err().field;
    let pop = PopulationParams::new();
    assert_eq!(bad_pop(pop.bin_ms(0.0)), "bin_ms");
    assert_eq!(bad_pop(pop.burst_z(-1.0)), "burst_z");
    assert_eq!(bad_pop(pop.min_neurons(0)), "min_neurons");

    let err = random_template(0, 50.0, 5, 1).unwrap_err();
    assert!(err.to_string().contains("n_channels"), "{err}");
    let err = plant_patterns(&[t40], 40, 1000.0, -1.0, 1, 1.0, 1).unwrap_err();
    assert!(err.to_string().contains("background_hz"), "{err}");
}

#[test]
fn options_load_from_toml_with_defaults() {
    let o: DetectorOptions = toml::from_str("threshold = 0.6\nmin_separation_ms = 20.0").unwrap();
    assert_eq!(o.threshold(), 0.6);
    assert_eq!(o.min_separation_ms(), Some(20.0));
    assert_eq!(o.dt_ms(), DetectorOptions::default().dt_ms());
    assert!(toml::from_str::<DetectorOptions>("treshold = 0.6").is_err());
    let refused = toml::from_str::<DetectorOptions>("threshold = 1.5").unwrap_err();
    assert!(refused.to_string().contains("`threshold`"), "{refused}");
    let p: PopulationOptions = toml::from_str("min_neurons = 8").unwrap();
    assert_eq!(p.min_neurons(), 8);
    assert_eq!(p.bin_ms(), PopulationOptions::default().bin_ms());
    assert!(toml::from_str::<PopulationOptions>("min_neurons = 0").is_err());
}

/// Poisson background over 40 neurons with `extra` spikes added.
fn background(seed: u64, duration_ms: f64, hz: f64, extra: Vec<Spike>) -> SpikePattern {
    let (noise, _) = plant_patterns(&[], 40, duration_ms, hz, 0, 0.0, seed).unwrap();
    let mut spikes = noise.spikes().to_vec();
    spikes.extend(extra);
    SpikePattern::new(spikes, 40, duration_ms).unwrap()
}

#[test]
fn a_synchronous_volley_is_found() {
    let volley = (0..30u32)
        .map(|n| Spike {
            neuron_id: n,
            time_ms: 1234.1 + 0.02 * n as f64,
            amplitude: 1.0,
        })
        .collect();
    let pattern = background(5, 3000.0, 5.0, volley);
    let events = population_events(&pattern, &PopulationOptions::default()).unwrap();
    let sync: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::Synchrony)
        .collect();
    assert_eq!(sync.len(), 1, "{events:?}");
    assert_eq!((sync[0].start_ms, sync[0].end_ms), (1234.0, 1235.0));
    assert!(sync[0].neurons >= 30 && sync[0].spikes >= 30);
}

#[test]
fn a_period_of_elevated_rate_is_found_as_a_burst() {
    let (extra, _) = plant_patterns(&[], 40, 200.0, 60.0, 0, 0.0, 99).unwrap();
    let burst = shifted(&extra, 1600.0);
    let pattern = background(6, 3000.0, 5.0, burst);
    let events = population_events(&pattern, &PopulationOptions::default()).unwrap();
    let bursts: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::Burst)
        .collect();
    assert_eq!(bursts.len(), 1, "{events:?}");
    let b = bursts[0];
    assert!(
        (b.start_ms - 1600.0).abs() <= 20.0 && (b.end_ms - 1800.0).abs() <= 20.0,
        "{b:?}"
    );
    assert!(b.neurons >= 35 && b.spikes >= 300, "{b:?}");
}

#[test]
fn pure_background_gives_almost_no_population_events() {
    const SEEDS: u64 = 20;
    let (mut sync, mut bursts) = (0, 0);
    for seed in 0..SEEDS {
        let pattern = background(seed, 10_000.0, 10.0, vec![]);
        for e in population_events(&pattern, &PopulationOptions::default()).unwrap() {
            match e.kind {
                EventKind::Synchrony => sync += 1,
                EventKind::Burst => bursts += 1,
            }
        }
    }
    println!("pure 10 Hz background, {SEEDS} × 10 s × 40 neurons: {sync} synchrony, {bursts} burst events");
    assert!(sync <= 2 * SEEDS as usize && bursts <= SEEDS as usize);
}

#[test]
fn detection_throughput() {
    let templates: Vec<SpikePattern> = (0..10)
        .map(|j| random_template(40, 50.0, 40, 500 + j).unwrap())
        .collect();
    let (stream, _) = plant_patterns(&templates, 40, 10_000.0, 10.0, 5, 1.0, 1).unwrap();
    let detector = PatternDetector::new(templates, DetectorOptions::default()).unwrap();
    let start = Instant::now();
    let found = detector.detect(&stream).unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "detect: 40 channels × 10 s (10 000 bins) × 10 templates of 50 bins: {:.1} ms, \
         {:.0} bins/s, {} detections",
        secs * 1e3,
        10_000.0 / secs,
        found.len()
    );
}
