//! What a file's schema says, in the forms the layers above need: the Arrow schemas its
//! reader produces, its leaf columns under chosen roots or by dotted name, and whether a
//! dataset's files agree.

use std::panic::{catch_unwind, AssertUnwindSafe};

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::{SchemaDescriptor, Type as ParquetType};

use crate::error::{panic_message, Error, Result};

/// Footer key/value entries that describe one file's bytes (index locators): carried into
/// results, a table written elsewhere would point at blocks it does not have.
pub const FILE_LOCAL_KEY_PREFIX: &str = "pqindex.index.";

/// The Arrow schema of a file with its writer's `ARROW:schema` hint applied. The hint is an
/// Arrow IPC message from the file: arrow-ipc panics on some damaged ones (and on types it
/// does not know, such as polars' Int128), so a hint that cannot be read is left aside and
/// the Parquet schema alone gives the types, as pyarrow and DuckDB read such files.
pub fn hinted_schema(md: &ParquetMetaData, path: &str) -> Result<Schema> {
    let descr = md.file_metadata().schema_descr();
    let convert =
        || parquet::arrow::parquet_to_arrow_schema(descr, md.file_metadata().key_value_metadata());
    let hinted = match catch_unwind(AssertUnwindSafe(convert)) {
        Ok(Ok(schema)) => Ok(schema),
        Ok(Err(e)) => Err(Error::from(e).in_file(path)),
        Err(panic) => Err(Error::invalid_file(
            path,
            format!("corrupt Arrow schema hint: {}", panic_message(&*panic)),
        )),
    };
    let schema = match hinted {
        Ok(schema) if arrow_hint(md).is_some() => return Ok(schema),
        Ok(schema) => schema,
        Err(e) if arrow_hint(md).is_some() => {
            let plain = || parquet::arrow::parquet_to_arrow_schema(descr, None);
            match catch_unwind(AssertUnwindSafe(plain)) {
                Ok(Ok(schema)) => {
                    let mut metadata = schema.metadata().clone();
                    metadata.extend(
                        md.file_metadata()
                            .key_value_metadata()
                            .into_iter()
                            .flatten()
                            .filter(|kv| kv.key != parquet::arrow::ARROW_SCHEMA_META_KEY)
                            .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?))),
                    );
                    schema.with_metadata(metadata)
                }
                _ => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    Ok(int96_in_micros(schema, descr))
}

/// Whether any leaf of the file is an INT96 (a legacy timestamp).
pub fn has_int96(descr: &SchemaDescriptor) -> bool {
    descr
        .columns()
        .iter()
        .any(|c| c.physical_type() == parquet::basic::Type::INT96)
}

/// `schema` with its INT96 timestamps read in microseconds, as Spark and DuckDB read them.
/// An INT96 holds a Julian day and the nanoseconds within it: years outside 1677-2262 do
/// not fit 64-bit nanoseconds, which the reader would wrap into other instants (Spark
/// writes 9999-12-31 and later), while microseconds hold 290,000 years either side. Used
/// for files without an Arrow schema hint: a hint's unit is the one the writer's values
/// were in, so they fit it (pyarrow writes nanoseconds).
pub fn int96_in_micros(schema: Schema, descr: &SchemaDescriptor) -> Schema {
    if !has_int96(descr) {
        return schema;
    }
    let roots = descr.root_schema().get_fields();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match roots.iter().find(|t| t.name() == f.name()) {
            Some(t) => f
                .as_ref()
                .clone()
                .with_data_type(int96_type(t, f.data_type())),
            None => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// `data_type` (the Arrow type read for Parquet type `t`) with INT96 leaves in microseconds.
fn int96_type(t: &ParquetType, data_type: &DataType) -> DataType {
    use parquet::basic::Type as Physical;
    match (t, data_type) {
        (ParquetType::PrimitiveType { physical_type, .. }, DataType::Timestamp(_, tz))
            if *physical_type == Physical::INT96 =>
        {
            DataType::Timestamp(TimeUnit::Microsecond, tz.clone())
        }
        (ParquetType::PrimitiveType { .. }, _) => data_type.clone(),
        (ParquetType::GroupType { fields, .. }, DataType::Struct(children)) => DataType::Struct(
            children
                .iter()
                .map(|c| {
                    let field = c.as_ref().clone();
                    match fields.iter().find(|t| t.name() == c.name()) {
                        Some(t) => {
                            let read = int96_type(t, c.data_type());
                            Arc::new(field.with_data_type(read))
                        }
                        None => Arc::new(field),
                    }
                })
                .collect(),
        ),
        (ParquetType::GroupType { .. }, DataType::List(item)) => {
            let read = int96_type(list_element(t), item.data_type());
            DataType::List(Arc::new(item.as_ref().clone().with_data_type(read)))
        }
        (ParquetType::GroupType { .. }, DataType::LargeList(item)) => {
            let read = int96_type(list_element(t), item.data_type());
            DataType::LargeList(Arc::new(item.as_ref().clone().with_data_type(read)))
        }
        (ParquetType::GroupType { fields, .. }, DataType::Map(entries, sorted)) => {
            match fields.first() {
                Some(key_value) => {
                    let read = int96_type(key_value, entries.data_type());
                    DataType::Map(
                        Arc::new(entries.as_ref().clone().with_data_type(read)),
                        *sorted,
                    )
                }
                None => data_type.clone(),
            }
        }
        _ => data_type.clone(),
    }
}

/// The element of a list group (`t`): its repeated child, or that child's one field in
/// the three-level form.
fn list_element(t: &ParquetType) -> &ParquetType {
    let Some(repeated) = t.get_fields().first() else {
        return t;
    };
    match repeated.get_fields() {
        [element] if repeated.is_group() => element,
        _ => repeated,
    }
}

/// The schema a file's reader produces (with the writer's Arrow type hints applied) and the
/// one its statistics are written in (without them).
pub fn file_schemas(md: &ParquetMetaData, path: &str) -> Result<(Schema, Schema)> {
    let descr = md.file_metadata().schema_descr();
    let hinted = hinted_schema(md, path)?;
    let mut metadata = hinted.metadata().clone();
    metadata.retain(|k, _| !k.starts_with(FILE_LOCAL_KEY_PREFIX));
    let hinted = hinted.with_metadata(metadata);
    let native = parquet::arrow::parquet_to_arrow_schema(descr, None)
        .map_err(|e| Error::from(e).in_file(path))?;
    let native = match arrow_hint(md) {
        Some(_) => native,
        None => int96_in_micros(native, descr),
    };
    Ok((hinted, native))
}

/// The writer's Arrow type hint (`ARROW:schema`) in a footer, if any.
pub fn arrow_hint(md: &ParquetMetaData) -> Option<&str> {
    md.file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == parquet::arrow::ARROW_SCHEMA_META_KEY)?
        .value
        .as_deref()
}

/// The schema every file of a dataset must produce, and the Parquet schema and Arrow type
/// hint of the file it was converted from.
pub struct DatasetSchema<'a> {
    pub arrow: &'a Schema,
    pub descr: &'a SchemaDescriptor,
    pub hint: Option<&'a str>,
}

