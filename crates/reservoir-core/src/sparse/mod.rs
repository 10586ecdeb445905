//! Compressed sparse row (CSR) matrices for the recurrent weights.

use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{ReservoirError, Result};
use crate::real::{CsrRef, Real};
use crate::spectral::{spectral_radius, LinearOperator, SpectralEstimate, SpectralOptions};

/// Non-zeros from which a spectral-radius product spreads its rows over rayon's threads: a
/// product of 2^17 non-zeros takes ~0.1 ms on one core, well above the pool's hand-off.
const PARALLEL_PRODUCT_NONZEROS: usize = 1 << 17;

/// A CSR matrix whose structure is checked on construction (and on deserialisation), so the
/// mat-vec can index without bounds checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CsrParts<T>", bound = "T: Real")]
pub struct CsrMatrix<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

/// The raw arrays of a CSR matrix, as stored on disk.
#[derive(Deserialize)]
#[serde(bound = "T: Real")]
struct CsrParts<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

impl<T: Real> TryFrom<CsrParts<T>> for CsrMatrix<T> {
    type Error = ReservoirError;
    fn try_from(p: CsrParts<T>) -> Result<Self> {
        Self::from_parts(p.nrows, p.ncols, p.row_ptr, p.col_idx, p.values)
    }
}

