//! The dense product in the sparse kernels' order: row r of `A·x` is the chain
//! `acc ← fma(a_rj, x_j, acc)` over every column in increasing order, from `acc = 0`. A zero
//! weight leaves the chain's bits as they were (`spmv.rs`), so a dense matrix gives the bits of
//! its sparse form whichever kernel runs, and the choice between them is timed.
//!
//! The matrix is stored by columns; [`DENSE_TILE`] rows at a time keep their chains in
//! registers while the columns stream past, each column's slice of the tile one contiguous
//! load.

use super::Real;

/// Rows whose chains a kernel keeps in registers at once: four 512-bit vectors of `f32`
/// (eight of 256 bits), independent chains enough to cover a fused multiply-add's latency.
pub(crate) const DENSE_TILE: usize = 64;

/// A dense matrix by columns, borrowed: column j is `values[j·rows..(j + 1)·rows]`.
#[derive(Clone, Copy)]
pub(crate) struct DenseRef<'a, T> {
    pub(crate) rows: usize,
    pub(crate) values: &'a [T],
}

/// `y ← A[first..first + y.len()]·x` by tiles of [`DENSE_TILE`] rows (vectorised with
/// hardware fused multiply-adds where [`mul_dense`] compiles it for them).
///
/// # Panics
/// When the rows run past the matrix or `x` is shorter than its columns.
#[inline(always)]
fn mul_dense_tiles<T: Real>(m: DenseRef<'_, T>, first: usize, x: &[T], y: &mut [T]) {
    let cols = m.values.len() / m.rows.max(1);
    let x = &x[..cols];
    for (t, out) in y.chunks_mut(DENSE_TILE).enumerate() {
        let start = first + t * DENSE_TILE;
        let mut acc = [T::zero(); DENSE_TILE];
        if out.len() == DENSE_TILE {
            for (j, &xj) in x.iter().enumerate() {
                let column = &m.values[j * m.rows + start..][..DENSE_TILE];
                for (a, &w) in acc.iter_mut().zip(column) {
                    *a = w.mul_add(xj, *a);
                }
            }
        } else {
            let len = out.len();
            for (j, &xj) in x.iter().enumerate() {
                let column = &m.values[j * m.rows + start..][..len];
                for (a, &w) in acc.iter_mut().zip(column) {
                    *a = w.mul_add(xj, *a);
                }
            }
        }
        out.copy_from_slice(&acc[..out.len()]);
    }
}

/// `y ← A[first..first + y.len()]·x` with AVX-512 where `avx512` asks for it and the CPU has
/// it, else AVX2 and FMA where the CPU has them, else portable code (fused multiply-adds in
/// libm: the same bits, far slower; the dense kernels are offered only where FMA is).
///
/// # Panics
/// As [`mul_dense_tiles`].
pub(crate) fn mul_dense<T: Real>(
    avx512: bool,
    m: DenseRef<'_, T>,
    first: usize,
    x: &[T],
    y: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512 && super::spmv::has_avx512f() {
            // SAFETY: the CPU has AVX-512F (and AVX2 and FMA); safe code compiled for it.
            return unsafe { x86::dense_avx512(m, first, x, y) };
        }
        if super::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA; safe code compiled for them.
            return unsafe { x86::dense_avx2(m, first, x, y) };
        }
    }
    mul_dense_tiles(m, first, x, y)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{mul_dense_tiles, DenseRef, Real};

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dense_avx2<T: Real>(m: DenseRef<'_, T>, first: usize, x: &[T], y: &mut [T]) {
        mul_dense_tiles(m, first, x, y)
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) fn dense_avx512<T: Real>(m: DenseRef<'_, T>, first: usize, x: &[T], y: &mut [T]) {
        mul_dense_tiles(m, first, x, y)
    }
}
