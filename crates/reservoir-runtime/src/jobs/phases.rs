//! Where a job's time went, phase by phase, for reports (`--json`'s `phases`).

use std::time::Instant;

use serde::Serialize;

/// One phase of a job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// What ran.
    pub name: &'static str,
    /// Wall seconds.
    pub seconds: f64,
}

/// A job's phases in the order they ran, timed end to end: each [`Phases::lap`] closes the
/// phase that began where the last one ended.
#[derive(Debug, Clone)]
pub struct Phases {
    phases: Vec<Phase>,
    since: Instant,
}

impl Phases {
    /// Starts timing the first phase now.
    pub fn start() -> Self {
        Self {
            phases: Vec::new(),
            since: Instant::now(),
        }
    }

    /// Ends phase `name` now; the next phase begins.
    pub fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.phases.push(Phase {
            name,
            seconds: now.duration_since(self.since).as_secs_f64(),
        });
        self.since = now;
    }

    /// The phases so far.
    pub fn into_vec(self) -> Vec<Phase> {
        self.phases
    }
}
