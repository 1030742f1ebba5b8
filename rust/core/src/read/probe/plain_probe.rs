//! Data pages ruled out by searching their plain values for the bytes an `=`, `IN` or
//! string pattern needs.
//!
//! A PLAIN data page stores each non-null value as its plain encoding, one after another
//! (a string or binary as a 4-byte length and its bytes). A page whose decompressed bytes
//! hold none of the encodings of the values asked holds no row equal to one of them, and
//! one that lacks a literal piece every match of a case-sensitive `LIKE` or regular
//! expression contains holds no matching row: exact, where the page index cannot speak
//! for a value between a page's bounds, nor for a substring at all. A piece a match starts
//! (ends) with is found only where the 4 bytes before it (after it) can be a value's
//! length. Finding the bytes anywhere else (in the levels, across two values) only keeps
//! a page.
//!
//! This pays where a needle is sought in a column no statistic narrows and no bloom
//! filter covers, such as a comment or an identifier written by Spark: the predicate
//! column must be decompressed whole anyway, and a search of its bytes costs a fraction
//! of decoding every value into an array to compare it. The pages kept (usually none or
//! one) are read again by the predicate pass. Only string and fixed-length binary columns
//! are searched: integers decode about as fast as they are searched
//! ([`crate::read::decode::integer_columns`]). A search that keeps most of its first pages stops, and
//! the rest of the chunk is read as before, so a common value costs a few pages twice.

use std::ops::Range;

use memchr::memmem::Finder;
use parquet::basic::{Compression, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::io::StorageFile;
use crate::metadata::page_header::{PageSizes, DATA_PAGE};
use crate::metadata::page_index::{offset_index, page_boundaries};
use crate::plan::{Metrics, RowRanges};
use crate::predicate::expr::Predicate;
use crate::predicate::plain::{encodings, probe_values};
use crate::read::decode::whole_page;
use crate::read::page_guard::PageGuard;
use crate::read::shared_pages::SharedPages;

/// Fewer candidate pages are not searched: the pages kept are decompressed twice, and a
/// selection the page index narrowed this far is read quickly as it is.
const MIN_PAGES: usize = 8;
/// Longer IN lists (or patterns of more pieces) are not searched: each value is one pass
/// over every page.
const MAX_VALUES: usize = 16;
/// After this many pages, a search that kept more than a quarter of them stops.
const TRIAL_PAGES: usize = 8;
/// The `encoding` of a PLAIN page, as the raw Thrift enum value.
const PLAIN: i64 = 0;

/// What one search needs of the unit being read.
pub(crate) struct Chunk<'a> {
    pub file: &'a StorageFile,
    pub guard: &'a PageGuard,
    pub md: &'a ParquetMetaData,
    pub rg: usize,
    /// Rows in the row group.
    pub rows: u64,
    pub shared: Option<&'a SharedPages>,
    pub metrics: &'a Metrics,
}

/// `ranges` without the rows of the pages that no conjunct of `pred` can hold a match in,
/// or `None` when no page is ruled out.
pub(crate) fn narrowed(
    chunk: &Chunk<'_>,
    pred: &Predicate,
    ranges: &RowRanges,
) -> Result<Option<RowRanges>> {
    let mut current = ranges.clone();
    let mut narrowed = false;
    for conjunct in pred.conjuncts() {
        let Some(ruled_out) = ruled_out(chunk, conjunct, &current)? else {
            continue;
        };
        current = current.subtract(&ruled_out, chunk.rows);
        narrowed = true;
        if current.is_empty() {
            break;
        }
    }
    Ok(narrowed.then_some(current))
}

