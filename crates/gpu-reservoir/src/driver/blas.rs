//! The crate's cuBLAS calls, on the device's one handle: the f32 and f16 products of the
//! batched and sweep steps, and the f64 products of the ridge sums. Dimensions are checked against the
//! buffers here, so a wrong length is an error rather than an out-of-bounds read on the device.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudarc::cublas::result::{gemm_ex, CublasError};
use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasMath_t, cublasOperation_t, cublasSetMathMode,
    cublasStatus_t, cudaDataType_t,
};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut};
use reservoir_core::ReservoirError;

use super::args::{dim, fits};
use crate::error::{GpuError, Result};

/// A cuBLAS failure while doing `context` (a failed allocation as out of memory).
pub(crate) fn blas_error(context: &'static str, source: CublasError) -> GpuError {
    match source.0 {
        cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED => GpuError::out_of_memory(context, None),
        _ => GpuError::Blas { context, source },
    }
}

/// Whether libcublas could be loaded. It is loaded once and kept for the whole process, so
/// cudarc's own loading of it (by the same names) finds it in memory: loading it only to see
/// whether it is there and unloading it again would have it read and relocated twice.
fn cublas_loaded() -> bool {
    static LIBRARY: OnceLock<Option<libloading::Library>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            cudarc::get_lib_name_candidates("cublas")
                .into_iter()
                // SAFETY: loading libcublas runs only its initialisers, as cudarc's loading of
                // it does; no symbol is taken from this handle.
                .find_map(|name| unsafe { libloading::Library::new(name) }.ok())
        })
        .is_some()
}

/// Starts loading libcublas on a thread of its own, so that a job about to make a cuBLAS
/// handle finds the library loaded once its GPU is open (loading it takes about as long as
/// opening the GPU, and the two run side by side).
pub fn preload_cublas() {
    std::thread::spawn(cublas_loaded);
}

/// A new cuBLAS handle on `stream`, in math mode `CUBLAS_TF32_TENSOR_OP_MATH` when `tf32`
/// (else the default).
///
/// # Errors
/// [`GpuError::Unavailable`] when libcublas cannot be loaded, or cuBLAS's own error.
pub(crate) fn blas_handle_on(stream: Arc<CudaStream>, tf32: bool) -> Result<CudaBlas> {
    if !cublas_loaded() {
        return Err(GpuError::Unavailable {
            reason: "the cuBLAS library (libcublas.so) was not found".into(),
        });
    }
    let blas = CudaBlas::new(stream).map_err(|e| blas_error("creating the cuBLAS handle", e))?;
    if tf32 {
        // SAFETY: the handle was just made and no other thread has it yet.
        unsafe { cublasSetMathMode(*blas.handle(), cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH) }
            .result()
            .map_err(|e| blas_error("setting the GEMM math mode", e))?;
    }
    Ok(blas)
}

/// The cuBLAS dimensions of `out = A·X` (A m × k, X k × n) once the lengths of A, X and out
/// are checked to hold them.
fn product_dims(
    [a, x, out]: [usize; 3],
    (m, k, n): (usize, usize, usize),
    context: &'static str,
) -> Result<(i32, i32, i32)> {
    fits(a, m * k, context)?;
    fits(x, k * n, context)?;
    fits(out, m * n, context)?;
    Ok((dim(m, context)?, dim(k, context)?, dim(n, context)?))
}

/// `out = A·X` in f32, one SGEMM: A is m × k stored row-major (a dense W or W_in), X is k × n
/// and `out` m × n, both column-major (a batch of column vectors: states, or inputs stored
/// row-major per step). Row-major A is column-major Aᵀ, so cuBLAS computes op(A)·X with
/// op = transpose. `context` names the product in errors.
pub(crate) fn product_row_major(
    blas: &CudaBlas,
    a: &CudaView<'_, f32>,
    x: &CudaView<'_, f32>,
    out: &mut CudaViewMut<'_, f32>,
    (m, k, n): (usize, usize, usize),
    context: &'static str,
) -> Result<()> {
    let (m, k, n) = product_dims([a.len(), x.len(), out.len()], (m, k, n), context)?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m,
        n,
        k,
        alpha: 1.0f32,
        lda: k,
        ldb: k,
        beta: 0.0f32,
        ldc: m,
    };
    // SAFETY: a holds m·k values (lda = k for its column-major transpose), x k·n (ldb = k)
    // and out m·n (ldc = m), checked above.
    unsafe { blas.gemm(cfg, a, x, out) }.map_err(|e| blas_error(context, e))
}

