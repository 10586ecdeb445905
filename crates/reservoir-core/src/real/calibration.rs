//! Which sparse product kernel is fastest on this machine: timed, not guessed from feature
//! flags (hardware gathers are fast on some cores and slow on others that have them, and
//! AVX-512 pays on some cores and not on others). [`fastest_of`] times any set of kernels
//! (the LIF step's too).
//!
//! Every kernel gives the same bits (`spmv.rs`), so the choice changes the speed only, and a
//! run that takes another kernel than the last (timings are noisy) still gives the same
//! states. It is made once per process for each kind of matrix (value type, orders of
//! magnitude of the non-zeros and of the row length) and kept.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::{ProductKernel, Real};
use crate::error::Result;

/// Products are timed in batches of at least this long, so the clock's resolution is noise.
const BATCH: Duration = Duration::from_micros(50);
/// Untimed products of a kernel before each of its batches.
const WARM_UP_PRODUCTS: usize = 2;
/// Rounds of timings (each kernel once per round, interleaved so drift hits all alike); the
/// fastest batch of each kernel counts.
const ROUNDS: usize = 3;

/// Matrices alike in these share one measurement (the columns too: with the row length
/// they give the density, which decides whether the dense layout competes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct MatrixKind {
    value_bytes: usize,
    nonzeros_log2: u32,
    row_length_log2: u32,
    columns_log2: u32,
}

fn log2_ceil(n: usize) -> u32 {
    n.max(1).next_power_of_two().trailing_zeros()
}

/// One product per call with a candidate kernel, as the calibration times it.
pub(crate) type TimedProduct<'a> = (ProductKernel, Box<dyn FnMut() + 'a>);

/// The fastest kernel for a matrix of `nonzeros` over `rows` rows and `cols` columns with
/// values of type `T`:
/// the one measured for its kind earlier in this process, or else the fastest of the
/// products `prepare` makes for the candidates it is given (the first candidate where it
/// makes none).
///
/// # Errors
/// What `prepare` returns (e.g. no memory for a layout to time).
pub(crate) fn fastest_kernel<'a, T: Real>(
    (nonzeros, rows, cols): (usize, usize, usize),
    prepare: &mut dyn FnMut(&[ProductKernel]) -> Result<Vec<TimedProduct<'a>>>,
) -> Result<ProductKernel> {
    let candidates = ProductKernel::available::<T>();
    if let [only] = candidates[..] {
        return Ok(only);
    }
    let kind = MatrixKind {
        value_bytes: std::mem::size_of::<T>(),
        nonzeros_log2: log2_ceil(nonzeros),
        row_length_log2: log2_ceil(nonzeros / rows.max(1)),
        columns_log2: log2_ceil(cols),
    };
    static CHOICES: Remembered<MatrixKind, ProductKernel> = Remembered::new();
    CHOICES.get_or_choose(kind, || {
        Ok(fastest_of(prepare(&candidates)?).unwrap_or(candidates[0]))
    })
}

/// Choices kept for the rest of the process, one per kind of input, shared by all threads.
pub(crate) struct Remembered<K, V>(OnceLock<Mutex<HashMap<K, V>>>);

impl<K: Eq + std::hash::Hash, V: Copy> Remembered<K, V> {
    pub(crate) const fn new() -> Self {
        Self(OnceLock::new())
    }

    /// The choice kept for `kind`, or else the one `choose` makes, then kept. The lock is not
    /// held while `choose` runs (a timing must not stall other threads' lookups); two threads
    /// meeting a new kind at once both time it, and the last keeps its choice.
    pub(crate) fn get_or_choose<E>(
        &self,
        kind: K,
        choose: impl FnOnce() -> std::result::Result<V, E>,
    ) -> std::result::Result<V, E> {
        let choices = self.0.get_or_init(Mutex::default);
        let lock = || choices.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&known) = lock().get(&kind) {
            return Ok(known);
        }
        let chosen = choose()?;
        lock().insert(kind, chosen);
        Ok(chosen)
    }
}

/// The kernel of the fastest of `products` (the first listed wins ties), `None` when empty:
/// what every timed choice of a kernel in the engine calls (the LIF step's too).
pub(crate) fn fastest_of<K: Copy>(mut products: Vec<(K, Box<dyn FnMut() + '_>)>) -> Option<K> {
    let mut one = Duration::ZERO;
    for (_, product) in &mut products {
        let t = Instant::now();
        product();
        one = one.max(t.elapsed());
    }
    let per_batch = (BATCH.as_nanos() / one.as_nanos().max(1)).clamp(1, 10_000) as u32;
    let mut best = vec![Duration::MAX; products.len()];
    for _ in 0..ROUNDS {
        for (fastest, (_, product)) in best.iter_mut().zip(&mut products) {
            // Products untimed first: a run multiplies by the same layout step after step, and
            // one that fills much of the last-level cache reaches that speed only after a few
            // products once the other kernels' layouts have been through the cache.
            for _ in 0..WARM_UP_PRODUCTS {
                product();
            }
            let t = Instant::now();
            for _ in 0..per_batch {
                product();
            }
            *fastest = (*fastest).min(t.elapsed() / per_batch);
        }
    }
    let mut chosen: Option<(K, Duration)> = None;
    for ((kernel, _), &time) in products.iter().zip(&best) {
        if chosen.is_none_or(|(_, t)| time < t) {
            chosen = Some((*kernel, time));
        }
    }
    chosen.map(|(kernel, _)| kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_product_is_chosen_and_the_choice_is_kept() {
        let slow = || std::thread::sleep(Duration::from_micros(200));
        let products: Vec<TimedProduct<'_>> = vec![
            (ProductKernel::Avx2Gather, Box::new(slow)),
            (ProductKernel::Scalar, Box::new(|| {})),
        ];
        assert_eq!(fastest_of(products), Some(ProductKernel::Scalar));
        assert_eq!(fastest_of::<ProductKernel>(Vec::new()), None);

        // A kind never seen in this process (no other test builds a matrix this big).
        let shape = (1 << 40, 1 << 20, 1 << 20);
        let mut calls = 0;
        let mut prepare = |candidates: &[ProductKernel]| {
            calls += 1;
            Ok(candidates
                .iter()
                .map(|&k| -> TimedProduct<'static> { (k, Box::new(|| {})) })
                .collect())
        };
        let first = fastest_kernel::<f32>(shape, &mut prepare).expect("kernel");
        let again = fastest_kernel::<f32>(shape, &mut prepare).expect("kernel");
        assert!(ProductKernel::available::<f32>().contains(&first));
        assert_eq!(again, first, "the choice is kept for the process");
        assert!(calls <= 1, "timed once");
    }
}
