//! `approx_distinct`: the number of distinct values of a column over a source, from the
//! files' HyperLogLog sketches; a file without a sketch is read once to make one.

use std::sync::Arc;

use crate::error::Result;
use crate::index::column_values::for_each_page;
use crate::index::hash::hash_bytes;
use crate::index::hll::{HllIndex, Sketch, DEFAULT_PRECISION};
use crate::index::locator::locators;
use crate::index::registry;
use crate::index::span::check_spans;
use crate::io::{IoStats, StorageFile};
use crate::metadata::MetadataCache;
use crate::source::list_source;

/// An estimate and where it came from.
#[derive(Debug, Clone)]
pub struct DistinctEstimate {
    pub estimate: f64,
    /// Relative standard error of the estimate.
    pub standard_error: f64,
    pub files: u64,
    /// Files whose column had no usable sketch and was read instead.
    pub files_read: u64,
    /// Footer and sketch bytes read (not the columns of files read instead).
    pub bytes_read: u64,
}

pub fn approx_distinct(
    paths: &[String],
    column: &str,
    cache: &MetadataCache,
) -> Result<DistinctEstimate> {
    let listing = list_source(paths)?;
    let io = Arc::new(IoStats::default());
    let mut total = Sketch::new(DEFAULT_PRECISION);
    let mut files_read = 0;
    for f in listing.files.iter() {
        let file = StorageFile::open(&f.path, io.clone())?;
        let (md, _) = cache.get(&file, false)?;
        let body_end = crate::metadata::footer_start(&file)?;
        let from_index = locators(md.file_metadata().key_value_metadata())
            .into_iter()
            .filter_map(|(_, l)| l.ok())
            .filter(|l| l.kind == "hll" && l.columns == [column.to_string()])
            .find_map(|l| {
                let payload = registry::open_block(&file, &l, body_end)
                    .ok()?
                    .1
                    .payload()
                    .ok()?;
                let index = HllIndex::decode(&payload).ok()?;
                check_spans(&index.spans, &md).ok()?;
                index.merged()
            })
            .filter(|s| s.precision == DEFAULT_PRECISION);
        match from_index {
            Some(s) => total.merge(&s)?,
            None => {
                files_read += 1;
                for_each_page(&f.path, column, &mut |p| {
                    for v in p.values {
                        total.insert_hash(hash_bytes(v));
                    }
                    Ok(())
                })?;
            }
        }
    }
    Ok(DistinctEstimate {
        estimate: total.estimate(),
        standard_error: total.standard_error(),
        files: listing.files.len() as u64,
        files_read,
        bytes_read: io.bytes(),
    })
}
