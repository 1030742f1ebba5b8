//! Embedded indexes: add, drop, list and verify them in a file; estimate distinct counts
//! from their sketches.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use pqindex_core::append::{list_indexes as core_list, AppendReport};
use pqindex_core::index::approx_distinct::approx_distinct as core_approx_distinct;
use pqindex_core::index::build::{add_indexes as core_add, drop_indexes as core_drop, IndexSpec};
use pqindex_core::index::container::IndexKind;
use pqindex_core::index::locator::{Granularity, Locator};
use pqindex_core::index::verify::verify as core_verify;
use pqindex_core::metadata::global_cache;
use pqindex_core::Error;

use crate::error::IntoPyResult;
use crate::runtime::run_blocking;
use crate::source::{configure_storage, Source, StorageOptions};

fn one_path(source: Source, what: &str) -> PyResult<String> {
    let [path]: [String; 1] = source
        .0
        .try_into()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("{what} takes one path")))?;
    Ok(path)
}

pub fn granularity(name: &str) -> Result<Granularity, Error> {
    match name {
        "file" => Ok(Granularity::File),
        "row_group" => Ok(Granularity::RowGroup),
        "page" => Ok(Granularity::Page),
        other => Err(Error::InvalidArgument(format!(
            "granularity must be \"file\", \"row_group\" or \"page\", got {other:?}"
        ))),
    }
}

fn granularity_name(g: Granularity) -> &'static str {
    match g {
        Granularity::File => "file",
        Granularity::RowGroup => "row_group",
        Granularity::Page => "page",
    }
}

fn kind(name: &str) -> Result<IndexKind, Error> {
    IndexKind::from_name(name)
        .ok_or_else(|| Error::InvalidArgument(format!("unknown index kind {name:?}")))
}

fn locator_dict<'py>(py: Python<'py>, l: &Locator) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", &l.kind)?;
    d.set_item("columns", &l.columns)?;
    d.set_item("granularity", granularity_name(l.granularity))?;
    d.set_item("offset", l.offset)?;
    d.set_item("length", l.length)?;
    d.set_item("checksum", l.checksum)?;
    d.set_item("version", l.version)?;
    Ok(d)
}

fn report<'py>(py: Python<'py>, path: &str, r: &AppendReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", path)?;
    let indexes = PyList::empty(py);
    for l in &r.indexes {
        indexes.append(locator_dict(py, l)?)?;
    }
    d.set_item("indexes", indexes)?;
    d.set_item("bytes_before", r.bytes_before)?;
    d.set_item("bytes_after", r.bytes_after)?;
    d.set_item("dropped_damaged", &r.dropped_damaged)?;
    Ok(d)
}

/// Build and embed indexes; `specs` are (kind, column, granularity, fpp) tuples.
#[pyfunction]
#[pyo3(signature = (path, specs, *, storage_options=None))]
pub fn add_indexes<'py>(
    py: Python<'py>,
    path: Source,
    specs: Vec<(String, String, String, f64)>,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyDict>> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let path = one_path(path, "add_indexes")?;
    let specs = specs
        .into_iter()
        .map(|(k, column, g, fpp)| {
            Ok(IndexSpec {
                kind: kind(&k)?,
                column,
                granularity: granularity(&g)?,
                fpp,
            })
        })
        .collect::<Result<Vec<_>, Error>>()
        .py()?;
    let p = path.clone();
    let r = run_blocking(py, move |_| core_add(&p, &specs))?.py()?;
    report(py, &path, &r)
}

/// Remove the indexes matching every given filter (all of them when none is given).
#[pyfunction]
#[pyo3(signature = (path, *, kind=None, columns=None, granularity=None, storage_options=None))]
pub fn drop_indexes<'py>(
    py: Python<'py>,
    path: Source,
    kind: Option<String>,
    columns: Option<Vec<String>>,
    granularity: Option<String>,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyDict>> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let path = one_path(path, "drop_indexes")?;
    let g = granularity
        .as_deref()
        .map(self::granularity)
        .transpose()
        .py()?;
    let p = path.clone();
    let r = run_blocking(py, move |_| {
        core_drop(&p, &|l: &Locator| {
            kind.as_ref().is_none_or(|k| *k == l.kind)
                && columns.as_ref().is_none_or(|c| *c == l.columns)
                && g.is_none_or(|g| g == l.granularity)
        })
    })?
    .py()?;
    report(py, &path, &r)
}

/// The indexes a file's footer declares.
#[pyfunction]
#[pyo3(signature = (path, *, storage_options=None))]
pub fn list_indexes<'py>(
    py: Python<'py>,
    path: Source,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyList>> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let path = one_path(path, "list_indexes")?;
    let listed = run_blocking(py, move |_| core_list(&path))?.py()?;
    let out = PyList::empty(py);
    for l in &listed {
        out.append(locator_dict(py, l)?)?;
    }
    Ok(out)
}

/// Check every embedded index in full: each entry's locator plus `ok` and `error`.
#[pyfunction]
pub fn verify<'py>(py: Python<'py>, path: Source) -> PyResult<Bound<'py, PyList>> {
    let path = one_path(path, "verify")?;
    let checked = run_blocking(py, move |_| core_verify(&path))?.py()?;
    let out = PyList::empty(py);
    for c in &checked {
        let d = match &c.locator {
            Some(l) => locator_dict(py, l)?,
            None => PyDict::new(py),
        };
        d.set_item("key", &c.key)?;
        d.set_item("ok", c.error.is_none())?;
        d.set_item("error", &c.error)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Estimate the distinct values of `column` over `source` from HyperLogLog sketches.
#[pyfunction]
pub fn approx_distinct<'py>(
    py: Python<'py>,
    source: Source,
    column: String,
) -> PyResult<Bound<'py, PyDict>> {
    let paths = source.0;
    let e = run_blocking(py, move |_| {
        core_approx_distinct(&paths, &column, global_cache())
    })?
    .py()?;
    let d = PyDict::new(py);
    d.set_item("estimate", e.estimate.round() as u64)?;
    d.set_item("standard_error", e.standard_error)?;
    d.set_item("files", e.files)?;
    d.set_item("files_read", e.files_read)?;
    d.set_item("sketch_bytes_read", e.bytes_read)?;
    Ok(d)
}
