//! Compressed sparse row (CSR) matrices for the recurrent weights.

use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{ReservoirError, Result};
use crate::real::{CsrRef, Real};
use crate::spectral::{
    spectral_radius_with, LinearOperator, Phases, SpectralEstimate, SpectralOptions,
};

mod product;

pub use product::SparseProduct;

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
        let matrix = Self::from_checked_rows(nrows, ncols, row_ptr, col_idx, values)?;
        let (row_ptr, col_idx, values) = (&matrix.row_ptr, &matrix.col_idx, &matrix.values);
        // Rows on rayon's threads (a W of 10^9 synapses takes seconds on one); the first bad
        // row is the one reported.
        let row_problem = |row: usize| -> Option<String> {
            let (start, end) = (row_ptr[row], row_ptr[row + 1]);
            if start > end {
                return Some(format!("row_ptr decreases at row {row}"));
            }
            // Every pointer within the non-zeros, not only the last (a file can say anything).
            let Some(cols) = col_idx.get(start as usize..end as usize) else {
                return Some(format!(
                    "row_ptr at row {row} points past the {} non-zeros",
                    values.len()
                ));
            };
            if cols.iter().any(|&c| c as usize >= ncols) || cols.windows(2).any(|c| c[0] >= c[1]) {
                return Some(format!(
                    "row {row}: column indices must be < {ncols} and increasing"
                ));
            }
            None
        };
        if let Some(problem) = (0..nrows).into_par_iter().find_map_first(row_problem) {
            return Err(ReservoirError::invalid(CTX, problem));
        }
        if values.par_iter().any(|v| !v.is_finite()) {
            return Err(ReservoirError::invalid(CTX, "values must be finite"));
        }
        Ok(matrix)
    }

    /// [`CsrMatrix::from_parts`] for rows their maker has checked (each row's columns
    /// increasing and below `ncols`, every value finite, as a draw can check each row while
    /// writing it): only the shapes are checked here, not every non-zero again.
    pub(crate) fn from_checked_rows(
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
        self.values.par_iter_mut().for_each(|v| *v *= factor);
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

    pub(crate) fn row_range(&self, row: usize) -> std::ops::Range<usize> {
        self.row_ptr[row] as usize..self.row_ptr[row + 1] as usize
    }

    fn csr_ref(&self) -> CsrRef<'_, T> {
        CsrRef {
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &self.values,
        }
    }

    /// `y ← A·x`, each row summed in the order every product kernel follows (the same bits
    /// as [`SparseProduct::mul_vec`]).
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
        self.mul_rows_trusted(0, x, y);
        Ok(())
    }

    /// `y ← A[first..first + y.len()]·x`: each row summed as in the whole product.
    ///
    /// # Panics
    /// When `x` is shorter than the matrix needs or the rows run past the matrix (a bug in
    /// the caller, never data).
    fn mul_rows_trusted(&self, first: usize, x: &[T], y: &mut [T]) {
        assert!(
            x.len() >= self.ncols && first + y.len() <= self.nrows,
            "CSR mat-vec lengths"
        );
        crate::real::mul_csr(self.csr_ref().rows(first, y.len()), x, y);
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
        // SAFETY: every column index is below ncols (checked on construction) and x holds
        // ncols · LANES values.
        unsafe { crate::real::mul_block(self.csr_ref(), x, y) };
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
        self.spectral_radius_with(options, &mut ())
    }

    /// [`CsrMatrix::spectral_radius`], telling `phases` where its time went: `spectral setup`,
    /// the product's layout (and the timing of its kernels, once per process), then
    /// [`crate::spectral::spectral_radius_with`]'s phases.
    pub fn spectral_radius_with(
        &self,
        options: &SpectralOptions,
        phases: &mut dyn Phases,
    ) -> Result<SpectralEstimate> {
        if self.nrows != self.ncols {
            return Err(ReservoirError::shape(
                "spectral radius",
                "a square matrix",
                format!("{} x {}", self.nrows, self.ncols),
            ));
        }
        let started = std::time::Instant::now();
        let product = SquareProduct(SparseProduct::new(self)?);
        phases.spent("spectral setup", started.elapsed());
        spectral_radius_with(&product, options, phases)
    }
}

/// The product of a square matrix, so it can serve as a [`LinearOperator`].
struct SquareProduct(SparseProduct<f64>);

impl LinearOperator for SquareProduct {
    fn dim(&self) -> usize {
        self.0.nrows()
    }
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.0.mul_vec_parallel_trusted(x, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
