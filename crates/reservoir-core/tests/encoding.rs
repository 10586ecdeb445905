//! Spike encoders: exact cases, statistics, reproducibility, errors (the counter RNG they draw
//! from is tested in random_counter.rs).

use ndarray::{array, s, Array1, Array2, Axis};
use reservoir_core::encoding::{
    delta, latency, latency_times, poisson, population, population_activations, rate,
    rate_probability, rate_sequence, DeltaOptions, DeltaParams, Encoder, EncoderParams,
    LatencyOptions, LatencyParams, PopulationOptions, PopulationParams, RateOptions, RateParams,
    STREAM_RATE,
};
use reservoir_core::random::counter::uniform_f32;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::{ConfigError, ReservoirError};

// ---------------------------------------------------------------- latency

fn spike_steps(m: &Array2<f64>) -> Vec<Option<usize>> {
    m.axis_iter(Axis(1))
        .map(|col| col.iter().position(|&v| v != 0.0))
        .collect()
}

fn assert_one_hot_or_empty(m: &Array2<f64>) {
    for col in m.axis_iter(Axis(1)) {
        assert!(col.sum() <= 1.0 && col.iter().all(|&v| v == 0.0 || v == 1.0));
    }
}

#[test]
fn latency_log_code_hand_cases() {
    // t = τ ln(x / (x − θ)), τ = 5, θ = 0.01: 0.050, 0.527, 3.466, 8.959, 57.6 (x clamped).
    let x = array![1.0, 0.1, 0.02, 0.012, 0.0];
    let opts = LatencyParams::new().tau(5.0).check().unwrap();
    let m = latency(x.view(), 10, opts).unwrap();
    assert_eq!(m.dim(), (10, 5));
    assert_one_hot_or_empty(&m);
    assert_eq!(
        spike_steps(&m),
        vec![Some(0), Some(1), Some(3), Some(9), Some(9)]
    );
    let t = latency_times(x.view(), 10, opts).unwrap();
    assert!((t[2] - 5.0 * 2f64.ln()).abs() < 1e-12);
    assert!((t[4] - 5.0 * ((0.01 + 1e-7) / 1e-7f64).ln()).abs() < 1e-9);

    // Clip drops x < θ only (0.012 ≥ θ keeps its spike).
    let clipped = latency(x.view(), 10, opts.to_params().clip(true).check().unwrap()).unwrap();
    assert_eq!(
        spike_steps(&clipped),
        vec![Some(0), Some(1), Some(3), Some(9), None]
    );

    // Normalize: t · 9 / max t → 0.008, 0.082, 0.542, 1.401, 9.
    let norm = latency(
        x.view(),
        10,
        opts.to_params().normalize(true).check().unwrap(),
    )
    .unwrap();
    assert_eq!(
        spike_steps(&norm),
        vec![Some(0), Some(0), Some(1), Some(1), Some(9)]
    );

    // Default options, 5 steps: 0.010, 0.020, 0.693 (ln 2), 11.5 → clamped to 4.
    let d = latency(
        array![1.0, 0.5, 0.02, 0.0].view(),
        5,
        LatencyOptions::default(),
    )
    .unwrap();
    assert_eq!(spike_steps(&d), vec![Some(0), Some(0), Some(1), Some(4)]);

    // A higher threshold moves the same input later: θ = 0.5, x = 1 → ln 2 → step 1.
    let hi = LatencyParams::new().threshold(0.5).check().unwrap();
    assert_eq!(
        spike_steps(&latency(array![1.0].view(), 3, hi).unwrap()),
        vec![Some(1)]
    );
}

