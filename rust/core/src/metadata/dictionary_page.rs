//! A column chunk's dictionary page as the set of values the chunk holds.
//!
//! When every data page of a chunk is dictionary encoded, no row holds a value its
//! dictionary page lacks, so the page answers `x = v` and `x IN (..)` for the whole row
//! group, exactly. The footer says whether that is so (its page encoding statistics) and
//! where the page is; the values are plain encoded, one after another.

use std::ops::Range;

use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use crate::metadata::page_index::dictionary_range;

/// The largest dictionary page (compressed, with its header) asked about a row group:
/// writers cap dictionaries at about 1 MiB and fall back to plain pages beyond.
pub const MAX_PROBED_BYTES: u64 = 2 << 20;

/// Whether the footer says every data page of the chunk is dictionary encoded.
pub fn only_dictionary_pages(chunk: &ColumnChunkMetaData) -> bool {
    chunk.page_encoding_stats_mask().is_some_and(|mask| {
        mask.encodings()
            .all(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY))
    })
}

/// Where the dictionary page of leaf `leaf` in row group `rg` is, when it holds every
/// value of the chunk and is small enough to ask ([`MAX_PROBED_BYTES`]). Found through
/// the offset index, or else from the footer's dictionary and first data page offsets.
pub fn probe_range(md: &ParquetMetaData, rg: usize, leaf: usize) -> Option<Range<u64>> {
    let chunk = md.row_groups().get(rg)?.columns().get(leaf)?;
    if !only_dictionary_pages(chunk) {
        return None;
    }
    let range = dictionary_range(md, rg, leaf).or_else(|| {
        let start = u64::try_from(chunk.dictionary_page_offset()?).ok()?;
        let end = u64::try_from(chunk.data_page_offset()).ok()?;
        let (chunk_start, len) = chunk.byte_range();
        (chunk_start <= start && start < end && end <= chunk_start.checked_add(len)?)
            .then_some(start..end)
    })?;
    (range.end - range.start <= MAX_PROBED_BYTES).then_some(range)
}

/// Whether `visit` returns true for one of the `count` plain-encoded values of `buf` (a
/// decompressed dictionary page of a `physical` column), stopping at the first. Each value
/// is given as its bytes: a byte array's without its length. `Err` when the page is
/// shorter than its values, or the type has no plain values to compare (booleans).
pub fn any_plain_value(
    buf: &[u8],
    count: usize,
    physical: PhysicalType,
    type_length: i32,
    visit: impl FnMut(&[u8]) -> bool,
) -> Result<bool, String> {
    let width = match physical {
        PhysicalType::INT32 | PhysicalType::FLOAT => 4,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
        PhysicalType::INT96 => 12,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => usize::try_from(type_length)
            .ok()
            .filter(|w| *w > 0)
            .ok_or("a fixed-length column declares no length")?,
        PhysicalType::BYTE_ARRAY => return any_byte_array(buf, count, visit),
        PhysicalType::BOOLEAN => return Err("booleans have no dictionary".into()),
    };
    let bytes = count
        .checked_mul(width)
        .filter(|b| *b <= buf.len())
        .ok_or_else(|| too_short(count, buf.len()))?;
    Ok(buf[..bytes].chunks_exact(width).any(visit))
}

/// [`any_plain_value`] of byte arrays: each a 4-byte little-endian length, then its bytes.
fn any_byte_array(
    buf: &[u8],
    count: usize,
    mut visit: impl FnMut(&[u8]) -> bool,
) -> Result<bool, String> {
    let mut at = 0usize;
    for _ in 0..count {
        let len = buf
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| too_short(count, buf.len()))?;
        let value = buf
            .get(at + 4..)
            .and_then(|rest| rest.get(..len))
            .ok_or_else(|| too_short(count, buf.len()))?;
        if visit(value) {
            return Ok(true);
        }
        at += 4 + len;
    }
    Ok(false)
}

fn too_short(count: usize, len: usize) -> String {
    format!("a dictionary page of {len} bytes is too short for its {count} values")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_are_visited_until_one_is_found() {
        let buf: Vec<u8> = [5i64, 7, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut seen = 0;
        let found = any_plain_value(&buf, 3, PhysicalType::INT64, 0, |v| {
            seen += 1;
            v == 7i64.to_le_bytes()
        });
        assert_eq!((found, seen), (Ok(true), 2));
        let absent = any_plain_value(&buf, 3, PhysicalType::INT64, 0, |v| v == [0; 8]);
        assert_eq!(absent, Ok(false));
        // A count the page cannot hold is an error, not a read past its end.
        assert!(any_plain_value(&buf, 4, PhysicalType::INT64, 0, |_| false).is_err());
        assert!(any_plain_value(&buf, usize::MAX, PhysicalType::INT64, 0, |_| false).is_err());
    }

    #[test]
    fn byte_arrays_are_visited_without_their_lengths() {
        let mut buf = Vec::new();
        for s in ["", "ab", "xyz"] {
            buf.extend((s.len() as u32).to_le_bytes());
            buf.extend(s.as_bytes());
        }
        let visit = |want: &'static [u8]| move |v: &[u8]| v == want;
        assert_eq!(
            any_plain_value(&buf, 3, PhysicalType::BYTE_ARRAY, 0, visit(b"xyz")),
            Ok(true)
        );
        assert_eq!(
            any_plain_value(&buf, 3, PhysicalType::BYTE_ARRAY, 0, visit(b"")),
            Ok(true)
        );
        assert_eq!(
            any_plain_value(&buf, 3, PhysicalType::BYTE_ARRAY, 0, visit(b"a")),
            Ok(false)
        );
        // A length past the page's end.
        let mut bad = buf.clone();
        bad.extend(1000u32.to_le_bytes());
        assert!(any_plain_value(&bad, 4, PhysicalType::BYTE_ARRAY, 0, visit(b"q")).is_err());
        assert!(any_plain_value(&buf[..5], 3, PhysicalType::BYTE_ARRAY, 0, visit(b"q")).is_err());
    }

    #[test]
    fn fixed_length_values_take_the_declared_length() {
        let buf = [1u8, 2, 3, 4, 5, 6];
        let found = any_plain_value(&buf, 2, PhysicalType::FIXED_LEN_BYTE_ARRAY, 3, |v| {
            v == [4, 5, 6]
        });
        assert_eq!(found, Ok(true));
        assert!(any_plain_value(&buf, 2, PhysicalType::FIXED_LEN_BYTE_ARRAY, 0, |_| true).is_err());
    }
}
