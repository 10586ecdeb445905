//! # reservoir-runtime
//!
//! Runs the reservoir engine for users, in layers that each use only those listed before
//! them:
//!
//! - [`device`]: where a job runs. [`Dispatch`] builds every reservoir on the [`Device`]
//!   asked for (`auto`, `cpu`, `cuda`, `cuda:N`), the cost model picks one under `auto`,
//!   and a job spreads over the GPUs and processes ([`Launch`]) it is given.
//! - [`config`]: experiment files (TOML), checked once.
//! - [`data`]: the benchmark tasks' generators.
//! - [`model`]: trained models, what they compute, and their files.
//! - [`jobs`]: one function per job (run a task, sweep, fit and score many sequences).
//!
//! Beneath them all: [`error`], [`files`] (outputs staged and committed together) and
//! [`memory`] (a job's peak memory, checked before it starts).
//!
//! ```
//! use reservoir_runtime::config::ExperimentConfig;
//! use reservoir_runtime::jobs::run::run;
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

pub mod config;
pub mod data;
pub mod device;
pub mod error;
pub mod files;
pub mod jobs;
pub mod memory;
pub mod model;

pub use device::{Device, Devices, Dispatch, Launch, Launcher, Placement, Workload};
pub use error::{Result, RuntimeError};
pub use gpu_reservoir::GemmMath;
