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
