//! Reading a unit whose output includes predicate columns: decode the predicate columns
//! once, filter them, and keep their surviving rows for the output.
//!
//! The arrow reader's synchronous `RowFilter` decodes a predicate column for the filter
//! and again for the output (its predicate cache serves only the async reader). Here the
//! predicate columns are read once, the whole predicate is evaluated on them, and the
//! other columns are read for the surviving rows only, with the row-selection strategy
//! the arrow reader picks for how scattered those rows are.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use arrow_select::concat::{concat, concat_batches};
use arrow_select::filter::filter_record_batch;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection, RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::SchemaDescriptor;

use crate::error::Result;
use crate::predicate::eval;
use crate::predicate::expr::Predicate;
use crate::read::reader_builder;

/// Batches of the output roots, and their schema (the columns in no particular order).
pub(super) type Batches = (
    SchemaRef,
    Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>,
);

/// What to read of one row group.
pub(super) struct Unit<'a, F> {
    pub file: F,
    pub metadata: ArrowReaderMetadata,
    pub row_group: usize,
    /// Rows of the row group to read; `None` for all of them.
    pub selection: Option<RowSelection>,
    pub batch_size: usize,
    pub predicate: &'a Predicate,
    /// Leaves the predicate reads.
    pub predicate_leaves: &'a [usize],
    /// Root columns of the output.
    pub roots: &'a [usize],
}

impl<F: ChunkReader + Clone + 'static> Unit<'_, F> {
    /// A reader of this unit's row group: `projection`, `rows` of it (all when `None`).
    pub fn reader(
        &self,
        projection: ProjectionMask,
        rows: Option<RowSelection>,
    ) -> ParquetRecordBatchReaderBuilder<F> {
        reader_builder(
            self.file.clone(),
            self.metadata.clone(),
            self.row_group,
            projection,
            self.batch_size,
            rows,
        )
    }
}

/// The output roots the predicate read whole (every leaf under them): these come out of
/// the predicate pass. Empty when the predicate reads none, and this module has nothing
/// to save.
pub(super) fn reusable_roots(
    descr: &SchemaDescriptor,
    roots: &[usize],
    predicate_leaves: &[usize],
) -> Vec<usize> {
    let mut whole = vec![true; descr.root_schema().get_fields().len()];
    for leaf in 0..descr.num_columns() {
        if !predicate_leaves.contains(&leaf) {
            whole[descr.get_column_root_idx(leaf)] = false;
        }
    }
    roots.iter().copied().filter(|r| whole[*r]).collect()
}

/// What the predicate pass leaves: the matching rows of the reused roots, and the rows
/// still to read of the other columns.
pub(super) struct Matched {
    /// The reused roots' matching rows, in one batch.
    pub kept: RecordBatch,
    /// Which of the unit's selected rows match.
    pub mask: BooleanArray,
    /// The matching rows, as a selection of the whole row group.
    pub selection: RowSelection,
}

/// The predicate pass: every selected row of the predicate columns, decoded once, and
/// the predicate evaluated on them.
pub(super) fn predicate_pass<F: ChunkReader + Clone + 'static>(
    unit: &Unit<'_, F>,
    reused: &[usize],
) -> Result<Matched> {
    let descr = unit.metadata.metadata().file_metadata().schema_descr_ptr();
    let filter_reader = unit
        .reader(
            ProjectionMask::leaves(&descr, unit.predicate_leaves.iter().copied()),
            unit.selection.clone(),
        )
        .with_row_selection_policy(RowSelectionPolicy::Selectors)
        .build()?;
    let filter_schema = filter_reader.schema();
    let kept_indexes: Vec<usize> = reused
        .iter()
        .map(|r| {
            let name = unit.metadata.schema().field(*r).name();
            filter_schema.index_of(name)
        })
        .collect::<Result<_, ArrowError>>()?;
    let kept_schema = Arc::new(filter_schema.project(&kept_indexes)?);
    let mut masks = Vec::new();
    let mut kept = Vec::new();
    for batch in filter_reader {
        let batch = batch?;
        let mask = eval::selection(unit.predicate, &batch)?;
        kept.push(filter_record_batch(&batch.project(&kept_indexes)?, &mask)?);
        masks.push(mask);
    }
    let kept = concat_batches(&kept_schema, &kept)?;
    let matched = RowSelection::from_filters(&masks);
    let selection = match &unit.selection {
        Some(s) => s.and_then(&matched),
        None => matched,
    };
    let parts: Vec<&dyn Array> = masks.iter().map(|m| m as &dyn Array).collect();
    let mask = match parts.len() {
        0 => BooleanArray::from(Vec::<bool>::new()),
        _ => concat(&parts)?.as_boolean().clone(),
    };
    Ok(Matched {
        kept,
        mask,
        selection,
    })
}

/// Evaluate the predicate on its columns now, then stream the output rows.
pub(super) fn read<F: ChunkReader + Clone + 'static>(
    unit: Unit<'_, F>,
    reused: &[usize],
) -> Result<Batches> {
    let descr = unit.metadata.metadata().file_metadata().schema_descr_ptr();
    let Matched {
        kept, selection, ..
    } = predicate_pass(&unit, reused)?;
    let kept_schema = kept.schema();

    let others: Vec<usize> = unit
        .roots
        .iter()
        .copied()
        .filter(|r| !reused.contains(r))
        .collect();
    if others.is_empty() || kept.num_rows() == 0 {
        return Ok((kept_schema, Box::new(slices(kept, unit.batch_size))));
    }

    let rest = unit
        .reader(ProjectionMask::roots(&descr, others), Some(selection))
        .with_row_selection_policy(RowSelectionPolicy::default())
        .build()?;
    let rest_schema = rest.schema();
    let schema = Arc::new(Schema::new(
        rest_schema
            .fields()
            .iter()
            .chain(kept_schema.fields().iter())
            .cloned()
            .collect::<Vec<_>>(),
    ));
    let out_schema = schema.clone();
    let mut rest = rest;
    let mut offset = 0;
    let mut done = false;
    let batches = std::iter::from_fn(move || {
        if done {
            return None;
        }
        let Some(batch) = rest.next() else {
            done = true;
            // Both passes select the same rows: a difference is a reader defect, not data.
            return (offset != kept.num_rows()).then(|| Err(mismatch(kept.num_rows(), offset)));
        };
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                done = true;
                return Some(Err(e));
            }
        };
        let rows = batch.num_rows();
        if offset + rows > kept.num_rows() {
            done = true;
            return Some(Err(mismatch(kept.num_rows(), offset + rows)));
        }
        let reused = kept.slice(offset, rows);
        offset += rows;
        let columns = batch
            .columns()
            .iter()
            .chain(reused.columns())
            .cloned()
            .collect();
        Some(RecordBatch::try_new(schema.clone(), columns))
    });
    Ok((out_schema, Box::new(batches)))
}

/// `batch` in slices of `batch_size` rows.
pub(super) fn slices(
    batch: RecordBatch,
    batch_size: usize,
) -> impl Iterator<Item = Result<RecordBatch, ArrowError>> + Send {
    let rows = batch.num_rows();
    let batch_size = batch_size.max(1);
    (0..rows)
        .step_by(batch_size)
        .map(move |start| Ok(batch.slice(start, batch_size.min(rows - start))))
}

pub(super) fn mismatch(kept: usize, other: usize) -> ArrowError {
    ArrowError::ComputeError(format!(
        "the predicate pass kept {kept} rows, the other columns gave {other}"
    ))
}
