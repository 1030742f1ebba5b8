//! A table's columns in each of its data files.
//!
//! The scan binds its predicate against the table's logical columns. Each file may name
//! them differently (Delta column mapping, Iceberg field ids), lack the ones added after
//! it was written, or store one in a narrower type than the table now declares (type
//! widening). Per file, each leaf of the predicate is moved onto the file's own column:
//! its leaf index and path (so statistics, the page index, bloom filters and the reader
//! find it), keeping the table's type (so comparisons mean what the table says; values are
//! widened before they are compared). Statistics are used only where the file's stored
//! values lie in the table's domain (an integer widening, a decimal gaining precision);
//! otherwise the leaf cannot prune that file. A leaf on a missing column takes its value
//! on NULL.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::metadata::schema::{file_field, file_schemas};
use crate::plan::ColumnMap;
use crate::predicate::expr::ColumnRef;
use crate::predicate::value::{Domain, IntKind};
use crate::predicate::{Column, Predicate};
use crate::prune::planner::SchemaAdapter;

/// Adapts a table's predicate and columns to each of its files.
pub struct TableColumns {
    /// The table's root, for errors.
    pub root: String,
    /// The table's data columns (metadata names physical names and field ids).
    pub schema: SchemaRef,
    /// Per data file, the columns its partition holds by identity (`TableFile`), for the
    /// files that have any.
    pub identity: HashMap<String, Vec<String>>,
}

/// Where a leaf column of the table lives in one file.
struct FileLeaf {
    leaf: usize,
    path: Vec<String>,
    /// The file's type for the column as stored (without writer hints).
    native: DataType,
}

impl TableColumns {
    /// The file leaf holding the table leaf `path` (logical names), if the file has it.
    fn file_leaf(
        &self,
        path: &[String],
        file: &Schema,
        native: &Schema,
        md: &ParquetMetaData,
    ) -> Option<FileLeaf> {
        let mut logical_fields = self.schema.fields();
        let mut file_fields = file.fields();
        let mut native_fields = native.fields();
        let mut physical = Vec::with_capacity(path.len());
        let mut native_type = None;
        for (i, part) in path.iter().enumerate() {
            let logical = logical_fields.iter().find(|f| f.name() == part)?;
            let (idx, f) = file_field(logical, file_fields)?;
            let n = native_fields.get(idx)?;
            physical.push(f.name().clone());
            native_type = Some(n.data_type().clone());
            if i + 1 < path.len() {
                match (logical.data_type(), f.data_type(), n.data_type()) {
                    (DataType::Struct(l), DataType::Struct(fc), DataType::Struct(nc)) => {
                        logical_fields = l;
                        file_fields = fc;
                        native_fields = nc;
                    }
                    _ => return None,
                }
            }
        }
        let leaf = md
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().parts() == physical.as_slice())?;
        Some(FileLeaf {
            leaf,
            path: physical,
            native: native_type?,
        })
    }
}

/// Whether the file's stored values of a column (`stored`) are values of the table's
/// domain for it (`table`), so the file's statistics bound the table's values.
fn same_values(stored: &DataType, table: Domain) -> bool {
    let stored = match stored {
        DataType::Dictionary(_, v) => v.as_ref(),
        other => other,
    };
    let Some(stored) = Domain::of(stored) else {
        return false;
    };
    match (stored, table) {
        (a, b) if a == b => true,
        (
            Domain::Int {
                min: a_min,
                max: a_max,
                kind: IntKind::Integer,
            },
            Domain::Int {
                min,
                max,
                kind: IntKind::Integer,
            },
        ) => a_min >= min && a_max <= max,
        (
            Domain::Int {
                kind: IntKind::Decimal { scale: a },
                ..
            },
            Domain::Int {
                kind: IntKind::Decimal { scale: b },
                ..
            },
        ) => a == b,
        _ => false,
    }
}

