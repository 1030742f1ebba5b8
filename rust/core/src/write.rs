//! Writing Parquet that pruning can use: statistics per page (so a page index is written),
//! bloom filters on chosen columns sized for the row group, and small pages when asked.
//! The file appears atomically: it is written beside the target and renamed over it.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub row_group_size: usize,
    pub page_row_limit: Option<usize>,
    pub bloom_filter_columns: Vec<String>,
    pub bloom_filter_fpp: f64,
    pub compression: String,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            row_group_size: 1024 * 1024,
            page_row_limit: None,
            bloom_filter_columns: Vec::new(),
            bloom_filter_fpp: 0.01,
            compression: "zstd".into(),
        }
    }
}

fn compression(name: &str) -> Result<Compression> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "uncompressed" | "none" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        "zstd" => Compression::ZSTD(ZstdLevel::default()),
        "lz4" => Compression::LZ4_RAW,
        "gzip" => Compression::GZIP(GzipLevel::default()),
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown compression {other:?} (expected uncompressed, snappy, zstd, lz4 or gzip)"
            )))
        }
    })
}

/// Writer properties for `schema`: page statistics everywhere, bloom filters on the named
/// top-level columns (every leaf below them).
pub fn properties(schema: &arrow_schema::Schema, opts: &WriteOptions) -> Result<WriterProperties> {
    if opts.row_group_size == 0 || opts.page_row_limit == Some(0) {
        return Err(Error::InvalidArgument(
            "row_group_size and page_row_limit must be positive".into(),
        ));
    }
    if !(opts.bloom_filter_fpp > 0.0 && opts.bloom_filter_fpp < 1.0) {
        return Err(Error::InvalidArgument(format!(
            "bloom_filter_fpp must be between 0 and 1, got {}",
            opts.bloom_filter_fpp
        )));
    }
    let mut b = WriterProperties::builder()
        .set_compression(compression(&opts.compression)?)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(opts.row_group_size));
    if let Some(limit) = opts.page_row_limit {
        // The limit is checked between write batches: batches that divide it make every
        // page exactly `limit` rows.
        b = b
            .set_data_page_row_count_limit(limit)
            .set_write_batch_size(batch_dividing(limit));
    }
    let parquet_schema = parquet::arrow::ArrowSchemaConverter::new().convert(schema)?;
    for name in &opts.bloom_filter_columns {
        let leaves: Vec<ColumnPath> = parquet_schema
            .columns()
            .iter()
            .filter(|c| c.path().parts().first() == Some(name))
            .map(|c| c.path().clone())
            .collect();
        if leaves.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "bloom_filter_columns names {name:?}, which is not a column"
            )));
        }
        for path in leaves {
            // Distinct values per row group are at most its rows: sizing from that keeps
            // the false-positive rate where it was asked to be.
            b = b
                .set_column_bloom_filter_enabled(path.clone(), true)
                .set_column_bloom_filter_fpp(path.clone(), opts.bloom_filter_fpp)
                .set_column_bloom_filter_max_ndv(path, opts.row_group_size as u64);
        }
    }
    Ok(b.build())
}

/// The largest write batch of at most 1024 rows that divides `limit`.
fn batch_dividing(limit: usize) -> usize {
    (1..=limit.min(1024))
        .rev()
        .find(|d| limit.is_multiple_of(*d))
        .unwrap_or(1)
}

/// Write every batch of `reader` to `path`.
pub fn write(
    reader: Box<dyn RecordBatchReader + Send>,
    path: &str,
    opts: &WriteOptions,
) -> Result<u64> {
    let schema = reader.schema();
    let props = properties(&schema, opts)?;
    let target = Path::new(path);
    let tmp = temp_path(target);
    let result = (|| -> Result<u64> {
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp.to_string_lossy(), e))?;
        let mut writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props))?;
        let mut rows = 0u64;
        for batch in reader {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            writer.write(&batch)?;
        }
        let inner = writer.into_inner()?;
        let file = inner
            .into_inner()
            .map_err(|e| Error::io(path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(path, e))?;
        std::fs::rename(&tmp, target).map_err(|e| Error::io(path, e))?;
        Ok(rows)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A hidden name beside `target`, so readers of the directory never see a partial file.
fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out.parquet".into());
    target.with_file_name(format!(".{name}.{}.pqindex-tmp", std::process::id()))
}
