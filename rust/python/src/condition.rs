//! `where=` as Python users give it: SQL text, or the structured form (a dict of the
//! documented JSON shape, `docs/predicates.md`), which engines' filters are handed over in.

use pqindex_core::Condition;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A condition, SQL or structured.
pub struct Where(pub Condition);

impl<'py> FromPyObject<'_, 'py> for Where {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let obj = obj.to_owned();
        if obj.is_instance_of::<PyString>() {
            return Ok(Where(Condition::Sql(obj.extract()?)));
        }
        if !obj.is_instance_of::<pyo3::types::PyDict>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "where must be SQL text (str) or a structured predicate (dict), not {}",
                obj.get_type().name()?
            )));
        }
        let dumps = PyModule::import(obj.py(), "json")?.getattr("dumps")?;
        let text: String = dumps.call1((obj,)).and_then(|t| t.extract()).map_err(|e| {
            crate::error::to_py_err(pqindex_core::Error::Predicate(format!(
                "a structured predicate must be JSON data (dicts, lists, str, numbers, bool, None): {e}"
            )))
        })?;
        Ok(Where(Condition::Structured(text)))
    }
}

/// The core's condition of an optional `where=`.
pub fn condition(r#where: Option<Where>) -> Option<Condition> {
    r#where.map(|w| w.0)
}
