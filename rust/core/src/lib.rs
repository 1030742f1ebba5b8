//! pqindex core: hierarchical pruning (files, row groups, pages) and selected-page reads
//! over Parquet, with no Python in sight.
//!
//! Layers, each using only those before it (`scripts/check_layers.py` checks it):
//! `error` and `threads` (workers kept for the process), `io` (storage), `metadata`
//! (footers, page indexes, schema helpers), `predicate` (SQL text to a bound predicate,
//! exact evaluation), `source` (listing), `plan` (the plan's types), `prune` (evidence
//! and the planner), `index` (embedded indexes), `catalog`, `read` (selected pages, late
//! materialisation), `query` (scan, stream, units wire form, aggregates) and `write`.
//! `docs/architecture.md` draws them.
//!
//! The modules are private; this file re-exports what the Python bindings and the
//! benches use.

mod catalog;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod index;
mod io;
mod metadata;
mod plan;
mod predicate;
mod prune;
mod query;
mod read;
mod source;
mod table;
#[cfg(test)]
mod testing;
mod threads;
mod write;

pub use error::{Error, Result};

/// The names of a scan's counters, in the order `Scan::metrics` gives them.
pub const METRIC_NAMES: &[&str] = plan::Metrics::NAMES;
/// The counters reading a scan's units adds to (what Spark's executors report back).
pub const READ_METRIC_NAMES: &[&str] = plan::Metrics::READING;

pub use plan::Decoding;
pub use predicate::keys::KeySpec;
pub use predicate::Condition;
pub use query::aggregate::{aggregate, aggregate_table, AggregateOptions, Aggregation};
pub use query::parallel::default_threads;
pub use query::scan::{Scan, ScanOptions};
pub use query::stream::{read_ahead, set_read_ahead, ScanStream, DEFAULT_READ_AHEAD};
pub use query::top_k::OrderKey;
/// Run a job on a thread kept for the process (a warm allocator heap), not a fresh one.
pub use threads::spawn as spawn_kept;

pub use catalog::{
    default_columns as default_catalog_columns, Catalog, CatalogColumn, CatalogReport,
};
pub use index::approx_distinct::{approx_distinct, DistinctEstimate};
pub use index::build::{add_indexes, add_indexes_with, drop_indexes, drop_indexes_with};
pub use index::journal::{recover, recover_until, Recovery};
pub use index::kind::{IndexKind, KindInfo, Param, ParamType, ParamValue};
pub use index::locator::{locators as index_locators, Granularity, Locator};
pub use index::registry::kinds as index_kinds;
pub use index::rewrite::{list_indexes, AppendReport, RewriteMode};
pub use index::spec::IndexSpec;
pub use index::verify::{verify, Checked};
pub use metadata::encryption::{Decryption, FileDecryptionProperties, KeyRetriever};
pub use metadata::{global_cache, read_metadata, CacheInfo, FileFooter, MetadataCache};
pub use source::list_source;
pub use source::listing::forget_kept as forget_kept_listings;
pub use table::delta::delta_puffins as delta_index_files;
pub use table::files::{cached_snapshot_from_arrow, snapshot_from_arrow};
pub use table::indexes::{
    change_delta_indexes, change_snapshot_indexes, DropFilter, IndexChange, TableIndexReport,
    TableIndexes,
};
pub use table::{TableFormat, TableOptions, TableSnapshot};

/// The table format of a local directory ("delta" or "iceberg"), if it is a table's.
pub fn local_table_format(path: &str) -> Option<&'static str> {
    match source::listing::table_format(std::path::Path::new(path))? {
        TableFormat::Delta => Some("delta"),
        TableFormat::Iceberg => Some("iceberg"),
    }
}
pub use write::{write, WriteOptions};

/// Tables describing a footer: one row per row group, per column chunk, per page.
pub mod metadata_tables {
    pub use crate::metadata::tables::{columns, pages, row_groups};
}

/// Object stores: configuring them, and the object operations the bindings expose.
pub mod storage {
    pub use crate::io::object::{configure_all, is_remote, locate, ObjectLocation};
}

/// Internals the crate's own criterion benches measure one by one; not a stable API.
#[doc(hidden)]
pub mod bench {
    pub use crate::io::{IoStats, StorageFile};
    pub use crate::metadata::{load_page_index, read_footer};
    pub use crate::plan::RowRanges;
    pub use crate::predicate::{bind, sql, BindSchema, Predicate};
    pub use crate::prune::page_index::row_ranges;
    pub use crate::prune::parquet_bloom::leaf_may_match;
    pub use crate::read::decode::snappy_prefix::snappy_prefix;
    pub use crate::write::properties;
}
