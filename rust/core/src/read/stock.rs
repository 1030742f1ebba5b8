//! A unit read by the parquet crate's stock reader alone: its `ParquetRecordBatchReader`
//! with the unit's row selection and one row filter per conjunct, pages supplied and
//! decoded by the crate. None of pqindex's decoders or probes take part (no dictionary or
//! plain-page probe, no page prefixes, no integer or dictionary-string decoding, no
//! columns shared among threads); what remains of pqindex is the plan (which rows of which
//! row group), the page guard (no page may declare more than it can hold), the exact
//! filter and the output's shape.
//!
//! This is the oracle of the decode seam ([`crate::plan::Decoding::Stock`]): the
//! differential suite runs in both modes and must get the same rows, so a wrong row is
//! either the plan's or the crate's, and a parquet upgrade is checked against its own
//! reader.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, ParquetRecordBatchReaderBuilder, RowFilter,
    RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::io::IoStats;
use crate::metadata::encryption::{classified, is_encrypted};
use crate::plan::{Metrics, OutputShape, ScanUnit};
use crate::predicate::eval;

use super::page_guard::PageGuard;
use super::{batches, shaped, view_roots, Counted, TrackedFile};

/// Read `unit` with the stock reader (see the module documentation).
pub(super) fn read_unit(
    unit: &ScanUnit,
    shape: &OutputShape,
    io: &Arc<IoStats>,
    metrics: &Arc<Metrics>,
) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send + 'static>> {
    let planned = &unit.file;
    let path = planned.path.clone();
    let file = planned.open(io.clone())?;
    let md = planned.reader_metadata.metadata().clone();
    let descr = md.file_metadata().schema_descr_ptr();
    let rg = unit.row_group;
    if unit.ranges.is_empty() {
        return Ok(Box::new(std::iter::empty()));
    }
    let roots = planned.file_roots(&shape.roots());
    let projection = ProjectionMask::roots(&descr, roots.iter().copied());
    // The output's views are the crate's own reading of the column, asked by type.
    let reader_metadata = match view_roots(planned, shape) {
        v if v.is_empty() => planned.reader_metadata.clone(),
        v => batches::viewed(&planned.reader_metadata, &v).map_err(|e| e.in_file(&path))?,
    };
    let offsets = Arc::new(Mutex::new(HashSet::new()));
    let tracked = TrackedFile {
        inner: file,
        offsets: offsets.clone(),
        guard: Arc::new(PageGuard::new(&md, rg, &path)),
        alike: None,
    };
    metrics.rows_scanned.add(unit.ranges.row_count());
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(tracked, reader_metadata)
        .with_row_groups(vec![rg])
        .with_projection(projection)
        .with_batch_size(shape.batch_size)
        .with_row_selection_policy(RowSelectionPolicy::Selectors);
    if unit.ranges.row_count() < unit.row_group_rows {
        builder = builder.with_row_selection(unit.ranges.to_selection(unit.row_group_rows));
    }
    if let Some(pred) = &planned.predicate {
        let predicates: Vec<Box<dyn ArrowPredicate>> = pred
            .conjuncts()
            .into_iter()
            .map(|c| {
                let leaves: Vec<usize> = c.columns().iter().filter_map(|col| col.leaf).collect();
                let mask = ProjectionMask::leaves(&descr, leaves);
                let c = c.clone();
                Box::new(ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                    eval::selection(&c, &batch)
                })) as Box<dyn ArrowPredicate>
            })
            .collect();
        builder = builder.with_row_filter(RowFilter::new(predicates));
    }
    let encrypted = is_encrypted(&md);
    let reader = builder
        .build()
        .map_err(|e| classified(Error::from(e).in_file(&path)))?;
    let batches: batches::Batches = (
        arrow_array::RecordBatchReader::schema(&reader),
        Box::new(reader),
    );
    let out = shaped(
        planned,
        shape,
        batches,
        Counted {
            md,
            row_group: rg,
            offsets,
            metrics: metrics.clone(),
        },
    );
    Ok(if encrypted {
        Box::new(out.map(|b| b.map_err(classified)))
    } else {
        out
    })
}