impl<T: Real> CsrMatrix<T> {
    /// Builds a matrix from CSR arrays, checking that `row_ptr` is monotone and ends at
    /// `nnz`, that every column index is `< ncols` and strictly increasing within its row.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        const CTX: &str = "CSR matrix";
        if Some(row_ptr.len()) != nrows.checked_add(1) {
            return Err(ReservoirError::shape(
                CTX,
                format!("{nrows} + 1 row pointers"),
                row_ptr.len(),
            ));
        }
        if col_idx.len() != values.len() {
            return Err(ReservoirError::shape(CTX, col_idx.len(), values.len()));
        }
        if ncols > i32::MAX as usize {
            return Err(ReservoirError::invalid(CTX, "more than 2^31 - 1 columns"));
        }
        if row_ptr.first() != Some(&0) {
            return Err(ReservoirError::invalid(CTX, "row_ptr must start at 0"));
        }
        if row_ptr[nrows] as usize != values.len() {
            return Err(ReservoirError::invalid(
                CTX,
                "row_ptr must end at the number of non-zeros",
            ));
        }
        for (row, w) in row_ptr.windows(2).enumerate() {
            if w[0] > w[1] {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!("row_ptr decreases at row {row}"),
                ));
            }
            // Every pointer within the non-zeros, not only the last (a file can say anything).
            let Some(cols) = col_idx.get(w[0] as usize..w[1] as usize) else {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!(
                        "row_ptr at row {row} points past the {} non-zeros",
                        values.len()
                    ),
                ));
            };
            if cols.iter().any(|&c| c as usize >= ncols) || cols.windows(2).any(|c| c[0] >= c[1]) {
                return Err(ReservoirError::invalid(
                    CTX,
                    format!("row {row}: column indices must be < {ncols} and increasing"),
                ));
            }
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(CTX, "values must be finite"));
        }
        Ok(Self {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Number of stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Row pointers (`nrows + 1` entries).
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }

    /// Column index of every non-zero.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }

    /// Value of every non-zero.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Multiplies every value by `factor`.
    pub fn scale(&mut self, factor: T) {
        for v in &mut self.values {
            *v *= factor;
        }
    }

    /// The same matrix with every value `v` replaced by `f(v)`, or the first error `f` gives.
    pub fn try_map_values<U: Real, E>(
        &self,
        f: impl FnMut(T) -> std::result::Result<U, E>,
    ) -> std::result::Result<CsrMatrix<U>, E> {
        Ok(CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self
                .values
                .iter()
                .copied()
                .map(f)
                .collect::<std::result::Result<_, E>>()?,
        })
    }

    /// The same matrix with every value rounded to `U`.
    pub fn cast<U: Real>(&self) -> CsrMatrix<U> {
        let Ok(matrix) =
            self.try_map_values(|v| Ok::<U, std::convert::Infallible>(U::from_f64(v.as_f64())));
        matrix
    }

    /// The dense equivalent.
    pub fn to_dense(&self) -> Array2<T> {
        let mut dense = Array2::zeros((self.nrows, self.ncols));
        for row in 0..self.nrows {
            for k in self.row_range(row) {
                dense[(row, self.col_idx[k] as usize)] = self.values[k];
            }
        }
        dense
    }

    fn row_range(&self, row: usize) -> std::ops::Range<usize> {
        self.row_ptr[row] as usize..self.row_ptr[row + 1] as usize
    }

    /// `y ← A·x`.
    ///
    /// # Errors
    /// A shape error when `x.len() != ncols` or `y.len() != nrows`.
    pub fn mul_vec(&self, x: &[T], y: &mut [T]) -> Result<()> {
        if x.len() != self.ncols || y.len() != self.nrows {
            return Err(ReservoirError::shape(
                "CSR mat-vec",
                format!("x of {} and y of {}", self.ncols, self.nrows),
                format!("x of {} and y of {}", x.len(), y.len()),
            ));
        }
        self.mul_vec_trusted(x, y);
        Ok(())
    }

    /// `y ← A·x` for callers that have checked the lengths once (the reservoir's hot loop).
    ///
    /// # Panics
    /// When `x` or `y` is shorter than the matrix needs (a bug in the caller, never data).
    pub(crate) fn mul_vec_trusted(&self, x: &[T], y: &mut [T]) {
        // The SIMD kernels read x and write y by index: the lengths are checked here, once
        // per product, whatever the caller promised.
        assert!(
            x.len() >= self.ncols && y.len() >= self.nrows,
            "CSR mat-vec lengths"
        );
        let matrix = CsrRef {
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &self.values,
        };
        T::csr_mul_vec(matrix, x, y);
    }

    /// `Y ← A·X` for a block of [`crate::real::LANES`] sequences (X: ncols × LANES, Y: nrows ×
    /// LANES, row-major), for callers that have checked the lengths once.
    ///
    /// # Panics
    /// When `x` or `y` is shorter than the matrix needs (a bug in the caller, never data).
    pub(crate) fn mul_block_trusted(&self, x: &[T], y: &mut [T]) {
        use crate::real::LANES;
        assert!(
            x.len() >= self.ncols * LANES && y.len() >= self.nrows * LANES,
            "CSR block product lengths"
        );
        let matrix = CsrRef {
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &self.values,
        };
        crate::real::mul_block(matrix, x, y);
    }

    /// [`CsrMatrix::mul_vec_trusted`] with blocks of rows on rayon's threads once the matrix
    /// has [`PARALLEL_PRODUCT_NONZEROS`]. Every row is summed by the same kernel as in one
    /// product over all rows, so the result is the same bit for bit whatever the threads.
    ///
    /// # Panics
    /// As [`CsrMatrix::mul_vec_trusted`].
    pub(crate) fn mul_vec_parallel_trusted(&self, x: &[T], y: &mut [T]) {
        let threads = rayon::current_num_threads();
        if threads < 2 || self.nnz() < PARALLEL_PRODUCT_NONZEROS {
            return self.mul_vec_trusted(x, y);
        }
        assert!(
            x.len() >= self.ncols && y.len() >= self.nrows,
            "CSR mat-vec lengths"
        );
        // A few blocks per thread even out rows of unequal length.
        let rows_per_block = self.nrows.div_ceil(4 * threads).max(1);
        y[..self.nrows]
            .par_chunks_mut(rows_per_block)
            .enumerate()
            .for_each(|(block, y_block)| {
                let first = block * rows_per_block;
                // The row pointers stay offsets into the whole of col_idx and values.
                let rows = CsrRef {
                    row_ptr: &self.row_ptr[first..=first + y_block.len()],
                    col_idx: &self.col_idx,
                    values: &self.values,
                };
                T::csr_mul_vec(rows, x, y_block);
            });
    }
}

