//! One shared handle per GPU: context, stream, compiled kernel modules (from the disk cache
//! when they are there), cuBLAS handle, and the record of what starting them cost.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{
    CUdevice_attribute, CUfunction_attribute, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use cudarc::driver::{CudaContext, CudaFunction, CudaGraph, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use reservoir_core::ReservoirError;
use reservoir_kernels::{fingerprint, Module};

use super::blas::blas_handle_on;
use super::cache::{cache_dir, KernelCache, Lookup};
use super::jit::compile;
use super::probe::{probe_devices, DeviceInfo};
use super::startup::Startup;
use crate::error::{DriverContext, GpuError, Result};

/// The functions of one kernel module, looked up once per device ([`GpuDevice::kernels`]) so
/// that no launch looks a kernel up by name.
pub(crate) trait KernelSet: Send + Sync + Sized + 'static {
    /// The module the functions come from.
    const MODULE: Module;
    /// Looks the functions up in the loaded module.
    fn load(module: &LoadedModule) -> Result<Self>;
}

/// A compiled module of a device, for [`KernelSet::load`].
pub(crate) struct LoadedModule {
    module: Arc<CudaModule>,
}

impl LoadedModule {
    /// Entry point `name` of the module.
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module
            .load_function(name)
            .context("looking up a kernel")
    }
}

#[derive(Debug)]
struct DeviceInner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    /// The driver's CUDA version as (major, minor), part of the kernel cache's key.
    driver_version: (i32, i32),
    kernel_sets: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// The modules loaded so far, by name (a module's kernel sets and [`GpuDevice::preload`]
    /// share them).
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    blas: OnceLock<CudaBlas>,
    /// A second cuBLAS handle whose math mode is TF32, set once when it is made: a math mode
    /// is the handle's, so switching one handle would change the GEMMs of every thread using
    /// it.
    blas_tf32: OnceLock<CudaBlas>,
    startup: Mutex<Startup>,
}

/// A GPU shared by everything built on it: cheap to clone (an `Arc` inside); kernel modules
/// are compiled once per device, on first use.
///
/// All work goes to one stream, in order, so buffers never need cross-stream events. Two
/// handles are equal when they are the same shared device.
#[derive(Debug, Clone)]
pub struct GpuDevice {
    inner: Arc<DeviceInner>,
}

impl PartialEq for GpuDevice {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for GpuDevice {}

/// The environment variable that, set to `ptx`, has every module compiled from its PTX by the
/// driver even where a shipped cubin would run (to check or time that path).
pub const KERNELS_ENV: &str = "RESERVOIR_KERNELS";

/// Whether shipped cubins are used ([`KERNELS_ENV`] is not `ptx`).
fn shipped_cubins() -> bool {
    std::env::var_os(KERNELS_ENV).is_none_or(|v| v != "ptx")
}

/// The lock of a cache; a panic elsewhere while it was held left it consistent (entries are
/// only ever added whole), so a poisoned lock is taken as it is.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A GPU of [`GpuDevice::shared`]: empty until it is first opened.
type Slot = Arc<Mutex<Option<GpuDevice>>>;

/// The process-wide devices of [`GpuDevice::shared`], a slot per ordinal, so that threads
/// open different GPUs at the same time and one GPU once.
fn registry() -> &'static Mutex<HashMap<usize, Slot>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Slot>>> = OnceLock::new();
    DEVICES.get_or_init(|| Mutex::new(HashMap::new()))
}

impl GpuDevice {
    /// The process-wide handle of GPU `ordinal`, created on first use and shared afterwards.
    ///
    /// # Errors
    /// [`GpuError::Unavailable`] naming what is missing (a driver new enough, the device), or the
    /// driver's error creating the context.
    pub fn shared(ordinal: usize) -> Result<Self> {
        let slot = lock(registry()).entry(ordinal).or_default().clone();
        let mut slot = lock(&slot);
        if let Some(device) = slot.as_ref() {
            return Ok(device.clone());
        }
        let device = Self::open(ordinal)?;
        *slot = Some(device.clone());
        Ok(device)
    }

