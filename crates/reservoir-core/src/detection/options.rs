//! Options of the pattern detector.

use crate::config::checked_options;
use crate::error::ConfigError;

checked_options! {
    /// Unchecked settings of a [`PatternDetector`](super::PatternDetector); see the
    /// [module docs](super) for the exact computation.
    params DetectorParams;
    /// Checked settings of a [`PatternDetector`](super::PatternDetector) (from
    /// [`DetectorParams::check`]).
    checked DetectorOptions = "DetectorParams";
    /// Bin width in milliseconds, finite and > 0. Default 1.
    dt_ms: f64 = 1.0,
    /// Time constant of the causal exponential filter in milliseconds, finite and > 0.
    /// Default 5.
    tau_ms: f64 = 5.0,
    /// Smallest score reported, in `[0, 1]`. Default 0.4: 50 ms templates of 40 spikes on 40
    /// channels planted in 10 Hz background with ±1 ms jitter peak at 0.55–0.9 (median 0.7),
    /// while unrelated windows stay below 0.3.
    threshold: f64 = 0.4,
    /// At most one detection per template within this many milliseconds (finite, >= 0);
    /// `None` (the default) uses each template's own binned duration.
    min_separation_ms: Option<f64> = None,
}

impl DetectorParams {
    /// The checked settings; the error names the first field that breaks its rule.
    pub fn check(self) -> Result<DetectorOptions, ConfigError> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ConfigError::new(field, "must be finite and > 0", v))
            }
        };
        positive("dt_ms", self.dt_ms)?;
        positive("tau_ms", self.tau_ms)?;
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(ConfigError::new(
                "threshold",
                "must be in [0, 1]",
                self.threshold,
            ));
        }
        if let Some(sep) = self.min_separation_ms {
            if !(sep.is_finite() && sep >= 0.0) {
                return Err(ConfigError::new(
                    "min_separation_ms",
                    "must be finite and >= 0",
                    sep,
                ));
            }
        }
        Ok(DetectorOptions { params: self })
    }
}
