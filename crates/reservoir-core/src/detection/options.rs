//! Options of the pattern detector.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Settings of a [`PatternDetector`](super::PatternDetector); see the [module docs](super) for the exact computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectorOptions {
    /// Bin width in milliseconds, finite and > 0. Default 1.
    pub dt_ms: f64,
    /// Time constant of the causal exponential filter in milliseconds, finite and > 0.
    /// Default 5.
    pub tau_ms: f64,
    /// Smallest score reported, in `[0, 1]`. Default 0.4: 50 ms templates of 40 spikes on 40
    /// channels planted in 10 Hz background with ±1 ms jitter peak at 0.55–0.9 (median 0.7),
    /// while unrelated windows stay below 0.3.
    pub threshold: f64,
    /// At most one detection per template within this many milliseconds (finite, >= 0);
    /// `None` (the default) uses each template's own binned duration.
    pub min_separation_ms: Option<f64>,
}

impl Default for DetectorOptions {
    fn default() -> Self {
        Self {
            dt_ms: 1.0,
            tau_ms: 5.0,
            threshold: 0.4,
            min_separation_ms: None,
        }
    }
}

impl DetectorOptions {
    /// Checks every field; the error names the first field that breaks its rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
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
        Ok(())
    }
}
