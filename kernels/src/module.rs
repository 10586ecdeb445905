//! What a kernel module is: its source, entry points and target, the PTX and cubins made from
//! it, and the fingerprint that ties them to the source.

use crate::HEADERS;

/// A translation unit: one `.cu` file of this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Module {
    /// File name, for messages (e.g. `esn.cu`).
    pub name: &'static str,
    /// The CUDA C++ text.
    pub source: &'static str,
    /// The entry points (`extern "C" __global__` functions) of the file.
    pub entry_points: &'static [&'static str],
    /// The devices the module is built for.
    pub target: Target,
    /// The module's PTX, made from `source` by `generate-ptx.sh`; its first line is
    /// [`Module::ptx_stamp`].
    pub ptx: &'static str,
    /// Machine code made from `source` in the same run, for [`Target::cubin_architectures`]
    /// (listed with the source's fingerprint in `ptx/cubins.txt`).
    pub cubins: &'static [Cubin],
}

/// A module compiled to one architecture's machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cubin {
    /// `sm_XY`, or `sm_XYa` for an architecture-specific target.
    pub architecture: &'static str,
    /// The ELF image the driver loads.
    pub image: &'static [u8],
}

impl Cubin {
    /// Whether a device of compute capability `(major, minor)` runs this machine code: the
    /// same major version and a minor version at least the cubin's (exactly it for an
    /// architecture-specific cubin).
    pub fn runs_on(&self, (major, minor): (i32, i32)) -> bool {
        let digits = self.architecture.trim_start_matches("sm_");
        let specific = digits.ends_with('a');
        let digits = digits.trim_end_matches('a');
        let Some((own_major, own_minor)) = digits
            .split_at_checked(digits.len().saturating_sub(1))
            .and_then(|(a, b)| Some((a.parse::<i32>().ok()?, b.parse::<i32>().ok()?)))
        else {
            return false;
        };
        major == own_major
            && if specific {
                minor == own_minor
            } else {
                minor >= own_minor
            }
    }
}

/// The virtual architecture a module's PTX is made for, which sets the devices that can run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// `compute_70`: every device the engine supports (compute capability 7.0 and later).
    Portable,
    /// `compute_90`: thread-block clusters and the transaction barriers (9.0 and later).
    Clusters,
    /// `compute_90a`: capability 9.0's architecture-specific instructions (warpgroup register
    /// reallocation); the driver compiles such PTX for capability 9.0 only.
    Hopper,
}

impl Target {
    /// NVRTC's `--gpu-architecture` for the PTX.
    pub const fn architecture(self) -> &'static str {
        match self {
            Self::Portable => "compute_70",
            Self::Clusters => "compute_90",
            Self::Hopper => "compute_90a",
        }
    }

    /// The architectures a cubin of the module ships for, beside its PTX, so that the most
    /// common devices load machine code without the driver's compile: `sm_80` (which also
    /// runs on 8.6, 8.7 and 8.9) and `sm_90`.
    pub const fn cubin_architectures(self) -> &'static [&'static str] {
        match self {
            Self::Portable => &["sm_80", "sm_90"],
            Self::Clusters => &["sm_90"],
            Self::Hopper => &["sm_90a"],
        }
    }

    /// Whether a device of compute capability `(major, minor)` can run the PTX.
    pub fn runs_on(self, capability: (i32, i32)) -> bool {
        match self {
            Self::Portable => capability >= (7, 0),
            Self::Clusters => capability >= (9, 0),
            Self::Hopper => capability == (9, 0),
        }
    }
}

/// The NVRTC options every module's PTX is made with, before its `--gpu-architecture`:
/// `--fmad=false`, so every kernel keeps the CPU reference's separately rounded multiplies and
/// adds (PTX's `mul.rn`/`add.rn`, which the driver's compiler does not fuse either); device code
/// by default, so that lambdas inside kernels (which NVRTC would otherwise take for host
/// functions) compile.
pub const PTX_OPTIONS: &[&str] = &["--fmad=false", "--device-as-default-execution-space"];

/// The oldest CUDA version whose driver takes the PTX (the PTX ISA version NVRTC 12.1 writes,
/// 8.1, which the cluster kernels' asynchronous stores need), as `cuDriverGetVersion` gives
/// it: 1000 × major + 10 × minor.
pub const MINIMUM_DRIVER_CUDA: i32 = 12010;

/// The oldest Linux driver of [`MINIMUM_DRIVER_CUDA`], for messages.
pub const MINIMUM_DRIVER_RELEASE: &str = "530.30.02";

/// FNV-1a over `parts`, each prefixed by its length so that no two lists of parts collide by
/// concatenation. Stable across Rust versions and platforms, unlike `std`'s hasher.
pub fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for part in parts {
        eat(&(part.len() as u64).to_le_bytes());
        eat(part);
    }
    hash
}

impl Module {
    /// The fingerprint of everything the PTX is made from: the source, every header, the
    /// options and the target.
    pub fn source_fingerprint(&self) -> u64 {
        let mut parts: Vec<&[u8]> = vec![self.name.as_bytes(), self.source.as_bytes()];
        for (name, text) in HEADERS {
            parts.push(name.as_bytes());
            parts.push(text.as_bytes());
        }
        for option in PTX_OPTIONS {
            parts.push(option.as_bytes());
        }
        parts.push(self.target.architecture().as_bytes());
        fingerprint(&parts)
    }

    /// The shipped cubin a device of compute capability `capability` runs, if any (the one of
    /// the highest architecture that runs there).
    pub fn cubin_for(&self, capability: (i32, i32)) -> Option<&'static Cubin> {
        self.cubins
            .iter()
            .filter(|cubin| cubin.runs_on(capability))
            .max_by_key(|cubin| cubin.architecture)
    }

    /// The first line of the module's PTX file (a PTX comment), which ties it to its source.
    pub fn ptx_stamp(&self) -> String {
        format!(
            "// {} for {}, source fingerprint {:016x}",
            self.name,
            self.target.architecture(),
            self.source_fingerprint()
        )
    }
}
