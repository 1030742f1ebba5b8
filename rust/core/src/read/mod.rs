//! Reading one scan unit: fetch only the selected pages, decode the predicate columns
//! first and filter exactly, then decode the other columns for surviving rows only.
//!
//! When the output includes a column the predicate reads, `predicate_first` decodes the
//! predicate columns once and keeps their surviving rows. When the scan has threads to
//! spare for a small selection, `parallel_columns` shares the other columns out among
//! them. Otherwise the arrow reader does the late materialisation (`RowFilter`, one
//! predicate per conjunct, most selective first). This module decides what to prefetch,
//! in which order to evaluate, and shapes the output (column order, partition columns).

mod adapt;
pub(crate) mod batches;
pub(crate) mod decode;
mod dictionary;
pub mod page_guard;
mod parallel_columns;
mod predicate_first;
mod probe;
pub mod shared_pages;
pub mod split;
mod stock;
mod views;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, RowFilter, RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;

use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, Result};
use crate::io::{IoStats, StorageFile};
use crate::metadata::schema::leaves_of;
use crate::plan::shape::view_of;
use crate::plan::{Decoding, Metrics, OutputColumn, OutputShape, PlannedFile, RowRanges, ScanUnit};
use crate::predicate::eval;
use crate::predicate::expr::Predicate;
use crate::predicate::value::{to_scalar_array, Value};
use batches::reader_builder;
use decode::{chunk_pages, dictionary_strings, integer_columns};
use page_guard::PageGuard;
use probe::{dictionary_probe, plain_probe};
use shared_pages::{AlikePages, SharedPages};

/// A prefetched file that remembers which offsets the page reader asked for, to count
/// the pages a unit really read, and checks each page header before the reader sees it
/// ([`page_guard`]).
#[derive(Clone)]
struct TrackedFile {
    inner: StorageFile,
    offsets: Arc<Mutex<HashSet<u64>>>,
    guard: Arc<PageGuard>,
    /// For one piece of a unit: the pages the reader fetches for itself that every piece
    /// reads alike (the dictionary pages of columns read after the filter), fetched once
    /// for all pieces.
    alike: Option<Arc<AlikePages>>,
}

impl TrackedFile {
    /// Check the header the reader is about to stream from `start`, in a chunk ending at
    /// `end`: from prefetched bytes when it can, else with a read of its own.
    fn check_streamed_header(&self, start: u64, end: u64) -> Result<()> {
        // A header inside what was fetched ahead (a dictionary page asked before its chunk)
        // is checked there, without reading past it.
        if let Some(held) = self.inner.buffered_from(start) {
            let len = held.len().min(end.saturating_sub(start) as usize);
            let whole = len as u64 == end.saturating_sub(start);
            if self.guard.check(start, &held[..len], whole)? {
                return Ok(());
            }
        }
        let mut window = page_guard::HEADER_WINDOW;
        loop {
            let len = window.min(end.saturating_sub(start));
            let whole = len == end.saturating_sub(start);
            let bytes = match self.inner.prefetched(start..start + len) {
                Some(b) => b,
                None => self.inner.read_range(start, len as usize)?,
            };
            if self.guard.check(start, &bytes, whole)? {
                return Ok(());
            }
            if window >= page_guard::MAX_HEADER_BYTES {
                return Err(Error::invalid_file(
                    self.inner.path(),
                    format!(
                        "the page header at byte {start} is longer than {} bytes",
                        page_guard::MAX_HEADER_BYTES
                    ),
                ));
            }
            window = page_guard::MAX_HEADER_BYTES;
        }
    }
}

