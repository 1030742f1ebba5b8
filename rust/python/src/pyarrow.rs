//! Handing Arrow data to pyarrow.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3_arrow::PyTable;

/// A `pyarrow.Table` of `batches`, moved through the C stream interface without copies.
/// (`pyarrow.table()` would work too, but it imports pandas first, a quarter of a second.)
pub fn table<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyResult<Bound<'py, PyAny>> {
    let table = PyTable::try_new(batches, schema)?.into_pyobject(py)?;
    py.import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (table,))?
        .call_method0("read_all")
}
