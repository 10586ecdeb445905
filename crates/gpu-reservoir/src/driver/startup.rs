//! What a device's start-up cost, phase by phase, and what went wrong on the way without
//! failing (a kernel cache that could not be used).

use serde::Serialize;

/// One phase of a device's start-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartupPhase {
    /// What ran: `driver and context`, `kernels esn.cu (compiled)` or `(cached)`,
    /// `cuBLAS handle`, `esn plans`, `esn uploads`, …
    pub name: String,
    /// Wall seconds it took.
    pub seconds: f64,
}

/// The start-up of a device so far: its phases in the order they ran (a phase that ran more
/// than once, such as uploads for a second reservoir, is listed each time) and its notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Startup {
    /// The phases, in order.
    pub phases: Vec<StartupPhase>,
    /// Things that did not fail the job but that a user may want to fix (one line each).
    pub notes: Vec<String>,
}

impl Startup {
    /// Total seconds of all phases.
    pub fn seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }
}
