//! The GPU crate's integration tests, one module per concept, in one test executable (the
//! out-of-memory test runs alone, in `out_of_memory.rs`). Without a usable GPU each test prints
//! why it skips; with `RESERVOIR_REQUIRE_GPU=1` it fails instead.

mod common;

mod architectures_parity;
mod batched_parity;
mod collectives;
mod conformance;
mod device_faults;
mod encoding_detection_parity;
mod esn_parity;
mod features_parity;
mod gram_parity;
mod kernels_compile;
mod lif_event_parity;
mod lif_parity;
mod probe;
mod ridge_solve;
mod small_kernels_parity;
mod spectral;
mod sweep_parity;
