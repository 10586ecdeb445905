//! Sparse matrices on the device, in the layout every CSR kernel takes.

use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;
use reservoir_core::real::Real;
use reservoir_core::{CsrMatrix, ReservoirError};

use super::{staging, GpuDevice};
use crate::error::Result;

/// A CSR matrix on the device: row pointers and column indices as `u32` that every kernel
/// reads as `int` (the upload checks that they are below 2^31), values in `T`.
#[derive(Debug)]
pub(crate) struct DeviceCsr<T> {
    pub row_ptr: CudaSlice<u32>,
    pub col_idx: CudaSlice<u32>,
    pub values: CudaSlice<T>,
    /// The matrix's number of columns: every column index is below it.
    columns: usize,
}

impl<T> DeviceCsr<T> {
    /// A matrix built on the device: `row_ptr` (rows + 1), `col_idx` and `values` (one per
    /// non-zero), every column index below `columns`.
    pub(crate) fn from_device(
        row_ptr: CudaSlice<u32>,
        col_idx: CudaSlice<u32>,
        values: CudaSlice<T>,
        columns: usize,
    ) -> Self {
        Self {
            row_ptr,
            col_idx,
            values,
            columns,
        }
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Number of columns (every column index is below it).
    pub(crate) fn columns(&self) -> usize {
        self.columns
    }

    /// An error unless every column index is below `columns` (recorded at upload).
    pub(crate) fn check_columns(&self, columns: usize, what: &str) -> Result<()> {
        if self.columns > columns {
            return Err(ReservoirError::invalid(
                what,
                format!("a matrix of {} columns for {columns}", self.columns),
            )
            .into());
        }
        Ok(())
    }
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync> DeviceCsr<T> {
    /// Uploads `matrix`, converting each value with `convert` (e.g. rounding to `f32`); the
    /// conversions run on rayon's threads (at 10^9 synapses one thread takes seconds).
    pub(crate) fn upload<S: Real>(
        device: &GpuDevice,
        matrix: &CsrMatrix<S>,
        convert: impl Fn(S) -> T + Sync,
    ) -> Result<Self> {
        Self::upload_rows(device, matrix, 0..matrix.nrows(), matrix.ncols(), convert)
    }

    /// Uploads the rows `rows` of `matrix` as a matrix of `columns` columns (at least
    /// `matrix`'s), converting each value with `convert`, without a host copy of their
    /// structure.
    pub(crate) fn upload_rows<S: Real>(
        device: &GpuDevice,
        matrix: &CsrMatrix<S>,
        rows: std::ops::Range<usize>,
        columns: usize,
        convert: impl Fn(S) -> T + Sync,
    ) -> Result<Self> {
        let row_ptr = &matrix.row_ptr()[rows.start..=rows.end];
        let (start, end) = (row_ptr[0] as usize, row_ptr[rows.len()] as usize);
        let rebased: Vec<u32> = row_ptr.iter().map(|&p| p - row_ptr[0]).collect();
        let values: Vec<T> = matrix.values()[start..end]
            .par_iter()
            .map(|&v| convert(v))
            .collect();
        let col_idx = &matrix.col_idx()[start..end];
        Self::from_host(
            device,
            &rebased,
            col_idx,
            &values,
            columns.max(matrix.ncols()),
        )
    }

    /// Uploads `matrix` as it is, without a host copy of its values.
    pub(crate) fn upload_exact(device: &GpuDevice, matrix: &CsrMatrix<T>) -> Result<Self>
    where
        T: Real,
    {
        let (row_ptr, col_idx) = (matrix.row_ptr(), matrix.col_idx());
        Self::from_host(device, row_ptr, col_idx, matrix.values(), matrix.ncols())
    }

    /// Uploads a CSR matrix's arrays (valid CSR, every column index below `columns`). The
    /// indices go up as they are: a count of non-zeros and columns below 2^31 bounds every one
    /// of them below 2^31, so the kernels' `int` reads the same numbers.
    fn from_host(
        device: &GpuDevice,
        row_ptr: &[u32],
        col_idx: &[u32],
        values: &[T],
        columns: usize,
    ) -> Result<Self> {
        let (limit, rows) = (i32::MAX as usize, row_ptr.len().saturating_sub(1));
        if values.len() > limit || columns > limit || rows > limit {
            return Err(ReservoirError::invalid(
                "GPU upload",
                format!(
                    "a {rows} x {columns} CSR matrix with {} non-zeros: the kernels take at \
                     most 2^31 - 1 of each",
                    values.len()
                ),
            )
            .into());
        }
        const WHAT: &str = "uploading a CSR matrix";
        Ok(Self {
            row_ptr: staging::upload(device, row_ptr, WHAT)?,
            col_idx: staging::upload(device, col_idx, WHAT)?,
            values: staging::upload(device, values, WHAT)?,
            columns,
        })
    }
}