/// Whether a file's column of type `file` reads as the table's `table` without losing or
/// inventing values: the same type up to names, the widenings Delta and Iceberg allow
/// (integers, floats, integers to double or a wide enough decimal, decimal precision, date
/// to timestamp), another encoding of the same values (string and binary layouts,
/// dictionaries, timestamp units), or NULLs. Anything else would be a cast that turns
/// values into NULLs.
pub fn reads_as(file: &DataType, table: &DataType) -> bool {
    use DataType::*;
    let int_bits = |t: &DataType| match t {
        Int8 => Some(8),
        Int16 => Some(16),
        Int32 => Some(32),
        Int64 => Some(64),
        _ => None,
    };
    let uint_bits = |t: &DataType| match t {
        UInt8 => Some(8),
        UInt16 => Some(16),
        UInt32 => Some(32),
        UInt64 => Some(64),
        _ => None,
    };
    let decimal = |t: &DataType| match t {
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            Some((i32::from(*p), i32::from(*s)))
        }
        _ => None,
    };
    let is_string = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let is_binary = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    if file == table {
        return true;
    }
    match (file, table) {
        (Null, _) => true,
        (Dictionary(_, v), t) => reads_as(v, t),
        (Struct(f), Struct(t)) => t.iter().all(|tf| match file_field(tf, f) {
            Some((_, ff)) => reads_as(ff.data_type(), tf.data_type()),
            None => true,
        }),
        (
            List(f) | LargeList(f) | ListView(f) | LargeListView(f),
            List(t) | LargeList(t) | ListView(t) | LargeListView(t),
        ) => reads_as(f.data_type(), t.data_type()),
        (Map(f, _), Map(t, _)) => reads_as(f.data_type(), t.data_type()),
        (Float16 | Float32, Float64) | (Float16, Float32) => true,
        (Date32, Timestamp(_, None)) => true,
        (Time32(_) | Time64(_), Time32(_) | Time64(_)) => true,
        (FixedSizeBinary(_), t) if is_binary(t) => true,
        (Timestamp(_, a), Timestamp(_, b)) => a.is_some() == b.is_some(),
        (a, b) if is_string(a) && is_string(b) => true,
        (a, b) if is_binary(a) && (is_binary(b) || is_string(b)) => true,
        (a, b) => {
            if let (Some(x), Some(y)) = (int_bits(a), int_bits(b)) {
                return x <= y;
            }
            if let (Some(x), Some(y)) = (uint_bits(a), int_bits(b)) {
                return x < y;
            }
            if let (Some(x), Some(y)) = (uint_bits(a), uint_bits(b)) {
                return x <= y;
            }
            if int_bits(a).is_some_and(|x| x <= 32) && matches!(b, Float64) {
                return true;
            }
            // Integer digits: 3, 5, 10 and 19 for 8 to 64 bits.
            let digits = |bits: u32| match bits {
                8 => 3,
                16 => 5,
                32 => 10,
                _ => 19,
            };
            match (int_bits(a), decimal(a), decimal(b)) {
                (Some(x), _, Some((p, s))) => p - s >= digits(x),
                (_, Some((p1, s1)), Some((p2, s2))) => s2 >= s1 && p2 - s2 >= p1 - s1,
                _ => false,
            }
        }
    }
}

impl SchemaAdapter for TableColumns {
    fn adapt(
        &self,
        path: &str,
        predicate: Option<&Predicate>,
        md: &ParquetMetaData,
    ) -> Result<(Option<Predicate>, Arc<ColumnMap>)> {
        let (file, native) = file_schemas(md, path)?;
        let mut roots = Vec::with_capacity(self.schema.fields().len());
        for f in self.schema.fields() {
            let found = file_field(f, file.fields());
            if let Some((_, ff)) = found {
                if !reads_as(ff.data_type(), f.data_type()) {
                    return Err(Error::Unsupported(format!(
                        "table {}: {path} stores column {} as {}, which does not read as the \
                         table's {}",
                        self.root,
                        f.name(),
                        ff.data_type(),
                        f.data_type()
                    )));
                }
            }
            if found.is_none()
                && self
                    .identity
                    .get(path)
                    .is_some_and(|names| names.iter().any(|n| n == f.name()))
            {
                return Err(Error::Unsupported(format!(
                    "table {}: {path} has no column {}, whose value for the file is its \
                     identity partition value in the table's metadata (a file migrated \
                     without its partition columns); such files are not supported",
                    self.root,
                    f.name()
                )));
            }
            roots.push(found.map(|(i, _)| i));
        }
        let map = Arc::new(ColumnMap {
            logical: self.schema.clone(),
            roots,
        });
        let moved = |col: &Column| -> Option<Column> {
            let found = self.file_leaf(&col.path, &file, &native, md)?;
            Some(Arc::new(ColumnRef {
                name: col.name.clone(),
                path: found.path,
                leaf: Some(found.leaf),
                partition: None,
                data_type: col.data_type.clone(),
                domain: col.domain,
                prunable: col.prunable && same_values(&found.native, col.domain),
            }))
        };
        let predicate = predicate.map(|p| {
            p.map_leaves(&mut |leaf| {
                if let Predicate::InKeys {
                    cols,
                    keys,
                    negated,
                } = leaf
                {
                    // A key column the file lacks is NULL there: no row's key matches.
                    return match cols.iter().map(&moved).collect::<Option<Vec<_>>>() {
                        Some(cols) => Predicate::InKeys {
                            cols,
                            keys: keys.clone(),
                            negated: *negated,
                        },
                        None => Predicate::Const(None),
                    };
                }
                let Some(col) = leaf.column() else {
                    return leaf.clone();
                };
                if col.partition.is_some() {
                    return leaf.clone();
                }
                match moved(col) {
                    Some(col) => leaf.with_column(col),
                    None => Predicate::Const(leaf.eval_constant(None)),
                }
            })
        });
        Ok((predicate, map))
    }
}

