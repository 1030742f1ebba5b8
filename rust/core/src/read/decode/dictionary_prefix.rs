//! Decoding only the dictionary entries a read's pages use.
//!
//! A writer adds a value to a chunk's dictionary when it first meets it, so on a column
//! sorted or clustered by its values the pages at the start of a chunk use only the
//! dictionary's first entries. A lookup on such a column reads a page or two, yet would
//! decompress and decode the whole dictionary page (up to 1 MiB on Spark's files) for a
//! few thousand entries. When the pages a read may use are few, they are decompressed
//! first ([`crate::read::decode::chunk_pages`]); the largest key they hold says how many entries they
//! use, and only those are decompressed and handed to the reader as the dictionary. In
//! the middle of such a chunk the smallest key counts too: entries of a fixed width in a
//! Snappy page are decoded from the 64 KiB block holding it on
//! ([`crate::read::decode::snappy_prefix::snappy_window`]), those before it left as filler that no
//! page read may use.
//!
//! Entries of fixed width end at `k × width`; byte arrays are walked by their lengths,
//! in a start decompressed to a guess from their mean size (all of it when the guess
//! falls short, or when a Zstandard frame does not declare its size). The start of a
//! page decompresses alone: Snappy's with [`crate::read::decode::snappy_prefix`], Zstandard's by
//! stopping its stream.

use bytes::Bytes;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::basic::{Compression, Encoding, Type};
use parquet::column::page::Page;
use parquet::encodings::rle::RleDecoder;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::PageLocation;
use parquet::schema::types::ColumnDescriptor;

/// Most pages a read may use for its dictionary to be cut: each is decompressed before
/// the dictionary and held until the reader asks for it.
pub(crate) const MAX_PAGES: usize = 8;

/// Dictionaries smaller than this (decompressed) are decompressed whole.
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// The data pages (by position in the offset index `locations`) that a read of
/// `selection` of a chunk of `rows` rows decodes: those holding a selected row, or, for a
/// reader selecting rows by a `mask`, every page from the first of them to the last.
/// `None` when the read is of every row, of more than [`MAX_PAGES`] pages, or of all the
/// chunk's pages.
pub(crate) fn pages_read(
    locations: &[PageLocation],
    rows: u64,
    selection: Option<&RowSelection>,
    mask: bool,
) -> Option<Vec<usize>> {
    let page_of = |row: u64| {
        locations
            .partition_point(|p| u64::try_from(p.first_row_index).unwrap_or(0) <= row)
            .checked_sub(1)
    };
    // Where the last page taken ends: a run inside it needs no search (a scattered
    // selection has tens of thousands of runs in a few pages).
    let page_end = |page: usize| {
        locations
            .get(page + 1)
            .map_or(rows, |p| u64::try_from(p.first_row_index).unwrap_or(0))
    };
    let mut pages: Vec<usize> = Vec::new();
    let mut last_end = 0u64;
    let mut at = 0u64;
    for s in selection?.iter() {
        let end = at.saturating_add(s.row_count as u64).min(rows);
        if !s.skip && end > last_end {
            let (first, last) = (page_of(at)?, page_of(end - 1)?);
            let from = pages.last().map_or(first, |p| first.max(p + 1));
            pages.extend(from..=last);
            if pages.len() > MAX_PAGES {
                return None;
            }
            last_end = page_end(last);
        }
        at = end;
    }
    if mask {
        let (first, last) = (*pages.first()?, *pages.last()?);
        pages = (first..=last).collect();
    }
    (!pages.is_empty() && pages.len() <= MAX_PAGES && pages.len() < locations.len())
        .then_some(pages)
}

/// Whether `chunk`'s dictionary can be cut: it has one, of values other than booleans,
/// and its pages can be decompressed in part.
pub(crate) fn cuttable(chunk: &ColumnChunkMetaData) -> bool {
    chunk.dictionary_page_offset().is_some()
        && chunk.column_descr().physical_type() != Type::BOOLEAN
        && in_part(chunk)
}

/// Whether the start of `chunk`'s pages can be decompressed alone: its codec's streams
/// are written in order (Snappy, Zstandard).
pub(crate) fn in_part(chunk: &ColumnChunkMetaData) -> bool {
    matches!(
        chunk.compression(),
        Compression::SNAPPY | Compression::ZSTD(_)
    )
}

/// Where the first `entries` byte arrays of a plain-encoded dictionary end in `start`
/// (each a 4-byte little-endian length and its bytes); `None` if `start` holds fewer.
pub(crate) fn byte_arrays_end(start: &[u8], entries: usize) -> Option<usize> {
    let mut at = 0usize;
    for _ in 0..entries {
        let len = start.get(at..at.checked_add(4)?)?;
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        at = at.checked_add(4)?.checked_add(len)?;
        if at > start.len() {
            return None;
        }
    }
    Some(at)
}

