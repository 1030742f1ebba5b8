//! Footer parsing (cold, and a `MetadataCache` hit) and page-index loading, on a wide
//! file (1,000 Int64 columns x 20 row groups) and a TPC-H-lineitem-like file (16 columns,
//! 4 row groups, 20,000-row pages). The files are generated once per run in a tempdir.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch,
    RecordBatchIterator, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use parquet::file::metadata::ParquetMetaData;
use pqindex_core::bench::{load_page_index, read_footer};
use pqindex_core::bench::{IoStats, StorageFile};
use pqindex_core::MetadataCache;
use pqindex_core::{write, WriteOptions};

mod common;
use common::Rng;

const WIDE_COLUMNS: usize = 1_000;
const WIDE_ROW_GROUPS: usize = 20;
const WIDE_ROWS_PER_GROUP: usize = 100;

const LINEITEM_ROW_GROUP: usize = 240_000;
const LINEITEM_ROW_GROUPS: usize = 4;
const LINEITEM_PAGE_ROWS: usize = 20_000;
const LINEITEM_BATCH: usize = 60_000;

fn write_batches(schema: SchemaRef, batches: Vec<RecordBatch>, path: &str, opts: &WriteOptions) {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    write(Box::new(reader), path, opts).expect("write bench file");
}

/// 1,000 Int64 columns, 20 row groups of 100 rows: a footer of 20,000 column chunks.
fn wide_file(dir: &std::path::Path) -> String {
    let path = dir.join("wide.parquet").to_string_lossy().into_owned();
    let schema: SchemaRef = Arc::new(Schema::new(
        (0..WIDE_COLUMNS)
            .map(|i| Field::new(format!("c{i:04}"), DataType::Int64, true))
            .collect::<Vec<_>>(),
    ));
    let mut rng = Rng(1);
    let batches = (0..WIDE_ROW_GROUPS)
        .map(|_| {
            let cols: Vec<ArrayRef> = (0..WIDE_COLUMNS)
                .map(|_| {
                    Arc::new(Int64Array::from_iter_values(
                        (0..WIDE_ROWS_PER_GROUP).map(|_| rng.below(1_000_000) as i64),
                    )) as ArrayRef
                })
                .collect();
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        })
        .collect();
    let opts = WriteOptions {
        row_group_size: WIDE_ROWS_PER_GROUP,
        compression: "snappy".into(),
        ..Default::default()
    };
    write_batches(schema, batches, &path, &opts);
    path
}

fn lineitem_schema() -> SchemaRef {
    let dec = DataType::Decimal128(15, 2);
    Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_partkey", DataType::Int64, false),
        Field::new("l_suppkey", DataType::Int64, false),
        Field::new("l_linenumber", DataType::Int32, false),
        Field::new("l_quantity", dec.clone(), false),
        Field::new("l_extendedprice", dec.clone(), false),
        Field::new("l_discount", dec.clone(), false),
        Field::new("l_tax", dec, false),
        Field::new("l_returnflag", DataType::Utf8, false),
        Field::new("l_linestatus", DataType::Utf8, false),
        Field::new("l_shipdate", DataType::Date32, false),
        Field::new("l_commitdate", DataType::Date32, false),
        Field::new("l_receiptdate", DataType::Date32, false),
        Field::new("l_shipinstruct", DataType::Utf8, false),
        Field::new("l_shipmode", DataType::Utf8, false),
        Field::new("l_comment", DataType::Utf8, false),
    ]))
}

