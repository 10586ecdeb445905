//! Spectral radius with the power-iteration products on the GPU.

use std::cell::RefCell;
use std::time::Instant;

use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use reservoir_core::spectral::{
    spectral_radius_with, LinearOperator, Phases, SpectralEstimate, SpectralOptions,
};
use reservoir_core::{CsrMatrix, ReservoirError};
use reservoir_kernels::spectral;

use crate::driver::csr::DeviceCsr;
use crate::driver::launch::{dim, per_item_in_blocks_of};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, GpuError, Result};

/// The kernel of `spectral.cu`.
#[derive(Debug)]
struct SpectralKernels {
    product: CudaFunction,
}

impl KernelSet for SpectralKernels {
    const MODULE: reservoir_kernels::Module = spectral::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            product: module.function(spectral::CSR_PRODUCT_F64)?,
        })
    }
}

/// A square CSR matrix on the GPU as a [`LinearOperator`]: each product uploads x, runs
/// `csr_matvec_f64` and downloads y. The first error is kept and reported by
/// [`spectral_radius`] (the operator trait itself cannot fail).
struct GpuCsrOperator<'a> {
    device: &'a GpuDevice,
    function: CudaFunction,
    n: usize,
    matrix: DeviceCsr<f64>,
    x: RefCell<CudaSlice<f64>>,
    y: RefCell<CudaSlice<f64>>,
    error: RefCell<Option<GpuError>>,
}

impl GpuCsrOperator<'_> {
    fn product(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        let stream = self.device.stream();
        let mut dx = self.x.borrow_mut();
        let mut dy = self.y.borrow_mut();
        stream
            .memcpy_htod(x, &mut *dx)
            .context("uploading a power-iteration vector")?;
        let n = dim(self.n, "spectral radius")?;
        let mut launch = stream.launch_builder(&self.function);
        launch
            .arg(&self.matrix.row_ptr)
            .arg(&self.matrix.col_idx)
            .arg(&self.matrix.values)
            .arg(&*dx)
            .arg(&mut *dy)
            .arg(&n);
        let config = per_item_in_blocks_of(self.n, spectral::PRODUCT_ROWS)?;
        // SAFETY: row_ptr has n+1 entries ending at len(col_idx) = len(values); every column
        // index < n = len(x); y has n entries; a thread per row, guarded, in blocks of the
        // kernel's PRODUCT_ROWS.
        unsafe { launch.launch(config) }.context("launching csr_matvec_f64")?;
        stream
            .memcpy_dtoh(&*dy, y)
            .context("downloading a power-iteration vector")?;
        Ok(())
    }
}

impl LinearOperator for GpuCsrOperator<'_> {
    fn dim(&self) -> usize {
        self.n
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        if self.error.borrow().is_some() {
            y.fill(f64::NAN);
            return;
        }
        if let Err(e) = self.product(x, y) {
            y.fill(f64::NAN);
            *self.error.borrow_mut() = Some(e);
        }
    }
}

/// The spectral radius of a square matrix, by `reservoir-core`'s algorithm (power steps and a
/// restarted Arnoldi process, see `reservoir_core::spectral`) with every matrix-vector product
/// computed on the GPU in `f64`, each row summed in the CPU's order: the same estimate as
/// [`CsrMatrix::spectral_radius`], bit for bit.
pub fn spectral_radius(
    device: &GpuDevice,
    matrix: &CsrMatrix<f64>,
    options: &SpectralOptions,
) -> Result<SpectralEstimate> {
    Ok(estimate_keeping_matrix(device, matrix, options, &mut ())?.0)
}

/// [`spectral_radius`], handing back the matrix's copy on the device (f64 values), for a
/// caller that goes on to use W there; `phases` is told `spectral setup`, the matrix's upload
/// (waited for, so that it is not counted in the first product), then the estimate's
/// products (with their copies of x and y) and host work.
pub(crate) fn estimate_keeping_matrix(
    device: &GpuDevice,
    matrix: &CsrMatrix<f64>,
    options: &SpectralOptions,
    phases: &mut dyn Phases,
) -> Result<(SpectralEstimate, DeviceCsr<f64>)> {
    let started = Instant::now();
    let n = matrix.nrows();
    if matrix.ncols() != n {
        return Err(ReservoirError::shape(
            "spectral radius",
            "a square matrix",
            format!("{n} x {}", matrix.ncols()),
        )
        .into());
    }
    let stream = device.stream();
    let operator = GpuCsrOperator {
        device,
        function: device.kernels::<SpectralKernels>()?.product.clone(),
        n,
        matrix: DeviceCsr::upload_exact(device, matrix)?,
        x: RefCell::new(
            stream
                .alloc_zeros(n)
                .context("allocating a power-iteration vector")?,
        ),
        y: RefCell::new(
            stream
                .alloc_zeros(n)
                .context("allocating a power-iteration vector")?,
        ),
        error: RefCell::new(None),
    };
    stream
        .synchronize()
        .context("waiting for the spectral estimate's upload")?;
    phases.spent("spectral setup", started.elapsed());
    let estimate = spectral_radius_with(&operator, options, phases);
    if let Some(error) = operator.error.into_inner() {
        return Err(error);
    }
    Ok((estimate?, operator.matrix))
}
