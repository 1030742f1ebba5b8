//! `pqindex.aggregate` and the `Aggregation` it returns.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use pyo3_arrow::ffi::to_schema_pycapsule;

use pqindex_core::global_cache;
use pqindex_core::{
    aggregate as core_aggregate, aggregate_table as core_aggregate_table, AggregateOptions,
    Aggregation, TableOptions,
};
use pyo3_arrow::input::AnyRecordBatch;

use crate::arrow_stream::stream_capsule;
use crate::error::IntoPyResult;
use crate::report::{metrics_dict, warn_skipped_indexes};
use crate::runtime::run_blocking;
use crate::scan::table_snapshot;
use crate::source::{configure_storage, Source, StorageOptions};

/// The one-row answer of `aggregate`, with how it was obtained.
#[pyclass(frozen, name = "Aggregation", module = "pqindex")]
pub struct PyAggregation {
    inner: Arc<Aggregation>,
}

#[pymethods]
impl PyAggregation {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let batch: RecordBatch = self.inner.batch.clone();
        let schema = batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        stream_capsule(py, Box::new(reader), requested_schema)
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        Ok(to_schema_pycapsule(py, self.inner.batch.schema().as_ref())?)
    }

    /// The result as a one-row `pyarrow.Table`.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = self.inner.batch.clone();
        let schema = batch.schema();
        crate::pyarrow::table(py, vec![batch], schema)
    }

    /// Pruning and reading counters, plus what the aggregates indexes answered.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metrics_dict(py, &self.inner.metrics())
    }

    /// The scan's plan and, per column, the rows answered by its index and the rows read.
    fn explain(&self) -> String {
        self.inner.explain()
    }

    /// Indexes that could not be used, and why.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    fn __repr__(&self) -> String {
        let names: Vec<String> = self
            .inner
            .batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        format!("<pqindex.Aggregation: {}>", names.join(", "))
    }
}

/// Compute `select` (count, min, max, sum, avg) over the rows of `source` satisfying
/// `where`, from aggregates indexes where they can answer.
#[pyfunction]
#[pyo3(signature = (source, select, r#where=None, *, threads=None, storage_options=None, version=None, timestamp_ms=None))]
#[allow(clippy::too_many_arguments)]
pub fn aggregate(
    py: Python<'_>,
    source: Source,
    select: String,
    r#where: Option<crate::condition::Where>,
    threads: Option<usize>,
    storage_options: Option<StorageOptions>,
    version: Option<i64>,
    timestamp_ms: Option<i64>,
) -> PyResult<PyAggregation> {
    configure_storage(&source.0, storage_options.as_ref())?;
    let opts = AggregateOptions {
        select,
        predicate: crate::condition::condition(r#where),
        threads: threads.unwrap_or_else(pqindex_core::default_threads),
        now_ns: None,
        table: TableOptions {
            version,
            timestamp_ms,
            storage_options: storage_options.map(|o| o.0).unwrap_or_default(),
        },
    };
    let paths = source.0;
    let a = run_blocking(py, move |cancel| {
        core_aggregate(&paths, &opts, global_cache(), cancel)
    })?
    .py()?;
    warn_skipped_indexes(py, &a.warnings)?;
    Ok(PyAggregation { inner: Arc::new(a) })
}

/// [`aggregate`] over a table snapshot planned elsewhere (an Iceberg table's, from its
/// manifests): `files` and `schema` as `scan_table` takes them.
#[pyfunction]
#[pyo3(signature = (files, schema, select, r#where=None, *, root, version, index_files=Vec::new(), threads=None, storage_options=None, cache_key=None))]
#[allow(clippy::too_many_arguments)]
pub fn aggregate_table(
    py: Python<'_>,
    files: Option<AnyRecordBatch>,
    schema: pyo3_arrow::PySchema,
    select: String,
    r#where: Option<crate::condition::Where>,
    root: String,
    version: i64,
    index_files: Vec<String>,
    threads: Option<usize>,
    storage_options: Option<StorageOptions>,
    cache_key: Option<String>,
) -> PyResult<PyAggregation> {
    let snapshot = table_snapshot(
        files,
        schema,
        root,
        version,
        index_files,
        cache_key,
        storage_options.as_ref(),
    )?;
    let opts = AggregateOptions {
        select,
        predicate: crate::condition::condition(r#where),
        threads: threads.unwrap_or_else(pqindex_core::default_threads),
        now_ns: None,
        table: TableOptions::default(),
    };
    let a = run_blocking(py, move |cancel| {
        core_aggregate_table(Arc::new(snapshot), &opts, global_cache(), cancel)
    })?
    .py()?;
    warn_skipped_indexes(py, &a.warnings)?;
    Ok(PyAggregation { inner: Arc::new(a) })
}
