//! # reservoir-runtime
//!
//! Runs the reservoir engine for users: [`Dispatch`] builds every reservoir on the
//! [`Device`] asked for (`auto`, `cpu`, `cuda`, `cuda:N`); [`experiment`] runs a config's task
//! end to end; [`sweep`] runs hyper-parameter lanes and ranks them; [`model`] saves and loads
//! trained models; [`tasks`] generates the benchmark tasks (NARMA-10, Mackey–Glass, Lorenz,
//! memory capacity, spike-pattern classification).
//!
//! ```
//! use reservoir_runtime::experiment::{run, ExperimentConfig};
//! use reservoir_runtime::{Device, Dispatch};
//!
//! let config = ExperimentConfig::from_toml(
//!     "[task]\nkind = \"narma10\"\ntrain = 1500\ntest = 500\nseed = 1\n\
//!      [reservoir]\nsize = 200\nleak_rate = 1.0\n",
//!     "<example>",
//! )?;
//! let report = run(&config, &mut Dispatch::new(Device::Cpu))?;
//! assert_eq!(report.task, "narma10");
//! # Ok::<(), reservoir_runtime::RuntimeError>(())
//! ```

#![warn(missing_docs)]

mod cost;
pub mod device;
pub mod dispatch;
pub mod error;
pub mod experiment;
pub mod files;
pub mod launch;
pub mod memory;
pub mod model;
pub mod sequences;
pub mod sweep;
pub mod tasks;

pub use device::{Device, Devices};
pub use dispatch::{Dispatch, Placement, Workload};
pub use error::{Result, RuntimeError};
pub use gpu_reservoir::GemmMath;
pub use launch::Launch;
