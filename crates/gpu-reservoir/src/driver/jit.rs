//! The driver's own compiler: a module's shipped PTX compiled into a cubin for the device
//! (the linker's output, so the kernel cache can keep it). Only the driver is needed: no
//! CUDA toolkit, no NVRTC.

use std::ffi::{c_char, c_void, CString};
use std::ptr;

use cudarc::driver::sys::{self, CUjitInputType, CUjit_option, CUresult};
use cudarc::driver::CudaContext;
use reservoir_kernels::{Module, MINIMUM_DRIVER_CUDA, MINIMUM_DRIVER_RELEASE};

use crate::error::{DriverContext, GpuError, Result};

/// Bytes of the driver's error log kept for a message.
const LOG_BYTES: usize = 8192;

/// A link state of the driver, destroyed when dropped.
struct Link(sys::CUlinkState);

impl Drop for Link {
    fn drop(&mut self) {
        // SAFETY: the state was created by cuLinkCreate and is destroyed once, here (after which
        // the cubin it returned is gone, so it is copied out before).
        let _ = unsafe { sys::cuLinkDestroy(self.0) };
    }
}

/// The error of a failed compile: the driver's log, and for PTX newer than the driver takes,
/// the driver the kernels need.
fn compile_error(module: &Module, code: CUresult, log: &[u8]) -> GpuError {
    if code == CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
        return GpuError::Unavailable {
            reason: format!(
                "the NVIDIA driver is too old for the kernels' PTX ({}); they need CUDA {}.{} \
                 or later (Linux driver {MINIMUM_DRIVER_RELEASE} or later)",
                module.name,
                MINIMUM_DRIVER_CUDA / 1000,
                (MINIMUM_DRIVER_CUDA % 1000) / 10
            ),
        };
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let log = String::from_utf8_lossy(&log[..end])
        .trim()
        .replace('\n', " ");
    GpuError::Compile {
        module: module.name,
        log: if log.is_empty() {
            format!("{code:?}")
        } else {
            log
        },
    }
}

/// `module`'s PTX compiled for the device of `ctx` (the caller checks that its target runs
/// there).
///
/// # Errors
/// [`GpuError::Compile`] with the driver's log; [`GpuError::Unavailable`] for a driver older
/// than the PTX; a driver error binding the context.
pub(crate) fn compile(ctx: &CudaContext, module: &Module) -> Result<Vec<u8>> {
    ctx.bind_to_thread().context("binding the CUDA context")?;
    let ptx = CString::new(module.ptx).map_err(|_| GpuError::Compile {
        module: module.name,
        log: "the PTX holds a NUL byte".into(),
    })?;
    let name = CString::new(module.name).unwrap_or_default();
    let mut log = vec![0u8; LOG_BYTES];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The driver reads a size option's value from the pointer's bits.
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), LOG_BYTES as *mut c_void];
    let mut state = ptr::null_mut();
    // SAFETY: two options with their values; `log` outlives the link state.
    let created = unsafe {
        sys::cuLinkCreate_v2(
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state,
        )
    };
    if created != CUresult::CUDA_SUCCESS {
        return Err(compile_error(module, created, &log));
    }
    let link = Link(state);
    // SAFETY: the PTX is NUL-terminated and its size counts the NUL; no per-input options.
    let added = unsafe {
        sys::cuLinkAddData_v2(
            link.0,
            CUjitInputType::CU_JIT_INPUT_PTX,
            ptx.as_ptr() as *mut c_void,
            ptx.as_bytes_with_nul().len(),
            name.as_ptr() as *const c_char,
            0,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if added != CUresult::CUDA_SUCCESS {
        return Err(compile_error(module, added, &log));
    }
    let mut cubin = ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: the state holds one PTX input; the call writes a pointer and a size.
    let completed = unsafe { sys::cuLinkComplete(link.0, &mut cubin, &mut size) };
    if completed != CUresult::CUDA_SUCCESS || cubin.is_null() {
        return Err(compile_error(module, completed, &log));
    }
    // SAFETY: the driver's cubin of `size` bytes lives until the link state is destroyed.
    Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::test_gpu;
    use cudarc::nvrtc::Ptx;
    use reservoir_kernels::MODULES;

    #[test]
    fn every_module_the_device_runs_compiles_from_its_ptx_with_every_entry_point() {
        let Some(device) = test_gpu() else { return };
        let capability = device.info().compute_capability;
        for module in MODULES.iter().filter(|m| m.target.runs_on(capability)) {
            let cubin = compile(device.context(), module)
                .unwrap_or_else(|e| panic!("{}: {e}", module.name));
            let loaded = device
                .context()
                .load_module(Ptx::from_binary(cubin))
                .unwrap_or_else(|e| panic!("{}: {e}", module.name));
            for entry in module.entry_points {
                assert!(
                    loaded.load_function(entry).is_ok(),
                    "{}: {entry} is missing",
                    module.name
                );
            }
        }
    }
}
