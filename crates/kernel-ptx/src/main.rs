//! Writes `<dir>/<module>.ptx` for every module of `reservoir_kernels::MODULES`, compiled by
//! NVRTC with `PTX_OPTIONS` for the module's target and stamped with `Module::ptx_stamp`, and
//! `<dir>/<module>.<sm_XY>.cubin` for each of the target's `cubin_architectures`, listed with
//! the same fingerprint in `<dir>/cubins.txt`. The PTX ISA version is NVRTC's own, so the NVRTC
//! used sets the oldest driver that takes the PTX: `kernels/generate-ptx.sh` runs this with
//! NVRTC 12.1 (PTX ISA 8.1).
//!
//! Usage: `kernel-ptx DIR`.

use std::ffi::{c_char, CString};
use std::fmt::Write as _;
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::ExitCode;

use cudarc::nvrtc::{result, sys};
use reservoir_kernels::{Module, HEADERS, MODULES, PTX_OPTIONS};

/// An NVRTC program, destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once, here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// `text` as a C string (NVRTC reads up to the first NUL).
fn c_string(text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| "a source holds a NUL byte".to_string())
}

/// A string NVRTC returned, up to its NUL.
fn text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What NVRTC hands back.
enum Output {
    /// PTX text.
    Ptx,
    /// A cubin.
    Cubin,
}

/// `module` compiled for `architecture` (`compute_XY` for PTX, `sm_XY` for a cubin).
fn compile(module: &Module, architecture: &str, output: Output) -> Result<Vec<u8>, String> {
    let source = c_string(module.source)?;
    let name = c_string(module.name)?;
    let header_texts = HEADERS
        .iter()
        .map(|(_, text)| c_string(text))
        .collect::<Result<Vec<_>, _>>()?;
    let header_names = HEADERS
        .iter()
        .map(|(name, _)| c_string(name))
        .collect::<Result<Vec<_>, _>>()?;
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
    .map_err(|e| format!("creating the program: {e:?}"))?;
    // SAFETY: nvrtcCreateProgram succeeded, so the program is initialised.
    let program = Program(unsafe { program.assume_init() });
    let mut options: Vec<String> = PTX_OPTIONS.iter().map(|o| o.to_string()).collect();
    options.push(format!("--gpu-architecture={architecture}"));
    // SAFETY: the program is alive; the options are plain strings.
    if let Err(e) = unsafe { result::compile_program(program.0, &options) } {
        // SAFETY: as above; the log exists after a compilation attempt.
        let log = unsafe { result::get_program_log(program.0) }
            .map(|log| text(&log))
            .unwrap_or_else(|_| format!("{e:?}"));
        return Err(log);
    }
    match output {
        Output::Ptx => {
            // SAFETY: the program compiled.
            let ptx = unsafe { result::get_ptx(program.0) }
                .map_err(|e| format!("reading the PTX: {e:?}"))?;
            Ok(text(&ptx).into_bytes())
        }
        Output::Cubin => {
            let mut size = 0usize;
            // SAFETY: the program compiled; the call writes one size.
            unsafe { sys::nvrtcGetCUBINSize(program.0, &mut size) }
                .result()
                .map_err(|e| format!("reading the cubin's size: {e:?}"))?;
            let mut bytes = vec![0u8; size];
            // SAFETY: `bytes` holds the `size` bytes NVRTC writes.
            unsafe { sys::nvrtcGetCUBIN(program.0, bytes.as_mut_ptr().cast()) }
                .result()
                .map_err(|e| format!("reading the cubin: {e:?}"))?;
            Ok(bytes)
        }
    }
}

/// NVRTC's version, `major.minor`.
fn nvrtc_version() -> Result<String, String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the call writes two ints.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| format!("{e:?}"))?;
    Ok(format!("{major}.{minor}"))
}

/// Writes `bytes` to `path`, saying so.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("{} ({} bytes)", path.display(), bytes.len());
    Ok(())
}

fn run(dir: &Path) -> Result<(), String> {
    // SAFETY: only tries to dlopen libnvrtc; no NVRTC function is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "the NVRTC library (libnvrtc.so) was not found; put its folder on \
                    LD_LIBRARY_PATH (kernels/generate-ptx.sh fetches NVRTC 12.1)"
                .into(),
        );
    }
    let version = nvrtc_version()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut listed = String::new();
    for module in MODULES {
        let failed = |log: String| format!("{}: {}", module.name, log.trim());
        let stem = module.name.trim_end_matches(".cu");
        let ptx = compile(module, module.target.architecture(), Output::Ptx).map_err(failed)?;
        let mut file = String::new();
        let _ = writeln!(file, "{}", module.ptx_stamp());
        let _ = writeln!(
            file,
            "// made by NVRTC {version}; do not edit: kernels/generate-ptx.sh"
        );
        file.push_str(&String::from_utf8_lossy(&ptx));
        write(&dir.join(format!("{stem}.ptx")), file.as_bytes())?;
        for architecture in module.target.cubin_architectures() {
            let cubin = compile(module, architecture, Output::Cubin).map_err(failed)?;
            write(&dir.join(format!("{stem}.{architecture}.cubin")), &cubin)?;
            let _ = writeln!(
                listed,
                "{} {architecture} {:016x}",
                module.name,
                module.source_fingerprint()
            );
        }
    }
    write(&dir.join("cubins.txt"), listed.as_bytes())?;
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: kernel-ptx DIR");
        return ExitCode::from(2);
    };
    match run(Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
