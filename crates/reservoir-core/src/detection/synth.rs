//! Seeded test data: random templates and streams with templates planted in Poisson noise.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::error::{ReservoirError, Result};
use crate::spikes::{Spike, SpikePattern};

/// ChaCha8 seeded with `seed`, on its own stream per purpose.
fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// A uniform time in `[0, duration_ms)`.
fn uniform_time(rng: &mut ChaCha8Rng, duration_ms: f64) -> f64 {
    let t = rng.random::<f64>() * duration_ms;
    if t < duration_ms {
        t
    } else {
        0.0
    }
}

fn check(context: &str, ok: bool, message: impl ToString) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ReservoirError::invalid(context, message))
    }
}

/// A random template of `spikes` unit-amplitude spikes over `n_channels` channels and
/// `duration_ms`, seeded.
///
/// Channels are dealt from fresh random permutations of `0..n_channels`, so with
/// `spikes <= n_channels` every channel has at most one spike; times are uniform in
/// `[0, duration_ms)`.
///
/// # Errors
/// `n_channels == 0`, `spikes == 0`, or `duration_ms` not finite and > 0.
pub fn random_template(
    n_channels: usize,
    duration_ms: f64,
    spikes: usize,
    seed: u64,
) -> Result<SpikePattern> {
    const CTX: &str = "random template";
    check(CTX, n_channels > 0, "n_channels must be >= 1, got 0")?;
    check(CTX, spikes > 0, "spikes must be >= 1, got 0")?;
    check(
        CTX,
        duration_ms.is_finite() && duration_ms > 0.0,
        format!("duration_ms must be finite and > 0, got {duration_ms}"),
    )?;
    let mut rng = rng(seed, 0);
    let mut channels: Vec<u32> = Vec::with_capacity(spikes);
    let mut deck: Vec<u32> = (0..n_channels as u32).collect();
    while channels.len() < spikes {
        deck.shuffle(&mut rng);
        channels.extend(deck.iter().take(spikes - channels.len()));
    }
    let list = channels
        .into_iter()
        .map(|neuron_id| Spike {
            neuron_id,
            time_ms: uniform_time(&mut rng, duration_ms),
            amplitude: 1.0,
        })
        .collect();
    SpikePattern::new(list, n_channels, duration_ms)
}

/// A seeded stream of `duration_ms` over `n_channels` channels: a Poisson background of
/// `background_hz` on every channel plus `occurrences_per_template` non-overlapping copies of
/// every template, and the planted `(onset_ms, template)` list sorted by onset.
///
/// The occurrences are shuffled; the free time `duration_ms − Σ template durations` is split
/// at sorted uniform points, so onsets are uniform among non-overlapping placements (copies
/// may touch). Every template spike is moved by a uniform jitter in `[−jitter_ms, jitter_ms]`;
/// spikes that leave `[0, duration_ms)` are dropped. Template spikes keep their amplitude,
/// background spikes have amplitude 1. A planted occurrence ends at `onset + duration`.
///
/// # Errors
/// Invalid numbers (naming the argument), a template with more channels than `n_channels`
/// (naming its index), or templates that do not fit into `duration_ms`.
pub fn plant_patterns(
    templates: &[SpikePattern],
    n_channels: usize,
    duration_ms: f64,
    background_hz: f64,
    occurrences_per_template: usize,
    jitter_ms: f64,
    seed: u64,
) -> Result<(SpikePattern, Vec<(f64, usize)>)> {
    const CTX: &str = "plant patterns";
    check(CTX, n_channels > 0, "n_channels must be >= 1, got 0")?;
    check(
        CTX,
        duration_ms.is_finite() && duration_ms > 0.0,
        format!("duration_ms must be finite and > 0, got {duration_ms}"),
    )?;
    check(
        CTX,
        background_hz.is_finite() && background_hz >= 0.0,
        format!("background_hz must be finite and >= 0, got {background_hz}"),
    )?;
    check(
        CTX,
        jitter_ms.is_finite() && jitter_ms >= 0.0,
        format!("jitter_ms must be finite and >= 0, got {jitter_ms}"),
    )?;
    for (j, t) in templates.iter().enumerate() {
        check(
            CTX,
            t.n_neurons() <= n_channels,
            format!(
                "template {j} has {} channels, more than n_channels {n_channels}",
                t.n_neurons()
            ),
        )?;
    }
    let mut order: Vec<usize> = (0..templates.len())
        .flat_map(|j| std::iter::repeat_n(j, occurrences_per_template))
        .collect();
    let occupied: f64 = order.iter().map(|&j| templates[j].duration_ms()).sum();
    let free = duration_ms - occupied;
    check(
        CTX,
        free >= 0.0,
        format!("the occurrences need {occupied} ms, more than duration_ms {duration_ms}"),
    )?;

    let mut place = rng(seed, 1);
    order.shuffle(&mut place);
    let mut cuts: Vec<f64> = order.iter().map(|_| place.random::<f64>() * free).collect();
    cuts.sort_by(f64::total_cmp);
    let mut planted = Vec::with_capacity(order.len());
    let mut before = 0.0;
    for (&j, &cut) in order.iter().zip(&cuts) {
        planted.push((cut + before, j));
        before += templates[j].duration_ms();
    }

    let mut spikes = Vec::new();
    let mut jitter = rng(seed, 2);
    for &(onset, j) in &planted {
        for s in templates[j].spikes() {
            let shift = if jitter_ms > 0.0 {
                jitter.random_range(-jitter_ms..=jitter_ms)
            } else {
                0.0
            };
            let time_ms = onset + s.time_ms + shift;
            if (0.0..duration_ms).contains(&time_ms) {
                spikes.push(Spike { time_ms, ..*s });
            }
        }
    }
    if background_hz > 0.0 {
        let mut noise = rng(seed, 0);
        let gaps = Exp::new(background_hz / 1000.0)
            .map_err(|e| ReservoirError::invalid(CTX, format!("background_hz: {e}")))?;
        for neuron_id in 0..n_channels as u32 {
            let mut t = gaps.sample(&mut noise);
            while t < duration_ms {
                spikes.push(Spike {
                    neuron_id,
                    time_ms: t,
                    amplitude: 1.0,
                });
                t += gaps.sample(&mut noise);
            }
        }
    }
    Ok((SpikePattern::new(spikes, n_channels, duration_ms)?, planted))
}
