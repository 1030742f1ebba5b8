//! What a scan's output looks like: its schema and where each column comes from.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// What the output looks like, shared by every unit of a scan.
#[derive(Debug, Clone)]
pub struct OutputShape {
    pub schema: SchemaRef,
    /// Per output column: a root column of the file, or a partition column.
    pub columns: Vec<OutputColumn>,
    pub batch_size: usize,
    /// Who decodes the pages.
    pub decoding: Decoding,
}

/// Who decodes a unit's pages: pqindex's own decoders where they are faster (the default),
/// or the parquet crate's stock reader alone, with its row selection and row filter: the
/// oracle a wrong row is bisected with ("ours or the crate's"), and what an upgrade of the
/// crate is checked against. `PQINDEX_DECODE=stock` in the environment picks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decoding {
    #[default]
    Pqindex,
    Stock,
}

impl Decoding {
    /// The mode `PQINDEX_DECODE` names (`stock` or `pqindex`); the default otherwise.
    pub fn from_env() -> Decoding {
        match std::env::var("PQINDEX_DECODE").as_deref() {
            Ok("stock") => Decoding::Stock,
            _ => Decoding::Pqindex,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputColumn {
    Root(usize),
    Partition(usize),
}

impl OutputShape {
    /// The file's root columns the output reads, sorted, each once.
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

    /// This output with its top-level string and binary columns as views.
    pub fn viewed(self) -> OutputShape {
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .map(|f| match view_of(f.data_type()) {
                Some(t) => f.as_ref().clone().with_data_type(t),
                None => f.as_ref().clone(),
            })
            .collect();
        OutputShape {
            schema: Arc::new(Schema::new_with_metadata(
                fields,
                self.schema.metadata().clone(),
            )),
            ..self
        }
    }
}

/// The view type a column of type `t` reads as, for strings and binaries.
pub fn view_of(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 => Some(DataType::Utf8View),
        DataType::Binary | DataType::LargeBinary => Some(DataType::BinaryView),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_strings_and_binaries_become_views() {
        let list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        let types = [
            DataType::Utf8,
            DataType::LargeUtf8,
            DataType::Binary,
            DataType::LargeBinary,
            DataType::Int64,
            DataType::FixedSizeBinary(4),
            list.clone(),
        ];
        let fields: Vec<Field> = (0..types.len())
            .map(|i| Field::new(format!("c{i}"), types[i].clone(), true))
            .collect();
        let shape = OutputShape {
            schema: Arc::new(Schema::new(fields)),
            columns: (0..types.len()).map(OutputColumn::Root).collect(),
            batch_size: 10,
            decoding: Decoding::Pqindex,
        };
        let viewed = shape.viewed();
        let got: Vec<DataType> = viewed
            .schema
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(
            got,
            [
                DataType::Utf8View,
                DataType::Utf8View,
                DataType::BinaryView,
                DataType::BinaryView,
                DataType::Int64,
                DataType::FixedSizeBinary(4),
                list,
            ]
        );
        assert_eq!(viewed.columns.len(), types.len());
    }
}