#[test]
fn latency_linear_code_hand_cases() {
    // snnTorch's docstring example: [0.02, 0.5, 1], 5 steps, normalize, linear → 3.92, 2, 0.
    let x = array![0.02, 0.5, 1.0];
    let opts = LatencyParams::new()
        .linear(true)
        .normalize(true)
        .check()
        .unwrap();
    let t = latency_times(x.view(), 5, opts).unwrap();
    assert!(
        (t[0] - 3.92).abs() < 1e-12 && t[1] == 2.0 && t[2] == 0.0,
        "{t}"
    );
    assert_eq!(
        spike_steps(&latency(x.view(), 5, opts).unwrap()),
        vec![Some(4), Some(2), Some(0)]
    );

    // τ = 4: t = −4(x − 1) capped at −4(θ − 1) = 3.96; 2.5 and 3.5 round half to even.
    let lin = LatencyParams::new().linear(true).tau(4.0).check().unwrap();
    let x = array![0.75, 0.4, 0.375, 0.125, 0.0];
    let t = latency_times(x.view(), 5, lin).unwrap();
    assert_eq!(t.to_vec()[..4], [1.0, 2.4, 2.5, 3.5]);
    assert!((t[4] - 3.96).abs() < 1e-12);
    let m = latency(x.view(), 5, lin).unwrap();
    assert_eq!(
        spike_steps(&m),
        vec![Some(1), Some(2), Some(2), Some(4), Some(4)]
    );
    let clipped = latency(x.view(), 5, lin.to_params().clip(true).check().unwrap()).unwrap();
    assert_eq!(spike_steps(&clipped)[4], None);

    // x > 1 with normalize: [−4, 0, 3.96] → (t + 4) / 7.96 · 4 → 0, 2.01, 4.
    let m = latency(array![2.0, 1.0, 0.0].view(), 5, opts).unwrap();
    assert_eq!(spike_steps(&m), vec![Some(0), Some(2), Some(4)]);
    // ... and without normalize it is an error naming the index.
    let err = latency(array![0.5, 1.5].view(), 5, lin).unwrap_err();
    assert!(err.to_string().contains("x[1]"), "{err}");
}

// ---------------------------------------------------------------- delta

fn col(v: &[f64]) -> Array2<f64> {
    Array1::from(v.to_vec()).insert_axis(Axis(1))
}

fn flat(m: &Array2<f64>) -> Vec<f64> {
    m.iter().copied().collect()
}

#[test]
fn delta_hand_cases() {
    // snnTorch's docstring inputs (threshold 1; equality at 2 − 1 = 1 spikes). Its docstring
    // claims a spike at 3.0 (a change of 0.1); its code, like this one, gives none.
    let a = col(&[1.0, 2.0, 2.9, 3.0, 3.9]);
    let th1 = DeltaParams::new().threshold(1.0).check().unwrap();
    assert_eq!(
        flat(&delta(a.view(), th1).unwrap()),
        [1.0, 1.0, 0.0, 0.0, 0.0]
    );
    let pad = th1.to_params().padding(true).check().unwrap();
    assert_eq!(
        flat(&delta(a.view(), pad).unwrap()),
        [0.0, 1.0, 0.0, 0.0, 0.0]
    );
    let b = col(&[1.0, 2.0, 0.0, 2.0, 2.9]);
    let off = th1.to_params().off_spike(true).check().unwrap();
    assert_eq!(
        flat(&delta(b.view(), off).unwrap()),
        [1.0, 1.0, -1.0, 1.0, 0.0]
    );
    let pad_off = off.to_params().padding(true).check().unwrap();
    assert_eq!(
        flat(&delta(b.view(), pad_off).unwrap()),
        [0.0, 1.0, -1.0, 1.0, 0.0]
    );
    // Without off_spike, falls give nothing.
    assert_eq!(
        flat(&delta(b.view(), th1).unwrap()),
        [1.0, 1.0, 0.0, 1.0, 0.0]
    );
}

