//! Template matching by windowed Pearson correlation of exponentially filtered spike trains.

use std::collections::BTreeSet;

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use super::{filter_pattern, DetectorOptions};
use crate::error::{ReservoirError, Result};
use crate::spikes::SpikePattern;

/// One reported match of a template in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// End of the matched window in milliseconds: `(t + 1)·dt` for window-end bin `t`.
    pub time_ms: f64,
    /// Index of the template in the list given to [`PatternDetector::new`].
    pub template: usize,
    /// The score at that bin, in `[threshold, 1]`.
    pub score: f64,
}

/// One template, filtered and centred once.
#[derive(Debug, Clone)]
struct Prepared {
    /// `T̃ = T − mean(T)`, `L × C`, row-major.
    centred: Vec<f64>,
    /// `L`.
    bins: usize,
    /// `‖T̃‖`, > 0.
    norm: f64,
    /// Smallest distance `r >= 1` in bins between two detections.
    separation: usize,
}

/// Finds occurrences of fixed spike templates in a stream; see the [module docs](super).
#[derive(Debug, Clone)]
pub struct PatternDetector {
    options: DetectorOptions,
    n_channels: usize,
    templates: Vec<Prepared>,
}

impl PatternDetector {
    /// Bins, filters and centres every template.
    ///
    /// # Errors
    /// An empty template list, a template whose channel
    /// count differs from template 0's, or a template without spikes (zero variance after
    /// filtering), each naming the template index.
    pub fn new(templates: Vec<SpikePattern>, options: DetectorOptions) -> Result<Self> {
        let n_channels = match templates.first() {
            Some(t) => t.n_neurons(),
            None => {
                return Err(ReservoirError::invalid(
                    "pattern detector",
                    "templates is empty: give at least one template",
                ))
            }
        };
        let mut prepared = Vec::with_capacity(templates.len());
        for (j, template) in templates.iter().enumerate() {
            if template.n_neurons() != n_channels {
                return Err(ReservoirError::shape(
                    &format!("pattern detector: channel count of template {j} (vs template 0)"),
                    n_channels,
                    template.n_neurons(),
                ));
            }
            let filtered = filter_pattern(template, options.dt_ms(), options.tau_ms())?;
            let bins = filtered.nrows();
            let mut centred: Vec<f64> = filtered.iter().copied().collect();
            let mut sum = 0.0;
            for &v in &centred {
                sum += v;
            }
            let mean = sum / centred.len() as f64;
            let mut squares = 0.0;
            for v in &mut centred {
                *v -= mean;
                squares += *v * *v;
            }
            let norm = squares.sqrt();
            if !(norm > 0.0 && norm.is_finite()) {
                return Err(ReservoirError::invalid(
                    "pattern detector",
                    format!("template {j} has no spikes (its filtered matrix is constant)"),
                ));
            }
            let r = match options.min_separation_ms() {
                Some(sep) => (sep / options.dt_ms() - 1e-9).ceil().max(0.0) as usize,
                None => bins,
            };
            prepared.push(Prepared {
                centred,
                bins,
                norm,
                separation: r.max(1),
            });
        }
        Ok(Self {
            options,
            n_channels,
            templates: prepared,
        })
    }

    /// The options the detector was built with.
    pub fn options(&self) -> &DetectorOptions {
        &self.options
    }

    /// Number of channels every template and stream must have.
    pub fn n_channels(&self) -> usize {
        self.n_channels
    }

    /// Number of templates.
    pub fn n_templates(&self) -> usize {
        self.templates.len()
    }

    /// The filter factor `α = exp(−dt/τ)`, as used for templates and streams.
    pub fn alpha(&self) -> f64 {
        (-self.options.dt_ms() / self.options.tau_ms()).exp()
    }

    /// Template `j`'s centred filtered matrix `T̃` (`L × C`) and its norm `‖T̃‖`, for a port
    /// of the score to check against; `None` if `j` is out of range.
    pub fn template(&self, j: usize) -> Option<(ArrayView2<'_, f64>, f64)> {
        let p = self.templates.get(j)?;
        let view = ArrayView2::from_shape((p.bins, self.n_channels), &p.centred).ok()?;
        Some((view, p.norm))
    }

