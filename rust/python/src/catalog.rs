//! `pqindex.Catalog`: build, open and refresh a dataset's catalog.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pqindex_core::{global_cache, Catalog, CatalogColumn, CatalogReport, Error};

use crate::error::IntoPyResult;
use crate::runtime::{run_blocking, run_blocking_ticking};
use crate::source::{configure_storage, Source, StorageOptions};

/// A dataset's catalog: per file its identity, summaries, bloom filters and footer.
#[pyclass(frozen, name = "Catalog", module = "pqindex")]
pub struct PyCatalog {
    inner: Arc<Catalog>,
    report: Option<CatalogReport>,
}

/// Files done and total, shared by the worker and the progress callback.
#[derive(Default)]
struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    shown: AtomicU64,
}

/// Run a build or refresh, calling `progress(done, total)` as files are summarised.
fn with_progress<F>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    f: F,
) -> PyResult<(Catalog, CatalogReport)>
where
    F: FnOnce(
            &dyn Fn(u64, u64) -> pqindex_core::Result<()>,
        ) -> pqindex_core::Result<(Catalog, CatalogReport)>
        + Send
        + 'static,
{
    let state = Arc::new(Progress::default());
    let worker = state.clone();
    let tick = |py: Python<'_>| -> PyResult<()> {
        let done = state.done.load(Ordering::Relaxed);
        if let Some(cb) = &progress {
            if state.shown.swap(done, Ordering::Relaxed) != done {
                cb.call1(py, (done, state.total.load(Ordering::Relaxed)))?;
            }
        }
        Ok(())
    };
    let result = run_blocking_ticking(py, tick, move |cancel: &AtomicBool| {
        f(&|done, total| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            worker.done.store(done, Ordering::Relaxed);
            worker.total.store(total, Ordering::Relaxed);
            Ok(())
        })
    })?
    .py()?;
    if let Some(cb) = &progress {
        let total = state.total.load(Ordering::Relaxed);
        cb.call1(py, (total, total))?;
    }
    Ok(result)
}

fn one_dir(source: Source) -> PyResult<String> {
    match <[String; 1]>::try_from(source.0) {
        Ok([dir]) => Ok(dir),
        Err(_) => Err(Error::InvalidArgument(
            "a catalog describes one dataset directory".into(),
        ))
        .py(),
    }
}

#[pymethods]
impl PyCatalog {
    /// Build the catalog of the dataset directory `source` (replacing any), summarising
    /// `columns`; `bloom` columns also get a per-file bloom filter with rate `fpp`.
    #[staticmethod]
    #[pyo3(signature = (source, columns=Vec::new(), *, bloom=None, fpp=0.01, progress=None, storage_options=None))]
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        source: Source,
        columns: Vec<String>,
        bloom: Option<Vec<String>>,
        fpp: f64,
        progress: Option<Py<PyAny>>,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<PyCatalog> {
        configure_storage(&source.0, storage_options.as_ref())?;
        let root = one_dir(source)?;
        if !(fpp > 0.0 && fpp < 1.0) {
            return Err(Error::InvalidArgument(format!(
                "fpp must be between 0 and 1 exclusive, got {fpp}"
            )))
            .py();
        }
        let bloom = bloom.unwrap_or_else(|| columns.clone());
        // No columns named: every column statistics can bound (blooms only where asked).
        let columns = if columns.is_empty() {
            let root = root.clone();
            run_blocking(py, move |_| {
                pqindex_core::default_catalog_columns(&root, global_cache())
            })?
            .py()?
        } else {
            columns
        };
        let mut cols: Vec<CatalogColumn> = columns
            .iter()
            .map(|c| CatalogColumn {
                name: c.clone(),
                bloom: bloom.contains(c),
                fpp,
            })
            .collect();
        for b in &bloom {
            if !columns.contains(b) {
                cols.push(CatalogColumn {
                    name: b.clone(),
                    bloom: true,
                    fpp,
                });
            }
        }
        let (catalog, report) = with_progress(py, progress, move |p| {
            Catalog::build(&root, &cols, global_cache(), p)
        })?;
        Ok(PyCatalog {
            inner: Arc::new(catalog),
            report: Some(report),
        })
    }

