//! What a scan reads: files found under paths by Spark's rules, with hive partition
//! values taken from their directories.

pub mod listing;
pub mod partition;
pub mod watched;

pub use listing::{list_source, list_source_or_table, SourceFile, TableFormat};
