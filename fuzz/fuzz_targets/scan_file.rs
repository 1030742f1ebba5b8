#![no_main]
//! Real Parquet files, damaged by structure-aware mutations (see `pqindex_fuzz::mutate`),
//! scanned through the public `Scan` API with each predicate.

use libfuzzer_sys::{fuzz_crossover, fuzz_mutator, fuzz_target, fuzzer_mutate};

fuzz_target!(|data: &[u8]| pqindex_fuzz::run("scan_file", data));

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    pqindex_fuzz::mutate::mutate(data, size, max_size, seed, fuzzer_mutate)
});

fuzz_crossover!(|a: &[u8], b: &[u8], out: &mut [u8], seed: u32| {
    pqindex_fuzz::mutate::splice(a, b, out, seed)
});
