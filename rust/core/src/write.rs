//! Writing Parquet that pruning can use: statistics per page (so a page index is written),
//! bloom filters on chosen columns sized for the row group, and small pages when asked.
//! The file appears atomically: it is written beside the target and renamed over it.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
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
        // page exactly `limit` rows. The byte limit is lifted so that wide values do not
        // cut pages early: page boundaries then fall on predictable rows.
        b = b
            .set_data_page_row_count_limit(limit)
            .set_data_page_size_limit(usize::MAX / 2)
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
    if crate::io::object::is_remote(path) {
        // Objects are written whole: a local file first, then one upload that makes it
        // visible at once.
        let obj = crate::io::object::locate(path)?;
        let dir = crate::io::object::scratch_dir()?;
        let local = dir.path().join("object.parquet");
        let rows = write(reader, &local.to_string_lossy(), opts)?;
        obj.upload(&local)?;
        return Ok(rows);
    }
    let given = reader.schema();
    let schema = storable_schema(&given);
    let props = properties(&schema, opts)?;
    let target = Path::new(path);
    let tmp = crate::io::file::temp_path(target);
    let result = (|| -> Result<u64> {
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp.to_string_lossy(), e))?;
        let mut writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props))?;
        let mut rows = 0u64;
        for batch in reader {
            let mut batch = batch?;
            if schema != given {
                batch = cast_batch(&batch, &schema)?;
            }
            let mut start = 0;
            while start < batch.num_rows() {
                let len = next_write_len(rows, batch.num_rows() - start, opts);
                writer.write(&batch.slice(start, len))?;
                start += len;
                rows += len as u64;
            }
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

/// How many of `remaining` rows to hand the writer next, `written` rows in. The writer
/// checks the page row limit only between its internal mini-batches, which restart at each
/// call: ending every call on a page or row group boundary keeps every page at the limit.
fn next_write_len(written: u64, remaining: usize, opts: &WriteOptions) -> usize {
    let Some(limit) = opts.page_row_limit else {
        return remaining;
    };
    let in_group = (written % opts.row_group_size as u64) as usize;
    let to_page_end = limit - in_group % limit;
    let to_group_end = opts.row_group_size - in_group;
    remaining.min(to_page_end).min(to_group_end)
}

/// `schema` as it is stored: timestamps in seconds become milliseconds (Parquet has no
/// seconds unit, and a bare INT64 would read back as an integer in every other reader), and
/// string and binary views become plain strings and binaries.
fn storable_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            f.as_ref()
                .clone()
                .with_data_type(storable_type(f.data_type()))
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn storable_type(t: &DataType) -> DataType {
    let field = |f: &Arc<Field>| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(storable_type(f.data_type())),
        )
    };
    match t {
        DataType::Timestamp(TimeUnit::Second, tz) => {
            DataType::Timestamp(TimeUnit::Millisecond, tz.clone())
        }
        // View types are an in-memory layout; stored as plain strings and binaries, every
        // reader (pyarrow's filter kernels included) reads them back.
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(field).collect()),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(storable_type(v))),
        other => other.clone(),
    }
}

fn cast_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| arrow_cast::cast(c, f.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, RecordBatchIterator, StringArray};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;

    #[test]
    fn pages_hold_exactly_the_row_limit() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, false),
        ]));
        // Batches of an awkward size, and wide unique strings that would cut pages by bytes.
        let batches: Vec<_> = (0..13)
            .map(|b| {
                let keys: Vec<i64> = (b * 777..(b + 1) * 777).collect();
                let strings: Vec<String> = keys.iter().map(|k| format!("{k:0>2000}")).collect();
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int64Array::from(keys)),
                        Arc::new(StringArray::from(strings)),
                    ],
                )
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let opts = WriteOptions {
            row_group_size: 5000,
            page_row_limit: Some(300),
            ..Default::default()
        };
        let reader = RecordBatchIterator::new(batches, schema);
        write(Box::new(reader), path.to_str().unwrap(), &opts).unwrap();

        let file = File::open(&path).unwrap();
        let options = ReadOptionsBuilder::new().with_page_index().build();
        let reader = SerializedFileReader::new_with_options(file, options).unwrap();
        let metadata = reader.metadata();
        let offsets = metadata.offset_index().unwrap();
        for (rg, columns) in offsets.iter().enumerate() {
            let rows = metadata.row_group(rg).num_rows();
            for column in columns {
                let firsts: Vec<i64> = column
                    .page_locations()
                    .iter()
                    .map(|p| p.first_row_index)
                    .collect();
                // Pages hold the limit, except around the one cut a column makes where its
                // dictionary outgrows its page and it falls back to plain encoding.
                let mut ends = firsts[1..].to_vec();
                ends.push(rows);
                let lengths: Vec<i64> = firsts.iter().zip(&ends).map(|(a, b)| b - a).collect();
                let (last, full) = lengths.split_last().unwrap();
                let odd = full.iter().filter(|n| **n != 300).count();
                assert!(odd <= 2, "row group {rg}: {lengths:?}");
                assert!(
                    lengths.iter().all(|n| *n < 600),
                    "row group {rg}: {lengths:?}"
                );
                assert!(*last <= 300, "row group {rg}: {lengths:?}");
            }
        }
    }
}
