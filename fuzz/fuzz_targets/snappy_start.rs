#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| pqindex_fuzz::run("snappy_start", data));
