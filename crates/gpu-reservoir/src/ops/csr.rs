//! Launches of `csr.cu`: a CSR matrix's f32 values from its f64 values scaled on the device
//! (W for the LIF network from the copy its spectral estimate used), and the transpose of a
//! CSR matrix built on the device (Wᵀ for the LIF network's event-driven delivery), the same
//! as the CPU's `LifWeights::outgoing_f32`.

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use reservoir_kernels::csr;

use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{dim, BLOCK_THREADS};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernels of `csr.cu`.
#[derive(Debug)]
pub(crate) struct CsrKernels {
    column_counts: CudaFunction,
    scatter: CudaFunction,
    sort_rows: CudaFunction,
    scaled_to_f32: CudaFunction,
}

impl KernelSet for CsrKernels {
    const MODULE: reservoir_kernels::Module = csr::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            column_counts: module.function(csr::COLUMN_COUNTS)?,
            scatter: module.function(csr::SCATTER_TRANSPOSE)?,
            sort_rows: module.function(csr::SORT_ROWS)?,
            scaled_to_f32: module.function(csr::SCALED_TO_F32)?,
        })
    }
}

/// Blocks per multiprocessor of the grid-stride launches.
const BLOCKS_PER_SM: u32 = 8;

/// A grid-stride launch over `items` on `device`: a thread per item up to
/// [`BLOCKS_PER_SM`] blocks per multiprocessor.
fn grid_stride(device: &GpuDevice, items: usize) -> LaunchConfig {
    let most = device.info().multiprocessors.max(1) as u32 * BLOCKS_PER_SM;
    let blocks = (items.div_ceil(BLOCK_THREADS as usize).max(1) as u64).min(most as u64) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `matrix` with every value v replaced by `f32(v · factor)`, on the device: the bits of
/// scaling the host's matrix in f64 and uploading it rounded to f32. Its structure is
/// `matrix`'s, moved; its f64 values are freed.
///
/// # Errors
/// A driver error, or a device out of memory for the f32 values.
pub(crate) fn scaled_to_f32(
    device: &GpuDevice,
    matrix: DeviceCsr<f64>,
    factor: f64,
) -> Result<DeviceCsr<f32>> {
    const WHAT: &str = "scaling a CSR matrix on the device";
    let kernels = device.kernels::<CsrKernels>()?;
    let s = device.stream();
    let nnz = matrix.values.len();
    let mut values = s.alloc_zeros::<f32>(nnz).alloc_context::<f32>(WHAT, nnz)?;
    if nnz > 0 {
        let nnz_arg = nnz as i64;
        let mut launch = s.launch_builder(&kernels.scaled_to_f32);
        launch
            .arg(&matrix.values)
            .arg(&factor)
            .arg(&nnz_arg)
            .arg(&mut values);
        // SAFETY: matrix.values and values both hold nnz elements; grid-stride over nnz.
        unsafe { launch.launch(grid_stride(device, nnz)) }
            .context("launching csr_scaled_to_f32")?;
    }
    let columns = matrix.columns();
    let DeviceCsr {
        row_ptr, col_idx, ..
    } = matrix;
    Ok(DeviceCsr::from_device(row_ptr, col_idx, values, columns))
}

/// `matrix`ᵀ built on the device, with the count of each of `matrix`'s columns (the
/// transpose's row lengths); `None` when the matrix is empty or a column has more than
/// [`csr::SORT_CAPACITY`] entries (the caller then transposes on the host). Row j of the
/// result lists the rows that hold column j, ascending, with their values: what the CPU's
/// transpose gives, bit for bit.
///
/// # Errors
/// A driver error, or a device out of memory for the transpose.
pub(crate) fn transposed_on_device(
    device: &GpuDevice,
    matrix: &DeviceCsr<f32>,
) -> Result<Option<(DeviceCsr<f32>, Vec<u32>)>> {
    const WHAT: &str = "transposing a CSR matrix on the device";
    let kernels = device.kernels::<CsrKernels>()?;
    let s = device.stream();
    let (rows, columns, nnz) = (matrix.rows(), matrix.columns(), matrix.values.len());
    if nnz == 0 {
        return Ok(None);
    }

    let mut counts = s
        .alloc_zeros::<u32>(columns)
        .alloc_context::<u32>(WHAT, columns)?;
    let nnz_arg = nnz as i64;
    let mut launch = s.launch_builder(&kernels.column_counts);
    launch.arg(&matrix.col_idx).arg(&nnz_arg).arg(&mut counts);
    // SAFETY: col_idx holds nnz indices, each below `columns` (the upload's matrix), and
    // counts holds `columns` zeros.
    unsafe { launch.launch(grid_stride(device, nnz)) }.context("launching csr_column_counts")?;
    let counts = s.clone_dtoh(&counts).context(WHAT)?;
    if counts
        .iter()
        .any(|&count| count as usize > csr::SORT_CAPACITY)
    {
        return Ok(None);
    }
    // The transpose's row pointers: nnz < 2^31 (checked at upload) bounds every partial sum.
    let mut row_ptr = Vec::with_capacity(columns + 1);
    row_ptr.push(0u32);
    let mut total = 0u32;
    for &count in &counts {
        total += count;
        row_ptr.push(total);
    }
    let t_row_ptr = s
        .clone_htod(&row_ptr)
        .alloc_context::<u32>(WHAT, row_ptr.len())?;
    let mut cursor = s
        .clone_htod(&row_ptr)
        .alloc_context::<u32>(WHAT, row_ptr.len())?;
    let mut t_col_idx = s.alloc_zeros::<u32>(nnz).alloc_context::<u32>(WHAT, nnz)?;
    let mut t_values = s.alloc_zeros::<f32>(nnz).alloc_context::<f32>(WHAT, nnz)?;

    let rows_arg = dim(rows, WHAT)?;
    let mut launch = s.launch_builder(&kernels.scatter);
    launch
        .arg(&matrix.row_ptr)
        .arg(&matrix.col_idx)
        .arg(&matrix.values)
        .arg(&rows_arg)
        .arg(&mut cursor)
        .arg(&mut t_col_idx)
        .arg(&mut t_values);
    // SAFETY: the matrix's rows + 1 row pointers bound its nnz entries; cursor[j] runs from
    // the transpose's row_ptr[j] over exactly column j's count of slots, all below nnz, which
    // t_col_idx and t_values hold.
    unsafe { launch.launch(grid_stride(device, rows.saturating_mul(32))) }
        .context("launching csr_scatter_transpose")?;

    let columns_arg = dim(columns, WHAT)?;
    let mut launch = s.launch_builder(&kernels.sort_rows);
    launch
        .arg(&t_row_ptr)
        .arg(&columns_arg)
        .arg(&mut t_col_idx)
        .arg(&mut t_values);
    // SAFETY: the transpose has `columns` rows of at most SORT_CAPACITY entries (checked
    // above), within its nnz values; the kernel's shared memory is static.
    unsafe {
        launch.launch(grid_stride(
            device,
            columns.saturating_mul(BLOCK_THREADS as usize),
        ))
    }
    .context("launching csr_sort_rows")?;

    let transposed = DeviceCsr::from_device(t_row_ptr, t_col_idx, t_values, rows);
    Ok(Some((transposed, counts)))
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use reservoir_core::CsrMatrix;

    use super::*;
    use crate::driver::{test_gpu as gpu, test_seed};

    /// Scaled on the device, f64 values of every magnitude (subnormal, to f32's overflow, exact
    /// zeros of both signs) round to the f32 bits of the host's scaling and rounding.
    #[test]
    fn values_scaled_on_the_device_have_the_hosts_bits() {
        let Some(device) = gpu() else { return };
        let mut rng =
            ChaCha8Rng::seed_from_u64(test_seed("values_scaled_on_the_device_have_the_hosts_bits"));
        let (rows, columns) = (300, 200);
        let dense = Array2::from_shape_fn((rows, columns), |(i, j)| match (i + j) % 7 {
            0 => 0.0,
            1 => -0.0,
            _ if rng.random_bool(0.7) => 0.0,
            _ => rng.random_range(-1.0f64..1.0) * 10f64.powi(rng.random_range(-50..40)),
        });
        let w = CsrMatrix::from_dense(&dense).expect("a CSR matrix");
        for factor in [rng.random_range(0.01..10.0), 1.0 / 3.0, 1e-30] {
            let on_device = DeviceCsr::upload_exact(&device, &w).expect("an upload");
            let scaled = scaled_to_f32(&device, on_device, factor).expect("scaled");
            let s = device.stream();
            let values = s.clone_dtoh(&scaled.values).expect("values");
            let mut expected = w.clone();
            expected.scale(factor);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let rounded: Vec<f32> = expected.values().iter().map(|&v| v as f32).collect();
            assert_eq!(bits(&values), bits(&rounded), "factor {factor}");
            assert_eq!(s.clone_dtoh(&scaled.row_ptr).expect("rows"), w.row_ptr());
            assert_eq!(s.clone_dtoh(&scaled.col_idx).expect("columns"), w.col_idx());
            assert_eq!(scaled.columns(), columns);
        }
    }

    /// The device transpose against the CSR of the dense transpose, on fresh random matrices:
    /// empty rows and columns, rows of 1, of a power of two and of the sort's whole capacity,
    /// non-square shapes; a column longer than the capacity is left to the host.
    #[test]
    fn the_device_transpose_is_the_transpose() {
        let Some(device) = gpu() else { return };
        let mut rng = ChaCha8Rng::seed_from_u64(test_seed("the_device_transpose_is_the_transpose"));
        let capacity = csr::SORT_CAPACITY;
        // (rows, columns, density, rows that also hold column 0)
        for (rows, columns, density, full_column) in [
            (1, 1, 1.0, 0),
            (7, 3, 0.5, 0),
            (300, 9000, 0.002, 0),
            (2000, 1500, 0.05, 1024),
            (capacity, 700, 0.01, capacity),
            (capacity + 1, 50, 0.02, capacity + 1),
        ] {
            let dense = Array2::from_shape_fn((rows, columns), |(i, j)| {
                if (j == 0 && i < full_column) || rng.random_bool(density) {
                    rng.random_range(-1.0f64..1.0)
                } else {
                    0.0
                }
            });
            let w = CsrMatrix::from_dense(&dense).expect("a CSR matrix");
            let on_device = DeviceCsr::upload(&device, &w, |v| v as f32).expect("an upload");
            let result = transposed_on_device(&device, &on_device).expect("a transpose");
            let Some((t, counts)) = result else {
                assert!(
                    full_column > capacity,
                    "{rows} x {columns}: left to the host"
                );
                continue;
            };
            assert!(full_column <= capacity, "{rows} x {columns}: not refused");
            let expected = CsrMatrix::from_dense(&dense.t().to_owned()).expect("Wᵀ");
            let s = device.stream();
            let row_ptr = s.clone_dtoh(&t.row_ptr).expect("row pointers");
            let col_idx = s.clone_dtoh(&t.col_idx).expect("columns");
            let values = s.clone_dtoh(&t.values).expect("values");
            assert_eq!(row_ptr, expected.row_ptr(), "{rows} x {columns}");
            assert_eq!(col_idx, expected.col_idx(), "{rows} x {columns}");
            let rounded: Vec<f32> = expected.values().iter().map(|&v| v as f32).collect();
            assert_eq!(values, rounded, "{rows} x {columns}");
            let lengths: Vec<u32> = row_ptr.windows(2).map(|p| p[1] - p[0]).collect();
            assert_eq!(counts, lengths);
            assert_eq!(t.columns(), rows);
        }
    }
}
