//! A plan's units as an Arrow table, and a scan rebuilt from any subset of its rows.
//!
//! This is how a plan made in one process is read in others (Spark executors): the table
//! names each unit's file with its full identity, so a file that changed since planning
//! fails the read with `FileChanged` instead of being read with a stale plan. Everything
//! else a reader needs (footer, page index) comes from the metadata cache of the process
//! that reads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Int64Array, RecordBatch, StringArray, StructArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::page_index::has_page_index;
use crate::metadata::schema::{check_schema, leaves_of};
use crate::metadata::MetadataCache;
use crate::plan::{Metrics, OutputShape, PlannedFile, RowRanges, ScanUnit};
use crate::predicate::value::{to_scalar_array, Value};
use crate::predicate::Predicate;
use crate::prune::dictionary_probes::dictionary_probes;
use crate::prune::page_index::conjunct_rows;
use crate::prune::planner::HeldFiles;
use crate::prune::planner::SchemaAdapter;
use crate::prune::selectivity::expected_rows;
use crate::query::binding::Binding;
use crate::query::scan::{Scan, ScanOptions};
use crate::read::byte_ranges;
use crate::table::columns::TableColumns;

const VERSION_KEY: &str = "pqindex.units.version";
const VERSION: &str = "1";
/// For a table's units: the table's columns (an Arrow IPC stream of its schema, base64),
/// with the physical names and field ids each file's columns are found by.
const TABLE_SCHEMA_KEY: &str = "pqindex.units.table_schema";

/// The schema of a units table; `partitions` adds a struct of the partition values, and
/// `table` the columns of the table the units are of.
fn units_schema(partitions: &[Field], table: Option<&Schema>) -> Result<SchemaRef> {
    let list = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::UInt64, false))),
            false,
        )
    };
    let mut fields = FileIdentity::arrow_fields();
    fields.extend([
        Field::new("row_group", DataType::UInt32, false),
        Field::new("row_group_rows", DataType::UInt64, false),
        list("range_starts"),
        list("range_ends"),
        Field::new("selected_rows", DataType::UInt64, false),
        Field::new("selected_bytes", DataType::UInt64, false),
        Field::new("expected_rows", DataType::UInt64, false),
        Field::new("expected_bytes", DataType::UInt64, false),
    ]);
    if !partitions.is_empty() {
        fields.push(Field::new(
            "partitions",
            DataType::Struct(Fields::from(partitions.to_vec())),
            false,
        ));
    }
    let mut metadata = HashMap::from([(VERSION_KEY.to_string(), VERSION.to_string())]);
    if let Some(t) = table {
        metadata.insert(TABLE_SCHEMA_KEY.to_string(), encode_schema(t)?);
    }
    Ok(Arc::new(Schema::new(fields).with_metadata(metadata)))
}

fn encode_schema(schema: &Schema) -> Result<String> {
    use base64::Engine;
    let mut bytes = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut bytes, schema)?;
    w.finish()?;
    drop(w);
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn decode_schema(text: &str) -> Result<Schema> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| bad(format!("the table schema does not decode: {e}")))?;
    let reader = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)?;
    Ok(reader.schema().as_ref().clone())
}

impl Scan {
    /// The plan's units as a table, one row each in plan order, for `from_units` in
    /// another process.
    pub fn units_table(&self) -> Result<RecordBatch> {
        units_table(self)
    }
}

/// The rows `u` is expected to output (the footers' statistics) and their bytes as Arrow,
/// for the output leaves `leaves`.
fn expected_output(u: &ScanUnit, leaves: &[usize]) -> (u64, u64) {
    let md = u.file.reader_metadata.metadata();
    let rows = match &u.file.predicate {
        Some(p) => expected_rows(p, md, u.row_group, u.ranges.row_count()),
        None => u.ranges.row_count(),
    };
    let width = arrow_row_bytes(md, u.row_group, leaves);
    (rows, (rows as f64 * width).ceil() as u64)
}

