//! The jobs every front end runs, one function each: the command line, the Python package and
//! Rust programs call these. [`fit`] fits a readout on one series; [`sequences`] fits, sweeps
//! and scores classifiers and regressions over many sequences; [`predict`] runs a trained
//! model over new inputs; [`run`] runs a config's task end to end; [`sweep`] runs a config's
//! hyper-parameter lanes over its task; [`spikes`] classifies spike patterns.

pub mod fit;
mod phases;
pub mod predict;
pub mod run;
pub mod sequences;
pub mod spikes;
pub mod sweep;

pub use phases::{Phase, Phases};
