//! One sequence on several threads: each step's rows split between them, and one barrier per
//! step that spins (a step of N = 1000 takes microseconds; a sleeping barrier's wake-up
//! costs as much) and sleeps only when a partner is late. Every row is computed by the same code as in the one-thread run,
//! so the states are the same bits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ndarray::{ArrayView2, ArrayViewMut2, Axis};

use super::Update;
use crate::real::Real;

/// Multiply-adds of W per step and thread below which a split does not pay: the barrier and
/// the shared state's cache traffic cost about as much as a product this small.
pub(super) const WORK_PER_THREAD: usize = 16_384;
/// Multiply-adds of a whole run below which starting threads does not pay.
pub(super) const RUN_WORK: usize = 1 << 22;

/// How long a thread spins at the barrier before it sleeps: a few steps' time, so a thread
/// whose partner lost its core (more threads than free cores) gives the core up instead of
/// spinning for the rest of its time slice.
const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(50);

/// A barrier for a fixed number of threads that spins, then sleeps, and that a panicking
/// thread poisons so that the others stop instead of waiting for ever.
struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// Threads asleep (or going to sleep) on `wake`.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl SpinBarrier {
    fn new(parties: usize) -> Self {
        Self {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Waits for every party; `false` when a party panicked (stop stepping).
    fn wait(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                self.wake_all();
            }
        } else {
            let started = Instant::now();
            let mut spins = 0u32;
            while self.generation.load(Ordering::Acquire) == generation {
                if self.poisoned.load(Ordering::Relaxed) {
                    return false;
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(64) && started.elapsed() > SPIN_BEFORE_SLEEP {
                    self.sleep_while(generation);
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        !self.poisoned.load(Ordering::Relaxed)
    }

    /// Sleeps until the generation moves on from `generation` or the barrier is poisoned.
    fn sleep_while(&self, generation: usize) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.generation.load(Ordering::SeqCst) == generation
            && !self.poisoned.load(Ordering::SeqCst)
        {
            guard = self
                .wake
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes every sleeping party (taking the lock, so none is between its check and its
    /// sleep).
    fn wake_all(&self) {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.wake.notify_all();
    }
}

/// Poisons the barrier when the thread holding it unwinds.
struct PoisonOnPanic<'a>(&'a SpinBarrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::SeqCst);
            self.0.wake_all();
        }
    }
}

/// The two state buffers of a split run: during step t every thread reads all of buffer
/// t mod 2 and writes its own rows of the other.
#[derive(Clone, Copy)]
struct StateBuffers<T>([*mut T; 2], usize);

// SAFETY: the pointers are only dereferenced through `StateBuffers::step`, whose contract is
// shared reads of one buffer and disjoint writes to the other, the barrier ordering the steps.
unsafe impl<T: Send> Send for StateBuffers<T> {}
unsafe impl<T: Send> Sync for StateBuffers<T> {}

impl<T> StateBuffers<T> {
    /// Step t's whole state (buffer t mod 2) and rows `first..first + rows` of the next.
    ///
    /// # Safety
    /// Both buffers hold the n values and outlive the borrows. In step t no thread writes
    /// buffer t mod 2 and the threads' rows do not overlap; every thread finishes step t
    /// (its borrows end) before any starts step t + 1.
    unsafe fn step<'a>(self, t: usize, first: usize, rows: usize) -> (&'a [T], &'a mut [T]) {
        let Self(pointers, n) = self;
        (
            std::slice::from_raw_parts(pointers[t % 2], n),
            std::slice::from_raw_parts_mut(pointers[(t + 1) % 2].add(first), rows),
        )
    }
}

/// Runs `inputs` (T × K, checked) from `state` on `bounds.len() - 1` threads, thread i
/// computing rows `bounds[i]..bounds[i + 1]` of every step and writing their columns of
/// `states` (T × N, checked); `state` ends as the final state.
pub(super) fn run_on_threads<T: Real>(
    update: &Update<'_, T>,
    bounds: &[usize],
    state: &mut [T],
    inputs: ArrayView2<f64>,
    mut states: ArrayViewMut2<f64>,
) {
    let n = state.len();
    let mut spare = vec![T::zero(); n];
    let buffers = StateBuffers([state.as_mut_ptr(), spare.as_mut_ptr()], n);
    let barrier = SpinBarrier::new(bounds.len() - 1);
    // Each thread's columns of the states.
    let mut parts = Vec::with_capacity(bounds.len() - 1);
    for w in bounds.windows(2).rev() {
        let (rest, part) = states.split_at(Axis(1), w[0]);
        parts.push((w[0], part));
        states = rest;
    }
    parts.reverse();
    let step_rows = |(first, mut out): (usize, ArrayViewMut2<f64>)| {
        let _poison = PoisonOnPanic(&barrier);
        let rows = out.ncols();
        let mut pre = vec![T::zero(); rows];
        for (t, (u, mut out)) in inputs.rows().into_iter().zip(out.rows_mut()).enumerate() {
            // SAFETY: both buffers hold n values and outlive the threads; the bounds do not
            // overlap; the barrier below ends every thread's step t before step t + 1.
            let (x, next) = unsafe { buffers.step(t, first, rows) };
            update.rows(first, x, u, None, &mut pre, next);
            for (o, v) in out.iter_mut().zip(next.iter()) {
                *o = v.as_f64();
            }
            if !barrier.wait() {
                return;
            }
        }
    };
    std::thread::scope(|scope| {
        let mut parts = parts.into_iter();
        let own = parts.next();
        for part in parts {
            scope.spawn(move || step_rows(part));
        }
        if let Some(part) = own {
            step_rows(part);
        }
    });
    if inputs.nrows() % 2 == 1 {
        state.copy_from_slice(&spare);
    }
}
