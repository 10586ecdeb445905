//! # reservoir-core
//!
//! Reservoir computing on the CPU, with no GPU code. The data flows one way:
//!
//! ```text
//! ReservoirConfig ──► ReservoirWeights::generate (seeded, spectral radius by power iteration)
//!                 ──► EchoStateNetwork::run (inputs T × K → states T × N)
//!                 ──► RidgeAccumulator / Rls (readout)  ──► predict ──► metrics
//! ```
//!
//! Same config and seed give bit-identical weights and CPU states on every run.

pub mod activation;
pub mod config;
pub mod error;
pub mod esn;
pub mod experiment;
pub mod forecast;
pub mod metrics;
pub mod persist;
pub mod readout;
pub mod real;
pub mod reservoir;
pub mod rng;
pub mod sparse;
pub mod spectral;
pub mod tasks;
pub mod weights;

pub use config::{Activation, Precision, ReadoutConfig, ReservoirConfig, WeightDistribution};
pub use error::{ConfigError, ReservoirError, Result};
pub use esn::{cpu_reservoir, cpu_reservoir_from_weights, EchoStateNetwork};
pub use experiment::{ExperimentConfig, TaskConfig};
pub use persist::Model;
pub use reservoir::Reservoir;
pub use sparse::CsrMatrix;
pub use weights::ReservoirWeights;
