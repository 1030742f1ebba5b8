//! Page selection: `prune::page::row_ranges` (ColumnIndex evaluation) for a point
//! predicate, a range and an AND/OR of two columns over one row group with 1,000 pages
//! per column; and `RowRanges::intersect`/`union` on large random range sets.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use parquet::file::metadata::ParquetMetaData;
use pqindex_core::bench::row_ranges;
use pqindex_core::bench::RowRanges;
use pqindex_core::bench::{bind, sql, BindSchema, Predicate};
use pqindex_core::bench::{IoStats, StorageFile};
use pqindex_core::MetadataCache;
use pqindex_core::{write, WriteOptions};

mod common;
use common::Rng;

const ROWS: usize = 1_000_000;
const PAGE_ROWS: usize = 1_000;
const BATCH: usize = 100_000;

/// One row group of 1,000,000 rows in 1,000-row pages: `id` ascending, `b` descending
/// with noise (so its pages overlap their neighbours).
fn write_file(path: &str) {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("b", DataType::Int64, false),
    ]));
    let batch_schema = schema.clone();
    let mut rng = Rng(3);
    let batches = (0..ROWS).step_by(BATCH).map(move |first| {
        let ids = first as i64..(first + BATCH) as i64;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(ids.clone())),
            Arc::new(Int64Array::from_iter_values(
                ids.map(|i| ROWS as i64 - i + rng.below(5_000) as i64),
            )),
        ];
        RecordBatch::try_new(batch_schema.clone(), cols)
    });
    let opts = WriteOptions {
        row_group_size: ROWS,
        page_row_limit: Some(PAGE_ROWS),
        compression: "snappy".into(),
        ..Default::default()
    };
    write(
        Box::new(RecordBatchIterator::new(batches, schema)),
        path,
        &opts,
    )
    .unwrap();
}

fn bind_sql(md: &ParquetMetaData, text: &str) -> Predicate {
    let descr = md.file_metadata().schema_descr();
    let arrow =
        parquet::arrow::parquet_to_arrow_schema(descr, md.file_metadata().key_value_metadata())
            .unwrap();
    let native = parquet::arrow::parquet_to_arrow_schema(descr, None).unwrap();
    let schema = BindSchema {
        arrow: &arrow,
        native: &native,
        parquet: descr,
        partitions: &[],
    };
    bind(&sql::parse(text, 0).unwrap(), &schema).unwrap()
}

/// Leaves of a predicate: each one evaluates every page of its column.
fn leaves(p: &Predicate) -> u64 {
    match p {
        Predicate::And(parts) | Predicate::Or(parts) => parts.iter().map(leaves).sum(),
        Predicate::Const(_) => 0,
        _ => 1,
    }
}

fn bench_column_index(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("pages.parquet")
        .to_string_lossy()
        .into_owned();
    write_file(&path);
    let file = StorageFile::open(&path, Arc::new(IoStats::default())).unwrap();
    let (md, _) = MetadataCache::new(1 << 30).get(&file, true).unwrap();
    assert_eq!(md.num_row_groups(), 1);
    let pages = md.offset_index().unwrap()[0][0].page_locations().len() as u64;
    assert_eq!(pages, (ROWS / PAGE_ROWS) as u64);

    let cases = [
        ("point", "id = 123456"),
        ("range", "id BETWEEN 250000 AND 349999"),
        ("and_2col", "id >= 200000 AND b < 500000"),
        ("or_2col", "id < 10000 OR b < 10000"),
    ];
    let mut g = c.benchmark_group("page_index_row_ranges");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, text) in cases {
        let pred = bind_sql(&md, text);
        let got = row_ranges(&md, 0, &pred);
        eprintln!(
            "{name} ({text}): {} ranges, {} of {ROWS} rows kept",
            got.ranges().len(),
            got.row_count()
        );
        // Pages whose bounds are evaluated, over all leaves.
        g.throughput(Throughput::Elements(pages * leaves(&pred)));
        g.bench_with_input(BenchmarkId::from_parameter(name), &pred, |b, p| {
            b.iter(|| row_ranges(black_box(&md), 0, black_box(p)))
        });
    }
    g.finish();
}

/// `n` random sorted disjoint ranges: gaps and lengths of 1..=100 rows.
fn random_ranges(n: usize, seed: u64) -> RowRanges {
    let mut rng = Rng(seed);
    let mut start = 0u64;
    let ranges: Vec<_> = (0..n)
        .map(|_| {
            start += 1 + rng.below(100);
            let end = start + 1 + rng.below(100);
            let r = start..end;
            start = end;
            r
        })
        .collect();
    RowRanges::from_ranges(ranges)
}

fn bench_row_ranges(c: &mut Criterion) {
    let mut g = c.benchmark_group("row_ranges");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in [1_000usize, 10_000, 100_000, 1_000_000] {
        if n >= 1_000_000 {
            // ~20 ms an operation: fewer samples keep the group within its time.
            g.sample_size(10);
        }
        let a = random_ranges(n, 11);
        let b = random_ranges(n, 12);
        assert_eq!(a.ranges().len(), n);
        g.throughput(Throughput::Elements(2 * n as u64));
        g.bench_with_input(BenchmarkId::new("intersect", n), &(&a, &b), |bn, (a, b)| {
            bn.iter(|| black_box(a).intersect(black_box(b)))
        });
        g.bench_with_input(BenchmarkId::new("union", n), &(&a, &b), |bn, (a, b)| {
            bn.iter(|| black_box(a).union(black_box(b)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_column_index, bench_row_ranges);
criterion_main!(benches);
