//! How many threads one sequence's run may spread its steps over, from the calling thread.
//!
//! A run that splits each step's rows over threads waits for all of them at every step, so
//! it must not take cores that other work of the same job keeps busy: on a rayon worker (the
//! pool's other threads run the job's other lanes or sequences) a run keeps to its own
//! thread, and a caller that keeps cores busy itself (the ridge sums of a fit, added on a
//! thread of their own) says so with [`with_cores_kept`].

use std::cell::Cell;

thread_local! {
    /// Cores the calling thread keeps for other work while it runs.
    static KEPT: Cell<usize> = const { Cell::new(0) };
}

/// The threads a run started on this thread may use: 1 on a rayon worker, else rayon's
/// thread count less the cores kept by [`with_cores_kept`], at least 1.
pub(crate) fn run_threads() -> usize {
    if rayon::current_thread_index().is_some() {
        return 1;
    }
    rayon::current_num_threads()
        .saturating_sub(KEPT.with(Cell::get))
        .max(1)
}

/// Calls `f` with `kept` cores kept for other work (runs in `f` leave them free).
pub(crate) fn with_cores_kept<R>(kept: usize, f: impl FnOnce() -> R) -> R {
    let before = KEPT.with(|k| k.replace(kept));
    let result = f();
    KEPT.with(|k| k.set(before));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_and_kept_cores_lower_the_threads_of_a_run() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("pool");
        // Called from this (non-pool) thread: the global pool's count, less what is kept.
        let all = rayon::current_num_threads();
        assert_eq!(run_threads(), all);
        assert_eq!(
            with_cores_kept(1, run_threads),
            all.saturating_sub(1).max(1)
        );
        assert_eq!(run_threads(), all, "the kept cores end with the call");
        // On a worker of a pool: its own thread only.
        assert_eq!(pool.install(run_threads), 1);
    }
}
