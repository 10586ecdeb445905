//! Host memory: what a large buffer will need, checked against what the machine has before it
//! is allocated, and allocation that fails with an error instead of aborting the process.
//!
//! Linux overcommits memory, so a buffer far larger than the machine can hold is often granted
//! and the process is killed only when it is written; and an allocation the allocator refuses
//! aborts a Rust program. Every buffer whose size comes from a config or a file therefore goes
//! through [`ensure_available`] (the estimate against `MemAvailable`, the cgroup's limit and
//! the process's own limits, as `ulimit -v` sets them) and then [`try_vec`] or `try_reserve`,
//! so either failure is an
//! [`ReservoirError::OutOfMemory`] naming the buffer, the size needed and the size available.

pub use crate::bytes::Bytes;
use crate::error::{ReservoirError, Result};

/// Bytes of `count` values of `bytes_each` bytes, saturating at `u64::MAX` (an estimate that
/// large is refused anyway).
pub fn bytes_of(count: usize, bytes_each: usize) -> u64 {
    (count as u64).saturating_mul(bytes_each as u64)
}

/// Bytes this process can still allocate without swapping, being killed or refused: the least
/// of `MemAvailable` of `/proc/meminfo`, the cgroup v2 limit's headroom, and the headroom under
/// the process's address-space and data limits (`RLIMIT_AS`, `RLIMIT_DATA`: what `ulimit -v`
/// and `ulimit -d` set) over what it has mapped. `None` when none can be read (not Linux), in
/// which case only fallible allocation protects a job.
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
    [meminfo, cgroup, limit_headroom()]
        .into_iter()
        .flatten()
        .min()
}

/// The headroom under the process's address-space and data-size limits: each soft limit of
/// `/proc/self/limits` that is set, less the process's mapped size (`VmSize`) or data size
/// (`VmData`) of `/proc/self/status`. `None` when neither limit is set or readable.
fn limit_headroom() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    [
        ("Max address space", "VmSize:"),
        ("Max data size", "VmData:"),
    ]
    .into_iter()
    .filter_map(|(limit, used)| {
        let limit = soft_limit(&limits, limit)?;
        Some(limit.saturating_sub(status_bytes(&status, used)?))
    })
    .min()
}

/// The soft limit in bytes of the `/proc/self/limits` row `name`; `None` when unlimited or
/// absent.
fn soft_limit(limits: &str, name: &str) -> Option<u64> {
    let rest = limits.lines().find_map(|line| line.strip_prefix(name))?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The value in bytes of the `/proc/self/status` field `name` (given in kB).
fn status_bytes(status: &str, name: &str) -> Option<u64> {
    let rest = status.lines().find_map(|line| line.strip_prefix(name))?;
    let kb: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb.saturating_mul(1024))
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
    fn process_limits_are_read_from_proc() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max data size             unlimited            unlimited            bytes\n\
                      Max address space         4096000000           unlimited            bytes\n";
        assert_eq!(soft_limit(limits, "Max address space"), Some(4_096_000_000));
        assert_eq!(soft_limit(limits, "Max data size"), None);
        assert_eq!(soft_limit(limits, "Max stack size"), None);
        let status = "Name:\treservoir\nVmSize:\t  123456 kB\nVmData:\t    2048 kB\n";
        assert_eq!(status_bytes(status, "VmSize:"), Some(123_456 * 1024));
        assert_eq!(status_bytes(status, "VmData:"), Some(2048 * 1024));
        assert_eq!(status_bytes(status, "VmRSS:"), None);
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
