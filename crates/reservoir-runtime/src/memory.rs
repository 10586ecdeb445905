//! The host memory a job needs at its peak, estimated from its config and data before anything
//! large is allocated, so a job too large for the machine stops at once with the size it needs
//! and the size available, instead of being killed (or aborting) part way through.
//!
//! Each large buffer is also checked where it is allocated ([`reservoir_core::memory`]); the
//! job's sum catches parts that fit alone but not together.

use reservoir_core::architecture::Architecture;
use reservoir_core::memory::{bytes_of, ensure_available, Bytes};
use reservoir_core::readout::ridge_bytes;
use reservoir_core::weights::weights_bytes;

use crate::error::Result;

/// An out-of-memory error, before anything is drawn, when the weights of `architecture`'s
/// echo-state networks and a ridge readout of `features` features (N for a series; more for a
/// sequence classifier's features) onto `outputs` outputs, with `rows` × `features` values
/// held, cannot fit in the memory available now together.
pub fn ensure_fit_fits(
    architecture: &Architecture,
    features: usize,
    outputs: usize,
    rows: usize,
) -> Result<()> {
    let weights = architecture
        .echo_state_configs()
        .into_iter()
        .fold(0u64, |sum, config| {
            sum.saturating_add(weights_bytes(config))
        });
    JobMemory::default()
        .add("weights", weights)
        .add("ridge sums", ridge_bytes(features, outputs))
        .add("features", bytes_of(rows, features).saturating_mul(8))
        .ensure()
}

/// The parts of a job's peak memory, by name.
#[derive(Debug, Default)]
pub(crate) struct JobMemory {
    parts: Vec<(&'static str, u64)>,
}

impl JobMemory {
    /// Adds a part of `bytes` bytes.
    pub(crate) fn add(mut self, part: &'static str, bytes: u64) -> Self {
        self.parts.push((part, bytes));
        self
    }

    /// The sum of the parts.
    pub(crate) fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |sum, (_, bytes)| sum.saturating_add(*bytes))
    }

    /// An out-of-memory error naming every part when the sum does not fit in the memory
    /// available now.
    pub(crate) fn ensure(&self) -> Result<()> {
        let parts = self
            .parts
            .iter()
            .filter(|(_, bytes)| *bytes > 0)
            .map(|(part, bytes)| format!("{part} {}", Bytes(*bytes)))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(ensure_available(
            &format!("this job ({parts})"),
            self.total(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_larger_than_memory_names_its_parts() {
        let job = JobMemory::default()
            .add("weights", 9_000_000_000)
            .add("ridge sums", u64::MAX);
        assert_eq!(job.total(), u64::MAX);
        if reservoir_core::memory::available().is_some() {
            let message = job.ensure().unwrap_err().to_string();
            assert!(
                message.starts_with(
                    "not enough memory for this job (weights 9.00 GB, ridge sums 18446.74 PB): needs"
                ),
                "{message}"
            );
        }
        assert!(JobMemory::default().add("data", 1000).ensure().is_ok());
    }
}
