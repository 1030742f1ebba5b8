//! What a file's schema says, in the forms the layers above need: the Arrow schemas its
//! reader produces, its leaf columns under chosen roots or by dotted name, and whether a
//! dataset's files agree.

use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow_schema::Schema;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;

use crate::error::{panic_message, Error, Result};

/// Footer key/value entries that describe one file's bytes (index locators): carried into
/// results, a table written elsewhere would point at blocks it does not have.
pub const FILE_LOCAL_KEY_PREFIX: &str = "pqindex.index.";

/// The Arrow schema of a file with its writer's `ARROW:schema` hint applied. The hint is an
/// Arrow IPC message from the file: arrow-ipc panics on some damaged ones instead of
/// failing, so a panic here is a damaged file too.
pub fn hinted_schema(md: &ParquetMetaData, path: &str) -> Result<Schema> {
    let convert = || {
        parquet::arrow::parquet_to_arrow_schema(
            md.file_metadata().schema_descr(),
            md.file_metadata().key_value_metadata(),
        )
    };
    match catch_unwind(AssertUnwindSafe(convert)) {
        Ok(schema) => schema.map_err(|e| Error::from(e).in_file(path)),
        Err(panic) => Err(Error::invalid_file(
            path,
            format!("corrupt Arrow schema hint: {}", panic_message(&*panic)),
        )),
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
