//! The examples live next to this file; run one with
//! `cargo run --release -p reservoir-examples --example NAME`.
