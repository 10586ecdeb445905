//! Sparse matrices on the device, in the layout every CSR kernel takes.

use cudarc::driver::{CudaSlice, DeviceRepr};
use rayon::prelude::*;
use reservoir_core::{CsrMatrix, ReservoirError};

use super::GpuDevice;
use crate::error::{DriverContext, Result};

/// A CSR matrix on the device: `i32` row pointers and column indices, values in `T`.
#[derive(Debug)]
pub(crate) struct DeviceCsr<T> {
    pub row_ptr: CudaSlice<i32>,
    pub col_idx: CudaSlice<i32>,
    pub values: CudaSlice<T>,
    /// The matrix's number of columns: every column index is below it.
    columns: usize,
}

fn to_i32(values: &[u32]) -> Result<Vec<i32>> {
    values
        .par_iter()
        .map(|&v| i32::try_from(v))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            ReservoirError::invalid(
                "GPU upload",
                "a CSR matrix with more than 2^31 - 1 non-zeros",
            )
            .into()
        })
}

impl<T> DeviceCsr<T> {
    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
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

impl<T: DeviceRepr + Send> DeviceCsr<T> {
    /// Uploads `matrix`, converting each value with `convert` (e.g. rounding to `f32`); the
    /// conversions run on rayon's threads (at 10^9 synapses one thread takes seconds).
    pub(crate) fn upload<S: reservoir_core::real::Real>(
        device: &GpuDevice,
        matrix: &CsrMatrix<S>,
        convert: impl Fn(S) -> T + Sync,
    ) -> Result<Self> {
        let s = device.stream();
        let values: Vec<T> = matrix.values().par_iter().map(|&v| convert(v)).collect();
        let (row_ptr, col_idx) = (to_i32(matrix.row_ptr())?, to_i32(matrix.col_idx())?);
        const WHAT: &str = "uploading a CSR matrix";
        Ok(Self {
            row_ptr: s
                .clone_htod(&row_ptr)
                .alloc_context::<i32>(WHAT, row_ptr.len())?,
            col_idx: s
                .clone_htod(&col_idx)
                .alloc_context::<i32>(WHAT, col_idx.len())?,
            values: s
                .clone_htod(&values)
                .alloc_context::<T>(WHAT, values.len())?,
            columns: matrix.ncols(),
        })
    }
}