#[test]
fn delta_two_channels_and_exact_threshold() {
    // Exact binary fractions: changes of exactly ±0.25 hit θ = 0.25.
    let x = array![[0.25, 0.5], [0.5, 0.25], [0.5, 0.0], [0.625, 0.25]];
    let o = DeltaParams::new()
        .threshold(0.25)
        .padding(false)
        .off_spike(true)
        .check()
        .unwrap();
    let m = delta(x.view(), o).unwrap();
    assert_eq!(m, array![[1.0, 1.0], [1.0, -1.0], [0.0, -1.0], [0.0, 1.0]]);
    let m = delta(x.view(), o.to_params().padding(true).check().unwrap()).unwrap();
    assert_eq!(m.row(0), array![0.0, 0.0]);
    // θ = 0 with off-spikes: a rise is +1, no change cancels to 0.
    let z = delta(
        col(&[0.0, 1.0, 1.0]).view(),
        o.to_params().threshold(0.0).check().unwrap(),
    )
    .unwrap();
    assert_eq!(flat(&z), [0.0, 1.0, 0.0]);
    // Empty sequences are fine; the pattern conversion sees amplitude −1.
    assert_eq!(
        delta(Array2::zeros((0, 3)).view(), o).unwrap().dim(),
        (0, 3)
    );
    let p = SpikePattern::from_matrix(&m, 1.0).unwrap();
    assert!(p.spikes().iter().any(|s| s.amplitude == -1.0));
}

// ---------------------------------------------------------------- rate

#[test]
fn rate_counts_within_binomial_bounds() {
    let steps = 10_000;
    let x = array![0.0, 0.1, 0.5, 0.9, 1.0];
    let m = rate(x.view(), steps, RateOptions::default(), 3).unwrap();
    assert_eq!(m.dim(), (steps, 5));
    assert!(m.iter().all(|&v| v == 0.0 || v == 1.0));
    let counts = m.sum_axis(Axis(0));
    assert_eq!(counts[0], 0.0);
    assert_eq!(counts[4], steps as f64);
    for i in 1..4 {
        let p = x[i];
        let (mean, sd) = (steps as f64 * p, (steps as f64 * p * (1.0 - p)).sqrt());
        assert!(
            (counts[i] - mean).abs() < 5.0 * sd,
            "p {p}: {} spikes",
            counts[i]
        );
    }
}

#[test]
fn rate_gain_offset_and_clamping() {
    // 0.2·2 + 0.1 = 0.5; 5·2 + 0.1 → 1; −1·2 + 0.1 → 0.
    let o = RateParams::new().gain(2.0).offset(0.1).check().unwrap();
    assert_eq!(rate_probability(0.2, 2.0, 0.1), 0.2f32 * 2.0 + 0.1);
    assert_eq!(rate_probability(5.0, 2.0, 0.1), 1.0);
    assert_eq!(rate_probability(-1.0, 2.0, 0.1), 0.0);
    assert_eq!(rate_probability(1e300, 0.0, 0.0), 0.0); // inf · 0 = NaN → 0
    let m = rate(array![0.2, 5.0, -1.0].view(), 4000, o, 11).unwrap();
    let c = m.sum_axis(Axis(0));
    assert!((c[0] - 2000.0).abs() < 5.0 * 1000f64.sqrt(), "{c}");
    assert_eq!((c[1], c[2]), (4000.0, 0.0));
}

#[test]
fn rate_is_reproducible_and_matches_the_counter_rule() {
    let x = array![0.3, 0.7, 0.5];
    let o = RateOptions::default();
    let a = rate(x.view(), 200, o, 99).unwrap();
    assert_eq!(a, rate(x.view(), 200, o, 99).unwrap());
    assert_ne!(a, rate(x.view(), 200, o, 100).unwrap());
    for ((t, i), &v) in a.indexed_iter() {
        let u = uniform_f32(99, STREAM_RATE, (t * 3 + i) as u64);
        assert_eq!(v == 1.0, u < rate_probability(x[i], 1.0, 0.0));
    }
    // rate_sequence of a constant sequence is rate over that many steps ...
    let constant = x.broadcast((200, 3)).unwrap().to_owned();
    assert_eq!(rate_sequence(constant.view(), o, 99).unwrap(), a);
    // ... and of a varying one follows the same counters t·K + i row by row.
    let seq = Array2::from_shape_fn((50, 3), |(t, i)| ((t * 7 + i * 3) % 10) as f64 / 9.0);
    let m = rate_sequence(seq.view(), o, 5).unwrap();
    for ((t, i), &v) in m.indexed_iter() {
        let u = uniform_f32(5, STREAM_RATE, (t * 3 + i) as u64);
        assert_eq!(v == 1.0, u < rate_probability(seq[[t, i]], 1.0, 0.0));
    }
    // The Encoder with steps = 1 is rate_sequence.
    let enc = EncoderParams::Rate {
        steps: 1,
        gain: 1.0,
        offset: 0.0,
    }
    .check()
    .unwrap();
    assert_eq!(enc.encode_sequence(seq.view(), 5).unwrap(), m);
}