impl Length for TrackedFile {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// A sequential read the page reader parses a header from (a chunk without an offset
/// index), checked before its first byte is handed over. The reader also asks for one at
/// a page's data after peeking at its header, without reading from it: no check then.
struct GuardedRead {
    inner: <StorageFile as ChunkReader>::T,
    pending: Option<(TrackedFile, u64, u64)>,
}

impl std::io::Read for GuardedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some((file, start, end)) = self.pending.take() {
            file.check_streamed_header(start, end)
                .map_err(|e| match e {
                    Error::InvalidFile { reason, .. } => std::io::Error::other(reason),
                    other => std::io::Error::other(other),
                })?;
        }
        self.inner.read(buf)
    }
}

/// An error for the arrow reader, which hands it back as text: a damaged page's reason
/// alone (the read adds the path), anything else whole.
fn reader_error(e: Error) -> parquet::errors::ParquetError {
    match e {
        Error::InvalidFile { reason, .. } => parquet::errors::ParquetError::General(reason),
        other => other.into(),
    }
}

impl ChunkReader for TrackedFile {
    type T = GuardedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let pending = self
            .guard
            .streamed_chunk_end(start)
            .map(|end| (self.clone(), start, end));
        Ok(GuardedRead {
            inner: self.inner.get_read(start)?,
            pending,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        if let Ok(mut o) = self.offsets.lock() {
            o.insert(start);
        }
        if let Some(alike) = &self.alike {
            alike.before_read(&self.inner, start..start + length as u64)?;
        }
        let bytes = self.inner.get_bytes(start, length)?;
        // A page read whole, header first (a chunk read through its offset index).
        if self.guard.page_read_at(start) {
            self.guard
                .check(start, &bytes, true)
                .map_err(reader_error)?;
        }
        Ok(bytes)
    }
}

/// Read `unit` as a stream of output batches, on up to `threads` threads; `shared` when
/// it is one piece of a unit cut in several.
pub fn read_unit(
    unit: &ScanUnit,
    threads: usize,
    shape: &OutputShape,
    io: &Arc<IoStats>,
    metrics: &Arc<Metrics>,
    shared: Option<&Arc<SharedPages>>,
) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send + 'static>> {
    // Pages of an encrypted file are ciphertext to pqindex's own decoders and probes.
    if shape.decoding == Decoding::Stock
        || crate::metadata::encryption::is_encrypted(unit.file.reader_metadata.metadata())
    {
        return stock::read_unit(unit, shape, io, metrics);
    }
    let planned = &unit.file;
    let path = planned.path.clone();
    let file = planned.open(io.clone())?;
    let md = planned.reader_metadata.metadata().clone();
    let schema_descr = md.file_metadata().schema_descr_ptr();
    let rg = unit.row_group;
    let predicate = planned.predicate.clone();

    // The file's own root columns (a table's file may name or hold them differently).
    let roots = planned.file_roots(&shape.roots());
    let projection = ProjectionMask::roots(&schema_descr, roots.iter().copied());
    let projected_leaves = leaves_of(&schema_descr, &roots);

