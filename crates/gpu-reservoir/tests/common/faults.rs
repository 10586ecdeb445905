//! The harness of the device-fault tests: a time limit on every test body, so a hang fails
//! instead of stalling the run, sizes that shrink under compute-sanitizer, and the checks of
//! "the same numbers as alone".

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use reservoir_core::{ReservoirConfig, ReservoirParams};

/// Whether the tests run under compute-sanitizer (`sanitize.sh` sets `RESERVOIR_SANITIZE=1`):
/// everything is much slower there, and the tool needs device memory of its own.
pub fn sanitizing() -> bool {
    std::env::var("RESERVOIR_SANITIZE").is_ok_and(|v| v == "1")
}

/// The time a test body may take: `seconds` on an idle GPU, 30 times that under the sanitizer.
pub fn limit(seconds: u64) -> Duration {
    Duration::from_secs(if sanitizing() { 30 * seconds } else { seconds })
}

/// `normal`, or `small` under the sanitizer (steps, sequences, rounds).
pub fn sized(normal: usize, small: usize) -> usize {
    if sanitizing() {
        small
    } else {
        normal
    }
}

/// Runs `body` on a thread of its own and returns its result; a panic in it is re-raised
/// here, and a body still running after `limit` fails the test as a hang.
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = mpsc::channel();
    let worker = thread::Builder::new()
        .name(what.to_owned())
        .spawn(move || {
            let _ = done.send(body());
        })
        .expect("spawning the test body");
    match result.recv_timeout(limit) {
        Ok(value) => {
            let _ = worker.join();
            value
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no result after {limit:?}: a hang")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("{what}: the body ended without a result"),
        },
    }
}

/// An echo-state config of `n` units and `k` inputs at `density`, its leak rate and seed drawn
/// from `rng`.
pub fn esn_config(rng: &mut ChaCha8Rng, n: usize, k: usize, density: f64) -> ReservoirConfig {
    ReservoirParams::new()
        .size(n)
        .input_size(k)
        .connection_prob(density)
        .spectral_radius(0.9)
        .leak_rate(rng.random_range(0.2..1.0))
        .bias_scaling(0.2)
        .seed(rng.random())
        .check()
        .expect("config")
}

/// Asserts that two results are the same numbers, bit for bit.
pub fn assert_same_bits(what: &str, got: &[f64], expected: &[f64]) {
    assert_eq!(got.len(), expected.len(), "{what}: lengths");
    let differing = got
        .iter()
        .zip(expected)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(
        differing,
        0,
        "{what}: {differing} of {} values differ from the run alone",
        got.len()
    );
}
