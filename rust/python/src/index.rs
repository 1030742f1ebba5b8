//! Embedded indexes: add, drop, list and verify them in a file; estimate distinct counts
//! from their sketches.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use pqindex_core::{
    add_indexes_with as core_add, approx_distinct as core_approx_distinct,
    drop_indexes_with as core_drop, global_cache, list_indexes as core_list, verify as core_verify,
    AppendReport, Error, Granularity, IndexSpec, Locator, ParamType, ParamValue, Recovery,
    RewriteMode,
};

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
    Granularity::from_name(name).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "granularity must be \"file\", \"row_group\" or \"page\", got {name:?}"
        ))
    })
}

/// Index definitions as Python passes them: objects with `kind`, `columns`, `granularity`
/// and `params` (the classes `pqindex._indexes` makes from `index_kinds()`), each giving
/// one index per column.
pub struct Definitions(pub Vec<IndexSpec>);

fn param_value(v: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "index parameters are numbers or names, not booleans",
        ));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(ParamValue::Int(i));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(ParamValue::Float(f));
    }
    Ok(ParamValue::Str(v.extract::<String>()?.into()))
}

fn definition(d: &Bound<'_, PyAny>) -> PyResult<Vec<IndexSpec>> {
    let kind: String = d.getattr("kind")?.extract()?;
    let columns: Vec<String> = d.getattr("index_columns")?.extract()?;
    let g: String = d.getattr("index_granularity")?.extract()?;
    let g = granularity(&g).py()?;
    let mut params = Vec::new();
    for (k, v) in d.getattr("index_params")?.cast::<PyDict>()?.iter() {
        params.push((k.extract::<String>()?, param_value(&v)?));
    }
    if columns.is_empty() {
        return Err(crate::error::to_py_err(Error::InvalidArgument(format!(
            "a {kind} index needs a column"
        ))));
    }
    columns
        .iter()
        .map(|c| IndexSpec::new(&kind, c, Some(g), &params).py())
        .collect()
}

impl<'py> FromPyObject<'_, 'py> for Definitions {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let mut out = Vec::new();
        for d in obj.try_iter()? {
            out.extend(definition(&d?)?);
        }
        Ok(Definitions(out))
    }
}

fn param_py<'py>(py: Python<'py>, v: &ParamValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        ParamValue::Float(f) => f.into_pyobject(py)?.into_any(),
        ParamValue::Int(i) => i.into_pyobject(py)?.into_any(),
        ParamValue::Str(s) => s.as_ref().into_pyobject(py)?.into_any(),
    })
}

/// Every kind of embedded index, as the registry describes it: what Python builds its
/// index classes and the CLI its flags from.
#[pyfunction]
pub fn index_kinds(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for kind in pqindex_core::index_kinds() {
        let i = kind.info();
        let d = PyDict::new(py);
        d.set_item("name", i.name)?;
        d.set_item("class_name", i.class_name)?;
        d.set_item("cli_flag", i.cli_flag)?;
        d.set_item("doc", i.doc)?;
        d.set_item("multi_column", i.multi_column)?;
        let gs: Vec<&str> = i.granularities.iter().map(|g| g.name()).collect();
        d.set_item("granularities", gs)?;
        let params = PyList::empty(py);
        for p in i.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("doc", p.doc)?;
            pd.set_item("default", param_py(py, &p.default)?)?;
            match &p.ty {
                ParamType::Float { min, max } => {
                    pd.set_item("type", "float")?;
                    pd.set_item("min", min)?;
                    pd.set_item("max", max)?;
                }
                ParamType::Int { min, max } => {
                    pd.set_item("type", "int")?;
                    pd.set_item("min", min)?;
                    pd.set_item("max", max)?;
                }
                ParamType::Choice(names) => {
                    pd.set_item("type", "choice")?;
                    pd.set_item("choices", names.to_vec())?;
                }
            }
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Check one index definition (as `add_indexes` would), returning the identity of each
/// index it makes: (kind, column, granularity as stored).
#[pyfunction]
pub fn check_index(definition: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String, String)>> {
    Ok(self::definition(definition)?
        .iter()
        .map(|s| {
            let (k, c, g) = s.identity();
            (k.to_string(), c.to_string(), g.name().to_string())
        })
        .collect())
}

pub fn locator_dict<'py>(py: Python<'py>, l: &Locator) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", &l.kind)?;
    d.set_item("columns", &l.columns)?;
    d.set_item("granularity", l.granularity.name())?;
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

/// Build and embed the indexes `definitions` define.
#[pyfunction]
#[pyo3(signature = (path, definitions, *, storage_options=None, in_place=false))]
pub fn add_indexes<'py>(
    py: Python<'py>,
    path: Source,
    definitions: Definitions,
    storage_options: Option<StorageOptions>,
    in_place: bool,
) -> PyResult<Bound<'py, PyDict>> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let path = one_path(path, "add_indexes")?;
    let specs = definitions.0;
    let p = path.clone();
    let r = run_blocking(py, move |cancel| {
        core_add(&p, &specs, mode(in_place), cancel)
    })?
    .py()?;
    report(py, &path, &r)
}

