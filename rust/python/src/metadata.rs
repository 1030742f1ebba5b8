//! `pqindex.read_metadata` and the metadata cache controls.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use parquet::file::metadata::ParquetMetaData;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use pyo3_arrow::ffi::to_schema_pycapsule;

use pqindex_core::metadata_tables as tables;
use pqindex_core::{global_cache, Catalog, Error};

use crate::error::IntoPyResult;
use crate::runtime::run_blocking;

/// The parsed footer (and page index) of one Parquet file.
#[pyclass(frozen, name = "FileMetadata", module = "pqindex")]
pub struct PyFileMetadata {
    #[pyo3(get)]
    path: String,
    /// Bytes in the file.
    #[pyo3(get)]
    size: u64,
    /// Bytes of the Thrift footer.
    #[pyo3(get)]
    footer_length: u64,
    metadata: Arc<ParquetMetaData>,
    /// Converted on first use: a cache hit should not pay for a wide schema it may not need.
    schema: OnceLock<arrow_schema::SchemaRef>,
}

fn table<'py>(py: Python<'py>, batch: Result<RecordBatch, Error>) -> PyResult<Bound<'py, PyAny>> {
    let batch = batch.py()?;
    let schema = batch.schema();
    crate::pyarrow::table(py, vec![batch], schema)
}

#[pymethods]
impl PyFileMetadata {
    #[getter]
    fn num_rows(&self) -> i64 {
        self.metadata.file_metadata().num_rows()
    }

    #[getter]
    fn num_row_groups(&self) -> usize {
        self.metadata.num_row_groups()
    }

    #[getter]
    fn created_by(&self) -> Option<String> {
        self.metadata
            .file_metadata()
            .created_by()
            .map(str::to_string)
    }

    /// Whether the page index (column and offset indexes) was read with the footer.
    #[getter]
    fn has_page_index(&self) -> bool {
        self.metadata.offset_index().is_some()
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        Ok(to_schema_pycapsule(py, self.schema()?.as_ref())?)
    }

    /// The footer's key/value pairs.
    fn key_value_metadata(&self) -> HashMap<String, String> {
        self.metadata
            .file_metadata()
            .key_value_metadata()
            .map(|kv| {
                kv.iter()
                    .map(|e| (e.key.clone(), e.value.clone().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The footer's `pqindex.index.<n>` locators in key order, each parsed (kind, columns,
    /// granularity, offset, length, checksum, version) or with the `error` that kept it
    /// from parsing.
    fn indexes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut entries =
            pqindex_core::index_locators(self.metadata.file_metadata().key_value_metadata());
        entries.sort_by_key(|(key, _)| {
            let n = key.rsplit('.').next().and_then(|n| n.parse::<u64>().ok());
            (n.is_none(), n, key.clone())
        });
        let out = PyList::empty(py);
        for (key, parsed) in entries {
            let d = match &parsed {
                Ok(l) => crate::index::locator_dict(py, l)?,
                Err(e) => {
                    let d = PyDict::new(py);
                    d.set_item("error", e.to_string())?;
                    d
                }
            };
            d.set_item("key", key)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// One row per row group, as a `pyarrow.Table`.
    fn row_groups<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        table(py, tables::row_groups(&self.metadata))
    }

    /// One row per column chunk: statistics, encodings, sizes, bloom filter, page index.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        table(py, tables::columns(&self.metadata))
    }

    /// One row per data page, from the page index.
    fn pages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        table(py, tables::pages(&self.metadata))
    }

    fn __repr__(&self) -> String {
        format!(
            "<pqindex.FileMetadata {:?}: {} rows in {} row groups, {} columns>",
            self.path,
            self.metadata.file_metadata().num_rows(),
            self.metadata.num_row_groups(),
            self.metadata
                .file_metadata()
                .schema_descr()
                .root_schema()
                .get_fields()
                .len()
        )
    }
}

impl PyFileMetadata {
    fn schema(&self) -> PyResult<&arrow_schema::SchemaRef> {
        if let Some(schema) = self.schema.get() {
            return Ok(schema);
        }
        let file = self.metadata.file_metadata();
        let schema =
            parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
                .map_err(|e| Error::from(e).in_file(&self.path))
                .py()?;
        Ok(self.schema.get_or_init(|| Arc::new(schema)))
    }
}

/// Read the footer of `path`, and its page index unless `page_index` is false, through the
/// metadata cache.
#[pyfunction]
#[pyo3(signature = (path, *, page_index=true, storage_options=None, decryption=None))]
pub fn read_metadata(
    py: Python<'_>,
    path: crate::source::Source,
    page_index: bool,
    storage_options: Option<crate::source::StorageOptions>,
    decryption: Option<crate::decryption::DecryptionArg>,
) -> PyResult<PyFileMetadata> {
    crate::source::configure_storage(&path.0, storage_options.as_ref())?;
    let [path]: [String; 1] = path
        .0
        .try_into()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("read_metadata takes one path"))?;
    let p = path.clone();
    let footer = run_blocking(py, move |_| match decryption {
        Some(d) => pqindex_core::read_metadata(&p, page_index, &d.cache()),
        None => pqindex_core::read_metadata(&p, page_index, global_cache()),
    })?
    .py()?;
    Ok(PyFileMetadata {
        path,
        size: footer.size,
        footer_length: footer.footer_length,
        metadata: footer.metadata,
        schema: OnceLock::new(),
    })
}

/// Entries, bytes, capacity, hits and misses of the metadata cache.
#[pyfunction]
pub fn metadata_cache_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let info = global_cache().info();
    let d = PyDict::new(py);
    d.set_item("entries", info.entries)?;
    d.set_item("bytes", info.bytes)?;
    d.set_item("capacity", info.capacity)?;
    d.set_item("hits", info.hits)?;
    d.set_item("misses", info.misses)?;
    Ok(d)
}

/// Bound the metadata cache to `capacity_bytes` (evicting least recently used entries).
#[pyfunction]
pub fn set_metadata_cache_capacity(capacity_bytes: usize) {
    global_cache().set_capacity(capacity_bytes);
}

/// Drop every cached footer and page index, every catalog read and every kept listing.
#[pyfunction]
pub fn clear_metadata_cache() {
    global_cache().clear();
    Catalog::forget_loaded();
    pqindex_core::forget_kept_listings();
}