/// `out = A·X` with f16 operands (A and X hold f16 bit patterns, laid out as in
/// [`product_row_major`]) on the tensor cores, accumulated and written in f32
/// (`cublasGemmEx`, compute type 32F). `stream` is the handle's stream.
pub(crate) fn product_row_major_f16(
    blas: &CudaBlas,
    stream: &CudaStream,
    a: &CudaView<'_, u16>,
    x: &CudaView<'_, u16>,
    out: &mut CudaViewMut<'_, f32>,
    (m, k, n): (usize, usize, usize),
    context: &'static str,
) -> Result<()> {
    let (m, k, n) = product_dims([a.len(), x.len(), out.len()], (m, k, n), context)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (a_ptr, _a_sync) = a.device_ptr(stream);
    let (x_ptr, _x_sync) = x.device_ptr(stream);
    let (out_ptr, _out_sync) = out.device_ptr_mut(stream);
    // SAFETY: a holds m·k f16 values (lda = k for its column-major transpose), x k·n (ldb = k)
    // and out m·n f32 values (ldc = m), checked above; alpha and beta are host f32 scalars, as
    // compute type 32F requires; the pointers outlive the call (their guards are held).
    unsafe {
        gemm_ex(
            *blas.handle(),
            cublasOperation_t::CUBLAS_OP_T,
            cublasOperation_t::CUBLAS_OP_N,
            m,
            n,
            k,
            (&alpha as *const f32).cast::<c_void>(),
            a_ptr as *const c_void,
            cudaDataType_t::CUDA_R_16F,
            k,
            x_ptr as *const c_void,
            cudaDataType_t::CUDA_R_16F,
            k,
            (&beta as *const f32).cast::<c_void>(),
            out_ptr as *mut c_void,
            cudaDataType_t::CUDA_R_32F,
            m,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| blas_error(context, e))
}

/// `c += A·B` in f64, one DGEMM, all column-major: A is m × k with leading dimension `lda`
/// (≥ m), B is k × n (leading dimension k), C is m × n (leading dimension m).
pub(crate) fn add_product_f64(
    blas: &CudaBlas,
    a: &CudaView<'_, f64>,
    lda: usize,
    b: &CudaView<'_, f64>,
    c: &mut CudaViewMut<'_, f64>,
    (m, k, n): (usize, usize, usize),
    context: &'static str,
) -> Result<()> {
    if lda < m {
        return Err(ReservoirError::invalid(context, "leading dimension below the rows").into());
    }
    fits(a.len(), if k == 0 { 0 } else { lda * (k - 1) + m }, context)?;
    fits(b.len(), k * n, context)?;
    fits(c.len(), m * n, context)?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: dim(m, context)?,
        n: dim(n, context)?,
        k: dim(k, context)?,
        alpha: 1.0f64,
        lda: dim(lda, context)?,
        ldb: dim(k.max(1), context)?,
        beta: 1.0f64,
        ldc: dim(m.max(1), context)?,
    };
    // SAFETY: the k columns of A (stride lda) end within a, B holds k·n and C m·n values,
    // checked above.
    unsafe { blas.gemm(cfg, a, b, c) }.map_err(|e| blas_error(context, e))
}

/// `C_b += A_b·A_bᵀ` in f64 for `blocks` blocks, one strided-batched DGEMM (tensor cores on
/// recent GPUs; many blocks in one launch). A_b is n × k column-major with leading dimension
/// `lda`, block b starting b·n values into `a` (the blocks side by side in each column: k rows
/// of `blocks` reservoirs' states); C_b is the n × n block at b·n² of `c`, both triangles.
pub(crate) fn add_grams_f64(
    blas: &CudaBlas,
    a: &CudaView<'_, f64>,
    lda: usize,
    c: &mut CudaViewMut<'_, f64>,
    (n, k, blocks): (usize, usize, usize),
    context: &'static str,
) -> Result<()> {
    if lda < n * blocks {
        return Err(ReservoirError::invalid(context, "leading dimension below the rows").into());
    }
    fits(
        a.len(),
        if k == 0 {
            0
        } else {
            lda * (k - 1) + n * blocks
        },
        context,
    )?;
    fits(c.len(), n * n * blocks, context)?;
    let (n_i, lda_i) = (dim(n, context)?, dim(lda, context)?);
    let cfg = StridedBatchedConfig {
        gemm: GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_T,
            m: n_i,
            n: n_i,
            k: dim(k, context)?,
            alpha: 1.0f64,
            lda: lda_i,
            ldb: lda_i,
            beta: 1.0f64,
            ldc: n_i,
        },
        batch_size: dim(blocks, context)?,
        stride_a: n as i64,
        stride_b: n as i64,
        stride_c: (n * n) as i64,
    };
    // SAFETY: block b of A spans [b·n, b·n + lda·(k − 1) + n), within a for every b < blocks,
    // and C_b spans [b·n², (b + 1)·n²), within c (both checked above); A is read twice (as A
    // and as B), C written only.
    unsafe { blas.gemm_strided_batched(cfg, a, a, c) }.map_err(|e| blas_error(context, e))
}

