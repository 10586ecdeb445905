//! The core's integration tests, one module per concept, in one test executable (the speed
//! the engine promises is timed alone, in `speed.rs`).

mod common;

mod config;
mod conformance;
mod cpu_kernels;
mod deep;
mod detection;
mod encoding;
mod esn;
mod lif;
mod links;
mod metrics;
mod nvar_reservoir;
mod plasticity;
mod random_counter;
mod readout;
mod representations;
mod run_many;
mod spectral;
mod spikes;
