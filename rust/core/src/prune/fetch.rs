//! What planning will read from a file besides its footer, fetched in one go.
//!
//! Once the footer is parsed, the page index, the bloom filters and the embedded index
//! blocks that the predicate's columns may use are known ranges. Fetching them together
//! (coalesced, concurrently on an object store) makes planning one more round trip at
//! most, instead of one per structure. Ranges that do not fit in the file are left out:
//! the reads that need them report the damage as they always do.

use std::ops::Range;

use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::index::locator::locators;
use crate::io::StorageFile;

/// The ranges holding the page index (every column of every row group: the reader parses
/// all of it), and the bloom filters of the `leaves` in `row_groups` and their embedded
/// index blocks.
pub fn planning_ranges(
    md: &ParquetMetaData,
    leaves: &[usize],
    row_groups: &[usize],
    page_index: bool,
) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut push = |offset: Option<i64>, length: Option<i64>| {
        if let (Some(o), Some(l)) = (offset, length) {
            if let (Ok(o), Ok(l)) = (u64::try_from(o), u64::try_from(l)) {
                if let Some(end) = o.checked_add(l) {
                    out.push(o..end);
                }
            }
        }
    };
    for (rg, group) in md.row_groups().iter().enumerate() {
        let candidate = row_groups.contains(&rg);
        for (leaf, chunk) in group.columns().iter().enumerate() {
            if page_index {
                push(
                    chunk.column_index_offset(),
                    chunk.column_index_length().map(i64::from),
                );
                push(
                    chunk.offset_index_offset(),
                    chunk.offset_index_length().map(i64::from),
                );
            }
            if candidate && leaves.contains(&leaf) {
                push(
                    chunk.bloom_filter_offset(),
                    chunk.bloom_filter_length().map(i64::from),
                );
            }
        }
    }
    let schema = md.file_metadata().schema_descr();
    let names: Vec<String> = leaves
        .iter()
        .filter(|l| **l < schema.num_columns())
        .map(|l| schema.column(*l).path().string())
        .collect();
    for (_, parsed) in locators(md.file_metadata().key_value_metadata()) {
        if let Ok(l) = parsed {
            if l.columns.iter().any(|c| names.contains(c)) {
                push(i64::try_from(l.offset).ok(), i64::try_from(l.length).ok());
            }
        }
    }
    out
}

/// The ranges of the page index alone.
pub fn page_index_ranges(md: &ParquetMetaData) -> Vec<Range<u64>> {
    planning_ranges(md, &[], &[], true)
}

/// Fetch the planning ranges of `file`, leaving out any that do not fit in it.
pub fn prefetch_for_planning(
    file: &StorageFile,
    md: &ParquetMetaData,
    leaves: &[usize],
    row_groups: &[usize],
    page_index: bool,
) -> Result<()> {
    let size = file.identity().size;
    let mut ranges = planning_ranges(md, leaves, row_groups, page_index);
    ranges.retain(|r| r.end <= size);
    file.prefetch(ranges)
}