/// Bytes of each dictionary entry of `column`, where all entries take the same.
pub(crate) fn entry_width(column: &ColumnDescriptor) -> Option<usize> {
    match column.physical_type() {
        Type::INT32 | Type::FLOAT => Some(4),
        Type::INT64 | Type::DOUBLE => Some(8),
        Type::INT96 => Some(12),
        Type::FIXED_LEN_BYTE_ARRAY => usize::try_from(column.type_length())
            .ok()
            .filter(|w| *w > 0),
        Type::BOOLEAN | Type::BYTE_ARRAY => None,
    }
}

/// The dictionary entries the decompressed data page `page` of `column` may use: the
/// smallest key it holds and one more than the largest. Counts at least every key the
/// page holds (a page with NULLs may count its padding too), or stops at a largest key of
/// `most` or more (a cut no longer worth making), the smallest then counted only so far;
/// `None` when the page is not dictionary encoded or holds no key; errors where the keys
/// cannot be found.
pub(crate) fn keys_used(
    page: &Page,
    column: &ColumnDescriptor,
    most: usize,
) -> Result<Option<(usize, usize)>> {
    let (buf, values) = match page {
        Page::DataPage {
            buf,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            num_values,
            ..
        } => {
            if !is_dictionary(*encoding) {
                return Ok(None);
            }
            let mut at = 0;
            for (max, encoding) in [
                (column.max_rep_level(), rep_level_encoding),
                (column.max_def_level(), def_level_encoding),
            ] {
                if max > 0 {
                    if *encoding != Encoding::RLE {
                        return Err(unlocated("levels not RLE encoded"));
                    }
                    let len = buf
                        .get(at..at + 4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                        .ok_or_else(|| unlocated("levels cut short"))?;
                    at = at + 4 + len;
                }
            }
            (buf.slice(at.min(buf.len())..), *num_values)
        }
        Page::DataPageV2 {
            buf,
            encoding,
            def_levels_byte_len,
            rep_levels_byte_len,
            num_values,
            ..
        } => {
            if !is_dictionary(*encoding) {
                return Ok(None);
            }
            let at = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
            (buf.slice(at.min(buf.len())..), *num_values)
        }
        Page::DictionaryPage { .. } => return Err(unlocated("a dictionary page")),
    };
    let most = u32::try_from(most).unwrap_or(u32::MAX);
    let keys = key_bounds(&buf, values as usize, most)?;
    Ok(keys.map(|(lo, hi)| (lo as usize, hi as usize + 1)))
}

fn is_dictionary(encoding: Encoding) -> bool {
    matches!(
        encoding,
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
    )
}

/// The smallest and the largest of the first `count` keys of a dictionary-encoded page's
/// values (their bit width, then the keys in the RLE/bit-packed hybrid encoding); fewer
/// if the values end first. Stops at the first batch of keys holding one of `most` or
/// more.
fn key_bounds(values: &Bytes, count: usize, most: u32) -> Result<Option<(u32, u32)>> {
    let Some(&bit_width) = values.first() else {
        return Ok(None);
    };
    if bit_width > 32 {
        return Err(unlocated(format!("keys of {bit_width} bits")));
    }
    let mut keys = RleDecoder::new(bit_width);
    keys.set_data(values.slice(1..))?;
    let mut batch = vec![0u32; count.min(1024)];
    let (mut left, mut bounds): (usize, Option<(u32, u32)>) = (count, None);
    while left > 0 {
        let n = left.min(batch.len());
        let got = keys.get_batch(&mut batch[..n])?;
        for &k in &batch[..got] {
            bounds = Some(bounds.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
        }
        if got < n || bounds.is_some_and(|(_, hi)| hi >= most) {
            break;
        }
        left -= n;
    }
    Ok(bounds)
}

fn unlocated(why: impl std::fmt::Display) -> ParquetError {
    ParquetError::General(format!(
        "the dictionary keys of a page cannot be found: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::RowSelector;

    fn locations(firsts: &[i64]) -> Vec<PageLocation> {
        firsts
            .iter()
            .map(|&first_row_index| PageLocation {
                offset: first_row_index * 10,
                compressed_page_size: 10,
                first_row_index,
            })
            .collect()
    }

    #[test]
    fn the_pages_read_are_those_holding_selected_rows_or_all_between_for_a_mask() {
        let pages = locations(&[0, 100, 200, 300, 400]);
        let select = |s: Vec<RowSelector>| RowSelection::from(s);
        let read = |s: &RowSelection, mask| pages_read(&pages, 500, Some(s), mask);
        let within = select(vec![RowSelector::skip(120), RowSelector::select(5)]);
        assert_eq!(read(&within, false), Some(vec![1]));
        assert_eq!(read(&within, true), Some(vec![1]));
        let across = select(vec![
            RowSelector::skip(99),
            RowSelector::select(2),
            RowSelector::skip(249),
            RowSelector::select(1),
            RowSelector::skip(149),
        ]);
        assert_eq!(read(&across, false), Some(vec![0, 1, 3]));
        assert_eq!(read(&across, true), Some(vec![0, 1, 2, 3]));
        // Many runs in a page, then one at the start of each of the next two.
        let runs = select(
            std::iter::once(RowSelector::skip(120))
                .chain((0..8).flat_map(|_| [RowSelector::select(1), RowSelector::skip(9)]))
                .chain([RowSelector::select(1), RowSelector::skip(99)])
                .chain([RowSelector::select(1), RowSelector::skip(199)])
                .collect(),
        );
        assert_eq!(read(&runs, false), Some(vec![1, 2, 3]));
        let last_row = select(vec![RowSelector::skip(499), RowSelector::select(1)]);
        assert_eq!(read(&last_row, false), Some(vec![4]));
        // Every page, no selection, nothing selected: no cut.
        let all = select(vec![RowSelector::skip(50), RowSelector::select(450)]);
        assert_eq!(read(&all, false), None);
        assert_eq!(pages_read(&pages, 500, None, false), None);
        let none = select(vec![RowSelector::skip(500)]);
        assert_eq!(read(&none, false), None);
        // More pages than may be held.
        let many = locations(&(0..20).map(|i| i * 10).collect::<Vec<_>>());
        let wide = select(vec![RowSelector::select(95)]);
        assert_eq!(pages_read(&many, 200, Some(&wide), false), None);
        let ends = select(vec![
            RowSelector::select(1),
            RowSelector::skip(180),
            RowSelector::select(1),
        ]);
        assert_eq!(
            pages_read(&many, 200, Some(&ends), false),
            Some(vec![0, 18])
        );
        assert_eq!(pages_read(&many, 200, Some(&ends), true), None);
    }

    #[test]
    fn byte_arrays_are_walked_by_their_lengths() {
        let mut dict = Vec::new();
        for v in ["a", "", "ccc"] {
            dict.extend_from_slice(&(v.len() as u32).to_le_bytes());
            dict.extend_from_slice(v.as_bytes());
        }
        assert_eq!(byte_arrays_end(&dict, 0), Some(0));
        assert_eq!(byte_arrays_end(&dict, 2), Some(9));
        assert_eq!(byte_arrays_end(&dict, 3), Some(16));
        assert_eq!(byte_arrays_end(&dict, 4), None);
        assert_eq!(byte_arrays_end(&dict[..15], 3), None);
        // A hostile length.
        assert_eq!(byte_arrays_end(&[0xff, 0xff, 0xff, 0xff, 1], 1), None);
    }

    #[test]
    fn the_smallest_and_largest_keys_of_runs_and_packed_groups() {
        // Bit width 5: a run of 3 keys of 7, then a bit-packed group of eight keys 1..8
        // with a 30 among them.
        let mut values = vec![5u8, 3 << 1, 7, (1 << 1) | 1];
        let keys = [3u64, 1, 2, 30, 4, 5, 6, 7];
        let packed = keys
            .iter()
            .enumerate()
            .fold(0u64, |v, (i, k)| v | (k << (5 * i)));
        values.extend_from_slice(&packed.to_le_bytes()[..5]);
        let values = Bytes::from(values);
        assert_eq!(key_bounds(&values, 11, u32::MAX).unwrap(), Some((1, 30)));
        // Only the run's keys counted.
        assert_eq!(key_bounds(&values, 3, u32::MAX).unwrap(), Some((7, 7)));
        assert_eq!(key_bounds(&values, 4, u32::MAX).unwrap(), Some((3, 7)));
        assert_eq!(key_bounds(&Bytes::new(), 3, u32::MAX).unwrap(), None);
        assert!(key_bounds(&Bytes::from_static(&[40, 0]), 3, u32::MAX).is_err());
        // Stopping after the first batch of keys (1,024) holding one of `most` or more:
        // a run of 1,024 keys of 7, then one of 30.
        let runs = Bytes::from_static(&[5, 0x80, 0x10, 7, 1 << 1, 30]);
        assert_eq!(key_bounds(&runs, 1025, u32::MAX).unwrap(), Some((7, 30)));
        assert_eq!(key_bounds(&runs, 1025, 5).unwrap(), Some((7, 7)));
    }
}
