//! A deterministic parallel map over a slice, on scoped threads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::{ReservoirError, Result};

/// The number of threads the machine runs at once (1 when it cannot say).
pub(crate) fn cpu_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` on every item, up to `threads` items at a time, results in item order. Which thread
/// computes an item does not change its result. After an error no new item is started, and
/// the first error in item order is returned.
pub(crate) fn try_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let mut slots: Vec<Option<Result<R>>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while !failed.load(Ordering::Relaxed) {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else {
                            break;
                        };
                        let result = f(item);
                        failed.fetch_or(result.is_err(), Ordering::Relaxed);
                        done.push((index, result));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            let done = worker
                .join()
                .map_err(|_| ReservoirError::numerical("parallel map", "a thread panicked"))?;
            for (index, result) in done {
                slots[index] = Some(result);
            }
        }
        Ok::<(), ReservoirError>(())
    })?;
    // Items are taken in increasing order, so those left unstarted after an error all come
    // after it: the first error in item order is met before any empty slot.
    slots
        .into_iter()
        .enumerate()
        .map(|(index, slot)| {
            slot.unwrap_or_else(|| {
                Err(ReservoirError::numerical(
                    "parallel map",
                    format!("item {index} was not computed"),
                ))
            })
        })
        .collect()
}
