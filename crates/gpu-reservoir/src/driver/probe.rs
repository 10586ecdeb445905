//! What this machine has for CUDA, found without panicking.
//!
//! cudarc loads libcuda and libcublas at run time and panics on the first call into
//! a library it cannot find, so every probe asks `is_culib_present` before calling anything.

use cudarc::driver::{result, sys, CudaContext};
use reservoir_kernels::{MINIMUM_DRIVER_CUDA, MINIMUM_DRIVER_RELEASE};
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
    /// Whether libcublas can be loaded.
    pub cublas: bool,
    /// The devices the driver reports.
    pub devices: Vec<DeviceInfo>,
    /// Why the GPU backend cannot run, if it cannot.
    pub problem: Option<String>,
}

impl GpuSupport {
    /// Whether a GPU reservoir can be built (a driver new enough and at least one device).
    pub fn usable(&self) -> bool {
        self.problem.is_none()
    }
}

/// Looks for the driver, cuBLAS and devices; never panics.
pub fn probe() -> GpuSupport {
    let mut support = probe_devices();
    // SAFETY: this only tries to dlopen libcublas; no function of it is called.
    support.cublas = unsafe { cudarc::cublas::sys::is_culib_present() };
    support
}

/// Why a driver of CUDA version `version` (`cuDriverGetVersion`'s number) cannot run the
/// kernels, if it cannot: their PTX needs [`MINIMUM_DRIVER_CUDA`].
fn driver_too_old(version: i32) -> Option<String> {
    (version < MINIMUM_DRIVER_CUDA).then(|| {
        format!(
            "the NVIDIA driver supports CUDA {}.{}; the kernels need CUDA {}.{} or later (Linux \
             driver {MINIMUM_DRIVER_RELEASE} or later)",
            version / 1000,
            (version % 1000) / 10,
            MINIMUM_DRIVER_CUDA / 1000,
            (MINIMUM_DRIVER_CUDA % 1000) / 10
        )
    })
}

/// The driver and its devices only: what opening a device needs. cuBLAS is a large library,
/// loaded only when a product needs it.
pub(crate) fn probe_devices() -> GpuSupport {
    // SAFETY: this only tries to dlopen libcuda; no CUDA function is called.
    let driver_present = unsafe { sys::is_culib_present() };
    let mut support = GpuSupport {
        driver_version: None,
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
        if let Some(reason) = driver_too_old(version) {
            support.problem = Some(reason);
            return support;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_older_than_the_ptx_is_named_with_the_driver_needed() {
        let reason = driver_too_old(11080).expect("CUDA 11.8 is too old");
        assert!(
            reason.contains("supports CUDA 11.8") && reason.contains(MINIMUM_DRIVER_RELEASE),
            "{reason}"
        );
        assert_eq!(driver_too_old(MINIMUM_DRIVER_CUDA), None);
        assert_eq!(driver_too_old(13000), None);
    }
}
