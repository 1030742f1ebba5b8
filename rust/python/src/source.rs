//! Accepting a source the way Python users write one: a path, a `PathLike`, or a list.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// One or more paths.
pub struct Source(pub Vec<String>);

fn path_of(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let fspath = PyModule::import(obj.py(), "os")?.getattr("fspath")?;
    let p = fspath.call1((obj,))?;
    p.extract::<String>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("paths must be str or os.PathLike[str], not bytes")
    })
}

impl<'py> FromPyObject<'_, 'py> for Source {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let obj = obj.to_owned();
        if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
            return Ok(Source(vec![path_of(&obj)?]));
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            let mut out = Vec::new();
            for item in obj.try_iter()? {
                out.push(path_of(&item?)?);
            }
            return Ok(Source(out));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "source must be a path or a list of paths, not {}",
            obj.get_type().name()?
        )))
    }
}

/// `storage_options` as Python users write them: string keys, values that are strings,
/// numbers or booleans.
pub struct StorageOptions(pub Vec<(String, String)>);

impl<'py> FromPyObject<'_, 'py> for StorageOptions {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let dict = obj.cast::<pyo3::types::PyDict>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("storage_options must be a dict")
        })?;
        let mut out = Vec::new();
        for (k, v) in dict.iter() {
            let key: String = k.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("storage_options keys must be str")
            })?;
            let value = if v.is_instance_of::<pyo3::types::PyBool>() {
                if v.extract::<bool>()? {
                    "true"
                } else {
                    "false"
                }
                .to_string()
            } else if v.is_instance_of::<PyString>()
                || v.is_instance_of::<pyo3::types::PyInt>()
                || v.is_instance_of::<pyo3::types::PyFloat>()
            {
                v.str()?.to_string()
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "storage option {key}: values must be str, int, float or bool, not {}",
                    v.get_type().name()?
                )));
            };
            out.push((key, value));
        }
        Ok(StorageOptions(out))
    }
}

/// Configure the store of every object-store URL in `paths` with `options` (once per
/// store). Local paths need no configuration; options given for them are refused.
pub fn configure_storage(paths: &[String], options: Option<&StorageOptions>) -> PyResult<()> {
    use pqindex_core::storage as object;
    let Some(options) = options else {
        return Ok(());
    };
    let remote: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|p| object::is_remote(p))
        .collect();
    if remote.is_empty() {
        if options.0.is_empty() {
            return Ok(());
        }
        return Err(crate::error::to_py_err(
            pqindex_core::Error::InvalidArgument(
                "storage_options apply to object-store URLs (s3://, gs://, az://, https://); the source names local files".into(),
            ),
        ));
    }
    object::configure_all(&remote, &options.0).map_err(crate::error::to_py_err)
}

/// Whether `path` names an object in a store (`s3://`, `gs://`, ...) rather than a local file.
#[pyfunction]
pub fn is_object_url(path: &str) -> bool {
    pqindex_core::storage::is_remote(path)
}