    // Conjuncts become row filters, the most selective (by the plan's estimate) first.
    let mut filters: Vec<(u64, u64, Predicate, Vec<usize>)> = Vec::new();
    if let Some(p) = &predicate {
        for (i, c) in p.conjuncts().into_iter().enumerate() {
            let leaves: Vec<usize> = c.columns().iter().filter_map(|col| col.leaf).collect();
            let rows = unit
                .conjunct_rows
                .get(i)
                .copied()
                .unwrap_or_else(|| unit.ranges.row_count());
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
    let guard = Arc::new(PageGuard::new(&md, rg, &path));
    // A unit its chunks' dictionary pages rule out reads nothing more (local files only:
    // on an object store the pages would be a round trip of their own).
    let ask = !unit.dictionary_probes.is_empty() && !file.is_remote();
    if let Some(pred) = predicate.as_ref().filter(|_| ask) {
        let shared = shared.map(|s| s.as_ref());
        if dictionary_probe::rules_out(&file, &guard, unit, pred, shared, metrics)? {
            metrics.units_pruned_by_dictionary.incr();
            return Ok(Box::new(std::iter::empty()));
        }
    }
    // Pages of a needle's (or a pattern's) string column holding none of its values (or
    // lacking a piece of it) are not read (local files only, as above: on an object store
    // every page comes in one round trip).
    let searched = match predicate.as_ref().filter(|_| !file.is_remote()) {
        Some(pred) => {
            let chunk = plain_probe::Chunk {
                file: &file,
                guard: &guard,
                md: &md,
                rg,
                rows: unit.row_group_rows,
                shared: shared.map(|s| s.as_ref()),
                metrics,
            };
            plain_probe::narrowed(&chunk, pred, &unit.ranges)?
        }
        None => None,
    };
    let ranges = searched.as_ref().unwrap_or(&unit.ranges);
    if ranges.is_empty() {
        return Ok(Box::new(std::iter::empty()));
    }
    let mut skipped = dictionary::fetch_selected_pages(
        &file,
        &md,
        rg,
        &eager_leaves,
        ranges,
        unit.row_group_rows,
        shared.map(|s| s.as_ref()),
    )
    .map_err(|e| e.in_file(&path))?;
    // The columns read later skip their dictionaries too where no selected page uses them.
    let later: Vec<usize> = projected_leaves
        .iter()
        .copied()
        .filter(|l| !eager_leaves.contains(l))
        .collect();
    skipped.extend(
        dictionary::unused_dictionaries(&file, &md, rg, &later, ranges, unit.row_group_rows)
            .map_err(|e| e.in_file(&path))?,
    );
    let offsets = Arc::new(Mutex::new(HashSet::new()));
    let alike = shared.map(|s| {
        Arc::new(AlikePages {
            shared: s.clone(),
            ranges: later
                .iter()
                .filter(|l| !skipped.contains(l))
                .filter_map(|&l| crate::metadata::page_index::dictionary_range(&md, rg, l))
                .collect(),
        })
    });
    let tracked = TrackedFile {
        inner: file,
        offsets: offsets.clone(),
        guard,
        alike,
    };
    // The reader sees the row group without the dictionaries no selected page uses.
    let (reader_metadata, reader_rg) = if skipped.is_empty() {
        (planned.reader_metadata.clone(), rg)
    } else {
        metrics.dictionary_pages_skipped.add(skipped.len() as u64);
        let one = dictionary::without_dictionaries(&planned.reader_metadata, rg, &skipped)
            .map_err(|e| e.in_file(&path))?;
        (one, 0)
    };

    // Columns the output takes as views are read as views, by every path below.
    let reader_metadata = match view_roots(planned, shape) {
        v if v.is_empty() => reader_metadata,
        v => batches::viewed(&reader_metadata, &v).map_err(|e| e.in_file(&path))?,
    };

    metrics.rows_scanned.add(ranges.row_count());
    let selection = (ranges.row_count() < unit.row_group_rows)
        .then(|| ranges.to_selection(unit.row_group_rows));
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
                && ranges.row_count() <= parallel_columns::MAX_ROWS =>
        {
            let others: Vec<usize> = roots
                .iter()
                .copied()
                .filter(|r| !reused.contains(r))
                .collect();
            let at = parallel_columns::Selected {
                md: &md,
                row_group: rg,
                ranges,
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
    let (reader_schema, inner): batches::Batches = match &predicate {
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
                    metrics.column_groups_read.add(groups as u64);
                    parallel_columns::read(unit, &reused, shares, metrics)
                }
                None => predicate_first::read(unit, &reused, metrics),
            }
            .map_err(|e| e.in_file(&path))?
        }
        _ => {
            // With no filter, every row read is output: short strings decode cheapest as
            // dictionaries.
            let keyed = if filters.is_empty() {
                dictionary_strings::keyed_roots(&md, rg, &reader_metadata, &roots)
            } else {
                Vec::new()
            };
            let keyed_names: Vec<String> = keyed
                .iter()
                .map(|&r| reader_metadata.schema().field(r).name().clone())
                .collect();
            // A whole row group read unfiltered decodes its integer-stored columns here.
            let integers = if filters.is_empty() && selection.is_none() {
                integer_columns::roots(&reader_metadata, reader_rg, &roots)
            } else {
                Vec::new()
            };
            let projection = if integers.is_empty() {
                projection
            } else {
                let rest = roots.iter().copied().filter(|r| !integers.contains(r));
                ProjectionMask::roots(&schema_descr, rest)
            };
            let integer_file =
                (!integers.is_empty()).then(|| (tracked.clone(), reader_metadata.clone()));
            let reader_metadata = if keyed.is_empty() {
                reader_metadata
            } else {
                dictionary_strings::hinted(&reader_metadata, &keyed)
                    .map_err(|e| Error::from(e).in_file(&path))?
            };
            let reader = if filters.is_empty() {
                chunk_pages::reader(
                    tracked,
                    &reader_metadata,
                    reader_rg,
                    projection,
                    shape.batch_size,
                    selection,
                    RowSelectionPolicy::Selectors,
                )
            } else {
                let predicates: Vec<Box<dyn ArrowPredicate>> = filters
                    .into_iter()
                    .map(|(_, _, pred, leaves)| {
                        let mask = ProjectionMask::leaves(&schema_descr, leaves);
                        Box::new(ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                            eval::selection(&pred, &batch)
                        })) as Box<dyn ArrowPredicate>
                    })
                    .collect();
                // Strings the filters test but the output does not hold are read as views.
                let tested_only: Vec<usize> = predicate_leaves
                    .iter()
                    .map(|&leaf| schema_descr.get_column_root_idx(leaf))
                    .filter(|r| !roots.contains(r))
                    .collect();
                let reader_metadata = batches::viewed(&reader_metadata, &tested_only)
                    .map_err(|e| e.in_file(&path))?;
                reader_builder(
                    tracked,
                    reader_metadata,
                    reader_rg,
                    projection,
                    shape.batch_size,
                    selection,
                )
                .with_row_selection_policy(RowSelectionPolicy::Selectors)
                .with_row_filter(RowFilter::new(predicates))
                .build()
            }
            .map_err(|e| Error::from(e).in_file(&path))?;
            let batches: batches::Batches = (
                arrow_array::RecordBatchReader::schema(&reader),
                Box::new(reader),
            );
            let batches = if keyed_names.is_empty() {
                batches
            } else {
                dictionary_strings::expanded(batches, keyed_names)
            };
            match integer_file {
                Some((file, reader)) => {
                    metrics.integer_chunks_decoded.add(integers.len() as u64);
                    integer_columns::beside(batches, &file, &reader, reader_rg, &integers)
                        .map_err(|e| Error::from(e).in_file(&path))?
                }
                None => batches,
            }
        }
    };

    Ok(shaped(
        planned,
        shape,
        (reader_schema, inner),
        Counted {
            md,
            row_group: rg,
            offsets,
            metrics: metrics.clone(),
        },
    ))
}

