//! Delta modulation, snnTorch `spikegen.delta` semantics.

use ndarray::{Array2, ArrayView2};

use super::{check, check_finite_2d};
use crate::config::checked_options;
use crate::error::{ConfigError, Result};

checked_options! {
    /// Unchecked options of [`delta`]; defaults are snnTorch's.
    params DeltaParams;
    /// Checked options of [`delta`] (from [`DeltaParams::check`]).
    checked DeltaOptions = "DeltaParams";
    /// θ, the change that triggers a spike, finite and ≥ 0; default 0.1.
    threshold: f64 = 0.1,
    /// `false`: step 0 is compared with 0; `true`: with itself (so it never spikes).
    padding: bool = false,
    /// Also emit −1 for a fall of at least θ; default false.
    off_spike: bool = false,
}

impl DeltaParams {
    /// The checked options: `threshold` must be finite and ≥ 0.
    pub fn check(self) -> Result<DeltaOptions, ConfigError> {
        let t = self.threshold;
        check(
            t.is_finite() && t >= 0.0,
            "threshold",
            "must be finite and >= 0",
            t,
        )?;
        Ok(DeltaOptions { params: self })
    }
}

/// Delta code of a sequence `x` (T × K) into T × K spikes. With `d = x[[t, i]] − prev`, where
/// `prev = x[[t − 1, i]]` for `t ≥ 1` and, at `t = 0`, `prev = 0` (`padding = false`) or
/// `prev = x[[0, i]]` (`padding = true`):
///
/// `out[[t, i]] = [d ≥ θ] − [off_spike ∧ d ≤ −θ]`
///
/// (Iverson brackets), so equality with θ spikes, and with θ = 0 an unchanged input gives
/// `1 − 1 = 0` when `off_spike` is set, as in snnTorch. Deterministic.
///
/// # Errors
/// A non-finite `x[[t, i]]` (naming `[t, i]`).
pub fn delta(x: ArrayView2<f64>, options: DeltaOptions) -> Result<Array2<f64>> {
    check_finite_2d("delta encoder", x)?;
    let theta = options.threshold();
    let mut out = Array2::zeros(x.dim());
    let mut prev: Vec<f64> = match x.rows().into_iter().next() {
        Some(first) if options.padding() => first.to_vec(),
        _ => vec![0.0; x.ncols()],
    };
    for (row, mut out_row) in x.rows().into_iter().zip(out.rows_mut()) {
        for ((p, &v), o) in prev.iter_mut().zip(row).zip(out_row.iter_mut()) {
            let d = v - *p;
            let on = if d >= theta { 1.0 } else { 0.0 };
            let off = if options.off_spike() && d <= -theta {
                1.0
            } else {
                0.0
            };
            *o = on - off;
            *p = v;
        }
    }
    Ok(out)
}
