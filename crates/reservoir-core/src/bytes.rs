//! A number of bytes as messages show it.

use std::fmt;

/// A number of bytes, shown with a decimal unit (`7.20 GB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["bytes", "kB", "MB", "GB", "TB", "PB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1000.0 && unit + 1 < UNITS.len() {
            value /= 1000.0;
            unit += 1;
        }
        if unit == 0 {
            write!(f, "{} bytes", self.0)
        } else {
            write!(f, "{value:.2} {}", UNITS[unit])
        }
    }
}
