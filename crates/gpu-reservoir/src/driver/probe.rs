//! What this machine has for CUDA, found without panicking.
//!
//! cudarc loads libcuda, libnvrtc and libcublas at run time and panics on the first call into
//! a library it cannot find, so every probe asks `is_culib_present` before calling anything.

use cudarc::driver::{result, sys, CudaContext};
use serde::Serialize;

/// One CUDA device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuSupport {
    /// CUDA driver version as (major, minor), when libcuda loaded and initialised.
    pub driver_version: Option<(i32, i32)>,
    /// Whether libnvrtc (run-time compilation) can be loaded.
    pub nvrtc: bool,
    /// Whether libcublas can be loaded.
    pub cublas: bool,
    /// The devices the driver reports.
    pub devices: Vec<DeviceInfo>,
    /// Why the GPU backend cannot run, if it cannot.
    pub problem: Option<String>,
}

impl GpuSupport {
    /// Whether a GPU reservoir can be built (driver, NVRTC and at least one device).
    pub fn usable(&self) -> bool {
        self.problem.is_none()
    }
}

/// Looks for the driver, NVRTC, cuBLAS and devices; never panics.
pub fn probe() -> GpuSupport {
    let mut support = probe_devices();
    // SAFETY: these only try to dlopen the libraries; no function of theirs is called.
    let (nvrtc, cublas) = unsafe {
        (
            cudarc::nvrtc::sys::is_culib_present(),
            cudarc::cublas::sys::is_culib_present(),
        )
    };
    support.nvrtc = nvrtc;
    support.cublas = cublas;
    if support.problem.is_none() && !nvrtc {
        support.problem = Some(
            "the NVRTC library (libnvrtc.so) was not found; it compiles the kernels at run time"
                .into(),
        );
    }
    support
}

/// The driver and its devices only: what opening a device needs. NVRTC and cuBLAS are large
/// libraries, loaded only when a kernel must be compiled or a product needs cuBLAS.
pub(crate) fn probe_devices() -> GpuSupport {
    // SAFETY: this only tries to dlopen libcuda; no CUDA function is called.
    let driver_present = unsafe { sys::is_culib_present() };
    let mut support = GpuSupport {
        driver_version: None,
        nvrtc: false,
        cublas: false,
        devices: Vec::new(),
        problem: None,
    };
    if !driver_present {
        support.problem = Some("the NVIDIA driver library (libcuda.so.1) was not found".into());
        return support;
    }
    if let Err(e) = result::init() {
        support.problem = Some(format!("the CUDA driver did not initialise: {e}"));
        return support;
    }
    let mut version = 0;
    // SAFETY: libcuda is loaded (checked above); the call writes one int.
    if unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .is_ok()
    {
        support.driver_version = Some((version / 1000, (version % 1000) / 10));
    }
    match CudaContext::device_count() {
        Ok(count) => support.devices = (0..count.max(0) as usize).filter_map(device_info).collect(),
        Err(e) => {
            support.problem = Some(format!("the driver reports no CUDA device: {e}"));
            return support;
        }
    }
    if support.devices.is_empty() {
        support.problem = Some("the driver reports no CUDA device".into());
    }
    support
}

fn device_info(ordinal: usize) -> Option<DeviceInfo> {
    use sys::CUdevice_attribute::*;
    let dev = result::device::get(ordinal as i32).ok()?;
    // SAFETY: `dev` is a valid device handle from the initialised driver.
    let attribute = |a| unsafe { result::device::get_attribute(dev, a) }.ok();
    Some(DeviceInfo {
        ordinal,
        name: result::device::get_name(dev).ok()?,
        compute_capability: (
            attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        // SAFETY: as above.
        total_memory: unsafe { result::device::total_mem(dev) }.ok()?,
        multiprocessors: attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    })
}
