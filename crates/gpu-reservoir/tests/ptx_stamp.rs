//! CPU test: the shipped PTX was built from the current kernel source with the current flags.

use gpu_reservoir::kernels::{GEMV_PTX, GEMV_PTX_FLAGS, GEMV_SOURCE};
use sha2::{Digest, Sha256};

#[test]
fn ptx_stamp_matches_the_source_and_flags() {
    let mut hasher = Sha256::new();
    hasher.update(GEMV_SOURCE.as_bytes());
    hasher.update(GEMV_PTX_FLAGS.as_bytes());
    let expected: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let first_line = GEMV_PTX.lines().next().unwrap_or_default();
    assert!(
        first_line.ends_with(&expected),
        "kernels/ptx/neuromorphic_gemv.ptx is stale: rebuild it with kernels/build_ptx.sh on a \
         machine with nvcc.\n  stamp in file: {first_line}\n  expected hash: {expected}"
    );
}

#[test]
fn build_script_uses_the_flags_the_stamp_names() {
    let script = include_str!("../../../kernels/build_ptx.sh");
    assert!(
        script.contains(&format!("FLAGS=\"{GEMV_PTX_FLAGS}\"")),
        "build_ptx.sh and GEMV_PTX_FLAGS disagree"
    );
}

#[test]
fn ptx_declares_the_three_kernels() {
    for name in [
        "matvec_input_kernel",
        "matvec_reservoir_kernel",
        "leaky_integration_kernel",
    ] {
        assert!(
            GEMV_PTX.contains(&format!(".entry {name}")),
            "{name} missing from the PTX"
        );
    }
}