// ---------------------------------------------------------------- poisson

#[test]
fn poisson_counts_and_intervals() {
    let (channels, rate_hz, duration) = (100, 20.0, 10_000.0);
    let rates = Array1::from_elem(channels, rate_hz);
    let p = poisson(rates.view(), duration, 8).unwrap();
    assert_eq!((p.n_neurons(), p.duration_ms()), (channels, duration));
    let spikes = p.spikes();
    let expected = channels as f64 * rate_hz * duration / 1000.0; // 20,000
    assert!(
        (spikes.len() as f64 - expected).abs() < 5.0 * expected.sqrt(),
        "{}",
        spikes.len()
    );
    assert!(spikes.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
    assert!(spikes
        .iter()
        .all(|s| s.time_ms >= 0.0 && s.time_ms < duration && s.amplitude == 1.0));
    let mut isis = Vec::new();
    for n in 0..channels as u32 {
        let times: Vec<f64> = spikes
            .iter()
            .filter(|s| s.neuron_id == n)
            .map(|s| s.time_ms)
            .collect();
        isis.extend(times.windows(2).map(|w| w[1] - w[0]));
    }
    let k = isis.len() as f64;
    let mean = isis.iter().sum::<f64>() / k;
    let sd = (isis.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / k).sqrt();
    // Exponential ISIs: mean 1000 / 20 = 50 ms, CV 1 (standard errors ≈ 0.35 ms, 0.007).
    assert!((mean - 50.0).abs() < 2.0, "mean ISI {mean}");
    assert!((sd / mean - 1.0).abs() < 0.05, "CV {}", sd / mean);
    assert_eq!(p, poisson(rates.view(), duration, 8).unwrap());
    assert_ne!(p, poisson(rates.view(), duration, 9).unwrap());
    let silent = poisson(array![0.0, 0.0].view(), 100.0, 1).unwrap();
    assert!(silent.spikes().is_empty());
}

// ---------------------------------------------------------------- population

#[test]
fn population_centres_and_activations() {
    let o = PopulationParams::new()
        .neurons_per_feature(5)
        .check()
        .unwrap();
    assert_eq!(o.centres(), array![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(o.sigma_or_spacing(), 0.25);
    // x = 0.5, σ = 0.25: exp(−d² / 0.125) for d = 0.5, 0.25, 0 → e^−2, e^−0.5, 1.
    let a = population_activations(array![0.5, 0.0].view(), o).unwrap();
    assert_eq!(a.dim(), (2, 5));
    let (e2, e05) = ((-2.0f64).exp(), (-0.5f64).exp());
    let want = [e2, e05, 1.0, e05, e2];
    assert!(
        a.row(0)
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() < 1e-15),
        "{a}"
    );
    assert_eq!(a[[1, 0]], 1.0);
    assert!((a[[1, 4]] - (-8.0f64).exp()).abs() < 1e-15);
    let custom = o
        .to_params()
        .sigma(Some(0.5))
        .min(-1.0)
        .max(3.0)
        .check()
        .unwrap();
    assert_eq!(custom.centres(), array![-1.0, 0.0, 1.0, 2.0, 3.0]);
    assert_eq!(custom.sigma_or_spacing(), 0.5);
    let single = o
        .to_params()
        .neurons_per_feature(1)
        .min(2.0)
        .max(6.0)
        .check()
        .unwrap();
    assert_eq!(single.centres(), array![2.0]);
    assert_eq!(single.sigma_or_spacing(), 4.0);
}

#[test]
fn population_nearest_centre_fires_most() {
    let o = PopulationParams::new()
        .steps(2000)
        .max_probability(0.8)
        .check()
        .unwrap();
    // Centres k/9; 0.3 is nearest 3/9, 0.95 nearest 9/9.
    let m = population(array![0.3, 0.95].view(), o, 4).unwrap();
    assert_eq!(m.dim(), (2000, 20));
    let counts = m.sum_axis(Axis(0));
    let argmax = |c: ndarray::ArrayView1<f64>| {
        c.iter()
            .enumerate()
            .fold(0, |b, (i, &v)| if v > c[b] { i } else { b })
    };
    assert_eq!(argmax(counts.slice(s![..10])), 3);
    assert_eq!(argmax(counts.slice(s![10..])), 9);
    // The peak field fires at about max_probability · activation.
    let a = population_activations(array![0.3].view(), o).unwrap();
    let p = 0.8 * a[[0, 3]];
    assert!((counts[3] / 2000.0 - p).abs() < 5.0 * (p * (1.0 - p) / 2000.0).sqrt());
    assert_eq!(m, population(array![0.3, 0.95].view(), o, 4).unwrap());
    let enc = EncoderParams::Population {
        neurons_per_feature: 10,
        min: 0.0,
        max: 1.0,
        sigma: None,
        steps: 2000,
        max_probability: 0.8,
    }
    .check()
    .unwrap();
    assert_eq!(
        enc.encode_sequence(array![[0.3, 0.95]].view(), 4).unwrap(),
        m
    );
    assert_eq!(enc.output_channels(2), 20);
}

// ---------------------------------------------------------------- errors

fn field_of(err: ReservoirError) -> String {
    match err {
        ReservoirError::Config(e) => e.field,
        other => panic!("expected a config error, got {other}"),
    }
}

#[test]
fn errors_name_the_argument() {
    let x = array![0.5, 0.2];
    let nan = array![0.5, f64::NAN];
    let lat = LatencyOptions::default();
    let msg = |e: ReservoirError| e.to_string();
    assert!(msg(rate(nan.view(), 3, RateOptions::default(), 0).unwrap_err()).contains("x[1]"));
    assert!(msg(latency(nan.view(), 3, lat).unwrap_err()).contains("x[1]"));
    let inf2 = array![[0.0, 1.0], [f64::INFINITY, 0.0]];
    assert!(msg(delta(inf2.view(), DeltaOptions::default()).unwrap_err()).contains("x[1, 0]"));
    assert!(
        msg(rate_sequence(inf2.view(), RateOptions::default(), 0).unwrap_err()).contains("x[1, 0]")
    );
    let po = PopulationOptions::default();
    assert!(msg(population(nan.view(), po, 0).unwrap_err()).contains("x[1]"));
    assert!(msg(poisson(array![1.0, -2.0].view(), 10.0, 0).unwrap_err()).contains("rates_hz[1]"));
    assert!(msg(poisson(array![f64::NAN].view(), 10.0, 0).unwrap_err()).contains("rates_hz[0]"));
    assert_eq!(
        field_of(poisson(x.view(), 0.0, 0).unwrap_err()),
        "duration_ms"
    );
    assert!(poisson(array![1e12].view(), 1e3, 0).is_err());

    assert_eq!(
        field_of(rate(x.view(), 0, RateOptions::default(), 0).unwrap_err()),
        "steps"
    );
    assert_eq!(field_of(latency(x.view(), 0, lat).unwrap_err()), "steps");
    // Bad options are refused by `check`, naming the field, before any encoder runs.
    let field = |e: ConfigError| e.field;
    let bad_gain = RateParams::new().gain(f64::NAN).check();
    assert_eq!(field(bad_gain.unwrap_err()), "gain");
    let bad_offset = RateParams::new().offset(1e300).check();
    assert_eq!(field(bad_offset.unwrap_err()), "offset");
    for threshold in [-0.1, 0.0, 1.0, f64::NAN] {
        let o = lat.to_params().threshold(threshold).check();
        assert_eq!(field(o.unwrap_err()), "threshold");
    }
    for tau in [0.0, -1.0, f64::INFINITY] {
        let o = lat.to_params().tau(tau).check();
        assert_eq!(field(o.unwrap_err()), "tau");
    }
    let neg = DeltaParams::new().threshold(-0.1).check();
    assert_eq!(field(neg.unwrap_err()), "threshold");
    let po = po.to_params();
    let cases = [
        (po.neurons_per_feature(0), "neurons_per_feature"),
        (po.min(1.0).max(1.0), "max"),
        (po.min(2.0).max(1.0), "max"),
        (po.min(f64::NEG_INFINITY), "min"),
        (po.sigma(Some(0.0)), "sigma"),
        (po.steps(0), "steps"),
        (po.max_probability(1.5), "max_probability"),
    ];
    for (o, name) in cases {
        assert_eq!(field(o.check().unwrap_err()), name);
    }
}

// ---------------------------------------------------------------- Encoder (config)

#[test]
fn encoder_from_toml_with_defaults_and_validation() {
    let enc: EncoderParams =
        toml::from_str("kind = \"latency\"\nsteps = 5\nnormalize = true").unwrap();
    let want = EncoderParams::Latency {
        steps: 5,
        threshold: 0.01,
        tau: 1.0,
        linear: false,
        normalize: true,
        clip: false,
    };
    assert_eq!(enc, want);
    let d: EncoderParams = toml::from_str("kind = \"delta\"").unwrap();
    assert_eq!(
        d,
        EncoderParams::Delta {
            threshold: 0.1,
            padding: false,
            off_spike: false
        }
    );
    let p: EncoderParams = toml::from_str("kind = \"population\"\nsigma = 0.2").unwrap();
    assert!(matches!(
        p,
        EncoderParams::Population {
            neurons_per_feature: 10,
            sigma: Some(_),
            ..
        }
    ));
    // The checked encoder reads and writes the same table, through `check`.
    let checked = want.check().unwrap();
    let round: Encoder = toml::from_str(&toml::to_string(&checked).unwrap()).unwrap();
    assert_eq!(round, checked);
    assert_eq!(round.to_params(), want);

    let unknown = toml::from_str::<Encoder>("kind = \"rate\"\ngian = 2.0").unwrap_err();
    assert!(unknown.to_string().contains("gian"), "{unknown}");
    let kind = toml::from_str::<Encoder>("kind = \"morse\"").unwrap_err();
    assert!(kind.to_string().contains("morse"), "{kind}");

    let bad: EncoderParams = toml::from_str("kind = \"latency\"\ntau = -1.0").unwrap();
    assert_eq!(
        bad.check().unwrap_err().prefixed("encoder").field,
        "encoder.tau"
    );
    let refused = toml::from_str::<Encoder>("kind = \"latency\"\ntau = -1.0").unwrap_err();
    assert!(refused.to_string().contains("`tau`"), "{refused}");
    let bad: EncoderParams = toml::from_str("kind = \"poisson\"\ndt_ms = 0.0").unwrap();
    assert_eq!(bad.check().unwrap_err().field, "dt_ms");
}

#[test]
fn encoder_sequences_hold_each_row_for_steps() {
    let x = array![[1.0, 0.02], [0.02, 1.0]];
    let enc: Encoder = toml::from_str("kind = \"latency\"\nsteps = 3").unwrap();
    let m = enc.encode_sequence(x.view(), 0).unwrap();
    assert_eq!(m.dim(), (6, 2));
    // Row 0: x = 1 → step 0, x = 0.02 → ln 2 → step 1; row 1 mirrored, offset by 3.
    assert_eq!(
        (m[[0, 0]], m[[1, 1]], m[[3, 1]], m[[4, 0]]),
        (1.0, 1.0, 1.0, 1.0)
    );
    assert_eq!(m.sum(), 4.0);

    let pois: Encoder =
        toml::from_str("kind = \"poisson\"\nmax_rate_hz = 200\nsteps = 500").unwrap();
    let rows = array![[1.0, 0.0], [0.5, 0.25]];
    let counts = pois.encode_sequence(rows.view(), 3).unwrap();
    assert_eq!(counts.dim(), (1000, 2));
    let first = counts.slice(s![..500, ..]).sum_axis(Axis(0));
    assert_eq!(first[1], 0.0);
    assert!((first[0] - 100.0).abs() < 5.0 * 10.0, "{first}");
    let neg = array![[-1.0]];
    assert!(pois
        .encode_sequence(neg.view(), 3)
        .unwrap_err()
        .to_string()
        .contains("x[0, 0]"));
}
