//! Fuzz target `config`: see `reservoir_fuzz::config::check`.

#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    reservoir_fuzz::config::check(bytes);
});
