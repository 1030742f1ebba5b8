//! `pqindex.scan` and the `Scan` it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader, StructArray};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{Field, Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use pyo3_arrow::ffi::{to_schema_pycapsule, to_stream_pycapsule, ArrayIterator};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PySchema;

use pqindex_core::metadata::global_cache;
use pqindex_core::{Error, Scan, ScanOptions};

use crate::error::IntoPyResult;
use crate::runtime::run_blocking;
use crate::source::{configure_storage, Source, StorageOptions};

/// A planned scan: pruned down to the pages that can match, read on demand.
#[pyclass(frozen, name = "Scan", module = "pqindex")]
pub struct PyScan {
    scan: Arc<Scan>,
    consumed: AtomicBool,
}

impl PyScan {
    fn new(scan: Scan) -> Self {
        PyScan {
            scan: Arc::new(scan),
            consumed: AtomicBool::new(false),
        }
    }

    fn take_stream(&self) -> PyResult<pqindex_core::ScanStream> {
        if self.consumed.swap(true, Ordering::SeqCst) {
            return Err(consumed_error());
        }
        Ok(self.scan.stream())
    }
}

fn consumed_error() -> PyErr {
    Python::attach(|py| {
        match PyModule::import(py, "pqindex._errors")
            .and_then(|m| m.getattr("ScanConsumedError"))
            .and_then(|c| {
                c.call1(("the rows of this scan were already consumed; call pqindex.scan again",))
            }) {
            Ok(v) => PyErr::from_value(v),
            Err(e) => e,
        }
    })
}

/// Counters as a Python dict, in their order.
pub fn metrics_dict<'py>(py: Python<'py>, metrics: &[(&str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in metrics {
        d.set_item(k, v)?;
    }
    Ok(d)
}

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

#[pymethods]
impl PyScan {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let stream = self.take_stream()?;
        stream_capsule(py, Box::new(stream), requested_schema)
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        Ok(to_schema_pycapsule(py, self.scan.schema().as_ref())?)
    }

    /// Read every selected row into a `pyarrow.Table`.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.take_stream()?;
        let schema = self.scan.schema();
        let batches = run_blocking(py, move |cancel| -> Result<Vec<RecordBatch>, Error> {
            let mut out = Vec::new();
            for b in stream {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                out.push(b.map_err(arrow_to_core)?);
            }
            Ok(out)
        })?
        .py()?;
        crate::pyarrow::table(py, batches, schema)
    }

    /// The plan's units (file identity, row group, row ranges, estimated bytes), one row
    /// each, for `read_units` in another process.
    fn units<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = pqindex_core::units::units_table(&self.scan).py()?;
        let schema = batch.schema();
        crate::pyarrow::table(py, vec![batch], schema)
    }

    /// The dataset root whose catalog planning used, if any.
    #[getter]
    fn catalog_root(&self) -> Option<String> {
        self.scan.catalog.as_ref().map(|(root, _)| root.clone())
    }

    /// What `now()` and `current_date` folded to, in ns since the epoch.
    #[getter]
    fn now_ns(&self) -> i128 {
        self.scan.now_ns
    }

    /// Embedded indexes planning skipped (damaged, unknown version, not this file's).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.scan.warnings.clone()
    }

    /// What each pruning level ruled out, and what reading has fetched so far.
    fn explain(&self) -> String {
        self.scan.explain()
    }

    /// Pruning and reading counters.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        metrics_dict(py, &self.scan.metrics())
    }

    fn __repr__(&self) -> String {
        let m = &self.scan.plan_metrics;
        format!(
            "<pqindex.Scan: {} files ({} pruned), {} row groups to read, {} rows selected>",
            m.files,
            m.files_pruned,
            self.scan.units.len(),
            m.rows_selected
        )
    }
}

