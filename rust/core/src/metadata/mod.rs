//! Parquet footers and page indexes: reading them with few requests, and a process-wide
//! cache keyed by file identity so no footer is parsed twice.

pub mod cache;
pub mod footer;
pub mod page_header;
pub mod tables;
pub mod thrift;

pub use cache::{global_cache, CacheInfo, MetadataCache};
pub use footer::{load_page_index, read_footer};