/// One batch of TPC-H-lineitem-like rows starting at row `first` (orderkey ascending).
fn lineitem_batch(schema: &SchemaRef, first: usize, rows: usize, rng: &mut Rng) -> RecordBatch {
    const FLAGS: [&str; 3] = ["A", "N", "R"];
    const STATUS: [&str; 2] = ["O", "F"];
    const INSTRUCT: [&str; 4] = [
        "DELIVER IN PERSON",
        "COLLECT COD",
        "NONE",
        "TAKE BACK RETURN",
    ];
    const MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
    const WORDS: [&str; 12] = [
        "carefully",
        "final",
        "deposits",
        "sleep",
        "furiously",
        "regular",
        "accounts",
        "haggle",
        "quickly",
        "ironic",
        "packages",
        "blithely",
    ];
    let n = |rng: &mut Rng, k: usize| rng.below(k as u64) as usize;
    let orderkey: Vec<i64> = (first..first + rows)
        .map(|r| (r / 4 * 32 + r % 4) as i64)
        .collect();
    let ship: Vec<i32> = (0..rows).map(|_| 8036 + n(rng, 2526) as i32).collect();
    let dec = |v: Vec<i128>| {
        Arc::new(
            Decimal128Array::from(v)
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ) as ArrayRef
    };
    let strs = |rng: &mut Rng, opts: &[&str]| {
        Arc::new(StringArray::from_iter_values(
            (0..rows).map(|_| opts[n(rng, opts.len())]),
        )) as ArrayRef
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(orderkey)),
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| 1 + n(rng, 200_000) as i64),
        )),
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| 1 + n(rng, 10_000) as i64),
        )),
        Arc::new(Int32Array::from_iter_values(
            (first..first + rows).map(|r| (r % 4 + 1) as i32),
        )),
        dec((0..rows).map(|_| (1 + n(rng, 50) as i128) * 100).collect()),
        dec((0..rows)
            .map(|_| 90_000 + n(rng, 10_000_000) as i128)
            .collect()),
        dec((0..rows).map(|_| n(rng, 11) as i128).collect()),
        dec((0..rows).map(|_| n(rng, 9) as i128).collect()),
        strs(rng, &FLAGS),
        strs(rng, &STATUS),
        Arc::new(Date32Array::from(ship.clone())),
        Arc::new(Date32Array::from_iter_values(
            ship.iter().map(|d| d + n(rng, 60) as i32 - 30),
        )),
        Arc::new(Date32Array::from_iter_values(
            ship.iter().map(|d| d + 1 + n(rng, 30) as i32),
        )),
        strs(rng, &INSTRUCT),
        strs(rng, &MODES),
        Arc::new(StringArray::from_iter_values((0..rows).map(|_| {
            let words = 2 + n(rng, 5);
            (0..words)
                .map(|_| WORDS[n(rng, WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        }))),
    ];
    RecordBatch::try_new(schema.clone(), cols).unwrap()
}

/// 16 lineitem-like columns, 4 row groups of 240,000 rows, 20,000-row pages.
fn lineitem_file(dir: &std::path::Path) -> String {
    let path = dir.join("lineitem.parquet").to_string_lossy().into_owned();
    let schema = lineitem_schema();
    let total = LINEITEM_ROW_GROUP * LINEITEM_ROW_GROUPS;
    let batch_schema = schema.clone();
    let mut rng = Rng(2);
    // Generated lazily, batch by batch, while the writer consumes them.
    let batches = (0..total).step_by(LINEITEM_BATCH).map(move |first| {
        Ok(lineitem_batch(
            &batch_schema,
            first,
            LINEITEM_BATCH,
            &mut rng,
        ))
    });
    let reader = RecordBatchIterator::new(batches, schema);
    let opts = WriteOptions {
        row_group_size: LINEITEM_ROW_GROUP,
        page_row_limit: Some(LINEITEM_PAGE_ROWS),
        ..Default::default()
    };
    write(Box::new(reader), &path, &opts).expect("write lineitem");
    path
}

fn open(path: &str) -> StorageFile {
    StorageFile::open(path, Arc::new(IoStats::default())).unwrap()
}

/// Bytes of the serialized footer (FileMetaData + length + magic).
fn footer_bytes(file: &StorageFile) -> u64 {
    let size = file.identity().size;
    let end = file.read_range(size - 8, 8).unwrap();
    u64::from(u32::from_le_bytes([end[0], end[1], end[2], end[3]])) + 8
}

/// Bytes of every ColumnIndex and OffsetIndex of the file, and the number of pages.
fn page_index_extent(md: &ParquetMetaData) -> (u64, u64) {
    let bytes = md
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .map(|c| {
            c.column_index_length().unwrap_or(0).max(0) as u64
                + c.offset_index_length().unwrap_or(0).max(0) as u64
        })
        .sum();
    let pages = md
        .offset_index()
        .map(|oi| {
            oi.iter()
                .flatten()
                .map(|c| c.page_locations().len() as u64)
                .sum()
        })
        .unwrap_or(0);
    (bytes, pages)
}

/// A file under test, opened, with its footer parsed once.
struct Subject {
    name: &'static str,
    path: String,
    file: StorageFile,
    footer: ParquetMetaData,
    footer_bytes: u64,
    index_bytes: u64,
}

fn subject(name: &'static str, path: String) -> Subject {
    let file = open(&path);
    let footer = read_footer(&file).unwrap();
    let with_index = load_page_index(&file, footer.clone()).unwrap();
    let (index_bytes, pages) = page_index_extent(&with_index);
    let footer_bytes = footer_bytes(&file);
    eprintln!(
        "{name}: {} bytes, footer {footer_bytes} bytes, {} row groups x {} columns, page index {index_bytes} bytes for {pages} pages",
        file.identity().size,
        footer.num_row_groups(),
        footer.file_metadata().schema_descr().num_columns(),
    );
    if let Some(first) = with_index.offset_index().and_then(|oi| oi.first()) {
        if first.len() <= 16 {
            let per_column: Vec<usize> = first.iter().map(|c| c.page_locations().len()).collect();
            eprintln!("  pages per column in row group 0: {per_column:?}");
        }
    }
    Subject {
        name,
        path,
        file,
        footer,
        footer_bytes,
        index_bytes,
    }
}

fn bench_footer(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let subjects = [
        subject("wide_1000col_20rg", wide_file(dir.path())),
        subject("lineitem_16col", lineitem_file(dir.path())),
    ];

    // Throughput: bytes of the serialized footer.
    let mut g = c.benchmark_group("footer");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for s in &subjects {
        g.throughput(Throughput::Bytes(s.footer_bytes));
        // Read the tail with pread and parse the Thrift footer, every time.
        g.bench_with_input(
            BenchmarkId::new("read_footer_cold", s.name),
            &s.file,
            |b, f| b.iter(|| read_footer(black_box(f)).unwrap()),
        );
        // The deep copy `load_page_index` makes of the footer it is given.
        g.bench_with_input(
            BenchmarkId::new("metadata_clone", s.name),
            &s.footer,
            |b, md| b.iter(|| black_box(md).clone()),
        );
    }
    g.finish();

    // No throughput: a hit costs the same whatever the footer's size.
    let mut g = c.benchmark_group("metadata_cache");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for s in &subjects {
        let cache = MetadataCache::new(1 << 30);
        cache.get(&s.file, false).unwrap();
        // A hit in a primed cache: lookup + identity check + Arc clone.
        g.bench_with_input(BenchmarkId::new("hit", s.name), &s.file, |b, f| {
            b.iter(|| cache.get(black_box(f), false).unwrap())
        });
        // What planning does per file on a warm cache: open + fstat, then the hit.
        g.bench_with_input(BenchmarkId::new("open_and_hit", s.name), &s.path, |b, p| {
            b.iter(|| cache.get(&open(black_box(p)), false).unwrap())
        });
        cache.get(&s.file, true).unwrap();
        g.bench_with_input(
            BenchmarkId::new("hit_with_page_index", s.name),
            &s.file,
            |b, f| b.iter(|| cache.get(black_box(f), true).unwrap()),
        );
    }
    g.finish();

    // Throughput: bytes of the ColumnIndex + OffsetIndex (+ footer for the cold get).
    let mut g = c.benchmark_group("page_index");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for s in &subjects {
        g.throughput(Throughput::Bytes(s.index_bytes));
        // One read of the whole index range, parse every ColumnIndex and OffsetIndex.
        g.bench_with_input(
            BenchmarkId::new("load_page_index", s.name),
            &s.footer,
            |b, md| {
                b.iter_batched(
                    || md.clone(),
                    |md| load_page_index(&s.file, black_box(md)).unwrap(),
                    BatchSize::LargeInput,
                )
            },
        );
        // Footer and page index through a fresh cache: what a cold scan pays per file.
        g.throughput(Throughput::Bytes(s.footer_bytes + s.index_bytes));
        g.bench_with_input(
            BenchmarkId::new("cold_cache_get_with_index", s.name),
            &s.file,
            |b, f| b.iter(|| MetadataCache::new(1 << 30).get(black_box(f), true).unwrap()),
        );
    }
    g.finish();
}

criterion_group!(benches, bench_footer);
criterion_main!(benches);
