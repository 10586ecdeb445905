//! Host memory: what a large buffer will need, checked against what the machine has before it
//! is allocated, and allocation that fails with an error instead of aborting the process.
//!
//! Linux overcommits memory, so a buffer far larger than the machine can hold is often granted
//! and the process is killed only when it is written; and an allocation the allocator refuses
//! aborts a Rust program. Every buffer whose size comes from a config or a file therefore goes
//! through [`ensure_available`] (the estimate against `MemAvailable` and the cgroup's limit)
//! and then [`try_vec`] or `try_reserve`, so either failure is an
//! [`ReservoirError::OutOfMemory`] naming the buffer, the size needed and the size available.

pub use crate::bytes::Bytes;
use crate::error::{ReservoirError, Result};

/// Bytes of `count` values of `bytes_each` bytes, saturating at `u64::MAX` (an estimate that
/// large is refused anyway).
pub fn bytes_of(count: usize, bytes_each: usize) -> u64 {
    (count as u64).saturating_mul(bytes_each as u64)
}

/// Bytes this process can still allocate without swapping or being killed: `MemAvailable` of
/// `/proc/meminfo`, lowered to the cgroup v2 limit's headroom when there is one. `None` when
/// neither can be read (not Linux), in which case only fallible allocation protects a job.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemAvailable:"))
                .and_then(|rest| rest.trim().strip_suffix("kB"))
                .and_then(|kb| kb.trim().parse::<u64>().ok())
                .map(|kb| kb.saturating_mul(1024))
        });
    let read = |name: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{name}"))
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
    };
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(current)) => Some(max.saturating_sub(current)),
        _ => None,
    };
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An [`ReservoirError::OutOfMemory`] error unless `needed` bytes for `what` fit in
/// [`available`] memory.
pub fn ensure_available(what: &str, needed: u64) -> Result<()> {
    match available() {
        Some(available) if needed > available => Err(ReservoirError::OutOfMemory {
            what: what.to_string(),
            needed,
            available: Some(available),
        }),
        _ => Ok(()),
    }
}

/// A vector of `len` copies of `value`, or an [`ReservoirError::OutOfMemory`] error naming
/// `what` when it cannot be allocated.
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>> {
    let mut vector = try_with_capacity(what, len)?;
    vector.resize(len, value);
    Ok(vector)
}

/// An empty vector with room for `capacity` values, or an [`ReservoirError::OutOfMemory`]
/// error naming `what`.
pub fn try_with_capacity<T>(what: &str, capacity: usize) -> Result<Vec<T>> {
    let mut vector = Vec::new();
    vector
        .try_reserve_exact(capacity)
        .map_err(|_| ReservoirError::OutOfMemory {
            what: what.to_string(),
            needed: bytes_of(capacity, std::mem::size_of::<T>()),
            available: available(),
        })?;
    Ok(vector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_decimal_units() {
        assert_eq!(Bytes(999).to_string(), "999 bytes");
        assert_eq!(Bytes(7_200_000_000).to_string(), "7.20 GB");
        assert_eq!(Bytes(u64::MAX).to_string(), "18446.74 PB");
    }

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        let error = try_vec::<f64>("a test buffer", usize::MAX / 4, 0.0).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("not enough memory for a test buffer: needs"),
            "{error}"
        );
        assert!(try_vec("a small buffer", 10, 1u8).is_ok_and(|v| v == [1; 10]));
    }

    #[test]
    fn the_estimate_is_checked_against_the_machine() {
        if let Some(available) = available() {
            assert!(available > 0);
            let error = ensure_available("a huge job", u64::MAX).unwrap_err();
            assert!(error.to_string().contains("a huge job"), "{error}");
            assert!(ensure_available("a tiny job", 1).is_ok());
        }
    }
}
