//! One shared handle per GPU: context, stream, loaded kernels, NVRTC module cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{
    CUdevice_attribute, CUfunction_attribute, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use cudarc::driver::{CudaContext, CudaFunction, CudaGraph, CudaModule, CudaSlice, CudaStream};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

use crate::error::{DriverContext, GpuError, Result};
use crate::kernels::{self, NvrtcSource};
use crate::probe::{probe, DeviceInfo};

/// Where the echo-state kernels of a device came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSource {
    /// The prebuilt PTX `kernels/ptx/neuromorphic_gemv.ptx`.
    Ptx,
    /// NVRTC, because the driver rejected the PTX (the reason is kept).
    NvrtcFallback {
        /// The driver's error when loading the PTX.
        reason: String,
    },
}

/// The echo-state kernels, looked up once per device.
#[derive(Debug)]
pub(crate) struct GemvKernels {
    pub matvec_input: CudaFunction,
    pub matvec_reservoir: CudaFunction,
    pub leaky_integration: CudaFunction,
}

#[derive(Debug)]
struct DeviceInner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    gemv: GemvKernels,
    kernel_source: KernelSource,
    nvrtc_modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    blas: OnceLock<CudaBlas>,
}

/// A GPU shared by every reservoir built on it: cheap to clone (an `Arc` inside); kernels are
/// loaded once per device and never looked up by name in a hot loop.
///
/// All work goes to one stream, in order, so buffers never need cross-stream events.
#[derive(Debug, Clone)]
pub struct GpuDevice {
    inner: Arc<DeviceInner>,
}

/// The process-wide devices of [`GpuDevice::shared`], by ordinal.
fn registry() -> &'static Mutex<HashMap<usize, GpuDevice>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, GpuDevice>>> = OnceLock::new();
    DEVICES.get_or_init(|| Mutex::new(HashMap::new()))
}

