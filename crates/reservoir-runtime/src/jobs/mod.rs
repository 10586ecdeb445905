//! The jobs every front end runs, one function each: the command line, the Python package and
//! Rust programs call these. [`run`] runs a config's task end to end; [`sweep`] runs a
//! config's hyper-parameter lanes over its task; [`sequences`] fits, sweeps and scores
//! classifiers and regressions over many sequences; [`spikes`] classifies spike patterns.

pub mod run;
pub mod sequences;
pub mod spikes;
pub mod sweep;
