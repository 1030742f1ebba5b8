//! End to end: `Scan::plan` + draining `Scan::stream()` on a 2,000,000-row file (two row
//! groups, 20,000-row pages, sorted `id`): a point lookup on `id` (one page per column is
//! decoded) with a cold and a warm `MetadataCache`, planning alone, and a full scan; the
//! warm runs are repeated on the same rows written without dictionary encoding.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, RecordBatchIterator,
    RecordBatchReader, StringArray,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use parquet::arrow::ArrowWriter;
use pqindex_core::bench::properties;
use pqindex_core::MetadataCache;
use pqindex_core::{write, WriteOptions};
use pqindex_core::{Scan, ScanOptions};

mod common;
use common::Rng;

const ROWS: usize = 2_000_000;
const ROW_GROUP: usize = 1_000_000;
const PAGE_ROWS: usize = 20_000;
const BATCH: usize = 100_000;
const THREADS: usize = 2;
const CACHE_BYTES: usize = 256 * 1024 * 1024;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("qty", DataType::Int32, false),
        Field::new("price", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
    ]))
}

/// `id` Int64 ascending, `qty` Int32 (50 values), `price` Float64 and `name` Utf8 (both
/// high-cardinality, so their dictionaries hit the 1 MiB limit and fall back to plain).
fn batches() -> impl Iterator<Item = Result<RecordBatch, ArrowError>> + Send {
    let schema = schema();
    let mut rng = Rng(5);
    (0..ROWS).step_by(BATCH).map(move |first| {
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
        RecordBatch::try_new(schema.clone(), cols)
    })
}

fn write_options() -> WriteOptions {
    WriteOptions {
        row_group_size: ROW_GROUP,
        page_row_limit: Some(PAGE_ROWS),
        ..Default::default()
    }
}

/// The file as `pqindex_core::write` writes it (dictionary encoding on, as by default).
fn write_file(path: &str) {
    let reader = RecordBatchIterator::new(batches(), schema());
    write(Box::new(reader), path, &write_options()).unwrap();
}

/// The same rows and properties with dictionary encoding off, written by `ArrowWriter`.
fn write_file_without_dictionary(path: &str) {
    let props = properties(&schema(), &write_options())
        .unwrap()
        .into_builder()
        .set_dictionary_enabled(false)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema(), Some(props)).unwrap();
    for batch in batches() {
        writer.write(&batch.unwrap()).unwrap();
    }
    writer.close().unwrap();
}

fn options(predicate: Option<&str>) -> ScanOptions {
    ScanOptions {
        predicate: predicate.map(Into::into),
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

/// Run the point lookup once and print what it pruned and read.
fn describe(name: &str, paths: &[String], opts: &ScanOptions) {
    let cache = MetadataCache::new(CACHE_BYTES);
    let scan = Scan::plan(paths, opts, &cache, &AtomicBool::new(false)).unwrap();
    let rows: usize = scan.stream().map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 1);
    let m = scan.metrics();
    let get = |k: &str| m.iter().find(|(n, _)| *n == k).map_or(0, |(_, v)| *v);
    eprintln!(
        "{name}: {} units, {} of {} pages pruned, {} rows selected, {} data + {} dictionary pages read, {} bytes in {} requests",
        get("units"),
        get("pages_pruned"),
        get("pages"),
        get("rows_selected"),
        get("pages_read"),
        get("dictionary_pages_read"),
        get("bytes_read"),
        get("requests"),
    );
}

fn bench_scan(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let paths = vec![path("scan.parquet")];
    let paths_no_dict = vec![path("scan_no_dictionary.parquet")];
    write_file(&paths[0]);
    write_file_without_dictionary(&paths_no_dict[0]);

    let point = options(Some("id = 1234567"));
    let full = options(None);
    describe("point lookup", &paths, &point);
    describe("point lookup, no dictionary", &paths_no_dict, &point);

    let mut g = c.benchmark_group("scan_point_lookup");
    g.sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    // A fresh cache each time: footer and page index are read and parsed.
    g.bench_function("cold_cache", |b| {
        b.iter(|| {
            let cache = MetadataCache::new(CACHE_BYTES);
            assert_eq!(run(black_box(&paths), &point, &cache), 1)
        })
    });
    let warm = MetadataCache::new(CACHE_BYTES);
    assert_eq!(run(&paths, &point, &warm), 1);
    g.bench_function("warm_cache", |b| {
        b.iter(|| assert_eq!(run(black_box(&paths), &point, &warm), 1))
    });
    g.bench_function("warm_cache_plan_only", |b| {
        b.iter(|| Scan::plan(black_box(&paths), &point, &warm, &AtomicBool::new(false)).unwrap())
    });
    assert_eq!(run(&paths_no_dict, &point, &warm), 1);
    g.bench_function("warm_cache_no_dictionary", |b| {
        b.iter(|| assert_eq!(run(black_box(&paths_no_dict), &point, &warm), 1))
    });
    g.finish();

    let mut g = c.benchmark_group("scan_full");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(ROWS as u64));
    for (name, paths) in [
        ("warm_cache", &paths),
        ("warm_cache_no_dictionary", &paths_no_dict),
    ] {
        assert_eq!(run(paths, &full, &warm), ROWS);
        g.bench_with_input(BenchmarkId::from_parameter(name), paths, |b, p| {
            b.iter(|| assert_eq!(run(black_box(p), &full, &warm), ROWS))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_scan);
criterion_main!(benches);
