//! How many threads one sequence's run may spread its steps over, from the calling thread.
//!
//! A run that splits each step's rows over threads waits for all of them at every step, so
//! it must not take cores that other work of the same job keeps busy. Callers that keep cores
//! busy themselves say how many threads a run may use with [`with_run_threads`]: a run per
//! rayon task (a sweep lane, a sequence among many) keeps to its own thread, and a fit whose
//! ridge sums are added on a thread of their own leaves that core to them.

use std::cell::Cell;

thread_local! {
    /// Threads a run on this thread may use at most (`usize::MAX`: no limit set).
    static LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The threads a run started on this thread may use: rayon's thread count (that of the pool
/// it runs in), lowered to the limit set by [`with_run_threads`], at least 1.
pub(crate) fn run_threads() -> usize {
    rayon::current_num_threads()
        .min(LIMIT.with(Cell::get))
        .max(1)
}

/// Calls `f` with runs on this thread limited to `threads` threads.
pub(crate) fn with_run_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    let before = LIMIT.with(|limit| limit.replace(threads));
    let result = f();
    LIMIT.with(|limit| limit.set(before));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_lowers_the_threads_of_runs_for_its_call_only() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("pool");
        assert_eq!(pool.install(run_threads), 3, "a pool's threads");
        assert_eq!(pool.install(|| with_run_threads(2, run_threads)), 2);
        assert_eq!(pool.install(|| with_run_threads(1, run_threads)), 1);
        assert_eq!(pool.install(run_threads), 3, "the limit ends with the call");
        assert_eq!(
            pool.install(|| with_run_threads(8, run_threads)),
            3,
            "never more than the pool has"
        );
    }
}
