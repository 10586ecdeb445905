//! # reservoir-core
//!
//! The numerical engine of reservoir computing, on the CPU and with no GPU code: checked
//! configs, seeded weights, spectral radius, echo-state and LIF reservoirs, spike patterns
//! and encoders, readouts, metrics and temporal pattern detection. The data flows one way:
//!
//! ```text
//! ReservoirParams::check ──► ReservoirConfig ──► ReservoirWeights::generate (seeded)
//!     ──► a Reservoir (EchoStateNetwork, LifNetwork, or a GPU one) ──► states
//!     ──► readout (fit::fit_ridge, readout::Rls) ──► predictions ──► metrics
//! ```
//!
//! Same config and seed give bit-identical weights and CPU states on every run.
//!
//! ```
//! use ndarray::{s, Array2};
//! use reservoir_core::{cpu_reservoir, fit, metrics, ReadoutParams, ReservoirParams, ReservoirWeights};
//!
//! // Predict sin(t + 0.1) from sin(t).
//! let series = Array2::from_shape_fn((2001, 1), |(t, _)| (t as f64 * 0.1).sin());
//! let (inputs, targets) = (series.slice(s![..2000, ..]), series.slice(s![1.., ..]));
//! let config = ReservoirParams::new().size(200).spectral_radius(0.9).check()?;
//! let (weights, _) = ReservoirWeights::generate(&config)?;
//! let mut reservoir = cpu_reservoir(&config, weights, reservoir_core::Par::all())?;
//! let readout = ReadoutParams::new().washout(100).check()?;
//! let fit = fit::fit_ridge(reservoir.as_mut(), inputs.slice(s![..1500, ..]), targets.slice(s![..1500, ..]), &readout)?;
//! let states = reservoir.run(inputs.slice(s![1500.., ..]))?;
//! let predictions = fit.readout.predict(states.view())?;
//! let error = metrics::nrmse(predictions.view(), targets.slice(s![1500.., ..]))?;
//! assert!(error < 1e-3, "test NRMSE {error}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod activation;
pub mod architecture;
mod bytes;
pub mod checks;
pub mod config;
pub mod deep;
pub mod detection;
pub mod encoding;
pub mod error;
pub mod esn;
pub mod features;
pub mod fit;
pub mod forecast;
pub mod lanes;
pub mod lif;
pub mod links;
pub mod memory;
pub mod metrics;
pub mod nvar;
mod par;
pub mod plasticity;
pub mod random;
pub mod readout;
pub mod real;
pub mod reservoir;
pub mod sparse;
pub mod spectral;
pub mod spikes;
pub mod weights;

pub use config::{
    Activation, Precision, ReadoutConfig, ReadoutParams, ReservoirConfig, ReservoirParams,
    WeightDistribution,
};
pub use deep::DeepReservoir;
pub use error::{ConfigError, ReservoirError, Result};
pub use esn::{cpu_reservoir, EchoStateNetwork};
pub use links::WithInput;
pub use nvar::NvarReservoir;
pub use par::Par;
pub use reservoir::Reservoir;
pub use sparse::CsrMatrix;
pub use weights::{HalfFormat, ReservoirWeights};
