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
use arrow_array::types::Int32Type;
use arrow_array::ArrayRef;
use arrow_array::{Array, BooleanArray, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::BooleanBuffer;
use arrow_cast::cast;
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef};
use arrow_select::coalesce::BatchCoalescer;
use arrow_select::concat::{concat, concat_batches};
use arrow_select::filter::filter_record_batch;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, RowSelection, RowSelectionPolicy};
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as PhysicalType;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::SchemaDescriptor;

use crate::error::Result;
use crate::metadata::schema::primitive_leaf;
use crate::plan::Metrics;
use crate::predicate::eval;
use crate::predicate::expr::Predicate;
use crate::read::batches::{retyped, viewed, Batches};
use crate::read::decode::chunk_pages;
use crate::read::decode::dictionary_strings;
use crate::read::decode::integer_columns;

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
    /// Chunks of integer-stored columns the pass decoded itself.
    pub integer_chunks: u64,
}

impl Matched {
    /// The matching rows as a selection of the whole row group, of which the unit read
    /// `within` (all when `None`); made only where a reader reads after the pass.
    pub fn selection(&self, within: Option<&RowSelection>) -> RowSelection {
        let matched = RowSelection::from_filters(std::slice::from_ref(&self.mask));
        match within {
            Some(s) => s.and_then(&matched),
            None => matched,
        }
    }
}

/// The predicate pass: every selected row of the predicate columns, decoded once, and
/// the predicate evaluated on them.
pub(super) fn predicate_pass<F: ChunkReader + Clone + 'static>(
    unit: &Unit<'_, F>,
    reused: &[usize],
) -> Result<Matched> {
    if let Some(matched) = integer_pass(unit, reused)? {
        return Ok(matched);
    }
    let descr = unit.metadata.metadata().file_metadata().schema_descr_ptr();
    let predicate_roots: Vec<usize> = unit
        .predicate_leaves
        .iter()
        .map(|&leaf| descr.get_column_root_idx(leaf))
        .collect();
    let filter_reader = chunk_pages::reader(
        unit.file.clone(),
        &viewed(&unit.metadata, &predicate_roots)?,
        unit.row_group,
        ProjectionMask::leaves(&descr, unit.predicate_leaves.iter().copied()),
        unit.batch_size,
        unit.selection.clone(),
        RowSelectionPolicy::Selectors,
    )?;
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
    // The kept strings go out in the file's own types.
    let own_schema = unit_schema(unit.metadata.schema(), &kept_schema)?;
    let kept = RecordBatch::try_new_with_options(
        own_schema.clone(),
        from_narrow(kept.columns(), own_schema.fields())?,
        &RecordBatchOptions::new().with_row_count(Some(kept.num_rows())),
    )?;
    let parts: Vec<&dyn Array> = masks.iter().map(|m| m as &dyn Array).collect();
    let mask = match parts.len() {
        0 => BooleanArray::from(Vec::<bool>::new()),
        _ => concat(&parts)?.as_boolean().clone(),
    };
    Ok(Matched {
        kept,
        mask,
        integer_chunks: 0,
    })
}

/// The predicate pass of a whole row group whose predicate reads one integer-stored
/// column ([`integer_columns::roots`]): the column is tested as it is decoded, a
/// dictionary once for all its keys, and only the matching rows' values are made. `None`
/// where the unit is not such a read.
fn integer_pass<F: ChunkReader + Clone + 'static>(
    unit: &Unit<'_, F>,
    reused: &[usize],
) -> Result<Option<Matched>> {
    let descr = unit.metadata.metadata().file_metadata().schema_descr();
    let (None, &[leaf]) = (&unit.selection, unit.predicate_leaves) else {
        return Ok(None);
    };
    let root = descr.get_column_root_idx(leaf);
    let decodable = primitive_leaf(descr, root) == Some(leaf)
        && !integer_columns::roots(&unit.metadata, unit.row_group, &[root]).is_empty();
    if !decodable {
        return Ok(None);
    }
    // NULLs are tested too (`IS NULL`), whatever the file's schema says of the column.
    let field = unit
        .metadata
        .schema()
        .field(root)
        .clone()
        .with_nullable(true);
    let tested_schema = Arc::new(Schema::new(vec![field]));
    let mut test = |values: ArrayRef| -> Result<BooleanBuffer, ArrowError> {
        let batch = RecordBatch::try_new(tested_schema.clone(), vec![values])?;
        Ok(eval::selection(unit.predicate, &batch)?.values().clone())
    };
    let keep = reused.contains(&root);
    let tested = integer_columns::tested(
        &unit.file,
        &unit.metadata,
        unit.row_group,
        root,
        &mut test,
        keep,
    )?;
    let matches = tested.mask.count_set_bits();
    let kept = match tested.kept {
        Some(values) => {
            let field = unit.metadata.schema().field(root).clone();
            let nullable = field.is_nullable() || values.null_count() > 0;
            let schema = Arc::new(Schema::new(vec![field.with_nullable(nullable)]));
            RecordBatch::try_new(schema, vec![values])?
        }
        None => RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            Vec::new(),
            &RecordBatchOptions::new().with_row_count(Some(matches)),
        )?,
    };
    Ok(Some(Matched {
        kept,
        mask: BooleanArray::new(tested.mask, None),
        integer_chunks: 1,
    }))
}

