//! Reading one scan unit: fetch only the selected pages, decode the predicate columns
//! first and filter exactly, then decode the other columns for surviving rows only.
//!
//! When the output includes a column the predicate reads, `predicate_first` decodes the
//! predicate columns once and keeps their surviving rows. When the scan has threads to
//! spare for a small selection, `parallel_columns` shares the other columns out among
//! them. Otherwise the arrow reader does the late materialisation (`RowFilter`, one
//! predicate per conjunct, most selective first). This module decides what to prefetch,
//! in which order to evaluate, and shapes the output (column order, partition columns).

mod dictionary;
mod parallel_columns;
mod predicate_first;
pub mod split;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, ArrowReaderMetadata, ParquetRecordBatchReaderBuilder,
    RowFilter, RowSelection, RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;

use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::SchemaDescriptor;

use crate::error::{Error, Result};
use crate::io::{IoStats, StorageFile};
use crate::predicate::eval;
use crate::predicate::expr::Predicate;
use crate::predicate::value::{to_scalar_array, Value};
use crate::prune::page;
use crate::prune::plan::ScanUnit;
use crate::prune::row_ranges::RowRanges;

/// Counters the readers of one scan add to.
#[derive(Debug, Default)]
pub struct ReadMetrics {
    pub rows_scanned: AtomicU64,
    pub rows_matched: AtomicU64,
    pub pages_read: AtomicU64,
    pub dictionary_pages_read: AtomicU64,
    /// Dictionary pages not read because no selected page of their chunk uses them.
    pub dictionary_pages_skipped: AtomicU64,
    pub units_read: AtomicU64,
    /// Groups of columns read side by side by a unit's spare threads.
    pub column_groups_read: AtomicU64,
}

/// What the output looks like, shared by every unit of a scan.
#[derive(Debug, Clone)]
pub struct OutputShape {
    pub schema: SchemaRef,
    /// Per output column: a root column of the file, or a partition column.
    pub columns: Vec<OutputColumn>,
    pub batch_size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputColumn {
    Root(usize),
    Partition(usize),
}

/// The leaf columns under `roots`, in schema order. One pass over the leaves, however
/// many roots: `SELECT *` of a wide file asks for every one.
pub fn leaves_of(descr: &SchemaDescriptor, roots: &[usize]) -> Vec<usize> {
    let mut wanted = vec![false; descr.root_schema().get_fields().len()];
    for root in roots {
        if let Some(w) = wanted.get_mut(*root) {
            *w = true;
        }
    }
    (0..descr.num_columns())
        .filter(|l| wanted[descr.get_column_root_idx(*l)])
        .collect()
}

/// Each root column's leaves, in schema order, indexed by root.
pub fn leaves_by_root(descr: &SchemaDescriptor) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); descr.root_schema().get_fields().len()];
    for leaf in 0..descr.num_columns() {
        out[descr.get_column_root_idx(leaf)].push(leaf);
    }
    out
}

impl OutputShape {
    pub fn roots(&self) -> Vec<usize> {
        let mut r: Vec<usize> = self
            .columns
            .iter()
            .filter_map(|c| match c {
                OutputColumn::Root(i) => Some(*i),
                OutputColumn::Partition(_) => None,
            })
            .collect();
        r.sort_unstable();
        r.dedup();
        r
    }
}

/// A prefetched file that remembers which offsets the page reader asked for, to count
/// the pages a unit really read.
#[derive(Clone)]
struct TrackedFile {
    inner: StorageFile,
    offsets: Arc<Mutex<HashSet<u64>>>,
}

impl Length for TrackedFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl ChunkReader for TrackedFile {
    type T = <StorageFile as ChunkReader>::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.inner.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        if let Ok(mut o) = self.offsets.lock() {
            o.insert(start);
        }
        self.inner.get_bytes(start, length)
    }
}

