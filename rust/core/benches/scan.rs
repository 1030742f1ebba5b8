//! End to end: `Scan::plan` + draining `Scan::stream()` on a 2,000,000-row file (two row
//! groups, 20,000-row pages, sorted `id`): a point lookup on `id` (one page per column is
//! decoded) with a cold and a warm `MetadataCache`, planning alone, and a full scan.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, RecordBatchIterator,
    RecordBatchReader, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pqindex_core::metadata::MetadataCache;
use pqindex_core::write::{write, WriteOptions};
use pqindex_core::{Scan, ScanOptions};

const ROWS: usize = 2_000_000;
const ROW_GROUP: usize = 1_000_000;
const PAGE_ROWS: usize = 20_000;
const BATCH: usize = 100_000;
const THREADS: usize = 2;
const CACHE_BYTES: usize = 256 * 1024 * 1024;

/// splitmix64: deterministic data without a `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `id` Int64 ascending, `qty` Int32, `price` Float64, `name` Utf8.
fn write_file(path: &str) {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("qty", DataType::Int32, false),
        Field::new("price", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let batch_schema = schema.clone();
    let mut rng = Rng(5);
    let batches = (0..ROWS).step_by(BATCH).map(move |first| {
        let ids = first as i64..(first + BATCH) as i64;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(ids.clone())),
            Arc::new(Int32Array::from_iter_values(
                (0..BATCH).map(|_| rng.below(50) as i32 + 1),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..BATCH).map(|_| rng.below(10_000_000) as f64 / 100.0),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.map(|i| format!("item-{:07}", (i * 7919) % 1_000_003)),
            )),
        ];
        RecordBatch::try_new(batch_schema.clone(), cols)
    });
    let opts = WriteOptions {
        row_group_size: ROW_GROUP,
        page_row_limit: Some(PAGE_ROWS),
        ..Default::default()
    };
    write(
        Box::new(RecordBatchIterator::new(batches, schema)),
        path,
        &opts,
    )
    .unwrap();
}

fn options(predicate: Option<&str>) -> ScanOptions {
    ScanOptions {
        predicate: predicate.map(str::to_string),
        threads: THREADS,
        ..Default::default()
    }
}

/// Plan and drain; the number of rows returned.
fn run(paths: &[String], opts: &ScanOptions, cache: &MetadataCache) -> usize {
    let cancel = AtomicBool::new(false);
    let scan = Scan::plan(paths, opts, cache, &cancel).unwrap();
    let stream = scan.stream();
    assert_eq!(stream.schema().fields().len(), 4);
    stream.map(|b| b.unwrap().num_rows()).sum()
}

fn bench_scan(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("scan.parquet")
        .to_string_lossy()
        .into_owned();
    write_file(&path);
    let paths = vec![path];

    let point = options(Some("id = 1234567"));
    let full = options(None);

    // What the point lookup prunes and reads, once, for the record.
    {
        let cache = MetadataCache::new(CACHE_BYTES);
        let scan = Scan::plan(&paths, &point, &cache, &AtomicBool::new(false)).unwrap();
        let rows: usize = scan.stream().map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 1);
        let m = scan.metrics();
        let get = |k: &str| m.iter().find(|(n, _)| *n == k).map_or(0, |(_, v)| *v);
        eprintln!(
            "point lookup: {} units, {} of {} pages pruned, {} rows selected, {} data pages read, {} bytes in {} requests",
            get("units"),
            get("pages_pruned"),
            get("pages"),
            get("rows_selected"),
            get("pages_read"),
            get("bytes_read"),
            get("requests"),
        );
    }

    let mut g = c.benchmark_group("scan");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    g.throughput(Throughput::Elements(1));
    // A fresh cache each time: footer and page index are read and parsed.
    g.bench_function(BenchmarkId::new("point_lookup", "cold_cache"), |b| {
        b.iter(|| {
            let cache = MetadataCache::new(CACHE_BYTES);
            assert_eq!(run(black_box(&paths), &point, &cache), 1)
        })
    });
    let warm = MetadataCache::new(CACHE_BYTES);
    assert_eq!(run(&paths, &point, &warm), 1);
    g.bench_function(BenchmarkId::new("point_lookup", "warm_cache"), |b| {
        b.iter(|| assert_eq!(run(black_box(&paths), &point, &warm), 1))
    });
    g.bench_function(
        BenchmarkId::new("point_lookup_plan_only", "warm_cache"),
        |b| {
            b.iter(|| {
                Scan::plan(black_box(&paths), &point, &warm, &AtomicBool::new(false)).unwrap()
            })
        },
    );

    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(ROWS as u64));
    assert_eq!(run(&paths, &full, &warm), ROWS);
    g.bench_function(BenchmarkId::new("full_scan", "warm_cache"), |b| {
        b.iter(|| assert_eq!(run(black_box(&paths), &full, &warm), ROWS))
    });
    g.finish();
}

criterion_group!(benches, bench_scan);
criterion_main!(benches);
