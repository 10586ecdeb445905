//! Population events: synchronous volleys and bursts of elevated population rate.

use serde::{Deserialize, Serialize};

use crate::config::checked_options;
use crate::error::{ConfigError, ReservoirError, Result};
use crate::spikes::SpikePattern;

checked_options! {
    /// Unchecked settings of [`population_events`].
    params PopulationParams;
    /// Checked settings of [`population_events`] (from [`PopulationParams::check`]).
    checked PopulationOptions = "PopulationParams";
    /// Bin width of the synchrony test in milliseconds, finite and > 0. Default 1.
    bin_ms: f64 = 1.0,
    /// A bin is synchronous when its count of distinct active neurons exceeds
    /// `mean + synchrony_z·std` of the bins' baseline counts (see [`population_events`]);
    /// finite and >= 0. Default 4.
    synchrony_z: f64 = 4.0,
    /// Window width of the burst test in milliseconds, finite and > 0. Default 20.
    burst_window_ms: f64 = 20.0,
    /// A window is elevated when its population rate exceeds `mean + burst_z·std` of the
    /// windows' baseline rates (see [`population_events`]); finite and >= 0. Default 4.
    burst_z: f64 = 4.0,
    /// Fewest distinct active neurons an event must involve, >= 1. Default 5 (at 40 neurons
    /// and 10 Hz a 1 ms bin holds >= 5 active neurons about once in 18 000 bins).
    min_neurons: usize = 5,
}

impl PopulationParams {
    /// The checked settings; the error names the first field that breaks its rule.
    pub fn check(self) -> Result<PopulationOptions, ConfigError> {
        for (field, v) in [
            ("bin_ms", self.bin_ms),
            ("burst_window_ms", self.burst_window_ms),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(ConfigError::new(field, "must be finite and > 0", v));
            }
        }
        for (field, v) in [("synchrony_z", self.synchrony_z), ("burst_z", self.burst_z)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ConfigError::new(field, "must be finite and >= 0", v));
            }
        }
        if self.min_neurons == 0 {
            return Err(ConfigError::new("min_neurons", "must be >= 1", 0));
        }
        Ok(PopulationOptions { params: self })
    }
}

/// What kind of population event was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Many distinct neurons active in one bin.
    Synchrony,
    /// A run of consecutive windows of elevated population rate.
    Burst,
}

/// One population event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PopulationEvent {
    /// Synchrony or burst.
    pub kind: EventKind,
    /// Start of the bin or first window, in milliseconds.
    pub start_ms: f64,
    /// End of the bin or last window (at most the pattern's duration), in milliseconds.
    pub end_ms: f64,
    /// Number of spikes in the event's span.
    pub spikes: usize,
    /// Number of distinct neurons that spiked in the event's span.
    pub neurons: usize,
}

/// Spike count and distinct-neuron count of each of `n` bins of width `width` ms.
fn bin_counts(pattern: &SpikePattern, width: f64, n: usize) -> (Vec<usize>, Vec<usize>) {
    let mut spikes = vec![0usize; n];
    let mut neurons = vec![0usize; n];
    // Marks the last bin (plus one) each neuron was counted in.
    let mut last = vec![0usize; pattern.n_neurons()];
    for s in pattern.spikes() {
        let b = ((s.time_ms / width) as usize).min(n - 1);
        spikes[b] += 1;
        let seen = &mut last[s.neuron_id as usize];
        if *seen != b + 1 {
            *seen = b + 1;
            neurons[b] += 1;
        }
    }
    (spikes, neurons)
}

/// Most rounds of the baseline estimate in [`cutoff`].
const MAX_ROUNDS: usize = 64;

/// `mean + z·std` of the baseline of `values` (sigma clipping): start from all values, then
/// recompute the mean and population std (sums in index order) over the values `<=` the
/// current cutoff until the set of included values stops changing (at most 64 rounds).
fn cutoff(values: &[f64], z: f64) -> f64 {
    let mut limit = f64::INFINITY;
    let mut included = values.len();
    for _ in 0..MAX_ROUNDS {
        let kept = || values.iter().copied().filter(|&v| v <= limit);
        let n = included.max(1) as f64;
        let mean = kept().sum::<f64>() / n;
        let var = kept().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let next = mean + z * var.sqrt();
        let now = values.iter().filter(|&&v| v <= next).count();
        limit = next;
        if now == included {
            break;
        }
        included = now;
    }
    limit
}