/// Read `unit` as a stream of output batches, on up to `threads` threads.
pub fn read_unit(
    unit: &ScanUnit,
    threads: usize,
    shape: &OutputShape,
    io: &Arc<IoStats>,
    metrics: &Arc<ReadMetrics>,
) -> Result<impl Iterator<Item = Result<RecordBatch>> + Send + 'static> {
    let planned = &unit.file;
    let path = planned.path.clone();
    let file = StorageFile::open_expecting(&path, &planned.identity, io.clone())?;
    let md = planned.reader_metadata.metadata().clone();
    let schema_descr = md.file_metadata().schema_descr_ptr();
    let rg = unit.row_group;
    let predicate = planned.predicate.clone();

    let roots = shape.roots();
    let projection = ProjectionMask::roots(&schema_descr, roots.iter().copied());
    let projected_leaves = leaves_of(&schema_descr, &roots);

    // Conjuncts become row filters, the most selective (by the page index) first.
    let mut filters: Vec<(u64, u64, Predicate, Vec<usize>)> = Vec::new();
    if let Some(p) = &predicate {
        for c in p.conjuncts() {
            let leaves: Vec<usize> = c.columns().iter().filter_map(|col| col.leaf).collect();
            let rows = if md.offset_index().is_some() {
                page::row_ranges(&md, rg, c)
                    .intersect(&unit.ranges)
                    .row_count()
            } else {
                unit.ranges.row_count()
            };
            let bytes: u64 = leaves
                .iter()
                .map(|l| md.row_group(rg).column(*l).compressed_size().max(0) as u64)
                .sum();
            filters.push((rows, bytes, c.clone(), leaves));
        }
        filters.sort_by_key(|(rows, bytes, _, _)| (*rows, *bytes));
    }

    let predicate_leaves: Vec<usize> = {
        let mut l: Vec<usize> = filters.iter().flat_map(|f| f.3.iter().copied()).collect();
        l.sort_unstable();
        l.dedup();
        l
    };
    // Prefetch what is certainly read: the predicate columns' selected pages, or every
    // projected column's selected pages when nothing filters them further. On an object
    // store a request costs more than the pages a filter might spare, so every projected
    // column is fetched at once.
    let eager_leaves: Vec<usize> = if filters.is_empty() || file.is_remote() {
        let mut l = projected_leaves.clone();
        l.extend(&predicate_leaves);
        l.sort_unstable();
        l.dedup();
        l
    } else {
        predicate_leaves.clone()
    };
    let skipped = dictionary::fetch_selected_pages(
        &file,
        &md,
        rg,
        &eager_leaves,
        &unit.ranges,
        unit.row_group_rows,
    )
    .map_err(|e| e.in_file(&path))?;
    let offsets = Arc::new(Mutex::new(HashSet::new()));
    let tracked = TrackedFile {
        inner: file,
        offsets: offsets.clone(),
    };
    // The reader sees the row group without the dictionaries no selected page uses.
    let (reader_metadata, reader_rg) = if skipped.is_empty() {
        (planned.reader_metadata.clone(), rg)
    } else {
        metrics
            .dictionary_pages_skipped
            .fetch_add(skipped.len() as u64, Ordering::Relaxed);
        let one =
            dictionary::without_dictionaries(&md, rg, &skipped).map_err(|e| e.in_file(&path))?;
        (one, 0)
    };

    metrics
        .rows_scanned
        .fetch_add(unit.ranges.row_count(), Ordering::Relaxed);
    let selection = (unit.ranges.row_count() < unit.row_group_rows)
        .then(|| unit.ranges.to_selection(unit.row_group_rows));
    let every_conjunct_reads = filters.iter().all(|f| !f.3.is_empty());
    let reused = match &predicate {
        Some(_) if every_conjunct_reads => {
            predicate_first::reusable_roots(&schema_descr, &roots, &predicate_leaves)
        }
        _ => Vec::new(),
    };
    // Spare threads share out the other columns of a small selection.
    let shares = match &predicate {
        Some(_)
            if every_conjunct_reads
                && threads > 1
                && unit.ranges.row_count() <= parallel_columns::MAX_ROWS =>
        {
            let others: Vec<usize> = roots
                .iter()
                .copied()
                .filter(|r| !reused.contains(r))
                .collect();
            let at = parallel_columns::Selected {
                md: &md,
                row_group: rg,
                ranges: &unit.ranges,
                rows: unit.row_group_rows,
            };
            Some(parallel_columns::shares(
                &at,
                &predicate_leaves,
                &others,
                threads,
            ))
            .filter(|s| !s.spare.is_empty())
        }
        _ => None,
    };
    let (reader_schema, inner): predicate_first::Batches = match &predicate {
        Some(pred) if shares.is_some() || !reused.is_empty() => {
            let unit = predicate_first::Unit {
                file: tracked,
                metadata: reader_metadata,
                row_group: reader_rg,
                selection,
                batch_size: shape.batch_size,
                predicate: pred,
                predicate_leaves: &predicate_leaves,
                roots: &roots,
            };
            match shares {
                Some(shares) => {
                    let groups = shares.spare.len() + usize::from(!shares.own.is_empty());
                    metrics
                        .column_groups_read
                        .fetch_add(groups as u64, Ordering::Relaxed);
                    parallel_columns::read(unit, &reused, shares)
                }
                None => predicate_first::read(unit, &reused),
            }
            .map_err(|e| e.in_file(&path))?
        }
        _ => {
            let mut builder = reader_builder(
                tracked,
                reader_metadata,
                reader_rg,
                projection,
                shape.batch_size,
                selection,
            )
            .with_row_selection_policy(RowSelectionPolicy::Selectors);
            if !filters.is_empty() {
                let predicates: Vec<Box<dyn ArrowPredicate>> = filters
                    .into_iter()
                    .map(|(_, _, pred, leaves)| {
                        let mask = ProjectionMask::leaves(&schema_descr, leaves);
                        Box::new(ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                            eval::selection(&pred, &batch)
                        })) as Box<dyn ArrowPredicate>
                    })
                    .collect();
                builder = builder.with_row_filter(RowFilter::new(predicates));
            }
            let reader = builder.build().map_err(|e| Error::from(e).in_file(&path))?;
            (
                arrow_array::RecordBatchReader::schema(&reader),
                Box::new(reader),
            )
        }
    };

    // Map the reader's columns to the requested order.
    let positions: Vec<Option<usize>> = shape
        .columns
        .iter()
        .map(|c| match c {
            OutputColumn::Root(i) => {
                let name = planned.reader_metadata.schema().field(*i).name();
                reader_schema.index_of(name).ok()
            }
            OutputColumn::Partition(_) => None,
        })
        .collect();
    let partition_values = planned.partition_values.clone();
    let shape = shape.clone();
    let metrics = metrics.clone();
    let md_for_count = md.clone();
    let mut finished = false;
    let mut inner = inner;
    Ok(std::iter::from_fn(move || {
        if finished {
            return None;
        }
        match inner.next() {
            Some(Ok(batch)) => {
                metrics
                    .rows_matched
                    .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
                Some(
                    shape_batch(&batch, &shape, &positions, &partition_values)
                        .map_err(|e| Error::from(e).in_file(&path)),
                )
            }
            Some(Err(e)) => {
                finished = true;
                Some(Err(Error::from(e).in_file(&path)))
            }
            None => {
                finished = true;
                count_pages(&md_for_count, rg, &offsets, &metrics);
                None
            }
        }
    }))
}