/// The rows of the pages, among those holding rows of `ranges`, where `leaf` cannot be
/// TRUE; `None` when the leaf is not one this search answers or no page is ruled out.
fn ruled_out(chunk: &Chunk<'_>, leaf: &Predicate, ranges: &RowRanges) -> Result<Option<RowRanges>> {
    let Some(Needles { needles, every }) = needles(chunk.md, leaf) else {
        return Ok(None);
    };
    let Some(index) = leaf.column().and_then(|c| c.leaf) else {
        return Ok(None);
    };
    let Some(oi) = offset_index(chunk.md, chunk.rg, index) else {
        return Ok(None);
    };
    let bounds = page_boundaries(oi, chunk.rows);
    let locations = oi.page_locations();
    let pages: Vec<usize> = (0..locations.len())
        .filter(|&p| bounds[p] < bounds[p + 1] && ranges.overlaps(&(bounds[p]..bounds[p + 1])))
        .collect();
    if pages.len() < MIN_PAGES {
        return Ok(None);
    }
    let page_range = |p: usize| -> Option<Range<u64>> {
        let loc = &locations[p];
        let start = u64::try_from(loc.offset).ok()?;
        Some(start..start.checked_add(u64::try_from(loc.compressed_page_size).ok()?)?)
    };
    let Some(fetch) = pages
        .iter()
        .map(|&p| page_range(p))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    match chunk.shared {
        Some(shared) => shared.prefetch(chunk.file, fetch.clone())?,
        None => chunk.file.prefetch(fetch.clone())?,
    }
    let codec = chunk.md.row_group(chunk.rg).column(index).compression();
    let finders: Vec<(Finder<'_>, &Needle)> =
        needles.iter().map(|n| (Finder::new(&n.bytes), n)).collect();
    let (mut searched, mut kept) = (0usize, 0usize);
    let mut out = Vec::new();
    for (&p, range) in pages.iter().zip(fetch) {
        if searched >= TRIAL_PAGES && kept * 4 > searched {
            break;
        }
        let Some(found) = search(chunk, index, codec, range, &finders, every)? else {
            continue;
        };
        searched += 1;
        chunk.metrics.plain_pages_searched.incr();
        if found {
            kept += 1;
        } else {
            chunk.metrics.pages_ruled_out_by_values.incr();
            out.push(bounds[p]..bounds[p + 1]);
        }
    }
    Ok((!out.is_empty()).then(|| RowRanges::from_ranges(out)))
}

/// What a page holds if one of its rows satisfies a leaf.
struct Needles {
    needles: Vec<Needle>,
    /// Every one of `needles` (a pattern's pieces), rather than any (the values of an `IN`).
    every: bool,
}

/// Bytes a page holds, where a value starts or ends with them if `at_start` or `at_end`.
struct Needle {
    bytes: Vec<u8>,
    at_start: bool,
    at_end: bool,
}

impl Needle {
    fn anywhere(bytes: Vec<u8>) -> Self {
        Needle {
            bytes,
            at_start: false,
            at_end: false,
        }
    }

    /// Whether the needle found at `at` in a PLAIN page's `values` can sit where it must:
    /// a value starting with it follows its 4-byte length, which covers the needle and no
    /// more than the page holds; a value ending with it ends the page or is followed by the
    /// next value's length, which the page can hold.
    fn placed(&self, values: &[u8], at: usize) -> bool {
        let length_at = |i: usize| -> Option<usize> {
            let word: [u8; 4] = values.get(i..i.checked_add(4)?)?.try_into().ok()?;
            usize::try_from(u32::from_le_bytes(word)).ok()
        };
        let starts = || {
            at.checked_sub(4).and_then(length_at).is_some_and(|len| {
                len >= self.bytes.len() && at.saturating_add(len) <= values.len()
            })
        };
        let ends = || {
            let end = at + self.bytes.len();
            end == values.len()
                || length_at(end).is_some_and(|len| len <= values.len().saturating_sub(end + 4))
        };
        (!self.at_start || starts()) && (!self.at_end || ends())
    }
}

/// What a page of `leaf`'s column holds if a row satisfies it, when the leaf is an `=` or
/// `IN` on a flat string or fixed-length binary column, or a case-sensitive pattern with
/// literal pieces on a flat string column.
fn needles(md: &ParquetMetaData, leaf: &Predicate) -> Option<Needles> {
    let col = leaf.column()?;
    let descr = md
        .file_metadata()
        .schema_descr()
        .columns()
        .get(col.leaf?)?
        .clone();
    if descr.max_rep_level() != 0 {
        return None;
    }
    let (physical, type_length) = (descr.physical_type(), descr.type_length());
    if let Predicate::Match {
        pattern,
        negated: false,
        ..
    } = leaf
    {
        let pieces: Vec<Needle> = pattern
            .pieces()
            .iter()
            .filter(|p| !p.text.is_empty())
            .map(|p| Needle {
                bytes: p.text.as_bytes().to_vec(),
                at_start: p.at_start,
                at_end: p.at_end,
            })
            .collect();
        let searched = col.prunable && physical == PhysicalType::BYTE_ARRAY;
        return (searched && !pieces.is_empty() && pieces.len() <= MAX_VALUES).then_some(Needles {
            needles: pieces,
            every: true,
        });
    }
    let values = probe_values(leaf).filter(|v| v.len() <= MAX_VALUES)?;
    let mut out = Vec::new();
    for v in values {
        for e in encodings(v, col, physical, type_length)? {
            match physical {
                PhysicalType::BYTE_ARRAY => {
                    let len = u32::try_from(e.len()).ok()?;
                    out.push(Needle::anywhere([&len.to_le_bytes()[..], &e].concat()));
                }
                PhysicalType::FIXED_LEN_BYTE_ARRAY => out.push(Needle::anywhere(e)),
                _ => return None,
            }
        }
    }
    (!out.is_empty()).then_some(Needles {
        needles: out,
        every: false,
    })
}

/// Whether the data page at `range` holds the `finders`' needles where they can sit
/// (`every` one of them, or any); `None` when it is not a PLAIN v1 data page (a
/// dictionary-encoded page holds keys, not values).
fn search(
    chunk: &Chunk<'_>,
    index: usize,
    codec: Compression,
    range: Range<u64>,
    finders: &[(Finder<'_>, &Needle)],
    every: bool,
) -> Result<Option<bool>> {
    let plain_data = |h: &PageSizes| h.page_type == DATA_PAGE && h.encoding == Some(PLAIN);
    let Some(page) = whole_page::read(chunk.file, chunk.guard, index, codec, range, plain_data)?
    else {
        return Ok(None);
    };
    let values = &page.data[..];
    let found = |(f, needle): &(Finder<'_>, &Needle)| {
        if needle.at_start || needle.at_end {
            f.find_iter(values).any(|at| needle.placed(values, at))
        } else {
            f.find(values).is_some()
        }
    };
    Ok(Some(if every {
        finders.iter().all(found)
    } else {
        finders.iter().any(found)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` as a PLAIN page of byte arrays holds them.
    fn plain(values: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v.as_bytes());
        }
        out
    }

    /// Whether `needle` is found in `page` where it can sit.
    fn found(page: &[u8], needle: &Needle) -> bool {
        Finder::new(&needle.bytes)
            .find_iter(page)
            .any(|at| needle.placed(page, at))
    }

    fn piece(text: &str, at_start: bool, at_end: bool) -> Needle {
        Needle {
            bytes: text.as_bytes().to_vec(),
            at_start,
            at_end,
        }
    }

    #[test]
    fn a_piece_a_value_starts_or_ends_with_is_found_only_there() {
        let start = piece("abc", true, false);
        let end = piece("abc", false, true);
        let both = piece("abc", true, true);
        // Inside other values only: not where a match must have it.
        let inside = plain(&["xabcx", "zzab", "cabcb"]);
        assert!(Finder::new(b"abc").find(&inside).is_some());
        assert!(!found(&inside, &start) && !found(&inside, &end) && !found(&inside, &both));
        // At a value's start, at its end, and the whole of one (last in the page, and not).
        assert!(found(&plain(&["q", "abcd", "r"]), &start));
        assert!(!found(&plain(&["q", "abcd", "r"]), &end));
        assert!(found(&plain(&["q", "dabc", "r"]), &end));
        assert!(found(&plain(&["q", "dabc"]), &end));
        assert!(found(&plain(&["abc", "r"]), &both));
        assert!(found(&plain(&["q", "abc"]), &both));
        // A length before it longer than the page, or shorter than the piece, is no start.
        let mut long = plain(&["abc"]);
        long[0] = 200;
        assert!(!found(&long, &start));
        let mut short = plain(&["abc"]);
        short[0] = 2;
        assert!(!found(&short, &start));
        // Followed by fewer bytes than a length: no value ends there.
        assert!(!found(&plain(&["abcd"]), &end));
        // Followed by a length longer than the rest of the page: no value ends there.
        let mut past = plain(&["xabc"]);
        past.extend_from_slice(&[200, 0, 0, 0, b'z', b'z']);
        assert!(!found(&past, &end));
        past[8] = 2;
        assert!(found(&past, &end));
    }
}