/// What a finished read counts: the pages of row group `row_group` it touched (their
/// offsets), into `metrics`.
struct Counted {
    md: Arc<parquet::file::metadata::ParquetMetaData>,
    row_group: usize,
    offsets: Arc<Mutex<HashSet<u64>>>,
    metrics: Arc<Metrics>,
}

/// A reader's batches of `planned` as the output `shape` wants them: its columns in the
/// requested order (a table column the file lacks reads as NULL), partition values added,
/// buffers cut to the rows.
fn shaped(
    planned: &PlannedFile,
    shape: &OutputShape,
    (reader_schema, inner): batches::Batches,
    counted: Counted,
) -> Box<dyn Iterator<Item = Result<RecordBatch>> + Send + 'static> {
    let positions: Vec<Option<usize>> = shape
        .columns
        .iter()
        .map(|c| match c {
            OutputColumn::Root(i) => {
                let root = match &planned.columns {
                    Some(map) => map.roots.get(*i).copied().flatten()?,
                    None => *i,
                };
                let name = planned.reader_metadata.schema().field(root).name();
                reader_schema.index_of(name).ok()
            }
            OutputColumn::Partition(_) => None,
        })
        .collect();
    let views = shape
        .schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Utf8View | DataType::BinaryView));
    let table_columns = planned.columns.is_some();
    let partition_values = planned.partition_values.clone();
    let path = planned.path.clone();
    let shape = shape.clone();
    let mut finished = false;
    let mut inner = inner;
    Box::new(std::iter::from_fn(move || {
        if finished {
            return None;
        }
        match inner.next() {
            Some(Ok(batch)) => {
                counted.metrics.rows_matched.add(batch.num_rows() as u64);
                let shaped =
                    shape_batch(&batch, &shape, &positions, &partition_values, table_columns);
                drop(batch);
                Some(
                    shaped
                        .map(|b| compact(b, shape.batch_size))
                        .map(|b| if views { views::compacted(b) } else { b })
                        .map_err(|e| Error::from(e).in_file(&path)),
                )
            }
            Some(Err(e)) => {
                finished = true;
                Some(Err(Error::from(e).in_file(&path)))
            }
            None => {
                finished = true;
                let c = &counted;
                count_pages(&c.md, c.row_group, &c.offsets, &c.metrics);
                None
            }
        }
    }))
}

