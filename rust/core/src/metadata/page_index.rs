//! Page geometry from the page index: where a file's ColumnIndex and OffsetIndex are, and
//! the row boundaries of a column chunk's pages.

use std::ops::Range;

use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

/// Whether any column chunk declares a page index.
pub fn has_page_index(md: &ParquetMetaData) -> bool {
    md.row_groups().iter().any(|rg| {
        rg.columns()
            .iter()
            .any(|c| c.offset_index_offset().is_some() && c.column_index_offset().is_some())
    })
}

/// The offset index of one column chunk, if loaded.
pub fn offset_index(md: &ParquetMetaData, rg: usize, leaf: usize) -> Option<&OffsetIndexMetaData> {
    md.offset_index()?.get(rg)?.get(leaf)
}

/// First row of each page and the row after the last: `pages + 1` boundaries.
pub fn page_boundaries(oi: &OffsetIndexMetaData, rows: u64) -> Vec<u64> {
    let mut b: Vec<u64> = oi
        .page_locations()
        .iter()
        .map(|p| p.first_row_index.max(0) as u64)
        .collect();
    b.push(rows);
    b
}

/// The bytes between a chunk's start and its first data page: its dictionary page.
pub fn dictionary_range(md: &ParquetMetaData, rg: usize, leaf: usize) -> Option<Range<u64>> {
    let (start, _) = md.row_group(rg).column(leaf).byte_range();
    let first = offset_index(md, rg, leaf)?
        .page_locations()
        .first()?
        .offset
        .max(0) as u64;
    (first > start).then_some(start..first)
}

/// Where each column chunk's OffsetIndex is.
pub fn offset_index_ranges(md: &ParquetMetaData) -> Vec<Range<u64>> {
    md.row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .filter_map(|c| {
            checked_range(
                c.offset_index_offset(),
                c.offset_index_length().map(i64::from),
            )
        })
        .collect()
}

/// A byte range from an offset and a length read off a footer, if both are sane.
pub fn checked_range(offset: Option<i64>, length: Option<i64>) -> Option<Range<u64>> {
    let o = u64::try_from(offset?).ok()?;
    let l = u64::try_from(length?).ok()?;
    Some(o..o.checked_add(l)?)
}

/// The ranges holding the page index of every column of every row group (the reader
/// parses all of it).
pub fn page_index_ranges(md: &ParquetMetaData) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    for group in md.row_groups() {
        for chunk in group.columns() {
            out.extend(checked_range(
                chunk.column_index_offset(),
                chunk.column_index_length().map(i64::from),
            ));
            out.extend(checked_range(
                chunk.offset_index_offset(),
                chunk.offset_index_length().map(i64::from),
            ));
        }
    }
    out
}