/// Evaluate the predicate on its columns now, then stream the output rows.
pub(super) fn read<F: ChunkReader + Clone + 'static>(
    unit: Unit<'_, F>,
    reused: &[usize],
    metrics: &Metrics,
) -> Result<Batches> {
    let descr = unit.metadata.metadata().file_metadata().schema_descr_ptr();
    let matched = predicate_pass(&unit, reused)?;
    metrics.integer_chunks_decoded.add(matched.integer_chunks);
    let (kept, mask) = (matched.kept.clone(), &matched.mask);
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

    let batch_rows = decoded_batch_rows(unit.batch_size, kept.num_rows(), mask.len());
    let (batch_size, own_schema) = (unit.batch_size, unit.metadata.schema().clone());
    // With the whole row group in the predicate pass, the mask has a bit for each of its
    // rows: columns stored as integers (integers, dates, timestamps, decimals) gather the
    // matching rows' values only.
    // Only where every page of the column has a matching row: the arrow reader fetches
    // only the pages that have one.
    let rows = match mask.nulls() {
        Some(valid) => mask.values() & valid.inner(),
        None => mask.values().clone(),
    };
    // Sparser matches are left to the arrow reader, which passes over long runs of rows
    // without decoding their levels and keys one by one.
    let dense = rows.count_set_bits().saturating_mul(SPARSEST_GATHERED) >= rows.len();
    let integers: Vec<usize> = match unit.selection {
        None if dense => integer_columns::roots(&unit.metadata, unit.row_group, &others)
            .into_iter()
            .filter(|&r| {
                integer_columns::every_page_selected(&unit.metadata, unit.row_group, r, &rows)
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut integers_read = match integers.is_empty() {
        true => None,
        false => {
            let read = integer_columns::Selected::new(
                &unit.file,
                &unit.metadata,
                unit.row_group,
                &integers,
                rows,
            )?;
            metrics.integer_chunks_decoded.add(integers.len() as u64);
            Some(read)
        }
    };
    let others: Vec<usize> = others
        .into_iter()
        .filter(|r| !integers.contains(r))
        .collect();
    // Where the integer decoders read every other column, batches are cut from the kept
    // rows: no reader walks the selection for their counts.
    let (mut rest, batch_rows) = match others.is_empty() {
        true => (None, batch_size),
        false => {
            let keyed = dictionary_strings::keyed_roots(
                unit.metadata.metadata(),
                unit.row_group,
                &unit.metadata,
                &others,
            );
            let reader = chunk_pages::reader(
                unit.file.clone(),
                &narrowed(&unit.metadata, &keyed)?,
                unit.row_group,
                ProjectionMask::roots(&descr, others),
                batch_rows,
                Some(matched.selection(unit.selection.as_ref())),
                RowSelectionPolicy::default(),
            )?;
            (Some(reader), batch_rows)
        }
    };
    // The reader's schema with the file's own types: narrower reads are cast back below.
    let rest_schema = match &rest {
        Some(reader) => unit_schema(&own_schema, &reader.schema())?,
        None => Arc::new(Schema::empty()),
    };
    let integer_fields = integers_read
        .as_ref()
        .map(|d| d.fields())
        .unwrap_or_default();
    let schema = Arc::new(Schema::new(
        rest_schema
            .fields()
            .iter()
            .chain(integer_fields.iter())
            .chain(kept_schema.fields().iter())
            .cloned()
            .collect::<Vec<_>>(),
    ));
    let out_schema = schema.clone();
    let mut offset = 0;
    let mut done = false;
    let batches = std::iter::from_fn(move || {
        if done {
            return None;
        }
        let read = match rest.as_mut() {
            Some(reader) => match reader.next() {
                Some(Ok(batch)) => Some(batch),
                Some(Err(e)) => {
                    done = true;
                    return Some(Err(e));
                }
                None => {
                    done = true;
                    // Both passes select the same rows: a difference is a reader defect.
                    return (offset != kept.num_rows())
                        .then(|| Err(mismatch(kept.num_rows(), offset)));
                }
            },
            None if offset == kept.num_rows() => {
                done = true;
                return None;
            }
            None => None,
        };
        let rows = match &read {
            Some(batch) => batch.num_rows(),
            None => batch_size.min(kept.num_rows() - offset),
        };
        if offset + rows > kept.num_rows() {
            done = true;
            return Some(Err(mismatch(kept.num_rows(), offset + rows)));
        }
        let reused = kept.slice(offset, rows);
        offset += rows;
        let read_columns = read.as_ref().map(|b| b.columns()).unwrap_or_default();
        let columns = match from_narrow(read_columns, schema.fields()) {
            Ok(c) => c,
            Err(e) => {
                done = true;
                return Some(Err(e));
            }
        };
        let integers = match integers_read.as_mut().map(|d| d.next(rows)).transpose() {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => {
                done = true;
                return Some(Err(e));
            }
        };
        let columns = columns
            .into_iter()
            .chain(integers)
            .chain(reused.columns().iter().cloned())
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Some(RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &options,
        ))
    });
    if batch_rows == batch_size {
        return Ok((out_schema, Box::new(batches)));
    }
    let coalesced = coalesce(out_schema.clone(), batches, batch_size);
    Ok((out_schema, Box::new(coalesced)))
}

/// `metadata` with some top-level columns read in narrower types, cast back after
/// filtering ([`from_narrow`]): the string columns `keyed` (whose chunks hold only
/// dictionary-encoded pages) as dictionaries, so that the reader decodes only their keys;
/// other strings and bytes as views, so that a dictionary-encoded page decodes into views
/// of its dictionary instead of a copy of each value; and decimals stored as INT64 as
/// `Decimal64`, which the reader hands over as they are instead of widening every value
/// to 128 bits. Filtering scattered rows then moves small values, and only the matching
/// ones are converted.
fn narrowed(metadata: &ArrowReaderMetadata, keyed: &[usize]) -> Result<ArrowReaderMetadata> {
    let schema = metadata.schema();
    let descr = metadata.metadata().file_metadata().schema_descr();
    let mut narrow: Vec<Option<DataType>> = (0..schema.fields().len())
        .map(|i| narrow_of(descr, i, schema.field(i).data_type()))
        .collect();
    for &root in keyed {
        if let Some(slot) = narrow.get_mut(root) {
            *slot = Some(dictionary_strings::keyed());
        }
    }
    if narrow.iter().all(Option::is_none) {
        return Ok(metadata.clone());
    }
    Ok(retyped(metadata, narrow)?)
}

/// The narrower type root column `root` (of `data_type`) is read in, if any.
fn narrow_of(descr: &SchemaDescriptor, root: usize, data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8 => Some(DataType::Utf8View),
        DataType::Binary => Some(DataType::BinaryView),
        DataType::Decimal128(p, s) if *p <= 18 => {
            let leaf = primitive_leaf(descr, root)?;
            (descr.column(leaf).physical_type() == PhysicalType::INT64)
                .then_some(DataType::Decimal64(*p, *s))
        }
        _ => None,
    }
}

/// `read`'s fields with the types the file's schema `own` gives them.
fn unit_schema(own: &Schema, read: &SchemaRef) -> Result<SchemaRef, ArrowError> {
    let fields: Vec<Field> = read
        .fields()
        .iter()
        .map(|f| {
            let field = own.field_with_name(f.name())?;
            Ok(f.as_ref().clone().with_data_type(field.data_type().clone()))
        })
        .collect::<Result<_, ArrowError>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// `columns` cast to the types of `fields` where they were read narrower.
fn from_narrow(columns: &[ArrayRef], fields: &Fields) -> Result<Vec<ArrayRef>, ArrowError> {
    columns
        .iter()
        .zip(fields.iter())
        .map(|(c, f)| match c.as_dictionary_opt::<Int32Type>() {
            _ if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(d) if f.data_type() == &DataType::Utf8 => dictionary_strings::expand(d),
            _ => cast(c, f.data_type()),
        })
        .collect()
}

/// Integer-stored columns after a predicate pass gather their values here only where at
/// least one row in this many matches. Around one in 100 the two paths take the same time
/// on Zstandard pages of a million rows; sparser, the arrow reader's skipping wins.
const SPARSEST_GATHERED: usize = 128;

/// Fewest rows a batch of the other columns is read in.
const MIN_BATCH_ROWS: usize = 1024;

/// Rows per batch to read the other columns in, when `matched` of `scanned` rows match.
/// The reader decodes rows until a batch's worth are selected (for scattered rows it
/// decodes all of them and filters), so at 2% a batch of 65,536 would decode a whole row
/// group of 3M rows at once; batches of about `batch_size` decoded rows keep each
/// column's buffers small and in cache.
fn decoded_batch_rows(batch_size: usize, matched: usize, scanned: usize) -> usize {
    if scanned == 0 {
        return batch_size;
    }
    let rows = (batch_size as u128 * matched as u128 / scanned as u128) as usize;
    rows.clamp(MIN_BATCH_ROWS.min(batch_size), batch_size)
}

/// `batches` gathered into batches of `batch_size` rows (the last may be shorter).
fn coalesce(
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>> + Send,
    batch_size: usize,
) -> impl Iterator<Item = Result<RecordBatch, ArrowError>> + Send {
    let mut coalescer = BatchCoalescer::new(schema, batch_size);
    let mut batches = batches.fuse();
    let mut finished = false;
    std::iter::from_fn(move || loop {
        if let Some(done) = coalescer.next_completed_batch() {
            return Some(Ok(done));
        }
        if finished {
            return None;
        }
        match batches.next() {
            Some(Ok(b)) => {
                if let Err(e) = coalescer.push_batch(b) {
                    finished = true;
                    return Some(Err(e));
                }
            }
            Some(Err(e)) => {
                finished = true;
                return Some(Err(e));
            }
            None => {
                finished = true;
                if let Err(e) = coalescer.finish_buffered_batch() {
                    return Some(Err(e));
                }
            }
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field};

    #[test]
    fn other_columns_are_read_in_batches_of_about_a_batch_of_decoded_rows() {
        // 2% of 3M rows match: 1,310 matching rows per 65,536 decoded.
        assert_eq!(decoded_batch_rows(65_536, 60_000, 3_000_000), 1_310);
        assert_eq!(decoded_batch_rows(65_536, 3_000_000, 3_000_000), 65_536);
        assert_eq!(decoded_batch_rows(65_536, 1, 3_000_000), MIN_BATCH_ROWS);
        assert_eq!(decoded_batch_rows(100, 1, 3_000_000), 100);
        assert_eq!(decoded_batch_rows(65_536, 0, 0), 65_536);
    }

    #[test]
    fn scattered_strings_bytes_and_decimals_come_back_in_their_own_types() {
        use crate::metadata::MetadataCache;
        use crate::query::scan::ScanOptions;
        use crate::testing::{int64s, planned, strings, write_file, Layout};
        use arrow_array::{BinaryArray, Decimal128Array, StringArray};

        let dir = tempfile::tempdir().unwrap();
        let rows = 50_000i64;
        let word = |k: i64| (k % 3 != 0).then(|| format!("value number {}", k % 97));
        let bytes: ArrayRef = Arc::new(BinaryArray::from_iter(
            (0..rows).map(|k| (k % 5 != 0).then(|| k.to_le_bytes().to_vec())),
        ));
        let decimal = |k: i64| (k % 7 != 0).then_some(k as i128 * 1_000_003 - 7);
        let decimals: ArrayRef = Arc::new(
            Decimal128Array::from_iter((0..rows).map(decimal))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let path = write_file(
            dir.path(),
            "s.parquet",
            vec![
                ("k", int64s(0..rows)),
                ("m", int64s((0..rows).map(|k| k % 50))),
                ("s", strings((0..rows).map(word))),
                ("b", bytes),
                ("d", decimals.clone()),
            ],
            Layout {
                row_group_size: rows as usize,
                page_rows: Some(1_000),
                ..Default::default()
            },
        );
        let md = crate::metadata::read_metadata(&path, false, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let physical = md.file_metadata().schema_descr().column(4).physical_type();
        assert_eq!(physical, PhysicalType::INT64);
        let opts = ScanOptions {
            predicate: Some("m = 7 OR k = 49999".into()),
            columns: Some(vec![
                "k".into(),
                "m".into(),
                "s".into(),
                "b".into(),
                "d".into(),
            ]),
            batch_size: 4_096,
            threads: 1,
            ..Default::default()
        };
        let scan = planned(&path, &opts);
        let batches: Vec<RecordBatch> = scan.stream().collect::<Result<_, _>>().unwrap();
        let expected: Vec<i64> = (0..rows).filter(|k| k % 50 == 7 || *k == 49_999).collect();
        let mut seen = Vec::new();
        for batch in &batches {
            let k = batch
                .column(0)
                .as_primitive::<arrow_array::types::Int64Type>();
            let s = batch
                .column(2)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            let b = batch
                .column(3)
                .as_any()
                .downcast_ref::<BinaryArray>()
                .unwrap();
            let d = batch
                .column(4)
                .as_any()
                .downcast_ref::<Decimal128Array>()
                .unwrap();
            assert_eq!(d.data_type(), &DataType::Decimal128(15, 2));
            for i in 0..batch.num_rows() {
                let key = k.value(i);
                assert_eq!(s.is_valid(i).then(|| s.value(i).to_string()), word(key));
                let want = (key % 5 != 0).then(|| key.to_le_bytes().to_vec());
                assert_eq!(b.is_valid(i).then(|| b.value(i).to_vec()), want);
                assert_eq!(d.is_valid(i).then(|| d.value(i)), decimal(key));
                seen.push(key);
            }
        }
        assert_eq!(seen, expected);
        // 1,001 matching rows in batches of 4,096 decoded rows, gathered back together.
        assert_eq!(batches.len(), 1);
    }

    #[test]
    fn strings_a_predicate_tests_come_out_in_their_own_types() {
        use crate::query::scan::ScanOptions;
        use crate::testing::{int64s, planned, strings, write_file, Layout};

        let dir = tempfile::tempdir().unwrap();
        let rows = 20_000i64;
        let word =
            |k: i64| (k % 3 != 0).then(|| format!("a comment longer than a view {}", k % 89));
        let path = write_file(
            dir.path(),
            "s.parquet",
            vec![
                ("k", int64s(0..rows)),
                ("s", strings((0..rows).map(word))),
                ("t", strings((0..rows).map(|k| Some(format!("t{k}"))))),
            ],
            Layout {
                row_group_size: rows as usize,
                page_rows: Some(1_000),
                ..Default::default()
            },
        );
        let expected: Vec<i64> = (0..rows)
            .filter(|k| word(*k).is_some_and(|w| w.ends_with(" 7") || w.ends_with(" 70")))
            .collect();
        // With `s` in the output (the predicate pass keeps it) and without it (a row
        // filter tests it), one and two threads.
        for (columns, threads) in [
            (vec!["k", "s", "t"], 1),
            (vec!["k", "s"], 2),
            (vec!["k", "t"], 1),
        ] {
            let opts = ScanOptions {
                predicate: Some("s LIKE '%view 7' OR s = 'a comment longer than a view 70'".into()),
                columns: Some(columns.iter().map(|c| c.to_string()).collect()),
                batch_size: 4_096,
                threads,
                ..Default::default()
            };
            let scan = planned(&path, &opts);
            let mut seen = Vec::new();
            for batch in scan.stream() {
                let batch = batch.unwrap();
                for (f, name) in batch.schema().fields().iter().zip(&columns) {
                    assert_eq!(f.name(), name);
                    let own = if *name == "k" {
                        DataType::Int64
                    } else {
                        DataType::Utf8
                    };
                    assert_eq!(f.data_type(), &own, "{columns:?}");
                }
                let (k, other) = (batch.column(0), batch.column(1).as_string::<i32>());
                let k = k.as_primitive::<arrow_array::types::Int64Type>();
                for i in 0..batch.num_rows() {
                    let key = k.value(i);
                    let want = match columns[1] {
                        "s" => word(key).unwrap(),
                        _ => format!("t{key}"),
                    };
                    assert_eq!(other.value(i), want);
                    seen.push(key);
                }
            }
            assert_eq!(seen, expected, "{columns:?}");
        }
    }

    #[test]
    fn small_batches_are_gathered_to_the_batch_size() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let batch = |r: std::ops::Range<i64>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from_iter_values(r))],
            )
        };
        let small = (0..10).map(|i| batch(i * 7..(i + 1) * 7));
        let out: Vec<RecordBatch> = coalesce(schema.clone(), small, 20)
            .collect::<Result<_, _>>()
            .unwrap();
        let sizes: Vec<usize> = out.iter().map(|b| b.num_rows()).collect();
        assert_eq!(sizes, vec![20, 20, 20, 10]);
        let keys: Vec<i64> = out
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_primitive::<arrow_array::types::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert!(keys.into_iter().eq(0..70));
        // An error ends the stream after the rows before it.
        let failing = vec![batch(0..5), Err(ArrowError::ComputeError("damaged".into()))];
        let out: Vec<_> = coalesce(schema, failing.into_iter(), 20).collect();
        assert_eq!(out.len(), 1);
        assert!(out[0].is_err());
    }
}