/// The file's root columns that `shape` outputs as views (string or binary columns of a
/// scan asked for views).
fn view_roots(planned: &PlannedFile, shape: &OutputShape) -> Vec<usize> {
    let fields = planned.reader_metadata.schema().fields();
    let mut roots: Vec<usize> = shape
        .columns
        .iter()
        .zip(shape.schema.fields())
        .filter_map(|(c, f)| match c {
            OutputColumn::Root(i) => {
                let root = match &planned.columns {
                    Some(map) => map.roots.get(*i).copied().flatten()?,
                    None => *i,
                };
                fields
                    .get(root)
                    .is_some_and(|own| view_of(own.data_type()).as_ref() == Some(f.data_type()))
                    .then_some(root)
            }
            _ => None,
        })
        .collect();
    roots.sort_unstable();
    roots.dedup();
    roots
}

/// Bytes a read of `unit` holds at once, from the footer's sizes: the compressed pages
/// it may fetch (every selected page of the output's and the predicate's columns), and
/// per column a decompressed page or two (a dictionary's among them) and a decoded batch.
/// The stream counts it against its read-ahead.
pub fn memory_estimate(unit: &ScanUnit, shape: &OutputShape) -> usize {
    /// Decompressed pages a column's reader may hold at once: writers cut pages at about
    /// 1 MiB, dictionaries too.
    const PAGES: u64 = 2 << 20;
    let planned = &unit.file;
    let md = planned.reader_metadata.metadata();
    let group = md.row_group(unit.row_group);
    let mut leaves = planned.needed_leaves(&shape.roots());
    leaves.retain(|l| *l < group.num_columns());
    let fetched: u64 = byte_ranges(
        md,
        unit.row_group,
        &leaves,
        &unit.ranges,
        unit.row_group_rows,
    )
    .iter()
    .map(|r| r.end.saturating_sub(r.start))
    .sum();
    let rows = unit.row_group_rows.max(1);
    let batch_rows = (shape.batch_size as u64).min(rows);
    let decoded: u64 = leaves
        .iter()
        .map(|l| {
            let chunk = group.column(*l);
            let encoded = chunk.uncompressed_size().max(0) as u64;
            let width = match chunk.column_type() {
                parquet::basic::Type::BOOLEAN => 1,
                parquet::basic::Type::INT32 | parquet::basic::Type::FLOAT => 4,
                parquet::basic::Type::INT64 | parquet::basic::Type::DOUBLE => 8,
                parquet::basic::Type::INT96 => 16,
                // A view or an offset per value; the bytes themselves are in `encoded`.
                parquet::basic::Type::BYTE_ARRAY => 16,
                parquet::basic::Type::FIXED_LEN_BYTE_ARRAY => {
                    chunk.column_descr().type_length().max(0) as u64
                }
            };
            encoded.min(PAGES)
                + batch_rows.saturating_mul(width)
                + encoded.saturating_mul(batch_rows) / rows
        })
        .sum();
    usize::try_from(fetched.saturating_add(decoded)).unwrap_or(usize::MAX)
}

