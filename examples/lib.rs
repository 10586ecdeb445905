//! Runnable examples of the reservoir engine as a library, numbered by idea; each shows one
//! thing end to end and prints a measured result:
//!
//! - `01_fit_and_predict`: the core data flow on NARMA-10 (config → weights → reservoir →
//!   ridge readout → predictions → NRMSE).
//! - `02_closed_loop_forecast`: Mackey–Glass, trained one step ahead, then run free on its
//!   own predictions.
//! - `03_custom_readout`: states out as a plain array, your own model in.
//! - `04_spikes_on_the_gpu`: spike patterns through `GpuReservoirComputer::process_gpu`, or
//!   through the CPU's `run_pattern` where there is no GPU; a readout tells them apart.
//! - `05_many_sequences`: many short labelled sequences in one `Reservoir::run_many` call,
//!   classified from their last states.
//! - `06_spike_detection_pipeline`: the engine as a step of a graph analysis: features →
//!   spikes → reservoir → template detector and readout.
//!
//! Run one with `cargo run --release -p reservoir-examples --example NAME`, e.g.
//! `cargo run --release -p reservoir-examples --example 01_fit_and_predict`.
