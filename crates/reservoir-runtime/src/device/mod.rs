//! Where a job runs: the device names users write ([`Device`], [`Devices`]), the cost model
//! `auto` chooses with, the GPUs and processes a job spreads over ([`Launch`] and the meeting
//! of its ranks), and [`Dispatch`], the one place that builds a reservoir (or a sweep's lanes)
//! on the CPU or a GPU.

mod cost;
mod dispatch;
mod launch;
mod meeting;
mod name;
mod placement;
mod ranks;
mod topology;

pub use cost::Workload;
pub(crate) use dispatch::{Built, Spread};
pub use dispatch::{Dispatch, EarlyOpen, EARLY_OPEN_BYTES};
pub use launch::{Launch, Launcher};
pub use name::{Device, Devices};
pub use placement::Placement;