/// `batch` with its buffers cut to its rows when it holds far fewer than `batch_size`: the
/// reader makes room for a whole batch, so the last batch of a unit, or every batch of a
/// file of small row groups, would otherwise keep a whole batch's memory each.
fn compact(batch: RecordBatch, batch_size: usize) -> RecordBatch {
    if batch.num_rows().saturating_mul(2) >= batch_size {
        return batch;
    }
    let (schema, mut columns, rows) = batch.into_parts();
    for c in &mut columns {
        arrow_array::Array::shrink_to_fit(c);
    }
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .expect("the same columns")
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
                out.extend(crate::metadata::page_index::dictionary_range(md, rg, leaf));
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
    metrics: &Metrics,
) {
    let Ok(touched) = offsets.lock() else { return };
    // Each column's pages are in offset order: the few offsets a read touched are looked
    // up there, rather than every page of the row group gathered in a set.
    let columns = md.offset_index().and_then(|oi| oi.get(rg));
    let is_data_page = |offset: u64| {
        columns.is_some_and(|cols| {
            cols.iter().any(|c| {
                let pages = c.page_locations();
                let at = pages.partition_point(|p| (p.offset.max(0) as u64) < offset);
                pages
                    .get(at)
                    .is_some_and(|p| p.offset.max(0) as u64 == offset)
            })
        })
    };
    let data = touched.iter().filter(|o| is_data_page(**o)).count() as u64;
    metrics.pages_read.add(data);
    metrics
        .dictionary_pages_read
        .add(touched.len() as u64 - data);
}

