//! Fuzz target `model`: see `reservoir_fuzz::model::check`.

#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    reservoir_fuzz::model::check(bytes);
});
