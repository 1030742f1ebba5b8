//! A snapshot's file list as an Arrow table: how a table planned elsewhere (Iceberg's, from
//! its manifests with pyiceberg) reaches the core.
//!
//! Columns: `path` (utf8), `size` (int64), `records` (int64, nullable), `deleted`
//! (`list<int64>`: positions deleted from the file, nullable), `identity` (`list<utf8>`: the
//! table columns the file's partition holds by identity, nullable), and per leaf column of the
//! table `min:<dotted logical name>`, `max:<...>` (in the column's type) and `nulls:<...>`
//! (int64), each optional.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::error::{Error, Result};
use crate::predicate::Value;
use crate::table::snapshot_cache::{self, SnapshotFiles};
use crate::table::values::value_as;
use crate::table::{ColumnStats, TableFile, TableFormat, TableSnapshot};

fn bad(root: &str, why: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("table {root}: its file list {why}"))
}

/// Every primitive leaf of `fields`: dotted logical name, path and type.
fn leaves(fields: &[Arc<Field>]) -> Vec<(String, Vec<String>, DataType)> {
    fn visit(f: &Field, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>, DataType)>) {
        prefix.push(f.name().clone());
        match f.data_type() {
            DataType::Struct(children) => children.iter().for_each(|c| visit(c, prefix, out)),
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(..) => {}
            other => out.push((prefix.join("."), prefix.clone(), other.clone())),
        }
        prefix.pop();
    }
    let mut out = Vec::new();
    fields
        .iter()
        .for_each(|f| visit(f, &mut Vec::new(), &mut out));
    out
}

/// `snapshot_from_arrow`, converted once per process for the snapshot `key` names (see
/// `snapshot_cache`); `batches` are asked for only when it is not kept.
pub fn cached_snapshot_from_arrow(
    key: &str,
    format: TableFormat,
    root: &str,
    version: i64,
    schema: SchemaRef,
    batches: impl FnOnce() -> Result<Vec<RecordBatch>>,
) -> Result<TableSnapshot> {
    if let Some(kept) = snapshot_cache::get(key) {
        if kept.schema == schema {
            return Ok(TableSnapshot {
                format,
                root: root.to_string(),
                version,
                schema: kept.schema.clone(),
                partitions: kept.partitions.clone(),
                files: kept.files.clone(),
                index_files: Vec::new(),
            });
        }
    }
    let snapshot = snapshot_from_arrow(format, root, version, schema, &batches()?)?;
    snapshot_cache::put(
        key.to_string(),
        Arc::new(SnapshotFiles {
            schema: snapshot.schema.clone(),
            partitions: snapshot.partitions.clone(),
            files: snapshot.files.clone(),
        }),
    );
    Ok(snapshot)
}

/// The snapshot `batches` (rows as described above) describe, of a table with `schema`.
pub fn snapshot_from_arrow(
    format: TableFormat,
    root: &str,
    version: i64,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<TableSnapshot> {
    let leaves = leaves(schema.fields());
    let mut files = Vec::new();
    for b in batches {
        let column = |name: &str| b.column_by_name(name);
        let paths = column("path")
            .and_then(|c| c.as_string_opt::<i32>().cloned())
            .ok_or_else(|| bad(root, "has no utf8 column path"))?;
        let int64 = |name: &str| -> Result<Option<arrow_array::Int64Array>> {
            match column(name) {
                None => Ok(None),
                Some(c) => Ok(Some(
                    arrow_cast::cast(c, &DataType::Int64)?
                        .as_primitive::<Int64Type>()
                        .clone(),
                )),
            }
        };
        let sizes = int64("size")?.ok_or_else(|| bad(root, "has no column size"))?;
        let records = int64("records")?;
        let deleted = column("deleted").and_then(|c| c.as_list_opt::<i32>().cloned());
        let identity = column("identity").and_then(|c| c.as_list_opt::<i32>().cloned());
        for row in 0..b.num_rows() {
            if paths.is_null(row) || sizes.is_null(row) || sizes.value(row) < 0 {
                return Err(bad(root, format!("row {row} has no path or size")));
            }
            let deleted = match &deleted {
                Some(d) if d.is_valid(row) => {
                    let values = arrow_cast::cast(&d.value(row), &DataType::Int64)?;
                    let values = values.as_primitive::<Int64Type>();
                    let mut rows: Vec<u64> = values
                        .iter()
                        .map(|v| v.and_then(|v| u64::try_from(v).ok()))
                        .collect::<Option<_>>()
                        .ok_or_else(|| bad(root, format!("row {row} deletes a negative row")))?;
                    rows.sort_unstable();
                    rows.dedup();
                    Some(Arc::new(rows))
                }
                _ => None,
            };
            let identity_columns = match &identity {
                Some(l) if l.is_valid(row) => {
                    let names = l.value(row);
                    let names = names.as_string_opt::<i32>().ok_or_else(|| {
                        bad(root, "has an identity column that is not list<utf8>")
                    })?;
                    names.iter().flatten().map(str::to_string).collect()
                }
                _ => Vec::new(),
            };
            let mut stats = Vec::new();
            for (name, path, data_type) in &leaves {
                let at = |prefix: &str, target: &DataType| {
                    column(&format!("{prefix}:{name}")).and_then(|c| value_as(c, row, target))
                };
                let min = at("min", data_type);
                let max = at("max", data_type);
                let null_count = match at("nulls", &DataType::Int64) {
                    Some(Value::Int(n)) => u64::try_from(n).ok(),
                    _ => None,
                };
                if min.is_some() || max.is_some() || null_count.is_some() {
                    stats.push(ColumnStats {
                        path: path.clone(),
                        min,
                        max,
                        null_count,
                    });
                }
            }
            files.push(TableFile {
                path: paths.value(row).to_string(),
                size: sizes.value(row) as u64,
                modified_ms: 0,
                records: records
                    .as_ref()
                    .filter(|r| r.is_valid(row))
                    .and_then(|r| u64::try_from(r.value(row)).ok()),
                partition_values: Vec::new(),
                stats,
                deleted,
                identity_columns,
            });
        }
    }
    Ok(TableSnapshot {
        format,
        root: root.to_string(),
        version,
        schema,
        partitions: Vec::new(),
        files: Arc::new(files),
        index_files: Vec::new(),
    })
}