    /// The score of every template at every bin of `stream` (`bins × templates`; bins without
    /// a complete window score 0).
    ///
    /// # Errors
    /// `stream` has a channel count other than the templates'.
    pub fn scores(&self, stream: &SpikePattern) -> Result<Array2<f64>> {
        if stream.n_neurons() != self.n_channels {
            return Err(ReservoirError::shape(
                "pattern detector: stream channel count",
                self.n_channels,
                stream.n_neurons(),
            ));
        }
        let filtered = filter_pattern(stream, self.options.dt_ms(), self.options.tau_ms())?;
        let bins = filtered.nrows();
        // Row-major, so the window ending at bin t is the contiguous run of rows t+1−L..=t.
        let data: Vec<f64> = filtered.iter().copied().collect();
        let c = self.n_channels;
        let mut scores = Array2::zeros((bins, self.templates.len()));
        // Steps 1 and 2 (m and v) depend on the window length only: once per distinct L.
        let mut stats: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
        for (j, p) in self.templates.iter().enumerate() {
            let len = p.bins;
            if len > bins {
                continue;
            }
            let k = match stats.iter().position(|(l, _)| *l == len) {
                Some(k) => k,
                None => {
                    stats.push((len, window_stats(&data, len * c, bins - len + 1, c)));
                    stats.len() - 1
                }
            };
            for (i, &(mean, v)) in stats[k].1.iter().enumerate() {
                let window = &data[i * c..(i + len) * c];
                let mut d = 0.0;
                for (&w, &tc) in window.iter().zip(&p.centred) {
                    d += tc * (w - mean);
                }
                scores[(i + len - 1, j)] = if v == 0.0 {
                    0.0
                } else {
                    (d / (p.norm * v.sqrt())).clamp(0.0, 1.0)
                };
            }
        }
        Ok(scores)
    }

    /// Every detection in `stream`, sorted by time, then template.
    ///
    /// # Errors
    /// `stream` has a channel count other than the templates'.
    pub fn detect(&self, stream: &SpikePattern) -> Result<Vec<Detection>> {
        let scores = self.scores(stream)?;
        self.detections_from_scores(scores.view())
    }

    /// The detections of a score matrix (`bins × templates`, as [`PatternDetector::scores`]
    /// returns or a GPU port computes): local maxima at or above the threshold, then greedy
    /// non-maximum suppression per template; sorted by time, then template.
    ///
    /// # Errors
    /// A shape error when `scores` does not have one column per template.
    pub fn detections_from_scores(&self, scores: ArrayView2<f64>) -> Result<Vec<Detection>> {
        if scores.ncols() != self.templates.len() {
            return Err(ReservoirError::shape(
                "pattern detector: score columns",
                self.templates.len(),
                scores.ncols(),
            ));
        }
        let bins = scores.nrows();
        let mut found = Vec::new();
        for (j, p) in self.templates.iter().enumerate() {
            let first = p.bins.saturating_sub(1);
            let score = |t: usize| scores[(t, j)];
            let mut peaks: Vec<(usize, f64)> = (first..bins)
                .filter(|&t| score(t) >= self.options.threshold())
                .filter(|&t| t == first || score(t) > score(t - 1))
                .filter(|&t| t + 1 == bins || score(t) >= score(t + 1))
                .map(|t| (t, score(t)))
                .collect();
            peaks.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let r = p.separation;
            let mut accepted = BTreeSet::new();
            for (t, s) in peaks {
                let window = t.saturating_sub(r - 1)..t.saturating_add(r);
                if accepted.range(window).next().is_none() {
                    accepted.insert(t);
                    found.push((t, j, s));
                }
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        Ok(found
            .into_iter()
            .map(|(t, template, score)| Detection {
                time_ms: (t + 1) as f64 * self.options.dt_ms(),
                template,
                score,
            })
            .collect())
    }
}

/// `(m, v)` of steps 1–2 for the `count` windows of `n` values that start every `step` values.
fn window_stats(data: &[f64], n: usize, count: usize, step: usize) -> Vec<(f64, f64)> {
    (0..count)
        .map(|i| {
            let window = &data[i * step..i * step + n];
            let mut sum = 0.0;
            for &w in window {
                sum += w;
            }
            let mean = sum / n as f64;
            let mut v = 0.0;
            for &w in window {
                let x = w - mean;
                v += x * x;
            }
            (mean, v)
        })
        .collect()
}
