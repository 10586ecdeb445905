//! What a device's start-up cost, phase by phase, and what went wrong on the way without
//! failing (a kernel cache that could not be used).

use serde::Serialize;

/// One phase of a device's start-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartupPhase {
    /// What ran: `driver and context`, `kernels esn.cu (compiled)` or `(cached)`,
    /// `cuBLAS handle`, `esn plans`, `esn uploads`, …
    pub name: String,
    /// Wall seconds it took, over all the times it ran.
    pub seconds: f64,
    /// How many times it ran (uploads run once per reservoir built on the device).
    pub count: usize,
}

/// The start-up of a device so far: its phases in the order they first ran (a phase that ran
/// more than once, such as uploads for a second reservoir, is listed once with its total) and
/// its notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Startup {
    /// The phases, in order.
    pub phases: Vec<StartupPhase>,
    /// Things that did not fail the job but that a user may want to fix (one line each).
    pub notes: Vec<String>,
}

impl Startup {
    /// Adds `seconds` of phase `name`.
    pub(crate) fn add(&mut self, name: String, seconds: f64) {
        match self.phases.iter_mut().find(|p| p.name == name) {
            Some(phase) => {
                phase.seconds += seconds;
                phase.count += 1;
            }
            None => self.phases.push(StartupPhase {
                name,
                seconds,
                count: 1,
            }),
        }
    }

    /// Total seconds of all phases.
    pub fn seconds(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_that_runs_again_adds_to_its_entry() {
        let mut startup = Startup::default();
        startup.add("driver and context".into(), 0.5);
        startup.add("esn uploads".into(), 0.25);
        startup.add("esn uploads".into(), 0.25);
        assert_eq!(startup.phases.len(), 2);
        assert_eq!(startup.phases[1].count, 2);
        assert_eq!(startup.phases[1].seconds, 0.5);
        assert_eq!(startup.seconds(), 1.0);
    }
}
