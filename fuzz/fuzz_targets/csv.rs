//! Fuzz target `csv`: see `reservoir_fuzz::csv::check`.

#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    reservoir_fuzz::csv::check(bytes);
});
