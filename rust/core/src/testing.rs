//! Helpers shared by unit tests: writing small Parquet files and reading keys back.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::{ArrowError, Field, Schema};

use crate::metadata::MetadataCache;
use crate::query::scan::{Scan, ScanOptions};
use crate::write::{write, WriteOptions};

/// The first column of every batch, an Int64 key, in stream order.
pub fn keys(batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>) -> Vec<i64> {
    batches
        .flat_map(|b| {
            b.unwrap()
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect()
}

/// How a test file is laid out.
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a> {
    pub row_group_size: usize,
    /// Rows per data page (`None`: the writer's default).
    pub page_rows: Option<usize>,
    /// Columns with a Parquet bloom filter.
    pub bloom: &'a [&'a str],
}

impl Default for Layout<'_> {
    fn default() -> Self {
        Layout {
            row_group_size: 1_000_000,
            page_rows: None,
            bloom: &[],
        }
    }
}

/// Write `columns` (a column is nullable when it holds a null) to `dir/name` with
/// pqindex's writer, returning the path.
pub fn write_file(
    dir: &Path,
    name: &str,
    columns: Vec<(&str, ArrayRef)>,
    layout: Layout,
) -> String {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    let path = dir.join(name).to_string_lossy().into_owned();
    let opts = WriteOptions {
        row_group_size: layout.row_group_size,
        page_row_limit: layout.page_rows,
        bloom_filter_columns: layout.bloom.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    write(Box::new(reader), &path, &opts).unwrap();
    path
}

/// An Int64 column of `values`.
pub fn int64s(values: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

/// A Utf8 column of `values`, `None` for NULL.
pub fn strings<S: AsRef<str>>(values: impl IntoIterator<Item = Option<S>>) -> ArrayRef {
    Arc::new(StringArray::from_iter(values))
}

/// Plan a scan of `path` with `predicate` reading its first column, with a fresh cache.
pub fn plan(path: &str, predicate: &str) -> Scan {
    let opts = ScanOptions {
        predicate: Some(predicate.into()),
        ..Default::default()
    };
    let first = crate::metadata::read_metadata(path, false, &MetadataCache::new(1 << 20))
        .unwrap()
        .metadata
        .file_metadata()
        .schema_descr()
        .root_schema()
        .get_fields()[0]
        .name()
        .to_string();
    let opts = ScanOptions {
        columns: Some(vec![first]),
        ..opts
    };
    planned(path, &opts)
}

/// Plan a scan of `path` with `opts`, with a fresh cache.
pub fn planned(path: &str, opts: &ScanOptions) -> Scan {
    Scan::plan(
        &[path.to_string()],
        opts,
        &MetadataCache::new(1 << 24),
        &AtomicBool::new(false),
    )
    .unwrap()
}

/// The first column's keys `predicate` selects in `path` (sorted), and the scan.
pub fn scan_keys(path: &str, predicate: &str) -> (Vec<i64>, Scan) {
    let s = plan(path, predicate);
    let mut rows = keys(s.stream());
    rows.sort_unstable();
    (rows, s)
}