/// A stack of column-major f64 matrices in one buffer for a strided-batched product: matrix b
/// starts at `b·stride`, holds `rows × cols` with leading dimension `ld` (≥ rows), and enters
/// the product transposed when `transpose` is set.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stacked {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
    pub(crate) stride: usize,
    pub(crate) transpose: bool,
}

impl Stacked {
    /// `rows × cols` matrices, not transposed, with leading dimension `ld`, `stride` apart.
    pub(crate) fn new(rows: usize, cols: usize, ld: usize, stride: usize) -> Self {
        Self {
            rows,
            cols,
            ld,
            stride,
            transpose: false,
        }
    }

    /// The same matrices, transposed in the product.
    pub(crate) fn t(self) -> Self {
        Self {
            transpose: true,
            ..self
        }
    }

    /// Rows and columns as they enter the product.
    fn shape(&self) -> (usize, usize) {
        if self.transpose {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    /// An error unless `batch` such matrices end within `len` values.
    fn check(&self, len: usize, batch: usize, context: &'static str) -> Result<()> {
        if self.ld < self.rows.max(1) {
            return Err(
                ReservoirError::invalid(context, "leading dimension below the rows").into(),
            );
        }
        if batch == 0 || self.rows == 0 || self.cols == 0 {
            return Ok(());
        }
        let last = self.stride * (batch - 1) + self.ld * (self.cols - 1) + self.rows;
        fits(len, last, context)
    }

    fn op(&self) -> cublasOperation_t {
        if self.transpose {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        }
    }
}

/// `C_b = alpha·op(A_b)·op(B_b) + beta·C_b` in f64 for `batch` matrices, one strided-batched
/// DGEMM; the shapes must agree (op(A) m × k, op(B) k × n, C m × n, never transposed) and
/// every matrix lie within its buffer, else an error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product_batched_f64(
    blas: &CudaBlas,
    (a, a_shape): (&CudaView<'_, f64>, Stacked),
    (b, b_shape): (&CudaView<'_, f64>, Stacked),
    (c, c_shape): (&mut CudaViewMut<'_, f64>, Stacked),
    (alpha, beta): (f64, f64),
    batch: usize,
    context: &'static str,
) -> Result<()> {
    let ((m, k), (k_b, n)) = (a_shape.shape(), b_shape.shape());
    if k != k_b || c_shape.transpose || (c_shape.rows, c_shape.cols) != (m, n) {
        return Err(ReservoirError::invalid(context, "the product's shapes disagree").into());
    }
    a_shape.check(a.len(), batch, context)?;
    b_shape.check(b.len(), batch, context)?;
    c_shape.check(c.len(), batch, context)?;
    if batch == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let stride = |s: usize| -> Result<i64> {
        i64::try_from(s).map_err(|_| ReservoirError::invalid(context, "stride beyond i64").into())
    };
    let cfg = StridedBatchedConfig {
        gemm: GemmConfig {
            transa: a_shape.op(),
            transb: b_shape.op(),
            m: dim(m, context)?,
            n: dim(n, context)?,
            k: dim(k, context)?,
            alpha,
            lda: dim(a_shape.ld, context)?,
            ldb: dim(b_shape.ld, context)?,
            beta,
            ldc: dim(c_shape.ld, context)?,
        },
        batch_size: dim(batch, context)?,
        stride_a: stride(a_shape.stride)?,
        stride_b: stride(b_shape.stride)?,
        stride_c: stride(c_shape.stride)?,
    };
    // SAFETY: each of the batch's matrices of A, B and C lies within its buffer with its
    // leading dimension (checked above), and the shapes agree.
    unsafe { blas.gemm_strided_batched(cfg, a, b, c) }.map_err(|e| blas_error(context, e))
}
