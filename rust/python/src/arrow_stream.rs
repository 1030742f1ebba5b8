//! Arrow crossing into Python: a record batch reader exported as an Arrow C stream that
//! honours the consumer's `requested_schema`, and the errors that come back through it.
//!
//! pyo3-arrow's own export casts a requested schema with arrow's default (safe) cast, which
//! turns values that do not fit into NULLs, and matches columns by position. Here the
//! request is matched by name when it names the same columns, and a value that does not fit
//! fails the stream instead of silently becoming NULL.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader, StructArray};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{Field, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::ffi::{to_stream_pycapsule, ArrayIterator};
use pyo3_arrow::PySchema;

use pqindex_core::Error;

/// Export a record batch reader as an Arrow C stream capsule.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: Box<dyn RecordBatchReader + Send>,
    requested_schema: Option<Bound<'py, PyCapsule>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let mut schema = reader.schema();
    let mut target: Option<(SchemaRef, Vec<usize>)> = None;
    if let Some(capsule) = &requested_schema {
        let requested = PySchema::from_arrow_pycapsule(capsule)?.into_inner();
        // Honour the request only where every column can be cast; a cast that would lose
        // values fails the stream rather than turning them into NULLs.
        if let Some(order) = column_order(&requested, &schema) {
            let fields: Vec<Field> = requested
                .fields()
                .iter()
                .zip(&order)
                .map(|(r, &i)| {
                    schema
                        .field(i)
                        .clone()
                        .with_data_type(r.data_type().clone())
                })
                .collect();
            let castable = fields.iter().zip(&order).all(|(r, &i)| {
                let s = schema.field(i).data_type();
                r.data_type() == s || can_cast_types(s, r.data_type())
            });
            if castable {
                schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
                target = Some((schema.clone(), order));
            }
        }
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let arrays = reader.map(move |b| {
        let b = b?;
        let b = match &target {
            Some((t, order)) => {
                let columns = order
                    .iter()
                    .zip(t.fields())
                    .map(|(&i, f)| cast_with_options(b.column(i), f.data_type(), &options))
                    .collect::<Result<Vec<_>, _>>()?;
                RecordBatch::try_new(t.clone(), columns)?
            }
            None => b,
        };
        Ok(Arc::new(StructArray::from(b)) as ArrayRef)
    });
    let field = Field::new_struct("", schema.fields().clone(), false)
        .with_metadata(schema.metadata().clone());
    let iter = ArrayIterator::new(arrays, Arc::new(field));
    Ok(to_stream_pycapsule(py, Box::new(iter), None)?)
}

/// Which produced column feeds each requested one: by name when the request names the
/// same columns (in any order), else by position when it has as many.
fn column_order(requested: &Schema, produced: &Schema) -> Option<Vec<usize>> {
    if requested.fields().len() != produced.fields().len() {
        return None;
    }
    let by_name: Option<Vec<usize>> = requested
        .fields()
        .iter()
        .map(|r| produced.index_of(r.name()).ok())
        .collect();
    match by_name {
        Some(order)
            if {
                let mut seen = order.clone();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == order.len()
            } =>
        {
            Some(order)
        }
        _ => Some((0..produced.fields().len()).collect()),
    }
}

/// Errors that crossed the Arrow reader come back as ArrowError; recover ours.
pub fn arrow_to_core(e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(err) => *err,
            Err(other) => Error::Arrow(arrow_schema::ArrowError::ExternalError(other)),
        },
        other => Error::Arrow(other),
    }
}
