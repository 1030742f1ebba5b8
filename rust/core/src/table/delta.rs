//! Delta Lake snapshots through the official kernel (`delta_kernel`): the log (JSON
//! commits and checkpoints) is replayed by the kernel, which also refuses, naming it, any
//! reader feature it does not support. From its scan metadata come each live file's path,
//! size, record count, partition values and parsed statistics (keyed by physical column
//! names under column mapping), and from its deletion vector the rows it no longer holds.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use delta_kernel::engine::arrow_conversion::TryFromKernel;
use delta_kernel::engine::arrow_data::ArrowEngineData;
use delta_kernel::history_manager::{latest_version_as_of, HistoryCommitType};
use delta_kernel::scan::state::ScanFile;
use delta_kernel::scan::StatsOptions;
use delta_kernel::schema::{ColumnMetadataKey, MetadataValue, StructType};
use delta_kernel::{Engine, Snapshot};
use delta_kernel_default_engine::DefaultEngineBuilder;
use url::Url;

use crate::error::{Error, Result};
use crate::metadata::schema::FIELD_ID;
use crate::predicate::Value;
use crate::table::columns::{table_error, with_metadata_value, with_physical_names};
use crate::table::deletion_vectors::VectorsEngine;
use crate::table::snapshot_cache::{self, SnapshotFiles};
use crate::table::values::{from_text, value_as};
use crate::table::{ColumnStats, TableFile, TableFormat, TableOptions, TableSnapshot};

/// Where a Delta table keeps its index files, below its root: a directory VACUUM skips, as
/// it skips everything whose name starts with `_`.
pub const DELTA_INDEX_DIR: &str = "_pqindex/indexes";

/// Strings at least this long in statistics may be truncated: writers cut string bounds
/// (Delta Spark and delta-rs at 32 characters), and a cut maximum is below the true one.
/// Shorter maxima are whole; a minimum is a prefix of the true one either way.
const STRING_BOUND_CHARS: usize = 16;

fn kernel_error(root: &str, e: delta_kernel::KernelError) -> Error {
    use delta_kernel::KernelError as K;
    match e {
        K::Unsupported(what) => Error::Unsupported(format!(
            "Delta table {root}: {what} (a reader feature this pqindex does not read)"
        )),
        K::InvalidProtocol(what) => Error::Unsupported(format!("Delta table {root}: {what}")),
        K::FileNotFound(what) => Error::NotFound {
            path: format!("{root} ({what})"),
        },
        other => table_error(root, format!("the Delta log cannot be read: {other}")),
    }
}

/// The URL of a table's root directory (with a trailing slash, as the kernel wants it).
fn table_url(root: &str) -> Result<Url> {
    if crate::io::object::is_remote(root) {
        let fixed = root.strip_prefix("s3a://").map(|r| format!("s3://{r}"));
        let mut url = Url::parse(fixed.as_deref().unwrap_or(root))
            .map_err(|e| Error::InvalidArgument(format!("{root}: not a URL ({e})")))?;
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        return Ok(url);
    }
    let dir = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    Url::from_directory_path(&dir)
        .map_err(|_| Error::InvalidArgument(format!("{root}: not an absolute directory")))
}

/// A file's path as pqindex opens it: a local path, or the object's URL.
fn file_path(table: &Url, relative: &str, root: &str) -> Result<String> {
    let url = table
        .join(relative)
        .map_err(|e| table_error(root, format!("bad file path {relative:?} in the log: {e}")))?;
    if url.scheme() == "file" {
        let path = url
            .to_file_path()
            .map_err(|_| table_error(root, format!("bad file path {relative:?} in the log")))?;
        return Ok(path.to_string_lossy().into_owned());
    }
    Ok(url.to_string())
}

fn engine(url: &Url, options: &[(String, String)]) -> Result<impl Engine> {
    let store = crate::table::kernel_store::kernel_store(url, options)?;
    Ok(DefaultEngineBuilder::new(store).build())
}

/// The physical name of each logical field of `schema`, by logical path.
fn physical_names(schema: &StructType) -> HashMap<Vec<String>, String> {
    mapping_values(
        schema,
        |f| match f {
            MetadataValue::String(p) => Some(p.clone()),
            _ => None,
        },
        &ColumnMetadataKey::ColumnMappingPhysicalName,
    )
}