/// The units of `scan`, one row each, in plan order. `selected_bytes` estimates what reading
/// the unit fetches (its selected pages of the needed columns), to balance work by it;
/// `expected_rows` and `expected_bytes` what it returns (rows, and their size as Arrow),
/// by [`expected_rows`], to decide where to read it.
fn units_table(scan: &Scan) -> Result<RecordBatch> {
    let table = scan.table.as_ref().map(|_| &scan.binding.schema);
    let schema = units_schema(&scan.binding.partitions, table)?;
    let n = scan.units.len();
    let mut starts = ListBuilder::new(UInt64Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt64,
        false,
    )));
    let mut ends = ListBuilder::new(UInt64Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt64,
        false,
    )));
    let mut bytes = Vec::with_capacity(n);
    let (mut expected, mut expected_bytes) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let roots = scan.shape.roots();
    for u in &scan.units {
        for r in u.ranges.ranges() {
            starts.values().append_value(r.start);
            ends.values().append_value(r.end);
        }
        starts.append(true);
        ends.append(true);
        let md = u.file.reader_metadata.metadata();
        let descr = md.file_metadata().schema_descr();
        let (rows, arrow_bytes) = expected_output(u, &leaves_of(descr, &u.file.file_roots(&roots)));
        expected.push(rows);
        expected_bytes.push(arrow_bytes);
        let leaves = u.file.needed_leaves(&roots);
        let ranges = byte_ranges(md, u.row_group, &leaves, &u.ranges, u.row_group_rows);
        bytes.push(ranges.iter().map(|r| r.end - r.start).sum::<u64>());
    }
    let id = |f: &dyn Fn(&FileIdentity) -> u64| -> UInt64Array {
        scan.units.iter().map(|u| f(&u.file.identity)).collect()
    };
    let id_i64 = |f: &dyn Fn(&FileIdentity) -> i64| -> Int64Array {
        scan.units.iter().map(|u| f(&u.file.identity)).collect()
    };
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            scan.units.iter().map(|u| u.file.path.as_str()),
        )),
        Arc::new(id(&|i| i.size)),
        Arc::new(id_i64(&|i| i.mtime_ns)),
        Arc::new(id(&|i| i.ino)),
        Arc::new(id_i64(&|i| i.ctime_ns)),
        Arc::new(StringArray::from_iter(
            scan.units.iter().map(|u| u.file.identity.etag.as_deref()),
        )),
        Arc::new(UInt32Array::from_iter_values(
            scan.units.iter().map(|u| u.row_group as u32),
        )),
        Arc::new(UInt64Array::from_iter_values(
            scan.units.iter().map(|u| u.row_group_rows),
        )),
        Arc::new(starts.finish()),
        Arc::new(ends.finish()),
        Arc::new(UInt64Array::from_iter_values(
            scan.units.iter().map(|u| u.ranges.row_count()),
        )),
        Arc::new(UInt64Array::from(bytes)),
        Arc::new(UInt64Array::from(expected)),
        Arc::new(UInt64Array::from(expected_bytes)),
    ];
    if !scan.binding.partitions.is_empty() {
        let mut arrays = Vec::new();
        for (i, f) in scan.binding.partitions.iter().enumerate() {
            let parts = scan
                .units
                .iter()
                .map(
                    |u| match u.file.partition_values.get(i).cloned().flatten() {
                        Some(v) => to_scalar_array(&v, f.data_type()),
                        None => Ok(arrow_array::new_null_array(f.data_type(), 1)),
                    },
                )
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            arrays.push(if refs.is_empty() {
                arrow_array::new_empty_array(f.data_type())
            } else {
                arrow_select::concat::concat(&refs)?
            });
        }
        columns.push(Arc::new(StructArray::try_new(
            Fields::from(scan.binding.partitions.clone()),
            arrays,
            None,
        )?));
    }
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// About how many bytes a row of `leaves` of row group `rg` takes as Arrow: fixed-width
/// values their width (decimals 16), strings and bytes their average unencoded length (from
/// the chunk's size statistics, else its uncompressed size) and an offset.
fn arrow_row_bytes(md: &ParquetMetaData, rg: usize, leaves: &[usize]) -> f64 {
    let group = md.row_group(rg);
    let rows = group.num_rows().max(1) as f64;
    leaves
        .iter()
        .filter_map(|&leaf| group.columns().get(leaf))
        .map(|c| {
            let descr = c.column_descr();
            if matches!(descr.logical_type_ref(), Some(LogicalType::Decimal { .. }))
                || descr.converted_type() == ConvertedType::DECIMAL
            {
                return 16.0;
            }
            match c.column_type() {
                PhysicalType::BOOLEAN => 1.0,
                PhysicalType::INT32 | PhysicalType::FLOAT => 4.0,
                PhysicalType::INT64 | PhysicalType::DOUBLE => 8.0,
                PhysicalType::INT96 => 16.0,
                PhysicalType::FIXED_LEN_BYTE_ARRAY => f64::from(descr.type_length().max(0)),
                PhysicalType::BYTE_ARRAY => {
                    let data = c
                        .unencoded_byte_array_data_bytes()
                        .unwrap_or(c.uncompressed_size());
                    data.max(0) as f64 / rows + 4.0
                }
            }
        })
        .sum()
}