    /// The columns `build` summarises when given none: every column statistics can bound.
    #[staticmethod]
    #[pyo3(signature = (source, *, storage_options=None))]
    fn default_columns(
        py: Python<'_>,
        source: Source,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Vec<String>> {
        configure_storage(&source.0, storage_options.as_ref())?;
        let root = one_dir(source)?;
        run_blocking(py, move |_| {
            pqindex_core::default_catalog_columns(&root, global_cache())
        })?
        .py()
    }

    /// The catalog of the dataset directory `source`, or None when it has none.
    #[staticmethod]
    #[pyo3(signature = (source, *, storage_options=None))]
    fn open(
        py: Python<'_>,
        source: Source,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<Option<PyCatalog>> {
        configure_storage(&source.0, storage_options.as_ref())?;
        let root = one_dir(source)?;
        let catalog = run_blocking(py, move |_| Catalog::open(&root))?.py()?;
        Ok(catalog.map(|c| PyCatalog {
            inner: Arc::new(c),
            report: None,
        }))
    }

    /// Write a new version: added and changed files summarised again, removed ones
    /// dropped. Returns the new catalog.
    #[pyo3(signature = (*, progress=None))]
    fn refresh(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<PyCatalog> {
        let inner = self.inner.clone();
        let (catalog, report) =
            with_progress(py, progress, move |p| inner.refresh(global_cache(), p))?;
        Ok(PyCatalog {
            inner: Arc::new(catalog),
            report: Some(report),
        })
    }

    /// Put every footer the catalog holds for a file as it is now into this process's
    /// metadata cache; returns how many.
    fn seed_metadata_cache(&self, py: Python<'_>) -> PyResult<u64> {
        let inner = self.inner.clone();
        run_blocking(py, move |_| inner.seed_cache(global_cache()))?.py()
    }

    /// How the data files now compare with the catalog: files described as they are,
    /// changed, added and removed since.
    fn freshness<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self.inner.clone();
        let (fresh, changed, added, removed) =
            run_blocking(py, move |_| inner.freshness())?.py()?;
        let d = PyDict::new(py);
        d.set_item("fresh", fresh)?;
        d.set_item("changed", changed)?;
        d.set_item("added", added)?;
        d.set_item("removed", removed)?;
        Ok(d)
    }

    #[getter]
    fn version(&self) -> u64 {
        self.inner.version
    }

    #[getter]
    fn root(&self) -> String {
        self.inner.root.to_string_lossy().into_owned()
    }

    #[getter]
    fn num_files(&self) -> usize {
        self.inner.entries.len()
    }

    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner.columns.iter().map(|c| c.name.clone()).collect()
    }

    #[getter]
    fn bloom_columns(&self) -> Vec<String> {
        self.inner
            .columns
            .iter()
            .filter(|c| c.bloom)
            .map(|c| c.name.clone())
            .collect()
    }

    /// What the build or refresh that made this catalog did (None for an opened one).
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(r) = &self.report else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("version", r.version)?;
        d.set_item("files", r.files)?;
        d.set_item("added", r.added)?;
        d.set_item("changed", r.changed)?;
        d.set_item("removed", r.removed)?;
        d.set_item("kept", r.kept)?;
        d.set_item("mended", r.mended)?;
        d.set_item("bytes", r.bytes)?;
        Ok(Some(d))
    }

    fn __repr__(&self) -> String {
        format!(
            "<pqindex.Catalog {} version {}: {} files>",
            self.inner.root.display(),
            self.inner.version,
            self.inner.entries.len()
        )
    }
}

fn catalog_columns(specs: Vec<(String, bool, f64)>) -> Vec<CatalogColumn> {
    specs
        .into_iter()
        .map(|(name, bloom, fpp)| CatalogColumn { name, bloom, fpp })
        .collect()
}

/// Catalog rows summarising `paths` (files below the dataset `root`), for building a
/// catalog in parallel; `columns` are (name, bloom, fpp) triples.
#[pyfunction]
pub fn catalog_rows<'py>(
    py: Python<'py>,
    root: String,
    paths: Vec<String>,
    columns: Vec<(String, bool, f64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = catalog_columns(columns);
    let batch = run_blocking(py, move |_| {
        Catalog::summary_rows(&root, &paths, &columns, global_cache())
    })?
    .py()?;
    let schema = batch.schema();
    crate::pyarrow::table(py, vec![batch], schema)
}

/// Write catalog `rows` (from `catalog_rows`) as the next version of the catalog of the
/// dataset at `root`.
#[pyfunction]
pub fn write_catalog(
    py: Python<'_>,
    root: String,
    columns: Vec<(String, bool, f64)>,
    rows: pyo3_arrow::input::AnyRecordBatch,
) -> PyResult<PyCatalog> {
    let columns = catalog_columns(columns);
    let batches = rows
        .into_reader()?
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::Arrow)
        .py()?;
    let (catalog, report) =
        run_blocking(py, move |_| Catalog::write_rows(&root, &columns, &batches))?.py()?;
    Ok(PyCatalog {
        inner: Arc::new(catalog),
        report: Some(report),
    })
}