/// Each field's column mapping id (Parquet field id), by its logical path.
fn field_ids(schema: &StructType) -> HashMap<Vec<String>, String> {
    mapping_values(
        schema,
        |f| match f {
            MetadataValue::Number(n) => Some(n.to_string()),
            _ => None,
        },
        &ColumnMetadataKey::ColumnMappingId,
    )
}

/// One column mapping value (`key`) of every field, nested ones too, by logical path.
fn mapping_values(
    schema: &StructType,
    value: fn(&MetadataValue) -> Option<String>,
    key: &ColumnMetadataKey,
) -> HashMap<Vec<String>, String> {
    fn visit(
        fields: &StructType,
        prefix: &mut Vec<String>,
        out: &mut HashMap<Vec<String>, String>,
        value: fn(&MetadataValue) -> Option<String>,
        key: &ColumnMetadataKey,
    ) {
        for f in fields.fields() {
            prefix.push(f.name().clone());
            if let Some(v) = f.get_config_value(key).and_then(value) {
                out.insert(prefix.clone(), v);
            }
            if let delta_kernel::schema::DataType::Struct(s) = f.data_type() {
                visit(s, prefix, out, value, key);
            }
            prefix.pop();
        }
    }
    let mut out = HashMap::new();
    visit(schema, &mut Vec::new(), &mut out, value, key);
    out
}

/// Read the snapshot of the Delta table at `root` that `opts` names.
pub fn snapshot(root: &str, opts: &TableOptions) -> Result<TableSnapshot> {
    let url = table_url(root)?;
    let engine = engine(&url, &opts.storage_options)?;
    let err = |e: delta_kernel::KernelError| kernel_error(root, e);
    let latest = Snapshot::builder_for(url.as_str())
        .build(&engine)
        .map_err(err)?;
    let version = match (opts.version, opts.timestamp_ms) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidArgument(
                "give a table version or a timestamp, not both".into(),
            ))
        }
        (Some(v), None) => Some(
            u64::try_from(v)
                .map_err(|_| Error::InvalidArgument(format!("table version {v} is negative")))?,
        ),
        (None, Some(ts)) => Some(
            latest_version_as_of(&latest, &engine, ts, HistoryCommitType::Recreatable)
                .map_err(err)?
                .version,
        ),
        (None, None) => None,
    };
    let snapshot = match version {
        Some(v) if v != latest.version() => Snapshot::builder_for(url.as_str())
            .at_version(v)
            .build(&engine)
            .map_err(err)?,
        _ => latest,
    };
    // Local paths as the files' paths are (absolute), so indexes key files relative to it.
    let table_root = match url.to_file_path() {
        Ok(p) if url.scheme() == "file" => p.to_string_lossy().trim_end_matches('/').to_string(),
        _ => root.to_string(),
    };
    let committed_ms = snapshot.get_timestamp(&engine).map_err(err)?;
    let key = format!("delta:{url}:{}:{committed_ms}", snapshot.version());
    let planned = match snapshot_cache::get(&key) {
        Some(found) => found,
        None => {
            let planned = Arc::new(snapshot_files(&snapshot, &engine, root)?);
            snapshot_cache::put(key, planned.clone());
            planned
        }
    };
    Ok(TableSnapshot {
        format: TableFormat::Delta,
        index_files: delta_puffins(&table_root)?,
        root: table_root,
        version: snapshot.version() as i64,
        schema: planned.schema.clone(),
        partitions: planned.partitions.clone(),
        files: planned.files.clone(),
    })
}

