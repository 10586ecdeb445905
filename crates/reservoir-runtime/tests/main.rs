//! The runtime's integration tests, one module per concept, in one test executable.

mod common;

mod accuracy;
mod architectures;
mod config_round_trip;
mod configs;
mod csv_round_trip;
mod experiment_config;
mod forecast;
mod fuzz_corpus;
mod lif_drawn;
mod model_mutations;
mod model_round_trip;
mod model_v1;
mod persist;
mod readout_score;
mod run_outcome;
mod several_gpus;
mod spike_classification;
mod sweep;
mod sweep_config;
mod tasks;
mod weights_half;
