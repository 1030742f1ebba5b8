//! Parquet metadata: footers and page indexes read with few requests, a process-wide cache
//! keyed by file identity so no footer is parsed twice, Parquet bloom filters, the page
//! and bloom headers pqindex reads itself, and schema helpers.

pub mod bloom_filter;
pub mod bloom_header;
pub mod cache;
pub mod dictionary_page;
pub mod encryption;
pub mod footer;
pub mod footer_splice;
pub mod mend;
pub mod page_header;
pub mod page_index;
pub mod reserved_counts;
pub mod schema;
pub mod tables;
pub mod thrift;
pub mod thrift_lists;

pub use cache::{global_cache, CacheInfo, MetadataCache};
pub use footer::{footer_start, load_page_index, read_footer};

/// A file's footer as `read_metadata` gives it, with the file's size and the footer's.
pub struct FileFooter {
    pub metadata: std::sync::Arc<parquet::file::metadata::ParquetMetaData>,
    /// Bytes in the file.
    pub size: u64,
    /// Bytes of the Thrift footer (the metadata, without its length and magic).
    pub footer_length: u64,
}

/// The footer of the file at `path`, with its page index when `page_index` is set, through
/// `cache`.
pub fn read_metadata(
    path: &str,
    page_index: bool,
    cache: &MetadataCache,
) -> crate::error::Result<FileFooter> {
    let file =
        crate::io::StorageFile::open(path, std::sync::Arc::new(crate::io::IoStats::default()))?;
    let metadata = cache.get(&file, page_index)?.0;
    let size = file.identity().size;
    let footer_length = size - 8 - footer_start(&file)?;
    Ok(FileFooter {
        metadata,
        size,
        footer_length,
    })
}
