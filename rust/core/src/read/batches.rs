//! What every read path shares: the crate's reader of one row group, the batches a path
//! yields, and the crate's reader metadata retyped (views, narrower reads). The paths
//! (orchestration in `read`, the decoders in `read::decode`, the stock reader) all build
//! on these, so none of them imports another's.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::reader::ChunkReader;

use crate::error::Result;
use crate::plan::shape::view_of;

/// Batches of the output roots, and their schema (the columns in no particular order).
pub(crate) type Batches = (
    SchemaRef,
    Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>,
);

/// `metadata` with the string and binary columns among `roots` (top-level columns) read as
/// views, for a predicate to test: a plain-encoded page then decodes into views of its own
/// bytes, where a `Utf8` read copies every value and its offset into new buffers that the
/// test reads once and drops. The rows kept for the output are cast back.
pub(crate) fn viewed(
    metadata: &ArrowReaderMetadata,
    roots: &[usize],
) -> Result<ArrowReaderMetadata> {
    let schema = metadata.schema();
    let types: Vec<Option<DataType>> = (0..schema.fields().len())
        .map(|i| match roots.contains(&i) {
            true => view_of(schema.field(i).data_type()),
            false => None,
        })
        .collect();
    if types.iter().all(Option::is_none) {
        return Ok(metadata.clone());
    }
    Ok(retyped(metadata, types)?)
}

/// `metadata` with each top-level column read in `types[i]` where that is set.
pub(crate) fn retyped(
    metadata: &ArrowReaderMetadata,
    types: Vec<Option<DataType>>,
) -> Result<ArrowReaderMetadata, parquet::errors::ParquetError> {
    let schema = metadata.schema();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(types)
        .map(|(f, t)| match t {
            Some(t) => f.as_ref().clone().with_data_type(t),
            None => f.as_ref().clone(),
        })
        .collect();
    let hinted = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = ArrowReaderOptions::new()
        .with_schema(hinted)
        .with_page_index_policy(PageIndexPolicy::Optional);
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
}

/// A reader of `rows` (all when `None`) of one row group, `projection` only.
pub(crate) fn reader_builder<F: ChunkReader + 'static>(
    file: F,
    metadata: ArrowReaderMetadata,
    row_group: usize,
    projection: ProjectionMask,
    batch_size: usize,
    rows: Option<RowSelection>,
) -> ParquetRecordBatchReaderBuilder<F> {
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
        .with_row_groups(vec![row_group])
        .with_projection(projection)
        .with_batch_size(batch_size);
    match rows {
        Some(rows) => builder.with_row_selection(rows),
        None => builder,
    }
}
