//! NVRTC: a kernel module compiled to a cubin for the device's architecture (machine code the
//! driver loads without a further compile), with the shared headers of `reservoir-kernels`
//! given to the compiler (so `#include "common.cuh"` resolves without files on disk).

use std::ffi::{c_char, CString};
use std::mem::MaybeUninit;

use cudarc::nvrtc::{result, sys};
use reservoir_kernels::{Module, HEADERS};

use crate::error::{GpuError, Result};

/// An NVRTC program, destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once, here.
        // A failure leaks only the program.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// `text` as a C string; NVRTC reads sources up to their first NUL.
fn c_string(module: &Module, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| GpuError::Compile {
        module: module.name,
        log: "the source holds a NUL byte".into(),
    })
}

/// A string NVRTC returned (up to its NUL), lossily as text.
fn text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The options `module` is compiled with for compute capability `(major, minor)`:
/// `--fmad=false`, so every kernel keeps the CPU reference's separately rounded multiplies and
/// adds; device code by default, so that lambdas inside kernels (which NVRTC would otherwise
/// take for host functions) compile; and the device's architecture (its
/// architecture-specific target, `sm_90a`, for a [`Module::hopper_specific`] module).
pub(crate) fn options(module: &Module, (major, minor): (i32, i32)) -> [String; 3] {
    let specific = if module.hopper_specific { "a" } else { "" };
    [
        "--fmad=false".to_string(),
        "--device-as-default-execution-space".to_string(),
        format!("--gpu-architecture=sm_{major}{minor}{specific}"),
    ]
}

/// Compiles `module` to a cubin for compute capability `capability` with [`options`].
///
/// # Errors
/// [`GpuError::Unsupported`] for a [`Module::hopper_specific`] module on another capability
/// than 9.0; [`GpuError::Unavailable`] without NVRTC; [`GpuError::Compile`] with the
/// compiler's log.
pub(crate) fn compile(module: &Module, capability: (i32, i32)) -> Result<Vec<u8>> {
    if module.hopper_specific && capability != (9, 0) {
        return Err(GpuError::Unsupported {
            what: format!("the kernels of {}", module.name),
            reason: format!(
                "they are built for compute capability 9.0 (sm_90a); this device has {}.{}",
                capability.0, capability.1
            ),
        });
    }
    // SAFETY: only tries to dlopen libnvrtc; no NVRTC function is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::Unavailable {
            reason: format!(
                "the NVRTC library (libnvrtc.so) was not found; it compiles the kernels \
                 ({} is not in the kernel cache)",
                module.name
            ),
        });
    }
    let source = c_string(module, module.source)?;
    let name = c_string(module, module.name)?;
    let header_texts = HEADERS
        .iter()
        .map(|(_, text)| c_string(module, text))
        .collect::<Result<Vec<_>>>()?;
    let header_names = HEADERS
        .iter()
        .map(|(name, _)| c_string(module, name))
        .collect::<Result<Vec<_>>>()?;
    let texts: Vec<*const c_char> = header_texts.iter().map(|t| t.as_ptr()).collect();
    let names: Vec<*const c_char> = header_names.iter().map(|n| n.as_ptr()).collect();
    let mut program = MaybeUninit::uninit();
    // SAFETY: every pointer is a NUL-terminated string alive for the call; texts and names
    // hold HEADERS.len() entries each.
    unsafe {
        sys::nvrtcCreateProgram(
            program.as_mut_ptr(),
            source.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as i32,
            texts.as_ptr(),
            names.as_ptr(),
        )
    }
    .result()
    .map_err(|e| GpuError::Compile {
        module: module.name,
        log: format!("creating the program: {e:?}"),
    })?;
    // SAFETY: nvrtcCreateProgram succeeded, so the program is initialised.
    let program = Program(unsafe { program.assume_init() });
    // SAFETY: the program is alive; the options are plain strings.
    if let Err(e) = unsafe { result::compile_program(program.0, &options(module, capability)) } {
        // SAFETY: as above; the log exists after a compilation attempt.
        let log = unsafe { result::get_program_log(program.0) }
            .map(|log| text(&log).trim().replace('\n', " "))
            .unwrap_or_else(|_| format!("{e:?}"));
        return Err(GpuError::Compile {
            module: module.name,
            log,
        });
    }
    cubin(&program).map_err(|e| GpuError::Compile {
        module: module.name,
        log: format!("reading the cubin: {e:?}"),
    })
}

/// The cubin of a compiled program.
fn cubin(program: &Program) -> std::result::Result<Vec<u8>, result::NvrtcError> {
    let mut size = 0usize;
    // SAFETY: the program compiled; the call writes one size.
    unsafe { sys::nvrtcGetCUBINSize(program.0, &mut size) }.result()?;
    let mut bytes = vec![0u8; size];
    // SAFETY: `bytes` holds the `size` bytes NVRTC writes.
    unsafe { sys::nvrtcGetCUBIN(program.0, bytes.as_mut_ptr().cast()) }.result()?;
    Ok(bytes)
}