    fn open(ordinal: usize) -> Result<Self> {
        let started = Instant::now();
        let support = probe_devices();
        if let Some(reason) = support.problem {
            return Err(GpuError::Unavailable { reason });
        }
        let info = support
            .devices
            .into_iter()
            .find(|d| d.ordinal == ordinal)
            .ok_or_else(|| GpuError::Unavailable {
                reason: format!("there is no CUDA device {ordinal}"),
            })?;
        let ctx = CudaContext::new(ordinal).context("creating the CUDA context")?;
        // SAFETY: every buffer of this crate is used on the device's single stream only, so
        // cudarc's per-buffer cross-stream events are not needed.
        unsafe { ctx.disable_event_tracking() };
        // A created stream, not the legacy default one: CUDA graphs can capture only the former.
        let stream = ctx.new_stream().context("creating the device's stream")?;
        let device = Self {
            inner: Arc::new(DeviceInner {
                ctx,
                stream,
                info,
                driver_version: support.driver_version.unwrap_or((0, 0)),
                kernel_sets: Mutex::new(HashMap::new()),
                modules: Mutex::new(HashMap::new()),
                blas: OnceLock::new(),
                blas_tf32: OnceLock::new(),
                startup: Mutex::new(Startup::default()),
            }),
        };
        device.record("driver and context", started);
        Ok(device)
    }

    /// What starting this device has cost so far, phase by phase, with its notes.
    pub fn startup(&self) -> Startup {
        lock(&self.inner.startup).clone()
    }

    /// Records that phase `name` ran from `started` until now.
    pub(crate) fn record(&self, name: impl Into<String>, started: Instant) {
        lock(&self.inner.startup).add(name.into(), started.elapsed().as_secs_f64());
    }

    /// Adds a note about loading the kernels, once per device: after one, further trouble of
    /// the kind says nothing new.
    fn note_kernels(&self, note: String) {
        let mut startup = lock(&self.inner.startup);
        if !startup.notes.iter().any(|n| n.starts_with("kernels:")) {
            startup.notes.push(format!("kernels: {note}"));
        }
    }

    /// The device's description.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The stream all work of this device goes to (for code that launches its own kernels
    /// beside this crate's).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The device's cuBLAS handle (on its stream, default math mode), created on first use.
    /// It is shared by every thread using the device: changing its configuration (math mode,
    /// workspace) changes theirs.
    ///
    /// # Errors
    /// [`GpuError::Unavailable`] when libcublas cannot be loaded, or cuBLAS's own error.
    pub fn blas(&self) -> Result<&CudaBlas> {
        self.blas_handle(&self.inner.blas, false)
    }

    /// Makes the device's cuBLAS handle and runs one small product in f32 and one in f64 on
    /// it, so that the library's first-use costs (its set-up, its kernels loaded) are paid
    /// here, on a thread of its own while a job reads its data, rather than in the job's
    /// first batch.
    ///
    /// # Errors
    /// cuBLAS not found; any error of the products.
    pub fn warm_up_blas(&self) -> Result<()> {
        const N: usize = 256;
        let started = Instant::now();
        let blas = self.blas()?;
        let stream = self.stream();
        let single = stream
            .alloc_zeros::<f32>(N * N)
            .context("allocating a warm-up product")?;
        let mut out = stream
            .alloc_zeros::<f32>(N * N)
            .context("allocating a warm-up product")?;
        super::blas::product_row_major(
            blas,
            &single.slice(..),
            &single.slice(..),
            &mut out.slice_mut(..),
            (N, N, N),
            "warming up cuBLAS",
        )?;
        let double = stream
            .alloc_zeros::<f64>(N * N)
            .context("allocating a warm-up product")?;
        let mut grams = stream
            .alloc_zeros::<f64>(N * N)
            .context("allocating a warm-up product")?;
        super::blas::add_grams_f64(
            blas,
            &double.slice(..),
            N,
            &mut grams.slice_mut(..),
            (N, N, 1),
            "warming up cuBLAS",
        )?;
        stream.synchronize().context("warming up cuBLAS")?;
        self.record("cuBLAS warm-up", started);
        Ok(())
    }