/// Distinct neurons with a spike in bins `bins` of `n` bins of width `width` ms.
fn distinct_neurons(
    pattern: &SpikePattern,
    width: f64,
    n: usize,
    bins: std::ops::Range<usize>,
) -> usize {
    let mut seen = vec![false; pattern.n_neurons()];
    pattern
        .spikes()
        .iter()
        .filter(|s| bins.contains(&((s.time_ms / width) as usize).min(n - 1)))
        .filter(|s| !std::mem::replace(&mut seen[s.neuron_id as usize], true))
        .count()
}

/// Synchrony and burst events of `pattern`, sorted by start time (synchrony first on ties).
///
/// Every spike counts once, whatever its amplitude.
/// - **Baseline cutoff** of values `x` with factor `z`: `mean + z·std` (population std) of
///   the values, recomputed over the values `<=` the previous cutoff until the included set
///   stops changing (sigma clipping, at most 64 rounds), so the events themselves do not
///   inflate the baseline. With no outliers this is plain `mean + z·std` of all values.
/// - **Synchrony**: the pattern is cut into `B = ceil(duration / bin_ms)` bins (a spike at `t`
///   is in bin `floor(t / bin_ms)`). With `n_b` the number of distinct neurons spiking in bin
///   `b`, bin `b` is an event iff `n_b >` the baseline cutoff of all `n` with `synchrony_z`,
///   and `n_b >= min_neurons`. Each such bin is its own event.
/// - **Burst**: the pattern is cut into windows of `burst_window_ms` the same way; window `w`'s
///   population rate is `spikes_w / (n_neurons · len_w / 1000)` Hz, `len_w` its length clipped
///   to the duration. A window is elevated iff its rate exceeds the baseline cutoff of all
///   windows' rates with `burst_z`. Each maximal run of consecutive elevated windows is one event if at least
///   `min_neurons` distinct neurons spiked in it.
///
/// # Errors
/// A pattern with no neurons.
pub fn population_events(
    pattern: &SpikePattern,
    options: &PopulationOptions,
) -> Result<Vec<PopulationEvent>> {
    if pattern.n_neurons() == 0 {
        return Err(ReservoirError::invalid(
            "population events",
            "pattern has no neurons",
        ));
    }
    let duration = pattern.duration_ms();
    let mut events = Vec::new();

    let n_bins = pattern.n_bins(options.bin_ms())?.max(1);
    let (spikes, neurons) = bin_counts(pattern, options.bin_ms(), n_bins);
    let counts: Vec<f64> = neurons.iter().map(|&n| n as f64).collect();
    let limit = cutoff(&counts, options.synchrony_z());
    for b in 0..n_bins {
        if counts[b] > limit && neurons[b] >= options.min_neurons() {
            events.push(PopulationEvent {
                kind: EventKind::Synchrony,
                start_ms: b as f64 * options.bin_ms(),
                end_ms: ((b + 1) as f64 * options.bin_ms()).min(duration),
                spikes: spikes[b],
                neurons: neurons[b],
            });
        }
    }

    let width = options.burst_window_ms();
    let n_windows = pattern.n_bins(width)?.max(1);
    let (spikes, _) = bin_counts(pattern, width, n_windows);
    let per_ms = pattern.n_neurons() as f64 / 1000.0;
    let rates: Vec<f64> = (0..n_windows)
        .map(|w| {
            let len = ((w + 1) as f64 * width).min(duration) - w as f64 * width;
            spikes[w] as f64 / (per_ms * len)
        })
        .collect();
    let limit = cutoff(&rates, options.burst_z());
    let mut w = 0;
    while w < n_windows {
        if rates[w] <= limit {
            w += 1;
            continue;
        }
        let first = w;
        while w < n_windows && rates[w] > limit {
            w += 1;
        }
        let (start_ms, end_ms) = (first as f64 * width, (w as f64 * width).min(duration));
        let neurons = distinct_neurons(pattern, width, n_windows, first..w);
        if neurons >= options.min_neurons() {
            events.push(PopulationEvent {
                kind: EventKind::Burst,
                start_ms,
                end_ms,
                spikes: spikes[first..w].iter().sum(),
                neurons,
            });
        }
    }
    events.sort_by(|a, b| {
        a.start_ms
            .total_cmp(&b.start_ms)
            .then((a.kind == EventKind::Burst).cmp(&(b.kind == EventKind::Burst)))
    });
    Ok(events)
}
