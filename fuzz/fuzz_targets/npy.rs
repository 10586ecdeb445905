//! Fuzz target `npy`: see `reservoir_fuzz::npy::check`.

#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    reservoir_fuzz::npy::check(bytes);
});
