//! `pqindex.scan` and the `Scan` it returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use pyo3_arrow::ffi::to_schema_pycapsule;
use pyo3_arrow::input::AnyRecordBatch;

use pqindex_core::{
    global_cache, Catalog, Error, KeySpec, Scan, ScanOptions, TableOptions, TableSnapshot,
};

use crate::arrow_stream::{arrow_to_core, stream_capsule};
use crate::error::IntoPyResult;
use crate::report::{metrics_dict, warn_skipped_indexes};
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

    /// The stream's batches; `None` if they grew past `max_bytes` (the stream is dropped,
    /// which stops its reads).
    fn read_batches(
        &self,
        py: Python<'_>,
        max_bytes: Option<usize>,
    ) -> PyResult<Option<Vec<RecordBatch>>> {
        // Everything read is kept unless the read may stop early.
        let stream = self.take_stream(max_bytes.is_none())?;
        run_blocking(
            py,
            move |cancel| -> Result<Option<Vec<RecordBatch>>, Error> {
                let (mut out, mut size) = (Vec::new(), 0usize);
                for b in stream {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(Error::Cancelled);
                    }
                    let batch = b.map_err(arrow_to_core)?;
                    size = size.saturating_add(batch.get_array_memory_size());
                    if max_bytes.is_some_and(|max| size > max) {
                        return Ok(None);
                    }
                    out.push(batch);
                }
                Ok(Some(out))
            },
        )?
        .py()
    }

    /// The scan's one stream; `kept` when the caller keeps every batch (see
    /// `Scan::stream_kept`).
    fn take_stream(&self, kept: bool) -> PyResult<pqindex_core::ScanStream> {
        if self.consumed.swap(true, Ordering::SeqCst) {
            return Err(consumed_error());
        }
        Ok(if kept {
            self.scan.stream_kept()
        } else {
            self.scan.stream()
        })
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

#[pymethods]
impl PyScan {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let stream = self.take_stream(false)?;
        stream_capsule(py, Box::new(stream), requested_schema)
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        Ok(to_schema_pycapsule(py, self.scan.schema().as_ref())?)
    }

    /// Read every selected row into a `pyarrow.Table`.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batches = self.read_batches(py, None)?.unwrap_or_default();
        crate::pyarrow::table(py, batches, self.scan.schema())
    }

    /// Like `to_arrow`, but stop reading and return `None` once the rows take more than
    /// `max_bytes` in memory: for callers that would rather read a large result elsewhere.
    fn to_arrow_within<'py>(
        &self,
        py: Python<'py>,
        max_bytes: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.read_batches(py, Some(max_bytes))?
            .map(|batches| crate::pyarrow::table(py, batches, self.scan.schema()))
            .transpose()
    }

    /// The plan's units (file identity, row group, row ranges, estimated bytes), one row
    /// each, for `read_units` in another process.
    fn units<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = self.scan.units_table().py()?;
        let schema = batch.schema();
        crate::pyarrow::table(py, vec![batch], schema)
    }

    /// The dataset root whose catalog planning used, if any.
    #[getter]
    fn catalog_root(&self) -> Option<String> {
        self.scan.catalog_root().map(str::to_string)
    }

    /// What `now()` and `current_date` folded to, in ns since the epoch.
    #[getter]
    fn now_ns(&self) -> i128 {
        self.scan.now_ns()
    }

    /// Embedded indexes planning skipped (damaged, unknown version, not this file's).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.scan.warnings().to_vec()
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
        let m = |name| self.scan.metric(name).unwrap_or(0);
        format!(
            "<pqindex.Scan: {} files ({} pruned), {} row groups to read, {} rows selected>",
            m("files"),
            m("files_pruned"),
            self.scan.unit_count(),
            m("rows_selected")
        )
    }
}

/// Read `units` (rows of `Scan.units()`, from a plan made elsewhere) with the planning
/// scan's `where`, `columns` and `now_ns`.
#[pyfunction]
#[pyo3(signature = (units, *, now_ns, r#where=None, columns=None, batch_size=65536, threads=None, catalog=None, storage_options=None, read_ahead=None, keys=None, on=None, decode=None, limit=None, order_by=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_units(
    py: Python<'_>,
    units: AnyRecordBatch,
    now_ns: i128,
    r#where: Option<crate::condition::Where>,
    columns: Option<Vec<String>>,
    batch_size: usize,
    threads: Option<usize>,
    catalog: Option<String>,
    storage_options: Option<StorageOptions>,
    read_ahead: Option<usize>,
    keys: Option<AnyRecordBatch>,
    on: Option<Vec<String>>,
    decode: Option<String>,
    limit: Option<u64>,
    order_by: Option<Vec<(String, bool)>>,
) -> PyResult<PyScan> {
    let keys = key_spec(keys, on)?;
    let opts = ScanOptions {
        decoding: decoding(decode)?,
        limit,
        predicate: crate::condition::condition(r#where),
        columns,
        batch_size,
        threads: threads.unwrap_or_else(pqindex_core::default_threads),
        now_ns: Some(now_ns),
        ignore_catalog: true,
        table: TableOptions::default(),
        keys,
        read_ahead,
        string_view: false,
        order_by: order_keys(order_by),
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
        // Footers of files the catalog describes come from it, not from the files: once
        // per file (each seeding checks the file is unchanged), however many units it has.
        if let Some(root) = &catalog {
            if let Some(c) = Catalog::open_for_reading(root)? {
                for p in &urls {
                    c.seed_one(p, global_cache())?;
                }
            }
        }
        Scan::from_units(&batches, &opts, global_cache(), cancel)
    })?
    .py()?;
    Ok(PyScan::new(planned))
}

