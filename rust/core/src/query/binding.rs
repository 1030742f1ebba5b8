//! What a scan binds against, taken from its first file's footer: the Arrow schema its
//! reader produces, the one its statistics are written in, its Parquet schema and the
//! source's partition columns. Planning, the units read elsewhere and aggregates all bind
//! `WHERE` text and `columns` through this one place.

use std::sync::Arc;

use arrow_schema::{Field, Schema};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescPtr;

use crate::error::{Error, Result};
use crate::metadata::schema::{arrow_hint, file_schemas, DatasetSchema};
use crate::plan::{OutputColumn, OutputShape};
use crate::predicate::keys::{bind_keys, KeySpec};
use crate::predicate::{self, BindSchema, Condition, Predicate};

/// The schemas names and literals bind against.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The schema the files' readers produce (the writer's Arrow type hints applied).
    pub schema: Schema,
    /// The schema their statistics are written in (without the hints).
    pub native: Schema,
    pub descr: SchemaDescPtr,
    /// The first file's Arrow type hint: a file with its Parquet schema and this hint has
    /// its Arrow schema (`metadata::schema::check_schema`).
    pub hint: Option<String>,
    /// Hive partition columns of the source, in output order.
    pub partitions: Vec<Field>,
}

impl Binding {
    /// The binding of a source whose first file (at `path`) has footer `md`.
    pub fn of(md: &ParquetMetaData, path: &str, partitions: Vec<Field>) -> Result<Binding> {
        let (schema, native) = file_schemas(md, path)?;
        for f in &partitions {
            if schema
                .fields()
                .iter()
                .any(|d| d.name().eq_ignore_ascii_case(f.name()))
            {
                return Err(Error::Source(format!(
                    "partition directory key {} is also a column of the files",
                    f.name()
                )));
            }
        }
        Ok(Binding {
            schema,
            native,
            descr: md.file_metadata().schema_descr_ptr(),
            hint: arrow_hint(md).map(str::to_string),
            partitions,
        })
    }

    /// What every file of the source must have (`metadata::schema::check_schema`).
    pub fn dataset_schema(&self) -> DatasetSchema<'_> {
        DatasetSchema {
            arrow: &self.schema,
            descr: &self.descr,
            hint: self.hint.as_deref(),
        }
    }

    /// The binding of a table: its logical data columns and partition columns. Leaves
    /// are numbered as in a Parquet file of the table's schema; planning moves them onto
    /// each file's own columns (`table::columns`).
    pub fn of_table(schema: &Schema, partitions: Vec<Field>) -> Result<Binding> {
        let descr = parquet::arrow::ArrowSchemaConverter::new()
            .convert(schema)
            .map_err(|e| {
                Error::Unsupported(format!("the table's schema has no Parquet form: {e}"))
            })?;
        Ok(Binding {
            schema: schema.clone(),
            native: schema.clone(),
            descr: Arc::new(descr),
            hint: None,
            partitions,
        })
    }

    pub fn bind_schema(&self) -> BindSchema<'_> {
        BindSchema {
            arrow: &self.schema,
            native: &self.native,
            parquet: &self.descr,
            partitions: &self.partitions,
        }
    }

    /// Parse and bind a `WHERE` text; `now_ns` is what `now()` folds to.
    #[cfg(test)]
    pub fn bind_where(&self, text: Option<&str>, now_ns: i128) -> Result<Option<Predicate>> {
        self.bind_condition(text.map(Condition::from).as_ref(), now_ns)
    }

    /// Bind a condition (SQL text or the structured form).
    pub fn bind_condition(
        &self,
        condition: Option<&Condition>,
        now_ns: i128,
    ) -> Result<Option<Predicate>> {
        let Some(condition) = condition else {
            return Ok(None);
        };
        let ast = condition.parse(now_ns)?;
        Ok(Some(predicate::bind(&ast, &self.bind_schema())?))
    }

    /// The predicate of a read: `condition` bound, ANDed with a keyed read's keys (a semi
    /// join: only rows whose key is among them).
    pub fn bind_read(
        &self,
        condition: Option<&Condition>,
        keys: Option<&KeySpec>,
        now_ns: i128,
    ) -> Result<Option<Predicate>> {
        let predicate = self.bind_condition(condition, now_ns)?;
        let Some(keys) = keys else {
            return Ok(predicate);
        };
        let keyed = bind_keys(keys, &self.bind_schema())?;
        Ok(Some(match predicate {
            Some(p) => Predicate::and(vec![p, keyed]),
            None => keyed,
        }))
    }

    /// The output of `columns` (every column, partitions last, when `None`). Names match
    /// exactly first, then ignoring case.
    pub fn output_shape(
        &self,
        columns: Option<&[String]>,
        batch_size: usize,
    ) -> Result<OutputShape> {
        let schema = &self.schema;
        let partitions = &self.partitions;
        let columns: Vec<OutputColumn> = match columns {
            None => (0..schema.fields().len())
                .map(OutputColumn::Root)
                .chain((0..partitions.len()).map(OutputColumn::Partition))
                .collect(),
            Some(names) => names
                .iter()
                .map(|n| self.output_column(n))
                .collect::<Result<_>>()?,
        };
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| match c {
                OutputColumn::Root(i) => schema.field(*i).clone(),
                OutputColumn::Partition(p) => partitions[*p].clone(),
            })
            .collect();
        if let Some(f) = fields.iter().find(|f| holds_interval(f.data_type())) {
            return Err(Error::Unsupported(format!(
                "column {} holds Parquet INTERVAL values (months, days, milliseconds), which the parquet crate reads without their months; leave it out of columns= rather than read wrong values",
                f.name()
            )));
        }
        Ok(OutputShape {
            schema: Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
            columns,
            batch_size,
            decoding: crate::plan::Decoding::default(),
        })
    }

    fn output_column(&self, name: &str) -> Result<OutputColumn> {
        let find = |exact: bool| {
            let eq = |a: &str| {
                if exact {
                    a == name
                } else {
                    a.eq_ignore_ascii_case(name)
                }
            };
            self.schema
                .fields()
                .iter()
                .position(|f| eq(f.name()))
                .map(OutputColumn::Root)
                .or_else(|| {
                    self.partitions
                        .iter()
                        .position(|f| eq(f.name()))
                        .map(OutputColumn::Partition)
                })
        };
        find(true).or_else(|| find(false)).ok_or_else(|| {
            let known: Vec<&str> = self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .chain(self.partitions.iter().map(|f| f.name().as_str()))
                .collect();
            Error::InvalidArgument(format!(
                "unknown column {name:?} in columns (columns: {})",
                known.join(", ")
            ))
        })
    }
}

/// Whether a type holds an Arrow interval anywhere in it.
fn holds_interval(t: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType::*;
    match t {
        Interval(_) => true,
        List(f)
        | LargeList(f)
        | FixedSizeList(f, _)
        | Map(f, _)
        | ListView(f)
        | LargeListView(f) => holds_interval(f.data_type()),
        Struct(fields) => fields.iter().any(|f| holds_interval(f.data_type())),
        Dictionary(_, v) => holds_interval(v),
        _ => false,
    }
}