/// Remove the indexes matching every given filter (all of them when none is given).
#[pyfunction]
#[pyo3(signature = (path, *, kind=None, columns=None, granularity=None, storage_options=None, in_place=false))]
#[allow(clippy::too_many_arguments)]
pub fn drop_indexes<'py>(
    py: Python<'py>,
    path: Source,
    kind: Option<String>,
    columns: Option<Vec<String>>,
    granularity: Option<String>,
    storage_options: Option<StorageOptions>,
    in_place: bool,
) -> PyResult<Bound<'py, PyDict>> {
    configure_storage(&path.0, storage_options.as_ref())?;
    let path = one_path(path, "drop_indexes")?;
    let g = granularity
        .as_deref()
        .map(self::granularity)
        .transpose()
        .py()?;
    let p = path.clone();
    let r = run_blocking(py, move |cancel| {
        core_drop(
            &p,
            &|l: &Locator| {
                kind.as_ref().is_none_or(|k| *k == l.kind)
                    && columns.as_ref().is_none_or(|c| *c == l.columns)
                    && g.is_none_or(|g| g == l.granularity)
            },
            mode(in_place),
            cancel,
        )
    })?
    .py()?;
    report(py, &path, &r)
}

fn mode(in_place: bool) -> RewriteMode {
    if in_place {
        RewriteMode::InPlace
    } else {
        RewriteMode::Copy
    }
}