/// Plan a scan of `source` (loose Parquet files, or a Delta table's directory at
/// `version` or as of `timestamp_ms`), pruning with `where`.
#[pyfunction]
#[pyo3(signature = (source, r#where=None, columns=None, batch_size=65536, threads=None, *, catalog=true, storage_options=None, version=None, timestamp_ms=None, keys=None, on=None, read_ahead=None, string_view=false, decode=None, limit=None, order_by=None, decryption=None))]
#[allow(clippy::too_many_arguments)]
pub fn scan(
    py: Python<'_>,
    source: Source,
    r#where: Option<crate::condition::Where>,
    columns: Option<Vec<String>>,
    batch_size: usize,
    threads: Option<usize>,
    catalog: bool,
    storage_options: Option<StorageOptions>,
    version: Option<i64>,
    timestamp_ms: Option<i64>,
    keys: Option<AnyRecordBatch>,
    on: Option<Vec<String>>,
    read_ahead: Option<usize>,
    string_view: bool,
    decode: Option<String>,
    limit: Option<u64>,
    order_by: Option<Vec<(String, bool)>>,
    decryption: Option<crate::decryption::DecryptionArg>,
) -> PyResult<PyScan> {
    configure_storage(&source.0, storage_options.as_ref())?;
    let keys = key_spec(keys, on)?;
    let opts = ScanOptions {
        decoding: decoding(decode)?,
        limit,
        order_by: order_keys(order_by),
        predicate: crate::condition::condition(r#where),
        columns,
        batch_size,
        threads: threads.unwrap_or_else(pqindex_core::default_threads),
        now_ns: None,
        // A catalog holds plaintext footers, which an encrypted file cannot have.
        ignore_catalog: !catalog || decryption.is_some(),
        table: TableOptions {
            version,
            timestamp_ms,
            storage_options: storage_options.map(|o| o.0).unwrap_or_default(),
        },
        keys,
        read_ahead,
        string_view,
    };
    let paths = source.0;
    let planned = run_blocking(py, move |cancel| match decryption {
        Some(d) => Scan::plan(&paths, &opts, &d.cache(), cancel),
        None => Scan::plan(&paths, &opts, global_cache(), cancel),
    })?
    .py()?;
    warn_skipped_indexes(py, planned.warnings())?;
    Ok(PyScan::new(planned))
}

/// Plan a scan of a table snapshot planned elsewhere (an Iceberg table's, from its
/// manifests): `files` one row per data file (see `table::files`), `schema` the table's
/// columns with their field ids.
#[pyfunction]
#[pyo3(signature = (files, schema, *, root, version, index_files=Vec::new(), r#where=None, columns=None, batch_size=65536, threads=None, storage_options=None, keys=None, on=None, cache_key=None, read_ahead=None, string_view=false, decode=None, limit=None, order_by=None))]
#[allow(clippy::too_many_arguments)]
pub fn scan_table(
    py: Python<'_>,
    files: Option<AnyRecordBatch>,
    schema: pyo3_arrow::PySchema,
    root: String,
    version: i64,
    index_files: Vec<String>,
    r#where: Option<crate::condition::Where>,
    columns: Option<Vec<String>>,
    batch_size: usize,
    threads: Option<usize>,
    storage_options: Option<StorageOptions>,
    keys: Option<AnyRecordBatch>,
    on: Option<Vec<String>>,
    cache_key: Option<String>,
    read_ahead: Option<usize>,
    string_view: bool,
    decode: Option<String>,
    limit: Option<u64>,
    order_by: Option<Vec<(String, bool)>>,
) -> PyResult<PyScan> {
    let keys = key_spec(keys, on)?;
    let snapshot = table_snapshot(
        files,
        schema,
        root,
        version,
        index_files,
        cache_key,
        storage_options.as_ref(),
    )?;
    let opts = ScanOptions {
        predicate: crate::condition::condition(r#where),
        columns,
        batch_size,
        threads: threads.unwrap_or_else(pqindex_core::default_threads),
        keys,
        read_ahead,
        string_view,
        decoding: decoding(decode)?,
        limit,
        order_by: order_keys(order_by),
        ..Default::default()
    };
    let planned = run_blocking(py, move |cancel| {
        Scan::plan_table(std::sync::Arc::new(snapshot), &opts, global_cache(), cancel)
    })?
    .py()?;
    warn_skipped_indexes(py, planned.warnings())?;
    Ok(PyScan::new(planned))
}

/// The snapshot of a table planned elsewhere (an Iceberg table's, from its manifests):
/// `files` one row per data file (see `table::files`), `schema` the table's columns with
/// their field ids, converted once per process under `cache_key`; the storage of its
/// files is configured with `storage_options`.
pub(crate) fn table_snapshot(
    files: Option<AnyRecordBatch>,
    schema: pyo3_arrow::PySchema,
    root: String,
    version: i64,
    index_files: Vec<String>,
    cache_key: Option<String>,
    storage_options: Option<&StorageOptions>,
) -> PyResult<TableSnapshot> {
    let batches = move || match files {
        Some(f) => f
            .into_reader()
            .map_err(|e| pqindex_core::Error::InvalidArgument(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(arrow_to_core),
        None => Ok(Vec::new()),
    };
    let format = pqindex_core::TableFormat::Iceberg;
    let schema = schema.into_inner();
    let mut snapshot = match &cache_key {
        // The snapshot's files, converted once per process.
        Some(key) => {
            pqindex_core::cached_snapshot_from_arrow(key, format, &root, version, schema, batches)
        }
        None => batches()
            .and_then(|b| pqindex_core::snapshot_from_arrow(format, &root, version, schema, &b)),
    }
    .py()?;
    snapshot.index_files = index_files;
    if storage_options.is_some() {
        let mut urls = vec![snapshot.root.clone()];
        urls.extend(snapshot.files.iter().map(|f| f.path.clone()));
        urls.extend(snapshot.index_files.iter().cloned());
        configure_storage(&urls, storage_options)?;
    }
    Ok(snapshot)
}

/// The keys of a semi join: `keys`' columns, in `on`'s order (one per key column).
fn key_spec(keys: Option<AnyRecordBatch>, on: Option<Vec<String>>) -> PyResult<Option<KeySpec>> {
    let (keys, on) = match (keys, on) {
        (None, None) => return Ok(None),
        (Some(k), Some(on)) => (k, on),
        _ => {
            return Err(Error::InvalidArgument("keys and on go together".into())).py();
        }
    };
    let reader = keys.into_reader()?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow_to_core)
        .py()?;
    if schema.fields().len() != on.len() {
        return Err(Error::InvalidArgument(format!(
            "keys have {} columns for {} key columns",
            schema.fields().len(),
            on.len()
        )))
        .py();
    }
    let values = (0..on.len())
        .map(|i| {
            let parts: Vec<&dyn arrow_array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            if parts.is_empty() {
                Ok(arrow_array::new_empty_array(schema.field(i).data_type()))
            } else {
                arrow_select::concat::concat(&parts)
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow_to_core)
        .py()?;
    Ok(Some(KeySpec { on, values }))
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
    let listing = run_blocking(py, move |_| pqindex_core::list_source(&paths))?.py()?;
    Ok(listing.files.iter().map(|f| f.path.clone()).collect())
}

/// Bound what a scan's stream holds for row groups ahead of the consumer (fetched pages
/// and decoded batches) to `read_ahead_bytes`, for scans that do not name their own.
#[pyfunction]
pub fn set_read_ahead(read_ahead_bytes: usize) {
    pqindex_core::set_read_ahead(read_ahead_bytes);
}

/// The read-ahead budget, in bytes, of scans that do not name their own.
#[pyfunction]
pub fn read_ahead() -> usize {
    pqindex_core::read_ahead()
}

/// `decode=`: "pqindex" (its own decoders where faster) or "stock" (the parquet crate's
/// reader alone); the environment's `PQINDEX_DECODE` when not given.
fn decoding(name: Option<String>) -> PyResult<pqindex_core::Decoding> {
    match name.as_deref() {
        None => Ok(pqindex_core::Decoding::from_env()),
        Some("pqindex") => Ok(pqindex_core::Decoding::Pqindex),
        Some("stock") => Ok(pqindex_core::Decoding::Stock),
        Some(other) => Err(crate::error::to_py_err(
            pqindex_core::Error::InvalidArgument(format!(
                "decode must be \"pqindex\" or \"stock\", not {other:?}"
            )),
        )),
    }
}

/// `order_by` as the core takes it: `(column, descending)` pairs.
fn order_keys(order_by: Option<Vec<(String, bool)>>) -> Vec<pqindex_core::OrderKey> {
    order_by
        .unwrap_or_default()
        .into_iter()
        .map(|(column, descending)| pqindex_core::OrderKey { column, descending })
        .collect()
}
