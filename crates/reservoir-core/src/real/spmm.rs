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
/// When `y` is shorter than the matrix needs (a bug in the caller, never data).
///
/// # Safety
/// Every column index c of `m` has its lanes within x: `(c + 1)·LANES <= x.len()` (true when
/// x holds `ncols · LANES` values of a `CsrMatrix`, whose columns are checked).
pub(crate) unsafe fn mul_block<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA; the caller's contract holds.
            return unsafe { mul_block_avx2(m, x, y) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { mul_block_portable(m, x, y) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn mul_block_avx2<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    // SAFETY: the caller's contract.
    unsafe { mul_block_portable(m, x, y) }
}

/// Rows whose chains run interleaved: a fused multiply-add's latency is several times its
/// issue interval, and each row's lanes are one chain.
const ROWS_TOGETHER: usize = 4;

/// # Safety
/// As [`mul_block`].
#[inline(always)]
unsafe fn mul_block_portable<T: Real>(m: CsrRef<'_, T>, x: &[T], y: &mut [T]) {
    let rows = m.row_ptr.len() - 1;
    // Adds non-zeros `range` of the matrix to the lanes `acc` of one row.
    let chain = |range: std::ops::Range<usize>, acc: &mut [T; LANES]| {
        for k in range {
            // SAFETY: k lies within the arrays (CsrRef's invariant) and every column's lanes
            // within x (the caller's contract).
            let (v, lanes) = unsafe {
                let column = *m.col_idx.get_unchecked(k) as usize * LANES;
                (
                    *m.values.get_unchecked(k),
                    x.get_unchecked(column..column + LANES),
                )
            };
            for (a, &xv) in acc.iter_mut().zip(lanes) {
                *a = v.mul_add(xv, *a);
            }
        }
    };
    let y = &mut y[..rows * LANES];
    let first = rows - rows % ROWS_TOGETHER;
    let (together, rest) = y.split_at_mut(first * LANES);
    for (g, out) in together.chunks_exact_mut(ROWS_TOGETHER * LANES).enumerate() {
        let p = &m.row_ptr[ROWS_TOGETHER * g..=ROWS_TOGETHER * (g + 1)];
        let start: [usize; ROWS_TOGETHER] = std::array::from_fn(|i| p[i] as usize);
        let len: [usize; ROWS_TOGETHER] = std::array::from_fn(|i| (p[i + 1] - p[i]) as usize);
        let common = len.into_iter().min().unwrap_or(0);
        let mut acc = [[T::zero(); LANES]; ROWS_TOGETHER];
        for j in 0..common {
            for (row, a) in acc.iter_mut().enumerate() {
                chain(start[row] + j..start[row] + j + 1, a);
            }
        }
        for (row, a) in acc.iter_mut().enumerate() {
            chain(start[row] + common..start[row] + len[row], a);
        }
        out.copy_from_slice(acc.as_flattened());
    }
    for (r, out) in rest.chunks_exact_mut(LANES).enumerate() {
        let row = first + r;
        let mut acc = [T::zero(); LANES];
        chain(
            m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize,
            &mut acc,
        );
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
        // SAFETY: x holds the 3 columns' lanes.
        unsafe { mul_block(m, &x, &mut y) };
        for b in 0..LANES {
            let col = |c: usize| x[c * LANES + b];
            assert_eq!(y[b], 2.0f32.mul_add(col(2), 1.0 * col(0)), "lane {b}");
            assert_eq!(y[LANES + b], 3.0 * col(1), "lane {b}");
        }
    }

    #[test]
    fn each_lane_has_the_bits_of_the_single_sequence_product() {
        // 11 rows (two groups of four and a remainder) of uneven lengths, some empty.
        let lens = [3usize, 0, 7, 1, 9, 9, 2, 0, 5, 4, 6];
        let mut row_ptr = vec![0u32];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for (r, &len) in lens.iter().enumerate() {
            for j in 0..len {
                col_idx.push(((r * 5 + j * 3) % 13) as u32);
                values.push(((r * 7 + j) as f32 * 0.37).sin());
            }
            let row = &mut col_idx[row_ptr[r] as usize..];
            row.sort_unstable();
            row_ptr.push(col_idx.len() as u32);
        }
        let m = CsrRef {
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: &values,
        };
        let x: Vec<f32> = (0..13 * LANES).map(|i| (i as f32 * 0.71).cos()).collect();
        let mut y = vec![f32::NAN; 11 * LANES];
        // SAFETY: x holds the 13 columns' lanes.
        unsafe { mul_block(m, &x, &mut y) };
        for lane in 0..LANES {
            let column: Vec<f32> = (0..13).map(|c| x[c * LANES + lane]).collect();
            let mut want = vec![0.0f32; 11];
            super::super::mul_csr(m, &column, &mut want);
            for (r, w) in want.iter().enumerate() {
                assert_eq!(
                    y[r * LANES + lane].to_bits(),
                    w.to_bits(),
                    "row {r}, lane {lane}"
                );
            }
        }
    }
}
