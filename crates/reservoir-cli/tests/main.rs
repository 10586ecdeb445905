//! The command line's tests, run against the built `reservoir` binary: one module per
//! concern, in one test executable.

mod common;

mod cli;
mod cli_errors;
mod hostile;
mod launchers;
mod no_data_loss;
mod outputs;
mod run;
mod sequences;
mod sweep;
