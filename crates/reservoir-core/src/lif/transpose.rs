//! Wᵀ of a LIF network's W, the layout of event-driven delivery (row j lists neuron j's
//! targets), built in column blocks on several threads.

use crate::error::Result;
use crate::sparse::CsrMatrix;

/// Synapses from which [`transposed`] splits its work over threads (it then takes ≥ ~1 ms,
/// against ~0.05 ms to start the threads).
const PARALLEL_TRANSPOSE_SYNAPSES: usize = 1 << 20;

/// Columns per pass of [`transposed`]: the write positions of this many columns (targets and
/// values) stay cached while every row contributes its entries in the range.
const TRANSPOSE_BLOCK: usize = 4096;

/// Wᵀ as CSR with its values converted by `convert`: row j lists neuron j's targets
/// (ascending) and weights, the layout of event-driven propagation.
///
/// From [`PARALLEL_TRANSPOSE_SYNAPSES`] on, the entries are counted per column in one part per
/// thread of rayon's pool (as the weights are drawn on it), and the columns are split into one contiguous range per thread, each filling its own
/// part of the output; the result does not depend on the split.
/// At 10^8 synapses (N = 10^5) on the development machine: 2.8 s on one thread (`f64`
/// values; one scatter over all columns, without blocks, took 6.2 s), 2.75 s on two, and
/// 1.4–1.8 s on two for `f32` values (the memory system, not the cores, is the limit there).
pub(crate) fn transposed<T: crate::real::Real + Send>(
    w: &CsrMatrix<f64>,
    convert: impl Fn(f64) -> T + Sync,
) -> Result<CsrMatrix<T>> {
    let threads = if w.nnz() < PARALLEL_TRANSPOSE_SYNAPSES {
        1
    } else {
        rayon::current_num_threads()
    };
    transposed_on(w, convert, threads)
}

/// [`transposed`] on `threads` threads (at least 1).
fn transposed_on<T: crate::real::Real + Send>(
    w: &CsrMatrix<f64>,
    convert: impl Fn(f64) -> T + Sync,
    threads: usize,
) -> Result<CsrMatrix<T>> {
    let (n_rows, n_cols, nnz) = (w.nrows(), w.ncols(), w.nnz());
    let mut out_ptr = column_counts(w.col_idx(), n_cols, threads);
    for j in 0..n_cols {
        out_ptr[j + 1] += out_ptr[j];
    }
    let cols_per_thread = n_cols.div_ceil(threads.max(1)).max(1);
    let mut targets = vec![0u32; nnz];
    let mut out_values = vec![T::zero(); nnz];
    std::thread::scope(|scope| {
        let (mut targets_rest, mut values_rest) = (&mut targets[..], &mut out_values[..]);
        for start in (0..n_cols).step_by(cols_per_thread) {
            let cols = start..(start + cols_per_thread).min(n_cols);
            let len = (out_ptr[cols.end] - out_ptr[start]) as usize;
            let (targets_mine, targets_tail) = targets_rest.split_at_mut(len);
            let (values_mine, values_tail) = values_rest.split_at_mut(len);
            (targets_rest, values_rest) = (targets_tail, values_tail);
            let (out_ptr, convert) = (&out_ptr, &convert);
            scope.spawn(move || {
                scatter_columns(w, cols, out_ptr, targets_mine, values_mine, convert);
            });
        }
    });
    CsrMatrix::from_parts(n_cols, n_rows, out_ptr, targets, out_values)
}

/// `[0, count of column 0, count of column 1, …]` for the column indices `col_idx` (each below
/// `n_cols`), counted in `threads` contiguous parts, each into its own array.
fn column_counts(col_idx: &[u32], n_cols: usize, threads: usize) -> Vec<u32> {
    let count = |part: &[u32]| {
        let mut counts = vec![0u32; n_cols + 1];
        for &j in part {
            counts[j as usize + 1] += 1;
        }
        counts
    };
    if threads < 2 {
        return count(col_idx);
    }
    let chunks: Vec<&[u32]> = col_idx
        .chunks(col_idx.len().div_ceil(threads).max(1))
        .collect();
    let mut parts = vec![Vec::new(); chunks.len()];
    std::thread::scope(|scope| {
        for (counts, part) in parts.iter_mut().zip(chunks) {
            scope.spawn(move || *counts = count(part));
        }
    });
    let mut total = vec![0u32; n_cols + 1];
    for part in parts {
        for (t, c) in total.iter_mut().zip(part) {
            *t += c;
        }
    }
    total
}

/// The part of [`transposed`] for the columns `cols`: `targets` and `values` are the output
/// from `out_ptr[cols.start]` to `out_ptr[cols.end]`. Column block by column block, every row's
/// entries in the block are scattered in ascending row order, so each output row is sorted.
fn scatter_columns<T: Copy>(
    w: &CsrMatrix<f64>,
    cols: std::ops::Range<usize>,
    out_ptr: &[u32],
    targets: &mut [u32],
    values: &mut [T],
    convert: &impl Fn(f64) -> T,
) {
    let (row_ptr, col_idx, w_values) = (w.row_ptr(), w.col_idx(), w.values());
    let base = out_ptr[cols.start];
    let mut next: Vec<u32> = out_ptr[cols.clone()].iter().map(|&p| p - base).collect();
    // Per row, the first entry at or after column cols.start.
    let mut cursor: Vec<usize> = row_ptr
        .windows(2)
        .map(|r| {
            let row = &col_idx[r[0] as usize..r[1] as usize];
            r[0] as usize + row.partition_point(|&j| (j as usize) < cols.start)
        })
        .collect();
    for block_start in cols.clone().step_by(TRANSPOSE_BLOCK) {
        let block_end = (block_start + TRANSPOSE_BLOCK).min(cols.end);
        for (i, (e, &end)) in cursor.iter_mut().zip(&row_ptr[1..]).enumerate() {
            while *e < end as usize && (col_idx[*e] as usize) < block_end {
                let slot = &mut next[col_idx[*e] as usize - cols.start];
                targets[*slot as usize] = i as u32;
                values[*slot as usize] = convert(w_values[*e]);
                *slot += 1;
                *e += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// The blocked transpose against the dense transpose, on matrices narrower and wider than
    /// one block (so rows contribute to several blocks), with empty rows and columns, and the
    /// same on several threads (column ranges of one column up to all, some without entries).
    #[test]
    fn transposed_is_the_transpose() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (rows, cols, density) in [
            (1, 1, 1.0),
            (7, 3, 0.5),
            (300, 9000, 0.002),
            (5000, 10_000, 0.001),
        ] {
            let dense = Array2::from_shape_fn((rows, cols), |_| {
                if rng.random_bool(density) {
                    rng.random_range(-1.0..1.0)
                } else {
                    0.0
                }
            });
            let w = CsrMatrix::from_dense(&dense).unwrap();
            let t = transposed(&w, |v| v).unwrap();
            assert_eq!(t.to_dense(), dense.t());
            let t32 = transposed(&w, |v| v as f32).unwrap();
            assert_eq!(
                t32.values(),
                t.values().iter().map(|&v| v as f32).collect::<Vec<_>>()
            );
            for threads in [2, 3, 7, 64] {
                assert_eq!(
                    transposed_on(&w, |v| v, threads).unwrap(),
                    t,
                    "{threads} threads"
                );
            }
        }
    }
}