    /// The device's TF32 cuBLAS handle (on its stream, math mode
    /// `CUBLAS_TF32_TENSOR_OP_MATH` from its creation on), created on first use.
    pub(crate) fn blas_tf32(&self) -> Result<&CudaBlas> {
        self.blas_handle(&self.inner.blas_tf32, true)
    }

    /// The handle in `cell`, made (in TF32 math mode when `tf32`) on first use.
    fn blas_handle<'a>(&self, cell: &'a OnceLock<CudaBlas>, tf32: bool) -> Result<&'a CudaBlas> {
        if let Some(blas) = cell.get() {
            return Ok(blas);
        }
        let started = Instant::now();
        let blas = blas_handle_on(self.inner.stream.clone(), tf32)?;
        self.record("cuBLAS handle", started);
        Ok(cell.get_or_init(|| blas))
    }

    /// The functions of kernel set `K`, compiling and loading its module on first use.
    pub(crate) fn kernels<K: KernelSet>(&self) -> Result<Arc<K>> {
        let mut sets = lock(&self.inner.kernel_sets);
        if let Some(set) = sets.get(&TypeId::of::<K>()) {
            if let Ok(set) = set.clone().downcast::<K>() {
                return Ok(set);
            }
        }
        let module = self.module(&K::MODULE)?;
        let set = Arc::new(K::load(&LoadedModule { module })?);
        sets.insert(TypeId::of::<K>(), set.clone());
        Ok(set)
    }

    /// Loads those of `modules` this device runs and has not loaded yet, side by side: the
    /// driver compiles each on a thread of its own where the kernel cache lacks it, so a first
    /// run waits for the slowest module rather than for all of them in turn. A module that
    /// fails is left for its first use to report.
    pub(crate) fn preload(&self, modules: &[Module]) {
        let capability = self.inner.info.compute_capability;
        let missing: Vec<&Module> = {
            let loaded = lock(&self.inner.modules);
            modules
                .iter()
                .filter(|m| m.target.runs_on(capability) && !loaded.contains_key(m.name))
                .collect()
        };
        std::thread::scope(|scope| {
            for module in missing {
                scope.spawn(move || {
                    let _ = self.module(module);
                });
            }
        });
    }

    /// `module`, loaded on first use (recorded as a start-up phase).
    fn module(&self, module: &Module) -> Result<Arc<CudaModule>> {
        if let Some(loaded) = lock(&self.inner.modules).get(module.name) {
            return Ok(loaded.clone());
        }
        let started = Instant::now();
        let (loaded, how) = self.load_module(module)?;
        self.record(format!("kernels {} ({how})", module.name), started);
        Ok(lock(&self.inner.modules)
            .entry(module.name)
            .or_insert(loaded)
            .clone())
    }

    /// Loads `module`'s shipped cubin for this device's architecture, else its cubin from the
    /// kernel cache, else has the driver compile the module's PTX and stores the result there;
    /// says which (`shipped`, `cached`, `compiled`). A cache that cannot be used is noted,
    /// never an error.
    ///
    /// # Errors
    /// [`GpuError::Unsupported`] for a module whose target this device cannot run; as
    /// [`compile`].
    fn load_module(&self, module: &Module) -> Result<(Arc<CudaModule>, &'static str)> {
        let capability = self.inner.info.compute_capability;
        if !module.target.runs_on(capability) {
            return Err(GpuError::Unsupported {
                what: format!("the kernels of {}", module.name),
                reason: format!(
                    "they are built for {}; this device has compute capability {}.{}",
                    module.target.architecture(),
                    capability.0,
                    capability.1
                ),
            });
        }
        // Machine code made for this architecture: nothing to compile.
        if let Some(cubin) = module.cubin_for(capability).filter(|_| shipped_cubins()) {
            match self
                .inner
                .ctx
                .load_module(Ptx::from_binary(cubin.image.to_vec()))
            {
                Ok(loaded) => return Ok((loaded, "shipped")),
                Err(e) => self.note_kernels(format!(
                    "the driver rejected the shipped {} for {} ({e}); compiling its PTX",
                    module.name, cubin.architecture
                )),
            }
        }
        let key = self.module_key(module);
        let cache = cache_dir().map(KernelCache::new);
        if let Some(cache) = &cache {
            match cache.load(module.name, key) {
                Lookup::Hit(image) => match self.inner.ctx.load_module(Ptx::from_binary(image)) {
                    Ok(loaded) => return Ok((loaded, "cached")),
                    Err(e) => self.note_kernels(format!(
                        "the driver rejected the cached {} ({e}); compiling it again",
                        module.name
                    )),
                },
                Lookup::Miss => {}
                Lookup::Unusable(note) => {
                    self.note_kernels(format!("the kernel cache: {note}; compiling again"))
                }
            }
        }
        let image = compile(&self.inner.ctx, module)?;
        if let Some(cache) = &cache {
            if let Err(note) = cache.store(module.name, key, &image) {
                self.note_kernels(format!(
                    "the kernel cache: {note}; kernels will be compiled again by every process \
                     (set {} to a writable folder, or to `off`)",
                    super::CACHE_ENV
                ));
            }
        }
        let loaded = self
            .inner
            .ctx
            .load_module(Ptx::from_binary(image))
            .context("loading a compiled kernel module")?;
        Ok((loaded, "compiled"))
    }

    /// The cache key of `module` on this device: its PTX, the device's compute capability,
    /// the driver's version (its compiler made the cubin) and this crate's version.
    fn module_key(&self, module: &Module) -> u64 {
        let (major, minor) = self.inner.driver_version;
        let (cc_major, cc_minor) = self.inner.info.compute_capability;
        let target = format!("driver {major}.{minor}, sm_{cc_major}{cc_minor}");
        fingerprint(&[
            env!("CARGO_PKG_VERSION").as_bytes(),
            module.name.as_bytes(),
            module.ptx.as_bytes(),
            target.as_bytes(),
        ])
    }

    /// Reads an attribute of the device.
    pub(crate) fn attribute(&self, attribute: CUdevice_attribute) -> Result<i32> {
        self.inner
            .ctx
            .attribute(attribute)
            .context("reading a device attribute")
    }

    /// Captures the launches `enqueue` puts on the device's stream into a CUDA graph
    /// (instantiated and uploaded) instead of running them: replaying the graph runs the same
    /// work without the host's cost per launch. `enqueue` must only launch (no copies from
    /// the host, no synchronisation).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub(crate) fn capture(&self, enqueue: impl FnOnce() -> Result<()>) -> Result<CudaGraph> {
        Self::capture_on(self.stream(), enqueue)
    }

    /// [`GpuDevice::capture`] on `stream`, whose launches `enqueue` makes. A capture takes
    /// every launch into its stream, from any thread: where other threads may use the
    /// device, capture on a stream of one's own (replaying the graph runs there too).
    pub(crate) fn capture_on(
        stream: &Arc<CudaStream>,
        enqueue: impl FnOnce() -> Result<()>,
    ) -> Result<CudaGraph> {
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .context("starting a graph capture")?;
        let enqueued = enqueue();
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .context("ending the graph capture")?;
        enqueued?;
        let graph = graph.ok_or_else(|| {
            ReservoirError::invalid("CUDA graph capture", "nothing was launched to capture")
        })?;
        graph.upload().context("uploading the graph")?;
        Ok(graph)
    }

    /// Lets `function` use as much dynamic shared memory as the device allows next to its
    /// static shared memory, and returns that many bytes. Functions are shared by every plan on
    /// the device, so the limit is always this maximum rather than one plan's size: a smaller
    /// limit set by another plan (in another thread) would make this plan's launch fail. Each
    /// launch states its own size.
    pub(crate) fn allow_shared_memory(&self, function: &CudaFunction) -> Result<usize> {
        let optin = self
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
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
}