/// A reader of `rows` (all when `None`) of one row group, `projection` only.
fn reader_builder<F: ChunkReader + 'static>(
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

/// Byte ranges of the pages of `leaves` that hold selected rows, with their dictionary
/// pages; whole column chunks where there is no offset index. An upper bound of what a
/// read fetches.
pub(crate) fn byte_ranges(
    md: &parquet::file::metadata::ParquetMetaData,
    rg: usize,
    leaves: &[usize],
    selected: &RowRanges,
    rows: u64,
) -> Vec<std::ops::Range<u64>> {
    let mut out = Vec::new();
    for &leaf in leaves {
        match dictionary::selected_pages(md, rg, leaf, selected, rows) {
            Some((pages, _)) => {
                out.extend(dictionary::dictionary_range(md, rg, leaf));
                out.extend(pages);
            }
            None => {
                let (start, len) = md.row_group(rg).column(leaf).byte_range();
                out.push(start..start + len);
            }
        }
    }
    out
}

fn count_pages(
    md: &parquet::file::metadata::ParquetMetaData,
    rg: usize,
    offsets: &Arc<Mutex<HashSet<u64>>>,
    metrics: &ReadMetrics,
) {
    let Ok(touched) = offsets.lock() else { return };
    let data_pages: HashSet<u64> = md
        .offset_index()
        .and_then(|oi| oi.get(rg))
        .map(|cols| {
            cols.iter()
                .flat_map(|c| c.page_locations().iter().map(|p| p.offset.max(0) as u64))
                .collect()
        })
        .unwrap_or_default();
    let data = touched.iter().filter(|o| data_pages.contains(o)).count() as u64;
    metrics.pages_read.fetch_add(data, Ordering::Relaxed);
    metrics
        .dictionary_pages_read
        .fetch_add(touched.len() as u64 - data, Ordering::Relaxed);
}

/// Put the reader's batch in the requested column order and add partition columns.
fn shape_batch(
    batch: &RecordBatch,
    shape: &OutputShape,
    positions: &[Option<usize>],
    partition_values: &[Option<Value>],
) -> Result<RecordBatch, ArrowError> {
    let rows = batch.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(shape.columns.len());
    for (i, c) in shape.columns.iter().enumerate() {
        let field = shape.schema.field(i);
        match (c, positions[i]) {
            (OutputColumn::Root(_), Some(pos)) => columns.push(batch.column(pos).clone()),
            (OutputColumn::Partition(p), _) => columns.push(constant_column(
                partition_values.get(*p).and_then(|v| v.as_ref()),
                field.data_type(),
                rows,
            )?),
            (OutputColumn::Root(_), None) => {
                return Err(ArrowError::SchemaError(format!(
                    "column {} missing from the reader",
                    field.name()
                )))
            }
        }
    }
    RecordBatch::try_new_with_options(
        shape.schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

fn constant_column(
    v: Option<&Value>,
    data_type: &DataType,
    rows: usize,
) -> Result<ArrayRef, ArrowError> {
    match v {
        None => Ok(new_null_array(data_type, rows)),
        Some(v) => {
            let one = to_scalar_array(v, data_type).map_err(ArrowError::from)?;
            let indices = arrow_array::UInt32Array::from(vec![0u32; rows]);
            arrow_select::take::take(one.as_ref(), &indices, None)
        }
    }
}
