//! The CSR product for a block of sequences stepped together: `Y ← A·X` with X holding
//! [`LANES`] columns, one per sequence, so each non-zero of A is loaded once for all of them
//! and the lanes are one SIMD vector (no gathers).

use super::{CsrRef, Real};

/// Sequences a block steps together: one 256-bit vector of `f32`.
pub const LANES: usize = 8;

/// `Y ← A·X` for X of `ncols × LANES` and Y of `nrows × LANES`, both row-major (lane b of row
/// r at `r·LANES + b`). Each lane's row sum is the chain of fused multiply-adds over the row's
/// non-zeros in order (`spmv.rs`), so a lane's result depends on its own column only and is the
/// bits a single-sequence product gives; the AVX2 build of the same loop only makes the lanes
/// wider and fuses in hardware.
///
/// # Panics
/// When `x` or `y` is shorter than the matrix needs (a bug in the caller, never data).
pub(crate) fn mul_block<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA; the function is safe code compiled for them.
            return unsafe { mul_block_avx2(m, x, y) };
        }
    }
    mul_block_portable(m, x, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn mul_block_avx2<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    mul_block_portable(m, x, y)
}

#[inline(always)]
fn mul_block_portable<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    for (out, w) in y.chunks_exact_mut(LANES).zip(m.row_ptr.windows(2)) {
        let (start, end) = (w[0] as usize, w[1] as usize);
        let mut acc = [T::zero(); LANES];
        for (&c, &v) in m.col_idx[start..end].iter().zip(&m.values[start..end]) {
            let column = c as usize * LANES;
            for (a, &xv) in acc.iter_mut().zip(&x[column..column + LANES]) {
                *a = v.mul_add(xv, *a);
            }
        }
        out.copy_from_slice(&acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lane_is_the_in_order_row_sum_of_its_column() {
        // A = [[1, 0, 2], [0, 3, 0]]: rows summed in column order.
        let (row_ptr, col_idx, values) =
            (vec![0u32, 2, 3], vec![0u32, 2, 1], vec![1.0f32, 2.0, 3.0]);
        let m = CsrRef {
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: &values,
        };
        let x: Vec<f32> = (0..3 * LANES).map(|i| i as f32 * 0.1 + 0.3).collect();
        let mut y = vec![0.0f32; 2 * LANES];
        mul_block(m, &x, &mut y);
        for b in 0..LANES {
            let col = |c: usize| x[c * LANES + b];
            assert_eq!(y[b], 2.0f32.mul_add(col(2), 1.0 * col(0)), "lane {b}");
            assert_eq!(y[LANES + b], 3.0 * col(1), "lane {b}");
        }
    }
}
