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
//!
//! ```
//! use reservoir_core::readout::fit_ridge;
//! use reservoir_core::tasks::narma::narma10;
//! use reservoir_core::{cpu_reservoir, metrics::nrmse, ReadoutConfig, ReservoirConfig};
//!
//! let (train, test) = narma10(3000, 1)?.split(2000)?;
//! let config = ReservoirConfig { size: 500, spectral_radius: 0.9, leak_rate: 1.0, ..Default::default() };
//! let mut reservoir = cpu_reservoir(&config)?;
//! let fit = fit_ridge(reservoir.as_mut(), train.inputs.view(), train.targets.view(), &ReadoutConfig::default())?;
//! let predictions = fit.readout.predict(reservoir.run(test.inputs.view())?.view())?;
//! let error = nrmse(predictions.view(), test.targets.view())?;
//! assert!(error < 0.25, "test NRMSE {error}");
//! # Ok::<(), reservoir_core::ReservoirError>(())
//! ```

#![warn(missing_docs)]

pub mod activation;
pub mod config;
pub mod counter_rng;
pub mod detection;
pub mod encoding;
pub mod error;
pub mod esn;
pub mod experiment;
pub mod forecast;
pub mod lif;
pub mod metrics;
pub mod persist;
pub mod readout;
pub mod real;
pub mod reservoir;
pub mod rng;
pub mod sparse;
pub mod spectral;
pub mod spikes;
pub mod sweep;
pub mod tasks;
pub mod weights;

pub use config::{
    Activation, Backend, Precision, ReadoutConfig, ReservoirConfig, WeightDistribution,
};
pub use error::{ConfigError, ReservoirError, Result};
pub use esn::{cpu_reservoir, cpu_reservoir_from_weights, EchoStateNetwork};
pub use experiment::{ExperimentConfig, RunHooks, RunOutcome, TaskConfig, TrainedModel};
pub use persist::{Model, SpikeModel};
pub use reservoir::Reservoir;
pub use sparse::CsrMatrix;
pub use weights::{HalfFormat, ReservoirWeights};
