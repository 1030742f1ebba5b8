//! The `pqindex._native` extension module: thin bindings over `pqindex-core`.

mod aggregate;
mod allocator;
mod arrow_stream;
mod catalog;
mod condition;
mod decryption;
mod error;
mod index;
mod metadata;
mod pyarrow;
mod report;
mod runtime;
mod scan;
mod source;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    allocator::tune();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // A scan's counter names, and those reading its units adds to (Spark's executors
    // report these back to the driver).
    m.add("METRIC_NAMES", pqindex_core::METRIC_NAMES.to_vec())?;
    m.add(
        "READ_METRIC_NAMES",
        pqindex_core::READ_METRIC_NAMES.to_vec(),
    )?;
    m.add_class::<scan::PyScan>()?;
    m.add_class::<metadata::PyFileMetadata>()?;
    m.add_class::<aggregate::PyAggregation>()?;
    m.add_class::<catalog::PyCatalog>()?;
    m.add_function(wrap_pyfunction!(catalog::catalog_rows, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::write_catalog, m)?)?;
    m.add_function(wrap_pyfunction!(aggregate::aggregate, m)?)?;
    m.add_function(wrap_pyfunction!(aggregate::aggregate_table, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_function(wrap_pyfunction!(index::recover, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan_table, m)?)?;
    m.add_function(wrap_pyfunction!(scan::list_files, m)?)?;
    m.add_function(wrap_pyfunction!(source::is_object_url, m)?)?;
    m.add_function(wrap_pyfunction!(scan::read_units, m)?)?;
    m.add_function(wrap_pyfunction!(scan::set_read_ahead, m)?)?;
    m.add_function(wrap_pyfunction!(scan::read_ahead, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::read_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::metadata_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::set_metadata_cache_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::clear_metadata_cache, m)?)?;
    m.add_function(wrap_pyfunction!(write::write, m)?)?;
    m.add_function(wrap_pyfunction!(write::upload, m)?)?;
    m.add_function(wrap_pyfunction!(write::delete_objects, m)?)?;
    m.add_function(wrap_pyfunction!(write::list_objects, m)?)?;
    m.add_function(wrap_pyfunction!(index::add_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(index::drop_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(index::list_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(index::verify, m)?)?;
    m.add_function(wrap_pyfunction!(index::approx_distinct, m)?)?;
    m.add_function(wrap_pyfunction!(index::index_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(index::check_index, m)?)?;
    m.add_function(wrap_pyfunction!(index::table_format, m)?)?;
    m.add_function(wrap_pyfunction!(index::change_table_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(index::change_snapshot_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(index::table_indexes, m)?)?;
    Ok(())
}
