//! `pqindex.write`: any Arrow stream or array to a Parquet file with a page index and
//! bloom filters.

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;

use pqindex_core::{write as write_file, WriteOptions};

use crate::error::IntoPyResult;
use crate::runtime::run_blocking;
use crate::source::{configure_storage, Source, StorageOptions};

#[pyfunction]
#[pyo3(signature = (data, path, *, row_group_size=None, page_row_limit=None, bloom_filter_columns=None, bloom_filter_fpp=0.01, compression="zstd".to_string(), storage_options=None))]
#[allow(clippy::too_many_arguments)]
pub fn write(
    py: Python<'_>,
    data: AnyRecordBatch,
    path: Source,
    row_group_size: Option<usize>,
    page_row_limit: Option<usize>,
    bloom_filter_columns: Option<Vec<String>>,
    bloom_filter_fpp: f64,
    compression: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<()> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let [path]: [String; 1] = path
        .0
        .try_into()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("write takes one path"))?;
    let defaults = WriteOptions::default();
    let opts = WriteOptions {
        row_group_size: row_group_size.unwrap_or(defaults.row_group_size),
        page_row_limit,
        bloom_filter_columns: bloom_filter_columns.unwrap_or_default(),
        bloom_filter_fpp,
        compression,
    };
    let reader = data.into_reader()?;
    run_blocking(py, move |_| write_file(reader, &path, &opts))?.py()?;
    Ok(())
}

/// Upload the local file `local` as the object `url`, replacing it in one step.
#[pyfunction]
#[pyo3(signature = (local, url, *, storage_options=None))]
pub fn upload(
    py: Python<'_>,
    local: String,
    url: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<()> {
    configure_storage(std::slice::from_ref(&url), storage_options.as_ref())?;
    run_blocking(py, move |_| {
        pqindex_core::storage::locate(&url)?
            .upload(std::path::Path::new(&local))
            .map(|_| ())
    })?
    .py()?;
    Ok(())
}

/// Delete the objects `urls` (those already gone are skipped).
#[pyfunction]
#[pyo3(signature = (urls, *, storage_options=None))]
pub fn delete_objects(
    py: Python<'_>,
    urls: Vec<String>,
    storage_options: Option<StorageOptions>,
) -> PyResult<()> {
    configure_storage(&urls, storage_options.as_ref())?;
    run_blocking(py, move |_| {
        for u in &urls {
            pqindex_core::storage::locate(u)?.delete()?;
        }
        Ok::<_, pqindex_core::Error>(())
    })?
    .py()?;
    Ok(())
}

/// Every object below the prefix `url` (hidden names included), as URLs.
#[pyfunction]
#[pyo3(signature = (url, *, storage_options=None))]
pub fn list_objects(
    py: Python<'_>,
    url: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<Vec<String>> {
    configure_storage(std::slice::from_ref(&url), storage_options.as_ref())?;
    let listed = run_blocking(py, move |_| pqindex_core::storage::locate(&url)?.list())?.py()?;
    Ok(listed.into_iter().map(|(_, id)| id.path).collect())
}
