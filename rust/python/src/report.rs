//! What a planned scan reports to Python besides its rows: counters as a dict, and indexes
//! planning skipped as `pqindex.IndexWarning`s.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Counters as a Python dict, in their order.
pub fn metrics_dict<'py>(py: Python<'py>, metrics: &[(&str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in metrics {
        d.set_item(k, v)?;
    }
    Ok(d)
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