/// Every file of a dataset must produce the dataset's schema: bound predicates refer to
/// leaf columns by position. A file with the Parquet schema and Arrow type hint it was
/// converted from has it, with no conversion (which costs more than the rest of planning
/// a file a lookup rules out).
pub fn check_schema(path: &str, md: &ParquetMetaData, dataset: &DatasetSchema) -> Result<()> {
    if md.file_metadata().schema_descr().root_schema() == dataset.descr.root_schema()
        && arrow_hint(md) == dataset.hint
    {
        return Ok(());
    }
    let expected = dataset.arrow;
    let got = hinted_schema(md, path)?;
    let same = got.fields().len() == expected.fields().len()
        && got
            .fields()
            .iter()
            .zip(expected.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if !same {
        let describe = |s: &Schema| -> Vec<String> {
            s.fields()
                .iter()
                .map(|f| format!("{}: {}", f.name(), f.data_type()))
                .collect()
        };
        return Err(Error::Source(format!(
            "{path}: its schema differs from the first file's; every file of a source must have the same columns and types (got {:?}, expected {:?})",
            describe(&got),
            describe(expected),
        )));
    }
    Ok(())
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

/// The leaf of root column `root` when that root is itself a leaf (no group, no
/// repetition of a group): the columns whose pages are read without assembling nests.
pub fn primitive_leaf(descr: &SchemaDescriptor, root: usize) -> Option<usize> {
    let field = descr.root_schema().get_fields().get(root)?;
    if !field.is_primitive() {
        return None;
    }
    (0..descr.num_columns()).find(|&l| descr.get_column_root_idx(l) == root)
}

/// The leaf columns whose dotted path is `name`: index locators name columns that way, so
/// an index is only built or used when exactly one leaf answers to its name.
pub fn leaves_named(descr: &SchemaDescriptor, name: &str) -> Vec<usize> {
    (0..descr.num_columns())
        .filter(|&i| descr.column(i).path().string() == name)
        .collect()
}

/// Arrow field metadata naming a table column's physical name in data files (Delta column
/// mapping); without it the field's own name is its physical name.
pub const PHYSICAL_NAME: &str = "pqindex.physical_name";
/// Arrow field metadata holding a column's Parquet field id (Iceberg; Delta's id mode).
/// The parquet crate reads a file's field ids into the same key.
pub const FIELD_ID: &str = "PARQUET:field_id";

/// The field among `file` (a data file's fields) that holds the table column `logical`:
/// the one with its field id when both sides have ids, else the one named as its
/// physical name.
pub fn file_field<'a>(
    logical: &arrow_schema::Field,
    file: &'a arrow_schema::Fields,
) -> Option<(usize, &'a arrow_schema::FieldRef)> {
    if let Some(id) = logical.metadata().get(FIELD_ID) {
        let by_id = file
            .iter()
            .enumerate()
            .find(|(_, f)| f.metadata().get(FIELD_ID) == Some(id));
        if by_id.is_some() || file.iter().any(|f| f.metadata().contains_key(FIELD_ID)) {
            return by_id;
        }
    }
    let name = logical
        .metadata()
        .get(PHYSICAL_NAME)
        .map_or(logical.name().as_str(), String::as_str);
    file.iter().enumerate().find(|(_, f)| f.name() == name)
}