/// Put the reader's batch in the requested column order and add partition columns; a
/// table's file's columns become the table's (`table_columns`).
fn shape_batch(
    batch: &RecordBatch,
    shape: &OutputShape,
    positions: &[Option<usize>],
    partition_values: &[Option<Value>],
    table_columns: bool,
) -> Result<RecordBatch, ArrowError> {
    let rows = batch.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(shape.columns.len());
    for (i, c) in shape.columns.iter().enumerate() {
        let field = shape.schema.field(i);
        match (c, positions[i]) {
            (OutputColumn::Root(_), Some(pos)) if table_columns => {
                columns.push(adapt::to_table_column(batch.column(pos), field)?)
            }
            (OutputColumn::Root(_), Some(pos)) => columns.push(batch.column(pos).clone()),
            (OutputColumn::Root(_), None) if table_columns => {
                columns.push(new_null_array(field.data_type(), rows))
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_schema::{Field, Schema};

    use crate::metadata::{read_metadata, MetadataCache};
    use crate::plan::PlannedFile;
    use crate::predicate::{bind, sql, BindSchema};
    use crate::testing::{int64s, strings, write_file, Layout};

    /// 2,000 rows in one row group of 100-row pages: `k` sorted, `s` = "v<k % 10>".
    fn file(dir: &std::path::Path) -> String {
        write_file(
            dir,
            "r.parquet",
            vec![
                ("k", int64s(0..2000)),
                (
                    "s",
                    strings((0..2000).map(|k| Some(format!("v{}", k % 10)))),
                ),
            ],
            Layout {
                row_group_size: 2000,
                page_rows: Some(100),
                ..Default::default()
            },
        )
    }

    /// A unit of `rows` of the file, filtered by `predicate`, output `columns` (roots) and
    /// a partition column `p` = 7 when `partition`.
    fn unit(path: &str, predicate: &str, rows: RowRanges) -> (ScanUnit, Schema) {
        let md = read_metadata(path, true, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let schema =
            parquet::arrow::parquet_to_arrow_schema(md.file_metadata().schema_descr(), None)
                .unwrap();
        let partition = Field::new("p", DataType::Int64, true);
        let ast = sql::parse(predicate, 0).unwrap();
        let bound = bind(
            &ast,
            &BindSchema {
                arrow: &schema,
                native: &schema,
                parquet: md.file_metadata().schema_descr(),
                partitions: std::slice::from_ref(&partition),
            },
        )
        .unwrap()
        .bind_partitions(&[Some(Value::Int(7))]);
        let identity = crate::io::FileIdentity::stat(path).unwrap();
        let planned = PlannedFile::new(identity, md, Some(bound), vec![Some(Value::Int(7))]);
        let unit = ScanUnit {
            file: Arc::new(planned.unwrap()),
            row_group: 0,
            ranges: rows,
            row_group_rows: 2000,
            conjunct_rows: Vec::new(),
            dictionary_probes: Vec::new(),
        };
        (unit, schema)
    }

    fn read(
        unit: &ScanUnit,
        columns: Vec<OutputColumn>,
        schema: &Schema,
    ) -> (RecordBatch, Metrics) {
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| match c {
                OutputColumn::Root(i) => schema.field(*i).clone(),
                OutputColumn::Partition(_) => Field::new("p", DataType::Int64, true),
            })
            .collect();
        let shape = OutputShape {
            schema: Arc::new(Schema::new(fields)),
            columns,
            batch_size: 1 << 16,
            decoding: crate::plan::Decoding::from_env(),
        };
        let metrics = Arc::new(Metrics::default());
        let io = Arc::new(IoStats::default());
        let batches: Vec<RecordBatch> = read_unit(unit, 1, &shape, &io, &metrics, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let batch = arrow_select::concat::concat_batches(&shape.schema, &batches).unwrap();
        (batch, Arc::try_unwrap(metrics).unwrap_or_default())
    }

    #[test]
    fn only_selected_pages_are_read_and_filtered_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        // Rows 300..400 and 1500..1600 selected; the predicate keeps every tenth of them.
        let rows = RowRanges::from_ranges([300..400, 1500..1600]);
        let (u, schema) = unit(&path, "s = 'v3' AND p = 7", rows);
        let (batch, m) = read(&u, vec![OutputColumn::Root(0)], &schema);
        let got: Vec<i64> = batch
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        let want: Vec<i64> = (300..400)
            .chain(1500..1600)
            .filter(|k| k % 10 == 3)
            .collect();
        assert_eq!(got, want);
        assert_eq!(m.rows_scanned.get(), 200);
        assert_eq!(m.rows_matched.get(), 20);
        // Two pages of each column, and `s`'s dictionary.
        assert_eq!(m.pages_read.get(), 4);
    }

    #[test]
    fn output_follows_the_shape_with_partition_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let (u, schema) = unit(
            &path,
            "k < 5",
            RowRanges::from_ranges(std::iter::once(0..100)),
        );
        let columns = vec![
            OutputColumn::Partition(0),
            OutputColumn::Root(1),
            OutputColumn::Root(0),
        ];
        let (batch, _) = read(&u, columns, &schema);
        assert_eq!(batch.num_rows(), 5);
        assert_eq!(batch.schema().field(0).name(), "p");
        let p = batch.column(0).as_primitive::<Int64Type>();
        assert!(p.iter().all(|v| v == Some(7)));
        assert_eq!(batch.column(1).as_string::<i32>().value(4), "v4");
        assert_eq!(batch.column(2).as_primitive::<Int64Type>().value(4), 4);
    }
}