/// Read `units` (rows of `Scan.units()`, from a plan made elsewhere) with the planning
/// scan's `where`, `columns` and `now_ns`.
#[pyfunction]
#[pyo3(signature = (units, *, now_ns, r#where=None, columns=None, batch_size=65536, threads=None, catalog=None, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_units(
    py: Python<'_>,
    units: AnyRecordBatch,
    now_ns: i128,
    r#where: Option<String>,
    columns: Option<Vec<String>>,
    batch_size: usize,
    threads: Option<usize>,
    catalog: Option<String>,
    storage_options: Option<StorageOptions>,
) -> PyResult<PyScan> {
    let opts = ScanOptions {
        predicate: r#where,
        columns,
        batch_size,
        threads: threads.unwrap_or_else(pqindex_core::scan::default_threads),
        now_ns: Some(now_ns),
        ignore_catalog: true,
    };
    let batches = units
        .into_reader()?
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow_to_core)
        .py()?;
    let mut urls: Vec<String> = Vec::new();
    for b in &batches {
        if let Some(paths) = b
            .column_by_name("path")
            .and_then(|a| a.as_string_opt::<i32>())
        {
            urls.extend(paths.iter().flatten().map(str::to_string));
        }
    }
    urls.sort_unstable();
    urls.dedup();
    configure_storage(&urls, storage_options.as_ref())?;
    let planned = run_blocking(py, move |cancel| {
        // Footers of files the catalog describes come from it, not from the files.
        if let Some(root) = &catalog {
            if let Some(c) = pqindex_core::catalog::Catalog::open_cached(
                root,
                &pqindex_core::io::IoStats::default(),
            )? {
                for b in &batches {
                    if let Some(paths) = b
                        .column_by_name("path")
                        .and_then(|a| a.as_string_opt::<i32>())
                    {
                        for p in paths.iter().flatten() {
                            c.seed_one(p, global_cache())?;
                        }
                    }
                }
            }
        }
        Scan::from_units(&batches, &opts, global_cache(), cancel)
    })?
    .py()?;
    Ok(PyScan::new(planned))
}

/// Errors that crossed the Arrow reader come back as ArrowError; recover ours.
fn arrow_to_core(e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(err) => *err,
            Err(other) => Error::Arrow(arrow_schema::ArrowError::ExternalError(other)),
        },
        other => Error::Arrow(other),
    }
}

/// Report each embedded index the plan could not use as a `pqindex.IndexWarning`.
pub fn warn_skipped_indexes(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    if warnings.is_empty() {
        return Ok(());
    }
    let category = py.import("pqindex._errors")?.getattr("IndexWarning")?;
    for w in warnings {
        let msg = std::ffi::CString::new(w.replace('\0', " "))?;
        PyErr::warn(py, &category, &msg, 1)?;
    }
    Ok(())
}

/// Plan a scan of `source`, pruning with `where`.
#[pyfunction]
#[pyo3(signature = (source, r#where=None, columns=None, batch_size=65536, threads=None, *, catalog=true, storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn scan(
    py: Python<'_>,
    source: Source,
    r#where: Option<String>,
    columns: Option<Vec<String>>,
    batch_size: usize,
    threads: Option<usize>,
    catalog: bool,
    storage_options: Option<StorageOptions>,
) -> PyResult<PyScan> {
    configure_storage(&source.0, storage_options.as_ref())?;
    let opts = ScanOptions {
        predicate: r#where,
        columns,
        batch_size,
        threads: threads.unwrap_or_else(pqindex_core::scan::default_threads),
        now_ns: None,
        ignore_catalog: !catalog,
    };
    let paths = source.0;
    let planned = run_blocking(py, move |cancel| {
        Scan::plan(&paths, &opts, global_cache(), cancel)
    })?
    .py()?;
    warn_skipped_indexes(py, &planned.warnings)?;
    Ok(PyScan::new(planned))
}

/// The data files of `source` under Spark's path rules (local paths or object URLs).
#[pyfunction]
#[pyo3(signature = (source, *, storage_options=None))]
pub fn list_files(
    py: Python<'_>,
    source: Source,
    storage_options: Option<StorageOptions>,
) -> PyResult<Vec<String>> {
    configure_storage(&source.0, storage_options.as_ref())?;
    let paths = source.0;
    let listing = run_blocking(py, move |_| pqindex_core::source::list_source(&paths))?.py()?;
    Ok(listing.files.into_iter().map(|f| f.path).collect())
}