impl CsrMatrix<f64> {
    /// The sparse equivalent of a dense matrix (exact zeros are dropped).
    pub fn from_dense(dense: &Array2<f64>) -> Result<Self> {
        let (nrows, ncols) = dense.dim();
        let mut row_ptr = Vec::with_capacity(nrows + 1);
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        row_ptr.push(0);
        for row in dense.rows() {
            for (c, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    col_idx.push(c as u32);
                    values.push(v);
                }
            }
            let nnz = u32::try_from(values.len())
                .map_err(|_| ReservoirError::invalid("CSR matrix", "more than 2^32 non-zeros"))?;
            row_ptr.push(nnz);
        }
        Self::from_parts(nrows, ncols, row_ptr, col_idx, values)
    }
}

impl CsrMatrix<f64> {
    /// Spectral radius of a square matrix by power iteration (see [`crate::spectral`]).
    pub fn spectral_radius(&self, options: &SpectralOptions) -> Result<SpectralEstimate> {
        if self.nrows != self.ncols {
            return Err(ReservoirError::shape(
                "spectral radius",
                "a square matrix",
                format!("{} x {}", self.nrows, self.ncols),
            ));
        }
        spectral_radius(&SquareCsr(self), options)
    }
}

/// A CSR matrix known to be square, so it can serve as a [`LinearOperator`].
struct SquareCsr<'a>(&'a CsrMatrix<f64>);

impl LinearOperator for SquareCsr<'_> {
    fn dim(&self) -> usize {
        self.0.nrows
    }
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.0.mul_vec_parallel_trusted(x, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn parts_from_a_file_are_checked_before_they_are_indexed() {
        let parts = |nrows, row_ptr: Vec<u32>| {
            CsrMatrix::<f64>::from_parts(nrows, 3, row_ptr, vec![0, 1, 2], vec![1.0, 2.0, 3.0])
        };
        // A middle pointer past the non-zeros, with the first and last ones right.
        let past = parts(2, vec![0, 999, 3]).expect_err("pointer past the end");
        assert!(past.to_string().contains("points past"), "{past}");
        assert!(parts(usize::MAX, vec![0, 3]).is_err());
        assert!(parts(2, vec![0, 2, 1]).is_err());
        assert!(parts(1, vec![0, 3]).is_ok());
    }

    /// A random n × n CSR matrix with rows of uneven length (0 to 2·mean non-zeros).
    fn random_csr(n: usize, mean_per_row: usize, rng: &mut ChaCha8Rng) -> CsrMatrix<f64> {
        let (mut row_ptr, mut col_idx, mut values) = (vec![0u32], Vec::new(), Vec::new());
        for _ in 0..n {
            let len = rng.random_range(0..=2 * mean_per_row).min(n);
            let mut cols: Vec<u32> = rand::seq::index::sample(rng, n, len)
                .into_iter()
                .map(|c| c as u32)
                .collect();
            cols.sort_unstable();
            values.extend((0..len).map(|_| rng.random_range(-1.0..1.0)));
            col_idx.extend(cols);
            row_ptr.push(col_idx.len() as u32);
        }
        CsrMatrix::from_parts(n, n, row_ptr, col_idx, values).expect("a valid CSR matrix")
    }

    #[test]
    fn the_parallel_product_is_the_sequential_one_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let a = random_csr(3001, 60, &mut rng);
        assert!(a.nnz() >= PARALLEL_PRODUCT_NONZEROS);
        let x: Vec<f64> = (0..3001).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut sequential = vec![0.0; 3001];
        a.mul_vec_trusted(&x, &mut sequential);
        for threads in [2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool");
            let mut parallel = vec![f64::NAN; 3001];
            pool.install(|| a.mul_vec_parallel_trusted(&x, &mut parallel));
            assert!(
                parallel
                    .iter()
                    .zip(&sequential)
                    .all(|(p, s)| p.to_bits() == s.to_bits()),
                "{threads} threads"
            );
        }
    }
}
