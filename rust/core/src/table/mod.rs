//! Table formats (Delta Lake, Iceberg): a snapshot's data files as the table's metadata
//! lists them, with what the metadata knows of each (size, partition values, statistics,
//! deleted rows) and how the files' columns map to the table's.
//!
//! A table's metadata, not its directory, says which files hold a snapshot: a listing
//! would return files removed by deletes and overwrites, and columns under their physical
//! names. Planning takes files, partition values and per-file statistics from here (files
//! are ruled out without being opened, `stats.rs`), maps each file's columns to the
//! table's (`columns.rs`), and removes deleted rows from the selection before any page is
//! read.

pub mod columns;
pub mod deletion_vectors;
pub mod delta;
pub mod files;
pub mod indexes;
pub mod kernel_store;
pub mod puffin;
pub mod snapshot_cache;
pub mod stats;
pub mod values;

use std::sync::Arc;

use arrow_schema::{Field, SchemaRef};

use crate::io::FileIdentity;
use crate::predicate::Value;
pub use crate::source::TableFormat;

/// One snapshot of a table.
#[derive(Debug)]
pub struct TableSnapshot {
    pub format: TableFormat,
    /// The table's location as given.
    pub root: String,
    /// The snapshot's version (Delta) or snapshot id (Iceberg).
    pub version: i64,
    /// The data columns under their logical names, in table order (partition columns
    /// apart); each field's metadata names its physical name or field id.
    pub schema: SchemaRef,
    /// Partition columns, whose values the metadata holds for each file.
    pub partitions: Vec<Field>,
    /// Shared with the process's snapshot cache (`snapshot_cache`).
    pub files: Arc<Vec<TableFile>>,
    /// Puffin files holding indexes of the files (`indexes.rs`).
    pub index_files: Vec<String>,
}

/// One data file of a snapshot.
#[derive(Debug, Clone)]
pub struct TableFile {
    /// Absolute path or URL.
    pub path: String,
    /// Bytes, as the metadata records them.
    pub size: u64,
    /// Modification time in ms since the epoch, as recorded (0 when unknown).
    pub modified_ms: i64,
    /// Rows in the file (before deletes), when recorded.
    pub records: Option<u64>,
    /// Values of `TableSnapshot::partitions`, in order.
    pub partition_values: Vec<Option<Value>>,
    /// What the metadata knows of the file's columns' values.
    pub stats: Vec<ColumnStats>,
    /// Positions (0-based, in file order) of rows deleted from the file.
    pub deleted: Option<Arc<Vec<u64>>>,
    /// Table columns whose value in this file the metadata holds as an identity partition
    /// (Iceberg): a file without such a column (one migrated from a Hive table) reads it
    /// from the metadata, which pqindex refuses rather than reading NULL.
    pub identity_columns: Vec<String>,
}

impl TableFile {
    /// The identity planning reads the file under: the path and the size the metadata
    /// records (table data files never change in place).
    pub fn identity(&self) -> FileIdentity {
        FileIdentity {
            path: self.path.clone(),
            size: self.size,
            mtime_ns: self.modified_ms.saturating_mul(1_000_000),
            ino: 0,
            ctime_ns: 0,
            etag: None,
        }
    }
}

/// Bounds and null count of one leaf column of one file, in the column's logical domain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnStats {
    /// The leaf's logical path (top-level name, then struct field names).
    pub path: Vec<String>,
    /// A value at or below every non-null value.
    pub min: Option<Value>,
    /// A value at or above every non-null value.
    pub max: Option<Value>,
    pub null_count: Option<u64>,
}

/// Where a table lives, and which snapshot to read.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Read this version (Delta) instead of the latest.
    pub version: Option<i64>,
    /// Read the latest version committed at or before this time (ms since the epoch).
    pub timestamp_ms: Option<i64>,
    /// Object-store options (the same keys as pqindex's `storage_options`).
    pub storage_options: Vec<(String, String)>,
}
