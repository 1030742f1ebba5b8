//! The start of a Snappy page, decoded by pqindex (`read::snappy_prefix`, which stops at
//! the bytes a lookup needs), against the `snap` crate decoding the whole page: what
//! `read::page_prefix` weighs when it chooses between the two. Pages of 20,000 values as
//! lineitem's are written: PLAIN 64-bit keys in sorted runs, PLAIN random 64-bit values
//! under 2^21, and PLAIN strings of words.
//!
//! Each page is compressed by `snap`'s encoder, which, like the reference one that
//! parquet-java calls, compresses 64 KiB blocks alone.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pqindex_core::bench::snappy_prefix;

mod common;
use common::Rng;

const VALUES: usize = 20_000;

const WORDS: [&str; 16] = [
    "carefully",
    "final",
    "deposits",
    "above",
    "the",
    "slyly",
    "ironic",
    "packages",
    "furiously",
    "regular",
    "accounts",
    "quickly",
    "express",
    "requests",
    "blithely",
    "even",
];

/// The uncompressed pages: name and bytes.
fn pages() -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng(7);
    let mut key = 1i64;
    let sorted: Vec<u8> = (0..VALUES)
        .flat_map(|_| {
            if rng.below(4) == 0 {
                key += 1 + rng.below(7) as i64;
            }
            key.to_le_bytes()
        })
        .collect();
    let random: Vec<u8> = (0..VALUES)
        .flat_map(|_| (rng.below(1 << 21) as i64).to_le_bytes())
        .collect();
    let mut strings = Vec::new();
    for _ in 0..VALUES {
        let words = 2 + rng.below(5) as usize;
        let text: Vec<&str> = (0..words)
            .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
            .collect();
        let text = text.join(" ");
        strings.extend_from_slice(&(text.len() as u32).to_le_bytes());
        strings.extend_from_slice(text.as_bytes());
    }
    vec![
        ("sorted_i64", sorted),
        ("random_i64", random),
        ("strings", strings),
    ]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("snappy_start");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for (name, page) in pages() {
        let body = snap::raw::Encoder::new().compress_vec(&page).unwrap();
        let mut out = vec![0u8; page.len()];
        group.throughput(Throughput::Bytes(page.len() as u64));
        group.bench_function(BenchmarkId::new("snap_whole", name), |b| {
            let mut decoder = snap::raw::Decoder::new();
            b.iter(|| decoder.decompress(black_box(&body), &mut out).unwrap())
        });
        for (share, part) in [("whole", 1), ("half", 2), ("third", 3)] {
            let n = page.len() / part;
            group.throughput(Throughput::Bytes(n as u64));
            group.bench_function(BenchmarkId::new(format!("start_{share}"), name), |b| {
                b.iter(|| snappy_prefix(black_box(&body), &mut out[..n]).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