impl GpuDevice {
    /// Uploads `values` (weights, generated in f64) rounded to f32; `what` names the copy in
    /// an error.
    pub(crate) fn upload_f32<'a>(
        &self,
        values: impl IntoIterator<Item = &'a f64>,
        what: &'static str,
    ) -> Result<CudaSlice<f32>> {
        let host: Vec<f32> = values.into_iter().map(|&v| v as f32).collect();
        self.stream().clone_htod(&host).context(what)
    }

    /// The process-wide handle of GPU `ordinal`, created on first use and shared afterwards.
    ///
    /// # Errors
    /// [`GpuError::Unavailable`] naming what is missing (driver, NVRTC, device), or the driver
    /// error of creating the context or loading the kernels.
    pub fn shared(ordinal: usize) -> Result<Self> {
        let mut devices = registry().lock().map_err(|_| {
            GpuError::Unavailable("the device registry was poisoned by a panic".into())
        })?;
        if let Some(device) = devices.get(&ordinal) {
            return Ok(device.clone());
        }
        let device = Self::with_gemv_ptx(ordinal, kernels::GEMV_PTX)?;
        devices.insert(ordinal, device.clone());
        Ok(device)
    }

    /// A new (unshared) handle of GPU `ordinal` whose echo-state kernels come from `ptx`, or
    /// from NVRTC if the driver rejects it. [`GpuDevice::shared`] uses the shipped PTX; this
    /// entry point exists to test the fallback with a PTX the driver cannot load.
    pub fn with_gemv_ptx(ordinal: usize, ptx: &str) -> Result<Self> {
        let support = probe();
        if let Some(problem) = support.problem {
            return Err(GpuError::Unavailable(problem));
        }
        let info = support
            .devices
            .into_iter()
            .find(|d| d.ordinal == ordinal)
            .ok_or_else(|| GpuError::Unavailable(format!("there is no CUDA device {ordinal}")))?;
        let ctx = CudaContext::new(ordinal).context("creating the CUDA context")?;
        // SAFETY: every buffer of this crate is used on the device's single stream only, so
        // cudarc's per-buffer cross-stream events are not needed.
        unsafe { ctx.disable_event_tracking() };
        // A created stream, not the legacy default one: CUDA graphs can capture only the former.
        let stream = ctx.new_stream().context("creating the device's stream")?;
        let (module, kernel_source) = match ctx.load_module(Ptx::from_src(ptx)) {
            Ok(module) => (module, KernelSource::Ptx),
            Err(rejected) => {
                let reason = rejected.to_string();
                warn_once(&format!(
                    "gpu-reservoir: the driver rejected kernels/ptx/neuromorphic_gemv.ptx ({reason}); \
                     compiling kernels/neuromorphic_gemv.cu with NVRTC instead"
                ));
                let ptx = compile(&kernels::GEMV, info.compute_capability)?;
                let module = ctx
                    .load_module(ptx)
                    .context("loading the NVRTC-compiled echo-state kernels")?;
                (module, KernelSource::NvrtcFallback { reason })
            }
        };
        let function = |name| {
            module
                .load_function(name)
                .context("looking up an echo-state kernel")
        };
        let gemv = GemvKernels {
            matvec_input: function(kernels::gemv::MATVEC_INPUT)?,
            matvec_reservoir: function(kernels::gemv::MATVEC_RESERVOIR)?,
            leaky_integration: function(kernels::gemv::LEAKY_INTEGRATION)?,
        };
        Ok(Self {
            inner: Arc::new(DeviceInner {
                ctx,
                stream,
                info,
                gemv,
                kernel_source,
                nvrtc_modules: Mutex::new(HashMap::new()),
                blas: OnceLock::new(),
            }),
        })
    }

    /// The device's description.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// Where the echo-state kernels came from.
    pub fn kernel_source(&self) -> &KernelSource {
        &self.inner.kernel_source
    }

    /// The stream all work of this device goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The device's cuBLAS handle (on its stream), created on first use.
    ///
    /// # Errors
    /// [`GpuError::Unavailable`] when libcublas cannot be loaded, or cuBLAS's own error.
    pub fn blas(&self) -> Result<&CudaBlas> {
        if let Some(blas) = self.inner.blas.get() {
            return Ok(blas);
        }
        // SAFETY: only tries to dlopen libcublas; no cuBLAS function is called.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(GpuError::Unavailable(
                "the cuBLAS library (libcublas.so) was not found".into(),
            ));
        }
        let blas = CudaBlas::new(self.inner.stream.clone()).map_err(|e| GpuError::Blas {
            context: "creating the cuBLAS handle",
            message: e.to_string(),
        })?;
        Ok(self.inner.blas.get_or_init(|| blas))
    }

    /// Captures the launches `enqueue` puts on the device's stream into a CUDA graph
    /// (instantiated and uploaded) instead of running them: replaying the graph runs the same
    /// work without the host's cost per launch. `enqueue` must only launch (no copies from
    /// the host, no synchronisation).
    pub(crate) fn capture(&self, enqueue: impl FnOnce() -> Result<()>) -> Result<CudaGraph> {
        let stream = self.stream();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .context("starting a graph capture")?;
        let enqueued = enqueue();
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .context("ending the graph capture")?;
        enqueued?;
        let graph = graph
            .ok_or_else(|| GpuError::Unavailable("the graph capture recorded nothing".into()))?;
        graph.upload().context("uploading the graph")?;
        Ok(graph)
    }

    pub(crate) fn gemv(&self) -> &GemvKernels {
        &self.inner.gemv
    }

    /// The module compiled from `source`, compiling it with NVRTC on first use.
    pub(crate) fn nvrtc_module(&self, source: &NvrtcSource) -> Result<Arc<CudaModule>> {
        let mut modules = self.inner.nvrtc_modules.lock().map_err(|_| {
            GpuError::Unavailable("the NVRTC module cache was poisoned by a panic".into())
        })?;
        if let Some(module) = modules.get(source.name) {
            return Ok(module.clone());
        }
        let ptx = compile(source, self.inner.info.compute_capability)?;
        let module = self
            .inner
            .ctx
            .load_module(ptx)
            .context("loading an NVRTC-compiled module")?;
        modules.insert(source.name, module.clone());
        Ok(module)
    }

    /// Lets `function` use as much dynamic shared memory as the device allows next to its
    /// static shared memory, and returns that many bytes. Functions are shared by every plan on
    /// the device, so the limit is always this maximum rather than one plan's size: a smaller
    /// limit set by another plan (in another thread) would make this plan's launch fail. Each
    /// launch states its own size.
    pub(crate) fn allow_shared_memory(&self, function: &CudaFunction) -> Result<usize> {
        let optin = self
            .context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .context("reading the shared-memory limit")?;
        let fixed = function
            .shared_size_bytes()
            .context("reading the static shared memory")?;
        let limit = (optin - fixed).max(0);
        // SAFETY: sets a launch attribute of a function loaded on this context.
        unsafe {
            cudarc::driver::result::function::set_function_attribute(
                function.cu_function(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit,
            )
        }
        .context("raising the dynamic shared-memory limit")?;
        Ok(limit as usize)
    }

    /// Function `name` of the NVRTC module `source`.
    pub(crate) fn nvrtc_function(&self, source: &NvrtcSource, name: &str) -> Result<CudaFunction> {
        self.nvrtc_module(source)?
            .load_function(name)
            .context("looking up an NVRTC kernel")
    }
}

/// Compiles `source` for the device's architecture with `--fmad=false`, so every kernel keeps
/// the CPU reference's separately rounded multiplies and adds.
fn compile(source: &NvrtcSource, (major, minor): (i32, i32)) -> Result<Ptx> {
    let options = CompileOptions {
        fmad: Some(false),
        options: vec![format!("--gpu-architecture=compute_{major}{minor}")],
        name: Some(source.name.to_string()),
        ..Default::default()
    };
    compile_ptx_with_opts(source.text, options).map_err(|e| GpuError::Compile {
        source_name: source.name,
        log: match e {
            CompileError::CompileError { log, .. } => {
                log.to_string_lossy().trim().replace('\n', " ")
            }
            other => other.to_string(),
        },
    })
}

/// Prints `message` on standard error the first time only (the PTX fallback is said once).
fn warn_once(message: &str) {
    static SAID: OnceLock<()> = OnceLock::new();
    if SAID.set(()).is_ok() {
        eprintln!("{message}");
    }
}