/// The table schema's fields with their physical names recorded, from `logical` fields
/// and a function giving each field's physical name (nested fields too).
pub fn with_physical_names(
    fields: &[Field],
    physical: &mut impl FnMut(&[String]) -> Option<String>,
) -> Vec<Field> {
    with_metadata_value(fields, crate::metadata::schema::PHYSICAL_NAME, physical)
}

/// `fields` with `key` set in the metadata of each field (nested ones too) for which
/// `value` gives one, by logical path.
pub fn with_metadata_value(
    fields: &[Field],
    key: &str,
    value: &mut impl FnMut(&[String]) -> Option<String>,
) -> Vec<Field> {
    fn visit(
        field: &Field,
        prefix: &mut Vec<String>,
        key: &str,
        value: &mut dyn FnMut(&[String]) -> Option<String>,
    ) -> Field {
        prefix.push(field.name().clone());
        let data_type = match field.data_type() {
            DataType::Struct(children) => DataType::Struct(
                children
                    .iter()
                    .map(|c| visit(c, prefix, key, value))
                    .collect::<Vec<_>>()
                    .into(),
            ),
            other => other.clone(),
        };
        let mut metadata = field.metadata().clone();
        if let Some(v) = value(prefix) {
            metadata.insert(key.to_string(), v);
        }
        prefix.pop();
        field
            .clone()
            .with_data_type(data_type)
            .with_metadata(metadata)
    }
    let mut prefix = Vec::new();
    fields
        .iter()
        .map(|f| visit(f, &mut prefix, key, value))
        .collect()
}

/// `Error::Source` naming the table.
pub fn table_error(root: &str, what: impl std::fmt::Display) -> Error {
    Error::Source(format!("table {root}: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::TimeUnit;

    #[test]
    fn only_value_preserving_types_read_as_the_tables() {
        use DataType::*;
        let ok = [
            (Int32, Int64),
            (Int8, Int16),
            (UInt16, Int32),
            (Float32, Float64),
            (Int32, Float64),
            (Int32, Decimal128(12, 2)),
            (Decimal128(10, 2), Decimal128(12, 2)),
            (Decimal128(10, 2), Decimal128(14, 4)),
            (Date32, Timestamp(TimeUnit::Microsecond, None)),
            (
                Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            ),
            (Utf8, LargeUtf8),
            (Binary, Utf8),
            (Dictionary(Box::new(Int32), Box::new(Utf8)), Utf8View),
            (Null, Int64),
        ];
        for (file, table) in ok {
            assert!(reads_as(&file, &table), "{file} as {table}");
        }
        let refused = [
            (Int64, Int32),
            (Utf8, Int64),
            (Int64, Utf8),
            (Float64, Float32),
            (Int64, Float64),
            (Int64, Decimal128(12, 2)),
            (Decimal128(12, 2), Decimal128(12, 3)),
            (Decimal128(12, 4), Decimal128(12, 2)),
            (UInt64, Int64),
            (Timestamp(TimeUnit::Microsecond, None), Date32),
            (
                Timestamp(TimeUnit::Microsecond, None),
                Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            ),
            (Boolean, Int32),
        ];
        for (file, table) in refused {
            assert!(!reads_as(&file, &table), "{file} as {table}");
        }
        let s = |t: DataType| Struct(vec![Field::new("a", t, true)].into());
        assert!(reads_as(&s(Int32), &s(Int64)));
        assert!(!reads_as(&s(Utf8), &s(Int64)));
    }
}