/// Finish or discard an interrupted in-place index change of the local file `path`:
/// `"nothing"` (none was pending), `"discarded"` (it had not started) or `"completed"`.
#[pyfunction]
pub fn recover(py: Python<'_>, path: std::path::PathBuf) -> PyResult<&'static str> {
    let done = run_blocking(py, move |cancel| pqindex_core::recover_until(&path, cancel))?.py()?;
    Ok(match done {
        Recovery::Nothing => "nothing",
        Recovery::Discarded => "discarded",
        Recovery::Completed => "completed",
    })
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
#[pyo3(signature = (path, *, storage_options=None))]
pub fn verify<'py>(
    py: Python<'py>,
    path: Source,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyList>> {
    configure_storage(&path.0, storage_options.as_ref())?;
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
#[pyo3(signature = (source, column, *, storage_options=None))]
pub fn approx_distinct<'py>(
    py: Python<'py>,
    source: Source,
    column: String,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyDict>> {
    configure_storage(&source.0, storage_options.as_ref())?;
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

fn table_report<'py>(
    py: Python<'py>,
    root: &str,
    r: &pqindex_core::TableIndexReport,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("table", root)?;
    d.set_item("index_file", &r.puffin)?;
    d.set_item("files", r.files)?;
    d.set_item("built", r.built)?;
    d.set_item("kept", r.kept)?;
    d.set_item("dropped", r.dropped)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("footer_bytes", r.footer_bytes)?;
    d.set_item("blobs_json", &r.blobs_json)?;
    Ok(d)
}

/// The table format of the local directory `path` ("delta" or "iceberg"), if it is one.
#[pyfunction]
pub fn table_format(path: &str) -> Option<&'static str> {
    pqindex_core::local_table_format(path)
}

/// What a table index rebuild changes: `definitions` to build and, when `drop` is set, the
/// kept indexes matching every filter given to leave out.
fn index_change(
    definitions: Definitions,
    drop: bool,
    kind: Option<String>,
    columns: Option<Vec<String>>,
    granularity: Option<String>,
) -> PyResult<pqindex_core::IndexChange> {
    let drop = if drop {
        Some(pqindex_core::DropFilter {
            kind,
            columns,
            granularity: granularity
                .as_deref()
                .map(self::granularity)
                .transpose()
                .py()?,
        })
    } else {
        None
    };
    Ok(pqindex_core::IndexChange {
        build: definitions.0,
        drop,
    })
}

/// Build the indexes `definitions` define (on the table's column names) for every live
/// file of the Delta table at `path`, and leave out the kept ones a `drop` filter selects;
/// a new Puffin file beside the table replaces the old ones.
#[pyfunction]
#[pyo3(signature = (path, definitions, *, drop=false, kind=None, columns=None, granularity=None))]
pub fn change_table_indexes<'py>(
    py: Python<'py>,
    path: String,
    definitions: Definitions,
    drop: bool,
    kind: Option<String>,
    columns: Option<Vec<String>>,
    granularity: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let root = path.clone();
    let change = index_change(definitions, drop, kind, columns, granularity)?;
    let r = run_blocking(py, move |_| {
        pqindex_core::change_delta_indexes(
            &root,
            &change,
            &pqindex_core::TableOptions::default(),
            global_cache(),
        )
    })?
    .py()?;
    table_report(py, &path, &r)
}

/// `change_table_indexes` for a table snapshot planned elsewhere (an Iceberg table's): the
/// new Puffin file goes to `dir`; `index_files` are the Puffin files the table has,
/// `fields` each column's field ids.
#[pyfunction]
#[pyo3(signature = (
    files, schema, definitions, *, root, version, index_files, dir, fields,
    drop=false, kind=None, columns=None, granularity=None
))]
#[allow(clippy::too_many_arguments)]
pub fn change_snapshot_indexes<'py>(
    py: Python<'py>,
    files: pyo3_arrow::input::AnyRecordBatch,
    schema: pyo3_arrow::PySchema,
    definitions: Definitions,
    root: String,
    version: i64,
    index_files: Vec<String>,
    dir: String,
    fields: std::collections::HashMap<String, Vec<i32>>,
    drop: bool,
    kind: Option<String>,
    columns: Option<Vec<String>>,
    granularity: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let batches = files
        .into_reader()?
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::Arrow)
        .py()?;
    let mut snapshot = pqindex_core::snapshot_from_arrow(
        pqindex_core::TableFormat::Iceberg,
        &root,
        version,
        schema.into_inner(),
        &batches,
    )
    .py()?;
    snapshot.index_files = index_files;
    let change = index_change(definitions, drop, kind, columns, granularity)?;
    let r = run_blocking(py, move |_| {
        pqindex_core::change_snapshot_indexes(
            &snapshot,
            &change,
            std::path::Path::new(&dir),
            &fields,
            global_cache(),
        )
    })?
    .py()?;
    table_report(py, &root, &r)
}

/// The indexes kept for the files of the table at `root`: in the Puffin files
/// `index_files`, or (for a Delta table) in its index directory. One dict each: data file,
/// its size, and the index's kind, columns, granularity, offset, length.
#[pyfunction]
#[pyo3(signature = (root, index_files=None))]
pub fn table_indexes<'py>(
    py: Python<'py>,
    root: String,
    index_files: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyList>> {
    let found = run_blocking(py, move |_| {
        let files = match index_files {
            Some(f) => f,
            None => pqindex_core::delta_index_files(&root)?,
        };
        pqindex_core::TableIndexes::load(&root, &files).map(|t| t.all())
    })?
    .py()?;
    let out = PyList::empty(py);
    for (path, size, l) in &found {
        let d = locator_dict(py, l)?;
        d.set_item("data_file", path)?;
        d.set_item("data_file_size", size)?;
        out.append(d)?;
    }
    Ok(out)
}
