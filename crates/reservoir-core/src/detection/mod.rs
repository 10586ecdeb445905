//! Temporal pattern detection in spike streams, population events, and seeded test data.
//!
//! This module is the CPU reference a GPU kernel is checked against ("detections identical"),
//! so every computation is in `f64`, in the fixed order written below, with no fused
//! multiply-add (Rust never fuses `a * b + c`; a CUDA port must compile with `-fmad=false` or
//! use `__dmul_rn`/`__dadd_rn`) and no transcendental function in an inner loop.
//!
//! # Filtering
//! A pattern of `C` channels is binned with [`SpikePattern::to_input_matrix`] at `dt` (bin `b`
//! holds the summed amplitudes of the spikes in `[b·dt, (b + 1)·dt)`), giving `s[b, c]`, and
//! filtered causally per channel from a zero state:
//! `f[0, c] = s[0, c]`, `f[b, c] = f[b − 1, c]·α + s[b, c]` with `α = exp(−dt/τ)` computed
//! once (see [`filter_pattern`]). Templates and streams are filtered the same way.
//!
//! # Score
//! Template `j` has `L` bins. With `N = L·C`, its filtered matrix `T` is centred once:
//! `μ_T = (Σ T) / N`, `T̃ = T − μ_T`, `‖T̃‖ = sqrt(Σ T̃²)` (sums over `k = 0..L` outer,
//! `c = 0..C` inner, accumulated left to right from `0.0`). A template with `‖T̃‖ = 0` (no
//! spikes) is refused. For a stream bin `t ≥ L − 1` the window is `W[k, c] = f[t − L + 1 + k, c]`:
//!
//! 1. `m = (Σ W) / N` (same summation order);
//! 2. with `x = W[k, c] − m`, accumulate from `0.0` in the same order `v += x·x` and
//!    `d += T̃[k, c]·x` (`m` and `v` depend only on `L`, so they are shared by templates of
//!    one length);
//! 3. `score = 0` if `v == 0`, else `min(1, max(0, d / (‖T̃‖·sqrt(v))))`.
//!
//! The score is the Pearson correlation (mean-subtracted cosine similarity) of template and
//! window, clipped to `[0, 1]`. Subtracting the window mean removes the offset a Poisson
//! background adds to every filtered entry, and dividing by the window's spread makes the
//! score independent of the background rate's scale. Bins `t < L − 1` have no complete window
//! and score `0`; they are never reported.
//!
//! # Detections
//! Per template, with `r = max(1, ceil(min_separation_ms / dt − 1e-9))` bins (`r = L` when
//! `min_separation_ms` is `None`):
//! 1. candidates are the scored bins `t ≥ L − 1` with `score[t] ≥ threshold` that are local
//!    maxima: `score[t] > score[t − 1]` (or `t = L − 1`) and `score[t] ≥ score[t + 1]` (or `t`
//!    is the last bin);
//! 2. non-maximum suppression, greedy: candidates are visited by decreasing score (ties: the
//!    earlier bin first) and accepted iff no accepted bin lies within `|t − u| < r`.
//!
//! Detections of one template are thus at least `r` bins apart. A detection's time is the end
//! of its window, `(t + 1)·dt`; the list is sorted by bin, then template index.
//!
//! ```
//! use reservoir_core::detection::{random_template, DetectorOptions, PatternDetector};
//!
//! let template = random_template(8, 20.0, 8, 1)?;
//! let detector = PatternDetector::new(vec![template.clone()], DetectorOptions::default())?;
//! let found = detector.detect(&template)?;
//! assert_eq!(found.len(), 1);
//! assert!((found[0].score - 1.0).abs() < 1e-12 && found[0].time_ms == 20.0);
//! # Ok::<(), reservoir_core::ReservoirError>(())
//! ```

mod detector;
mod options;
mod population;
mod synth;

pub use detector::{Detection, PatternDetector};
pub use options::{DetectorOptions, DetectorParams};
pub use population::{
    population_events, EventKind, PopulationEvent, PopulationOptions, PopulationParams,
};
pub use synth::{plant_patterns, random_template};

use ndarray::Array2;

use crate::error::{ReservoirError, Result};
use crate::spikes::SpikePattern;

/// The pattern binned at `dt_ms` and filtered per channel with `α = exp(−dt_ms / tau_ms)`:
/// a `bins × channels` matrix with `f[b, c] = f[b − 1, c]·α + s[b, c]` (`f[−1, c] = 0`).
///
/// # Errors
/// `dt_ms` or `tau_ms` not finite and > 0.
pub fn filter_pattern(pattern: &SpikePattern, dt_ms: f64, tau_ms: f64) -> Result<Array2<f64>> {
    if !(tau_ms.is_finite() && tau_ms > 0.0) {
        return Err(ReservoirError::invalid(
            "spike filter",
            format!("tau_ms must be finite and > 0, got {tau_ms}"),
        ));
    }
    let mut matrix = pattern.to_input_matrix(dt_ms)?;
    let alpha = (-dt_ms / tau_ms).exp();
    for b in 1..matrix.nrows() {
        for c in 0..matrix.ncols() {
            matrix[(b, c)] += matrix[(b - 1, c)] * alpha;
        }
    }
    Ok(matrix)
}