/// One row of a units table.
struct UnitRow {
    identity: FileIdentity,
    row_group: usize,
    row_group_rows: u64,
    ranges: RowRanges,
    partitions: Vec<Option<Value>>,
}

fn bad(reason: impl Into<String>) -> Error {
    Error::InvalidArgument(format!("not a pqindex units table: {}", reason.into()))
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    batch
        .column_by_name(name)
        .ok_or_else(|| bad(format!("no column {name}")))
}

fn rows_of(batch: &RecordBatch, partitions: &[Field]) -> Result<Vec<UnitRow>> {
    let u64s = |name: &str| -> Result<UInt64Array> {
        Ok(arrow_cast::cast(column(batch, name)?, &DataType::UInt64)?
            .as_primitive::<UInt64Type>()
            .clone())
    };
    let i64s = |name: &str| -> Result<Int64Array> {
        Ok(arrow_cast::cast(column(batch, name)?, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .clone())
    };
    let paths = arrow_cast::cast(column(batch, "path")?, &DataType::Utf8)?;
    let paths = paths.as_string::<i32>();
    let (size, ino, rows) = (u64s("size")?, u64s("ino")?, u64s("row_group_rows")?);
    let (mtime, ctime) = (i64s("mtime_ns")?, i64s("ctime_ns")?);
    let etags = FileIdentity::etags(batch)?;
    let row_group = arrow_cast::cast(column(batch, "row_group")?, &DataType::UInt32)?;
    let row_group = row_group.as_primitive::<UInt32Type>();
    let list = |name: &str| -> Result<arrow_array::ListArray> {
        let target = DataType::List(Arc::new(Field::new("item", DataType::UInt64, true)));
        Ok(arrow_cast::cast(column(batch, name)?, &target)?
            .as_list::<i32>()
            .clone())
    };
    let (starts, ends) = (list("range_starts")?, list("range_ends")?);
    let parts = match partitions.is_empty() {
        true => None,
        false => Some(
            column(batch, "partitions")?
                .as_struct_opt()
                .ok_or_else(|| bad("partitions is not a struct"))?,
        ),
    };
    let mut out = Vec::with_capacity(batch.num_rows());
    for (r, etag) in etags.into_iter().enumerate() {
        let all = [
            &size as &dyn Array,
            &ino,
            &rows,
            &mtime,
            &ctime,
            row_group,
            paths,
        ];
        if all.iter().any(|a| a.is_null(r)) || starts.is_null(r) || ends.is_null(r) {
            return Err(bad(format!("row {r} has a null")));
        }
        let (s, e) = (starts.value(r), ends.value(r));
        let (s, e) = (
            s.as_primitive::<UInt64Type>(),
            e.as_primitive::<UInt64Type>(),
        );
        if s.len() != e.len() || s.null_count() + e.null_count() > 0 {
            return Err(bad(format!("row {r}: range_starts and range_ends differ")));
        }
        let row_group_rows = rows.value(r);
        let mut ranges = Vec::with_capacity(s.len());
        for (a, b) in s.values().iter().zip(e.values()) {
            if a >= b
                || *b > row_group_rows
                || ranges
                    .last()
                    .is_some_and(|l: &std::ops::Range<u64>| l.end > *a)
            {
                return Err(bad(format!(
                    "row {r}: ranges are not sorted, disjoint row ranges within the row group"
                )));
            }
            ranges.push(*a..*b);
        }
        let mut partition_values = Vec::new();
        if let Some(p) = parts {
            for (i, f) in partitions.iter().enumerate() {
                partition_values.push(value_at(p.column(i), r, f)?);
            }
        }
        out.push(UnitRow {
            identity: FileIdentity {
                path: paths.value(r).to_string(),
                size: size.value(r),
                mtime_ns: mtime.value(r),
                ino: ino.value(r),
                ctime_ns: ctime.value(r),
                etag,
            },
            row_group: row_group.value(r) as usize,
            row_group_rows,
            ranges: RowRanges::from_ranges(ranges),
            partitions: partition_values,
        });
    }
    Ok(out)
}

/// A partition value back from its column.
fn value_at(array: &ArrayRef, row: usize, field: &Field) -> Result<Option<Value>> {
    crate::predicate::value_set::value_at(array.as_ref(), row).map_err(|e| {
        bad(format!(
            "partition column {} ({}): {e}",
            field.name(),
            array.data_type()
        ))
    })
}

impl Scan {
    /// A scan of the units in `batches` (rows of `units_table`, any subset, any order).
    /// `opts` must carry the planning scan's predicate, columns and `now_ns`, so the rows
    /// are filtered exactly as planned.
    pub fn from_units(
        batches: &[RecordBatch],
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        opts.check()?;
        let Some(first) = batches.first() else {
            return Err(bad("no batches"));
        };
        let version = first.schema().metadata().get(VERSION_KEY).cloned();
        if version.as_deref() != Some(VERSION) {
            return Err(Error::Unsupported(format!(
                "units table version {} (this pqindex reads version {VERSION})",
                version.as_deref().unwrap_or("(none)")
            )));
        }
        let partition_fields: Vec<Field> = match first.column_by_name("partitions") {
            Some(p) => match p.data_type() {
                DataType::Struct(fields) => fields.iter().map(|f| f.as_ref().clone()).collect(),
                _ => return Err(bad("partitions is not a struct")),
            },
            None => Vec::new(),
        };
        let table = match first.schema().metadata().get(TABLE_SCHEMA_KEY) {
            Some(text) => Some(Arc::new(decode_schema(text)?)),
            None => None,
        };
        let mut rows = Vec::new();
        for b in batches {
            rows.extend(rows_of(b, &partition_fields)?);
        }
        if rows.is_empty() {
            return Err(bad("no units"));
        }
        let io = Arc::new(IoStats::default());
        let now_ns = opts
            .now_ns
            .ok_or_else(|| Error::InvalidArgument("now_ns of the plan is needed".into()))?;

        let metrics = Arc::new(Metrics::default());
        let mut files: HashMap<String, Arc<PlannedFile>> = HashMap::new();
        let held = HeldFiles::default();
        let mut units = Vec::with_capacity(rows.len());
        let mut bound: Option<(Binding, Option<Predicate>, OutputShape)> = None;
        for row in rows {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let path = row.identity.path.clone();
            let planned = match files.get(&path) {
                Some(p) => p.clone(),
                None => {
                    let file = StorageFile::open_expecting(&path, &row.identity, io.clone())?;
                    let (md, outcome) = cache.get(&file, false)?;
                    let md = if has_page_index(&md) {
                        cache.get(&file, true)?.0
                    } else {
                        md
                    };
                    metrics.files.incr();
                    if outcome.footer_hit {
                        metrics.footer_cache_hits.incr();
                    } else {
                        metrics.footers_read.incr();
                    }
                    if bound.is_none() {
                        let binding = match &table {
                            Some(t) => Binding::of_table(t, partition_fields.clone())?,
                            None => Binding::of(&md, &path, partition_fields.clone())?,
                        };
                        // The keys of a keyed read filter the rows here too, so a task
                        // returns only the semi join's rows.
                        let predicate = binding.bind_read(
                            opts.predicate.as_ref(),
                            opts.keys.as_ref(),
                            now_ns,
                        )?;
                        let mut shape =
                            binding.output_shape(opts.columns.as_deref(), opts.batch_size)?;
                        shape.decoding = opts.decoding;
                        bound = Some((binding, predicate, shape));
                    }
                    let (binding, predicate, _) = bound.as_ref().expect("bound above");
                    let predicate = predicate
                        .as_ref()
                        .map(|p| p.bind_partitions(&row.partitions));
                    // A table's file is read in the table's terms (its columns by field id
                    // or physical name, widened to the table's types).
                    let (predicate, columns) = match &table {
                        Some(t) => {
                            let adapter = TableColumns {
                                root: String::new(),
                                schema: t.clone(),
                                // The driver refused such files when it planned them.
                                identity: Default::default(),
                            };
                            let (p, map) = adapter.adapt(&path, predicate.as_ref(), &md)?;
                            (p, Some(map))
                        }
                        None => {
                            check_schema(&path, &md, &binding.dataset_schema())?;
                            (predicate, None)
                        }
                    };
                    let predicate = predicate.filter(|p| *p != Predicate::Const(Some(true)));
                    let mut planned = PlannedFile::new(
                        file.identity().as_ref().clone(),
                        md,
                        predicate,
                        row.partitions.clone(),
                    )?;
                    planned.columns = columns;
                    if held.take() {
                        planned.handle = Some(file.handle());
                    }
                    let planned = Arc::new(planned);
                    files.insert(path.clone(), planned.clone());
                    planned
                }
            };
            let md = planned.reader_metadata.metadata();
            let rg_rows = md
                .row_groups()
                .get(row.row_group)
                .map(|rg| rg.num_rows().max(0) as u64);
            if rg_rows != Some(row.row_group_rows) {
                return Err(Error::FileChanged {
                    path,
                    what: format!("row group {} no longer matches the plan", row.row_group),
                });
            }
            metrics.row_groups.incr();
            metrics.rows_selected.add(row.ranges.row_count());
            let conjunct_rows = planned.predicate.as_ref().map_or_else(Vec::new, |p| {
                conjunct_rows(md, row.row_group, p, &row.ranges)
            });
            let dictionary_probes = match (&planned.predicate, &bound) {
                (Some(p), Some((_, _, shape))) => {
                    let needed = planned.needed_leaves(&shape.roots());
                    dictionary_probes(
                        p,
                        md,
                        row.row_group,
                        row.row_group_rows,
                        &row.ranges,
                        &needed,
                    )
                }
                _ => Vec::new(),
            };
            units.push(ScanUnit {
                file: planned,
                row_group: row.row_group,
                ranges: row.ranges,
                row_group_rows: row.row_group_rows,
                conjunct_rows,
                dictionary_probes,
            });
        }
        let (binding, predicate, shape) = bound.expect("at least one unit");
        metrics.units.set(units.len() as u64);
        Ok(Scan {
            shape,
            units,
            metrics,
            predicate,
            where_text: opts.predicate.clone(),
            summaries: Vec::new(),
            files_planned: 0,
            warnings: Vec::new(),
            threads: opts.threads.max(1),
            io,
            binding,
            now_ns,
            catalog: None,
            table: None,
            read_ahead: opts.read_ahead,
            limit: opts.limit,
            order_by: opts.order_by.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, int64s, keys, Layout};
    use arrow_array::Int64Array;

    fn write_file(dir: &std::path::Path) -> String {
        testing::write_file(
            dir,
            "k.parquet",
            vec![("k", int64s(0..10_000))],
            Layout {
                row_group_size: 2_000,
                page_rows: Some(100),
                ..Default::default()
            },
        )
    }

    #[test]
    fn units_read_elsewhere_give_the_planned_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let cache = MetadataCache::new(1 << 20);
        let cancel = AtomicBool::new(false);
        let opts = ScanOptions {
            predicate: Some("k BETWEEN 1990 AND 2010 OR k = 7777".into()),
            ..Default::default()
        };
        let scan = Scan::plan(std::slice::from_ref(&path), &opts, &cache, &cancel).unwrap();
        let table = units_table(&scan).unwrap();
        assert_eq!(table.num_rows(), 3);

        // Another process: a fresh cache, the units in reverse order, split in two batches.
        let other = MetadataCache::new(1 << 20);
        let opts = ScanOptions {
            now_ns: Some(scan.now_ns),
            ..opts
        };
        let parts = [table.slice(2, 1), table.slice(0, 2)];
        let rebuilt = Scan::from_units(&parts, &opts, &other, &cancel).unwrap();
        let mut got = keys(rebuilt.stream());
        got.sort_unstable();
        let mut want: Vec<i64> = (1990..=2010).collect();
        want.push(7777);
        assert_eq!(got, want);
        // Only the selected pages were decoded: one 100-row page per unit.
        assert_eq!(rebuilt.metrics.pages_read.get(), 3);

        // A rewritten file is refused, not read with the old plan.
        std::thread::sleep(std::time::Duration::from_millis(10));
        write_file(dir.path());
        let err = Scan::from_units(&parts, &opts, &MetadataCache::new(1 << 20), &cancel);
        assert!(
            matches!(err, Err(Error::FileChanged { .. })),
            "{:?}",
            err.err()
        );
    }

    #[test]
    fn malformed_tables_are_refused() {
        let cancel = AtomicBool::new(false);
        let cache = MetadataCache::new(1 << 20);
        let opts = ScanOptions {
            now_ns: Some(0),
            ..Default::default()
        };
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
        let err = Scan::from_units(&[batch], &opts, &cache, &cancel);
        assert!(matches!(err, Err(Error::Unsupported(_))), "{:?}", err.err());
    }
}
