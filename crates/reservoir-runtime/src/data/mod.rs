//! Data in and out: the benchmark tasks' generators ([`tasks`]).

pub mod tasks;
