//! pqindex core: hierarchical pruning (files, row groups, pages) and selected-page reads
//! over Parquet, with no Python in sight.

pub mod aggregate;
pub mod append;
pub mod catalog;
pub mod error;
pub mod index;
pub mod io;
pub mod metadata;
pub mod predicate;
pub mod prune;
pub mod read;
pub mod scan;
pub mod source;
pub mod stream;
#[cfg(test)]
mod testing;
pub mod units;
pub mod write;

pub use error::{Error, Result};
pub use scan::{Scan, ScanOptions, ScanStream};