/// The kernel snapshot's files, with their statistics, partition values and deletes, and
/// its columns under their logical names.
fn snapshot_files(
    snapshot: &Arc<Snapshot>,
    engine: &dyn Engine,
    root: &str,
) -> Result<SnapshotFiles> {
    let err = |e: delta_kernel::KernelError| kernel_error(root, e);
    let scan = snapshot
        .clone()
        .scan_builder()
        .with_stats(StatsOptions::all())
        .build()
        .map_err(err)?;
    let logical = scan.logical_schema().clone();
    let physical = scan.physical_schema().clone();
    let names = physical_names(&logical);
    let physical_name = |path: &[String]| -> String {
        names
            .get(path)
            .cloned()
            .unwrap_or_else(|| path.last().cloned().unwrap_or_default())
    };
    let arrow = Schema::try_from_kernel(logical.as_ref())
        .map_err(|e| table_error(root, format!("its schema has no Arrow form: {e}")))?;
    // Partition columns are in the logical schema, not in the files' physical one.
    let in_files = |f: &Field| {
        let p = physical_name(std::slice::from_ref(f.name()));
        physical.field(&p).is_some()
    };
    let fields: Vec<Field> = arrow.fields().iter().map(|f| f.as_ref().clone()).collect();
    let (data, partitions): (Vec<Field>, Vec<Field>) = fields.into_iter().partition(in_files);
    let data = with_physical_names(&data, &mut |path| names.get(path).cloned());
    let data: Vec<Field> = data.into_iter().map(drop_field_ids).collect();
    // Id mode resolves columns by Parquet field id; the other modes by physical name,
    // whatever ids a file's writer left in it.
    let by_id = snapshot.table_properties().column_mapping_mode
        == Some(delta_kernel::table_features::ColumnMappingMode::Id);
    let data = if by_id {
        let ids = field_ids(&logical);
        with_metadata_value(&data, FIELD_ID, &mut |path| ids.get(path).cloned())
    } else {
        data
    };
    let leaves = leaf_paths(&data);

    let vectors = VectorsEngine::over(engine);
    let mut files = Vec::new();
    for meta in scan.scan_metadata(engine).map_err(err)? {
        let meta = meta.map_err(err)?;
        let batch = meta
            .scan_files
            .data()
            .any_ref()
            .downcast_ref::<ArrowEngineData>()
            .map(|d| d.record_batch().clone())
            .ok_or_else(|| {
                table_error(
                    root,
                    "the kernel returned scan metadata pqindex cannot read",
                )
            })?;
        let selected: Vec<usize> = (0..batch.num_rows())
            .filter(|i| {
                meta.scan_files
                    .selection_vector()
                    .get(*i)
                    .copied()
                    .unwrap_or(true)
            })
            .collect();
        let mut visited: Vec<ScanFile> = Vec::new();
        visited = meta
            .visit_scan_files(visited, |v: &mut Vec<ScanFile>, f: ScanFile| v.push(f))
            .map_err(err)?;
        if visited.len() != selected.len() {
            return Err(table_error(root, "scan files and their rows disagree"));
        }
        let stats = batch
            .column_by_name("stats_parsed")
            .and_then(|c| c.as_struct_opt().cloned());
        for (f, row) in visited.into_iter().zip(selected) {
            let deleted = f
                .dv_info
                .get_row_indexes(&vectors, scan.table_root())
                .map_err(err)?
                .map(|mut rows| {
                    rows.sort_unstable();
                    rows.dedup();
                    Arc::new(rows)
                });
            let partition_values = partitions
                .iter()
                .map(|p| {
                    let key = physical_name(std::slice::from_ref(p.name()));
                    let text = f
                        .partition_values
                        .get(&key)
                        .or_else(|| f.partition_values.get(p.name()));
                    match text {
                        Some(t) => from_text(Some(t), p.data_type()).map(Some).ok_or_else(|| {
                            table_error(
                                root,
                                format!(
                                    "partition value {t:?} of {} is not a {}",
                                    p.name(),
                                    p.data_type()
                                ),
                            )
                        }),
                        None => Ok(None),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let size = u64::try_from(f.size)
                .map_err(|_| table_error(root, format!("{} has a negative size", f.path)))?;
            files.push(TableFile {
                identity_columns: Vec::new(),
                path: file_path(scan.table_root(), &f.path, root)?,
                size,
                modified_ms: f.modification_time,
                records: f.stats.as_ref().map(|s| s.num_records),
                partition_values,
                stats: stats
                    .as_ref()
                    .map(|s| file_stats(s, row, &leaves, &physical_name))
                    .unwrap_or_default(),
                deleted,
            });
        }
    }
    Ok(SnapshotFiles {
        schema: Arc::new(Schema::new(data)),
        partitions,
        files: Arc::new(files),
    })
}

/// The kernel's Arrow fields may carry Parquet field ids; outside id mode they must not
/// decide which file column holds a table column.
fn drop_field_ids(f: Field) -> Field {
    let mut metadata = f.metadata().clone();
    metadata.remove(FIELD_ID);
    let data_type = match f.data_type() {
        DataType::Struct(children) => DataType::Struct(
            children
                .iter()
                .map(|c| drop_field_ids(c.as_ref().clone()))
                .collect::<Vec<_>>()
                .into(),
        ),
        other => other.clone(),
    };
    f.with_metadata(metadata).with_data_type(data_type)
}

/// Every primitive leaf of `fields`: its logical path and type.
fn leaf_paths(fields: &[Field]) -> Vec<(Vec<String>, DataType)> {
    fn visit(f: &Field, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, DataType)>) {
        prefix.push(f.name().clone());
        match f.data_type() {
            DataType::Struct(children) => children.iter().for_each(|c| visit(c, prefix, out)),
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(..) => {}
            other => out.push((prefix.clone(), other.clone())),
        }
        prefix.pop();
    }
    let mut out = Vec::new();
    fields
        .iter()
        .for_each(|f| visit(f, &mut Vec::new(), &mut out));
    out
}

/// The child `path` (physical names) of a struct array, descending into structs.
fn child(s: &StructArray, path: &[String]) -> Option<ArrayRef> {
    let (first, rest) = path.split_first()?;
    let c = s.column_by_name(first)?.clone();
    if rest.is_empty() {
        return Some(c);
    }
    child(c.as_struct_opt()?, rest)
}

/// One file's parsed statistics (row `row` of `stats_parsed`) per leaf, in the leaves'
/// logical types, made safe where writers store them inexactly.
fn file_stats(
    stats: &StructArray,
    row: usize,
    leaves: &[(Vec<String>, DataType)],
    physical_name: &dyn Fn(&[String]) -> String,
) -> Vec<ColumnStats> {
    let part = |name: &str| {
        stats
            .column_by_name(name)
            .and_then(|c| c.as_struct_opt().cloned())
    };
    let (mins, maxs, nulls) = (part("minValues"), part("maxValues"), part("nullCount"));
    let mut out = Vec::new();
    for (path, data_type) in leaves {
        let physical: Vec<String> = (1..=path.len())
            .map(|n| physical_name(&path[..n]))
            .collect();
        let at = |s: &Option<StructArray>| {
            s.as_ref()
                .filter(|s| s.is_valid(row))
                .and_then(|s| child(s, &physical))
                .filter(|a| a.is_valid(row))
        };
        let min = at(&mins).and_then(|a| value_as(&a, row, data_type));
        let max = at(&maxs).and_then(|a| value_as(&a, row, data_type));
        let null_count = at(&nulls).and_then(|a| match value_as(&a, row, &DataType::Int64) {
            Some(Value::Int(n)) => u64::try_from(n).ok(),
            _ => None,
        });
        let (min, max) = safe_bounds(data_type, min, max);
        if min.is_some() || max.is_some() || null_count.is_some() {
            out.push(ColumnStats {
                path: path.clone(),
                min,
                max,
                null_count,
            });
        }
    }
    out
}

/// Bounds as writers store them, made bounds: timestamps are cut to milliseconds (a cut
/// maximum lies below the true one, so one millisecond is added), and long strings may be
/// cut (only a short maximum is kept).
fn safe_bounds(
    data_type: &DataType,
    min: Option<Value>,
    max: Option<Value>,
) -> (Option<Value>, Option<Value>) {
    match data_type {
        DataType::Timestamp(unit, _) => {
            let ms = match unit {
                TimeUnit::Second => 1,
                TimeUnit::Millisecond => 1,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1_000_000,
            };
            let max = match max {
                Some(Value::Int(v)) if *unit != TimeUnit::Second => {
                    v.checked_add(ms).map(Value::Int)
                }
                other => other,
            };
            (min, max)
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let max = max.filter(|v| match v {
                Value::Bytes(b) => String::from_utf8_lossy(b).chars().count() < STRING_BOUND_CHARS,
                _ => false,
            });
            (min, max)
        }
        _ => (min, max),
    }
}

/// The Puffin files in a Delta table's index directory, newest first.
pub fn delta_puffins(root: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = if crate::io::object::is_remote(root) {
        let dir = format!("{}/{DELTA_INDEX_DIR}", root.trim_end_matches('/'));
        crate::io::object::locate(&dir)?
            .list()?
            .into_iter()
            .filter(|(name, _)| !name.contains('/') && name.ends_with(".puffin"))
            .map(|(name, _)| format!("{dir}/{name}"))
            .collect()
    } else {
        let dir = std::path::Path::new(root).join(DELTA_INDEX_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "puffin"))
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    };
    // Newest first (names carry the time they were written): its entries win.
    out.sort_unstable_by(|a, b| b.cmp(a));
    Ok(out)
}
