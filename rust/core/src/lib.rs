//! pqindex core: hierarchical pruning (files, row groups, pages) and selected-page reads
//! over Parquet, with no Python in sight.

pub mod error;
pub mod io;
pub mod predicate;

pub use error::{Error, Result};
