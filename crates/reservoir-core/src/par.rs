//! How many threads a computation may use, said by its caller (after faer's `Par`).

use std::num::NonZeroUsize;

/// The threads a reservoir, a runner or a function may spread its work over: given to it by
/// its caller, who knows what else keeps the machine's cores busy. Results never depend on it:
/// every split the engine makes gives the same bits as one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Par {
    /// The calling thread alone.
    #[default]
    Seq,
    /// Up to this many threads (rayon's, or scoped threads of the computation's own).
    Rayon(NonZeroUsize),
}

impl Par {
    /// As many threads as the machine runs at once: the one place the engine asks it.
    pub fn all() -> Self {
        Self::rayon(std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
    }

    /// Up to `threads` threads; 0 and 1 are [`Par::Seq`].
    pub fn rayon(threads: usize) -> Self {
        match NonZeroUsize::new(threads) {
            Some(n) if threads > 1 => Self::Rayon(n),
            _ => Self::Seq,
        }
    }

    /// The thread count, at least 1.
    pub fn threads(self) -> usize {
        match self {
            Self::Seq => 1,
            Self::Rayon(n) => n.get(),
        }
    }

    /// One thread fewer (at least one), for a computation that keeps a thread busy beside it.
    pub(crate) fn less_one(self) -> Self {
        Self::rayon(self.threads() - 1)
    }

    /// As faer's `Par`, for the products the engine leaves to faer.
    pub(crate) fn faer(self) -> faer::Par {
        match self {
            Self::Seq => faer::Par::Seq,
            Self::Rayon(n) => faer::Par::Rayon(n),
        }
    }

    /// The fewest of `items` a rayon task takes so that they split into at most
    /// [`Par::threads`] tasks (`with_min_len`).
    pub(crate) fn min_len(self, items: usize) -> usize {
        items.div_ceil(self.threads()).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_or_none_is_sequential() {
        assert_eq!(Par::rayon(0), Par::Seq);
        assert_eq!(Par::rayon(1), Par::Seq);
        assert_eq!(Par::rayon(3).threads(), 3);
        assert_eq!(Par::rayon(2).less_one(), Par::Seq);
        assert_eq!(Par::Seq.less_one(), Par::Seq);
        assert_eq!(Par::rayon(4).min_len(10), 3);
        assert_eq!(Par::Seq.min_len(0), 1);
        assert!(Par::all().threads() >= 1);
    }
}
