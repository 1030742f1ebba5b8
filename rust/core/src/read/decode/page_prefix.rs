//! The start of a data page: the rows a read takes from it, then values no read takes.
//!
//! A lookup's rows are often near the start of their page (a sorted key's first values, a
//! range ending early in a page), yet each page of each column it returns is decompressed
//! whole. Read by runs, the record reader decodes a page's values up to the last row it
//! selects there, and skips the rest of the page without decoding it. So only the start
//! of such a page is decompressed here: its levels, whole, and the values of its rows up to
//! the last one read. After them come filler values, as many as the page has rows after
//! them: a run of dictionary key 0, fixed-width values, or byte arrays of no bytes. The
//! page handed on is thus a valid page of the number of values its header gives, decoded
//! or skipped like any other however a reader goes through it; the rows holding filler
//! are not selected, so never returned.
//!
//! A Snappy page of plain fixed-width values whose rows read start a 64 KiB block or more
//! into its values is entered at that block instead ([`crate::read::decode::snappy_prefix::snappy_window`]):
//! its levels and the values from the block on are decoded, those before left as zeros
//! that no read takes (a needle's row in the middle of a Spark-written page).
//!
//! Flat columns only (a row is a level), pages whose levels are RLE encoded, and values
//! plain or dictionary encoded. The start is decompressed to a guess from the rows' share
//! of the page; where the guess falls short, or the start is more of the page than is
//! worth decoding apart ([`most`]), the page is decompressed whole instead.

use std::ops::Range;

use parquet::arrow::arrow_reader::RowSelection;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::Page;
use parquet::errors::Result;
use parquet::schema::types::ColumnDescriptor;

use crate::read::decode::dictionary_prefix::{byte_arrays_end, entry_width};
use crate::read::decode::page_buffers;
use crate::read::decode::page_codec::{page_limit, snappy_len, zstd_declared, zstd_prefix};
use crate::read::decode::snappy_prefix::{snappy_prefix, snappy_window, BLOCK as SNAPPY_BLOCK};

/// The rows a read by runs selects, as ranges in order.
pub(crate) struct Runs(Vec<Range<u64>>);

impl Runs {
    pub(crate) fn of(selection: &RowSelection) -> Self {
        let mut runs = Vec::new();
        let mut at = 0u64;
        for s in selection.iter() {
            let end = at.saturating_add(s.row_count as u64);
            if !s.skip && end > at {
                runs.push(at..end);
            }
            at = end;
        }
        Runs(runs)
    }

    /// The rows a reader selecting `selection` through a mask may decode: every row from
    /// the first selected to the last (it reads across the rows between, and never past
    /// the last).
    pub(crate) fn span(selection: &RowSelection) -> Self {
        let Runs(runs) = Runs::of(selection);
        let span = runs.first().zip(runs.last()).map(|(a, b)| a.start..b.end);
        Runs(span.into_iter().collect())
    }

    /// How many rows of the page holding rows `first..end` a read takes, counted from its
    /// first up to the last selected; `None` when none is selected.
    /// How many rows of the page holding rows `first..end` come before the first one a
    /// read takes there; `None` when none is taken.
    pub(crate) fn before(&self, first: u64, end: u64) -> Option<u64> {
        let at = self.0.partition_point(|r| r.end <= first);
        let run = self.0.get(at)?;
        let start = run.start.max(first);
        (start < end).then(|| start - first)
    }

    pub(crate) fn used(&self, first: u64, end: u64) -> Option<u64> {
        if end <= first {
            return None;
        }
        let before = self.0.partition_point(|r| r.start < end);
        let last = self.0[..before].last()?;
        (last.end > first).then(|| last.end.min(end) - first)
    }
}

/// The raw data page `page` (its values compressed with `codec`), of `of` rows as the
/// offset index says, with only its start decompressed: the values of its first `rows`
/// rows, then filler. `None` where the page is not of a kind this serves, its header
/// disagrees with the offset index, the rows are most of it, or the start decompressed
/// does not hold them: the page is then to be decompressed whole. The read takes none of
/// the first `before` rows: a Snappy page of fixed-width values has the values before
/// theirs left as filler where they fill a block or more ([`windowed`]).
pub(crate) fn page_start(
    page: &Page,
    codec: Compression,
    column: &ColumnDescriptor,
    before: usize,
    rows: usize,
    of: usize,
) -> Result<Option<Page>> {
    let flat = column.max_rep_level() == 0;
    let codec_ok = matches!(codec, Compression::SNAPPY | Compression::ZSTD(_));
    let values = match page {
        Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. } => {
            *num_values as usize
        }
        Page::DictionaryPage { .. } => return Ok(None),
    };
    if !flat || !codec_ok || values != of {
        return Ok(None);
    }
    let max_def = column.max_def_level();
    // The bytes kept as they are (a version 2 page's levels), and the compressed rest.
    let (kept, body) = match page {
        Page::DataPage {
            buf,
            def_level_encoding,
            ..
        } => {
            if max_def > 0 && *def_level_encoding != Encoding::RLE {
                return Ok(None);
            }
            (0, &buf[..])
        }
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed: true,
            ..
        } => {
            let kept = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
            match buf.get(kept..) {
                Some(body) => (kept, body),
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    let encoding = match page {
        Page::DataPage { encoding, .. } | Page::DataPageV2 { encoding, .. } => *encoding,
        Page::DictionaryPage { .. } => return Ok(None),
    };
    if body.is_empty() {
        return Ok(None);
    }
    let Some(size) = declared(codec, body)? else {
        return Ok(None);
    };
    if matches!(codec, Compression::SNAPPY) && encoding == Encoding::PLAIN && before > 0 {
        let at = Window {
            before,
            rows,
            values,
        };
        if let Some(page) = windowed(page, body, kept, size, column, at)? {
            return Ok(Some(page));
        }
    }
    // Where the values start in a page's start, how many the rows hold, and how many the
    // page holds.
    let values_of = |out: &[u8]| -> Result<Option<(usize, usize, usize)>> {
        if max_def == 0 {
            return Ok(Some((kept, rows, values)));
        }
        if let Page::DataPageV2 {
            rep_levels_byte_len,
            num_nulls,
            ..
        } = page
        {
            let levels = &out[*rep_levels_byte_len as usize..kept];
            let all = values.saturating_sub(*num_nulls as usize);
            return Ok(Some((kept, present(levels, max_def, rows, rows).0, all)));
        }
        // Version 1: the definition levels' length (4 bytes little-endian), then them.
        let Some(len) = out.get(..4) else {
            return Ok(None);
        };
        let end = 4 + u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let Some(levels) = out.get(4..end) else {
            return Ok(None);
        };
        let (in_rows, all) = present(levels, max_def, rows, values);
        Ok(Some((end, in_rows, all)))
    };
    let Some(mut start) = worth_it(codec, size, rows, values) else {
        return Ok(None);
    };
    loop {
        let mut out = page_buffers::take(kept + start);
        if out.len() < kept + start {
            out.resize(kept + start, 0);
        }
        out.truncate(kept + start);
        out[..kept].copy_from_slice(&page.buffer()[..kept]);
        decompress_start(codec, body, &mut out[kept..])?;
        if let Some((from, present, all)) = values_of(&out)? {
            if let Some(end) = values_end(&out[from..], encoding, column, present) {
                out.truncate(from + end);
                fill(
                    &mut out,
                    from,
                    encoding,
                    column,
                    all.saturating_sub(present),
                );
                let len = out.len();
                return Ok(Some(with_body(page, page_buffers::page(out, len))));
            }
        }
        // The guess fell short: twice as much, while that is worth it.
        start = start.saturating_mul(2);
        if start > most(codec, size) {
            return Ok(None);
        }
    }
}

/// The rows of a page a read takes: none of the first `before`, some up to `rows`, of
/// the `values` levels the page holds.
struct Window {
    before: usize,
    rows: usize,
    values: usize,
}

/// A Snappy page of plain fixed-width values (`body` the compressed part, after `kept`
/// bytes of version 2 levels) whose rows read start a block or more into its values:
/// only its levels, and its values from the 64 KiB block holding the first row read up
/// to the last ([`snappy_window`]), are decoded; the values before are zeros and those
/// after filler, none of them rows the read takes. `None` where the rows start in the
/// first block, or the stream cannot be entered at theirs.
fn windowed(
    page: &Page,
    body: &[u8],
    kept: usize,
    size: usize,
    column: &ColumnDescriptor,
    at: Window,
) -> Result<Option<Page>> {
    let Some(width) = entry_width(column) else {
        return Ok(None);
    };
    let max_def = column.max_def_level();
    // A version 1 page's levels, decompressed: their length (4 bytes), then them.
    let mut head = Vec::new();
    if max_def > 0 && !matches!(page, Page::DataPageV2 { .. }) {
        let mut len = [0u8; 4];
        if size < len.len() {
            return Ok(None);
        }
        snappy_prefix(body, &mut len)?;
        let Some(end) = (u32::from_le_bytes(len) as usize)
            .checked_add(4)
            .filter(|end| *end <= size)
        else {
            return Ok(None);
        };
        head.resize(end, 0);
        snappy_prefix(body, &mut head)?;
    }
    // The values before the rows read, through the last one, and in the page.
    let (first, last, all) = match (max_def, page) {
        (0, _) => (at.before, at.rows, at.values),
        (
            _,
            Page::DataPageV2 {
                rep_levels_byte_len,
                ..
            },
        ) => {
            let levels = page.buffer().get(*rep_levels_byte_len as usize..kept);
            let Some(levels) = levels else {
                return Ok(None);
            };
            let (last, all) = present(levels, max_def, at.rows, at.values);
            (present(levels, max_def, at.before, at.values).0, last, all)
        }
        _ => {
            let levels = &head[4..];
            let (last, all) = present(levels, max_def, at.rows, at.values);
            (present(levels, max_def, at.before, at.values).0, last, all)
        }
    };
    let from = head.len();
    let (Some(lo), Some(hi)) = (
        first.checked_mul(width).and_then(|b| b.checked_add(from)),
        last.checked_mul(width).and_then(|b| b.checked_add(from)),
    ) else {
        return Ok(None);
    };
    if hi > size || hi <= lo || lo / SNAPPY_BLOCK * SNAPPY_BLOCK <= from.max(SNAPPY_BLOCK - 1) {
        return Ok(None);
    }
    let mut out = page_buffers::take(kept + hi);
    out.clear();
    out.resize(kept + hi, 0);
    out[..kept].copy_from_slice(&page.buffer()[..kept]);
    out[kept..kept + from].copy_from_slice(&head);
    if snappy_window(body, &mut out[kept..], lo)?.is_none() {
        return Ok(None);
    }
    fill(
        &mut out,
        kept + from,
        Encoding::PLAIN,
        column,
        all.saturating_sub(last),
    );
    let len = out.len();
    Ok(Some(with_body(page, page_buffers::page(out, len))))
}

/// `page` with `buf` for its body.
fn with_body(page: &Page, buf: bytes::Bytes) -> Page {
    let mut page = page.clone();
    if let Page::DataPage { buf: b, .. } | Page::DataPageV2 { buf: b, .. } = &mut page {
        *b = buf;
    }
    page
}

/// The bytes to decompress for the first `rows` of `total` rows of a page that
/// decompresses to `size`: their share and a quarter more, and 4 KiB. `None` when that
/// is more than is worth decoding apart ([`most`]), or `rows` are more than it holds.
fn worth_it(codec: Compression, size: usize, rows: usize, total: usize) -> Option<usize> {
    if rows > total || total == 0 {
        return None;
    }
    let share = (size as u128 * rows as u128 / total as u128) as usize;
    let start = share.saturating_add(share / 4).saturating_add(4096);
    (start <= most(codec, size)).then_some(start)
}

/// The most of a page of `size` bytes worth decompressing as a start rather than whole.
/// A Snappy start is decoded by [`snappy_prefix`], which writes a byte at three quarters
/// of the `snap` crate's speed on integer pages and near nine tenths on strings (the
/// `snappy_start` bench): past two thirds of the page the whole costs about as much. A
/// Zstandard start is the library's own streaming decoder stopped early, as fast a byte
/// as the whole.
fn most(codec: Compression, size: usize) -> usize {
    match codec {
        Compression::SNAPPY => size / 3 * 2,
        _ => size / 4 * 3,
    }
}

/// The size the compressed `body` declares; `None` for a Zstandard frame that does not,
/// or that declares more than its bytes can hold (Snappy's is refused then).
fn declared(codec: Compression, body: &[u8]) -> Result<Option<usize>> {
    Ok(match codec {
        Compression::SNAPPY => Some(snappy_len(body)?),
        _ => zstd_declared(body).filter(|size| *size <= page_limit(codec, body.len())),
    })
}

fn decompress_start(codec: Compression, body: &[u8], out: &mut [u8]) -> Result<()> {
    match codec {
        Compression::SNAPPY => snappy_prefix(body, out),
        _ => zstd_prefix(body, out),
    }
}

/// Of the first `all` RLE-encoded definition `levels` (of at most `max`), how many of the
/// first `rows` are `max`, and how many of all: the values they hold. Counts only the
/// levels there are. The runs are walked rather than decoded: a repeated run counts at
/// once, and a bit-packed run of one-bit levels (an optional flat column's) by its set
/// bits.
fn present(levels: &[u8], max: i16, rows: usize, all: usize) -> (usize, usize) {
    let width = (16 - max.leading_zeros()) as usize;
    if width == 0 {
        return (rows.min(all), all);
    }
    let max = u64::from(max.unsigned_abs());
    let (mut seen, mut in_rows, mut in_all) = (0usize, 0usize, 0usize);
    for run in hybrid_runs(levels, width, 0) {
        if seen >= all {
            break;
        }
        if run.packed {
            let there = (run.body.len() * 8 / width).min(run.values);
            let take = there.min(all - seen);
            in_rows += packed_at(run.body, width, max, rows.saturating_sub(seen).min(take));
            in_all += packed_at(run.body, width, max, take);
        } else {
            if run.body.len() < width.div_ceil(8) {
                break;
            }
            let value = run
                .body
                .iter()
                .rev()
                .fold(0u64, |v, b| (v << 8) | u64::from(*b));
            let take = run.values.min(all - seen);
            if value == max {
                in_all += take;
                in_rows += rows.saturating_sub(seen).min(take);
            }
        }
        if run.end > levels.len() {
            break;
        }
        seen = seen.saturating_add(run.values);
    }
    (in_rows, in_all)
}

/// How many of the first `n` bit-packed levels of `width` bits in `packed` equal `max`.
fn packed_at(packed: &[u8], width: usize, max: u64, n: usize) -> usize {
    if width == 1 && max == 1 {
        let whole: usize = packed[..n / 8]
            .iter()
            .map(|b| b.count_ones() as usize)
            .sum();
        let rest = n % 8;
        let part = match rest {
            0 => 0,
            _ => (packed[n / 8] & ((1u8 << rest) - 1)).count_ones() as usize,
        };
        return whole + part;
    }
    (0..n)
        .filter(|i| {
            let level = (0..width).fold(0u64, |v, k| {
                let bit = i * width + k;
                v | (u64::from((packed[bit / 8] >> (bit % 8)) & 1) << k)
            });
            level == max
        })
        .count()
}

/// Where the first `count` values of `values` (encoded as `encoding`) end, if they end
/// within it; `None` too for encodings this does not walk.
fn values_end(
    values: &[u8],
    encoding: Encoding,
    column: &ColumnDescriptor,
    count: usize,
) -> Option<usize> {
    match encoding {
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => keys_end(values, count),
        Encoding::PLAIN => match entry_width(column) {
            Some(width) => Some(count.checked_mul(width)?).filter(|end| *end <= values.len()),
            None if column.physical_type() == parquet::basic::Type::BYTE_ARRAY => {
                byte_arrays_end(values, count)
            }
            None => None,
        },
        _ => None,
    }
}

/// Where the runs of dictionary keys (a bit width, then the RLE/bit-packed hybrid) that
/// hold at least the first `count` keys end in `values`.
fn keys_end(values: &[u8], count: usize) -> Option<usize> {
    let width = usize::from(*values.first()?);
    if width > 32 {
        return None;
    }
    if count == 0 {
        return Some(1);
    }
    let mut keys = 0usize;
    for run in hybrid_runs(values, width, 1) {
        if run.values == 0 || run.end > values.len() {
            return None;
        }
        keys = keys.checked_add(run.values)?;
        if keys >= count {
            return Some(run.end);
        }
    }
    None
}

/// A run of the RLE/bit-packed hybrid (dictionary keys, definition levels): how many
/// values it holds, whether they are bit-packed, and its bytes (the packed values, or the
/// repeated value), cut short where the input ends before the run's declared `end`.
struct HybridRun<'a> {
    packed: bool,
    values: usize,
    body: &'a [u8],
    end: usize,
}

/// The runs of an RLE/bit-packed hybrid of `width`-bit values from `at` in `bytes`, in
/// order, up to the first whose header cannot be read or whose size overflows.
fn hybrid_runs(bytes: &[u8], width: usize, mut at: usize) -> impl Iterator<Item = HybridRun<'_>> {
    std::iter::from_fn(move || {
        let (header, len) = varint(bytes.get(at..)?)?;
        let start = at + len;
        let count = usize::try_from(header >> 1).ok()?;
        let (packed, values, size) = if header & 1 == 1 {
            (true, count.checked_mul(8)?, count.checked_mul(width)?)
        } else {
            (false, count, width.div_ceil(8))
        };
        let end = start.checked_add(size)?;
        at = end;
        let body = &bytes[start.min(bytes.len())..end.min(bytes.len())];
        Some(HybridRun {
            packed,
            values,
            body,
            end,
        })
    })
}

/// A ULEB128 integer of at most 32 bits at the start of `bytes`, and its length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, b) in bytes.iter().take(5).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Append `count` filler values encoded as `encoding` to `out`, whose values start at
/// `from`: one run of key 0 (in the keys' bit width, their first byte), or `count` byte
/// arrays of no bytes, or fixed-width values of zeros.
fn fill(
    out: &mut Vec<u8>,
    from: usize,
    encoding: Encoding,
    column: &ColumnDescriptor,
    count: usize,
) {
    if count == 0 {
        return;
    }
    match encoding {
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
            // The key run: its length, then key 0 in the bytes of the bit width.
            let mut header = (count as u64) << 1;
            while header >= 0x80 {
                out.push((header as u8) | 0x80);
                header >>= 7;
            }
            out.push(header as u8);
            let width = usize::from(out[from]);
            out.resize(out.len() + width.div_ceil(8), 0);
        }
        _ => {
            let width = entry_width(column).unwrap_or(4);
            out.resize(out.len() + count * width, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use parquet::arrow::arrow_reader::RowSelector;

    use super::*;

    #[test]
    fn a_page_is_read_up_to_its_last_selected_row() {
        let runs = Runs::of(&RowSelection::from(vec![
            RowSelector::skip(10),
            RowSelector::select(5),
            RowSelector::skip(100),
            RowSelector::select(1),
            RowSelector::skip(84),
            RowSelector::select(30),
        ]));
        // Pages of 100 rows: rows 10..15 and 115 in the second page's first 16.
        assert_eq!(runs.used(0, 100), Some(15));
        assert_eq!(runs.used(100, 200), Some(16));
        // A run that crosses into the third page: its first 30 rows.
        assert_eq!(runs.used(200, 300), Some(30));
        assert_eq!(runs.used(300, 400), None);
        assert_eq!(runs.before(0, 100), Some(10));
        assert_eq!(runs.before(100, 200), Some(15));
        assert_eq!(runs.before(200, 300), Some(0));
        assert_eq!(runs.before(300, 400), None);
        let ends = Runs::of(&RowSelection::from(vec![
            RowSelector::skip(99),
            RowSelector::select(2),
        ]));
        assert_eq!(ends.used(0, 100), Some(100));
        assert_eq!(ends.used(100, 200), Some(1));
        // Through a mask: every row from the first selected to the last.
        let span = Runs::span(&RowSelection::from(vec![
            RowSelector::skip(10),
            RowSelector::select(5),
            RowSelector::skip(100),
            RowSelector::select(1),
            RowSelector::skip(184),
        ]));
        assert_eq!(span.used(0, 100), Some(100));
        assert_eq!(span.used(100, 200), Some(16));
        assert_eq!(span.used(200, 300), None);
        assert_eq!(
            Runs::span(&RowSelection::from(vec![RowSelector::skip(5)])).used(0, 5),
            None
        );
    }

    #[test]
    fn the_start_decompressed_is_the_rows_share_and_a_margin_unless_most_of_the_page() {
        let zstd = Compression::ZSTD(Default::default());
        for codec in [Compression::SNAPPY, zstd] {
            assert_eq!(
                worth_it(codec, 100_000, 100, 20_000),
                Some(500 + 125 + 4096)
            );
            assert_eq!(
                worth_it(codec, 100_000, 4_000, 20_000),
                Some(20_000 + 5_000 + 4096)
            );
            // Two fifths of the rows: 54% of the page with the margin.
            assert_eq!(
                worth_it(codec, 100_000, 8_000, 20_000),
                Some(40_000 + 10_000 + 4096)
            );
            assert_eq!(worth_it(codec, 100_000, 15_000, 20_000), None);
            assert_eq!(worth_it(codec, 5_000, 1, 20_000), None);
            assert_eq!(worth_it(codec, 100_000, 20_001, 20_000), None);
            assert_eq!(worth_it(codec, 100_000, 1, 0), None);
        }
        // Eleven twentieths of the rows (73%): a Zstandard start, a whole Snappy page.
        assert_eq!(
            worth_it(zstd, 100_000, 11_000, 20_000),
            Some(55_000 + 13_750 + 4096)
        );
        assert_eq!(worth_it(Compression::SNAPPY, 100_000, 11_000, 20_000), None);
    }

    /// Keys of bit width 5: a run of 3 keys of 7, two bit-packed groups (16 keys), a run
    /// of 300 keys of 1.
    fn keys() -> Vec<u8> {
        let mut values = vec![5u8, 3 << 1, 7, (2 << 1) | 1];
        values.extend_from_slice(&[0x21; 10]);
        values.extend_from_slice(&[0xd8, 0x04, 1]);
        values
    }

    #[test]
    fn key_runs_are_walked_to_the_one_holding_the_last_key_wanted() {
        let values = keys();
        assert_eq!(keys_end(&values, 0), Some(1));
        assert_eq!(keys_end(&values, 3), Some(3));
        assert_eq!(keys_end(&values, 4), Some(14));
        assert_eq!(keys_end(&values, 19), Some(14));
        assert_eq!(keys_end(&values, 20), Some(17));
        assert_eq!(keys_end(&values, 319), Some(17));
        // Past the keys, cut short, a zero-length run, a width too large.
        assert_eq!(keys_end(&values, 320), None);
        assert_eq!(keys_end(&values[..12], 4), None);
        assert_eq!(keys_end(&[5, 0, 7], 1), None);
        assert_eq!(keys_end(&[33, 2, 7], 1), None);
        assert_eq!(keys_end(&[], 0), None);
        assert_eq!(varint(&[0xff; 6]), None);
    }

    #[test]
    fn a_run_of_filler_keys_follows_the_keys_kept() {
        let column = int64("k");
        let values = keys();
        let end = keys_end(&values, 4).unwrap();
        let mut out = values[..end].to_vec();
        fill(&mut out, 0, Encoding::RLE_DICTIONARY, &column, 1000);
        let mut decoder = parquet::encodings::rle::RleDecoder::new(5);
        decoder
            .set_data(bytes::Bytes::from(out[1..].to_vec()))
            .unwrap();
        let mut got = vec![0u32; 1100];
        assert_eq!(decoder.get_batch(&mut got).unwrap(), 1019);
        assert_eq!(&got[..3], &[7, 7, 7]);
        assert!(got[19..1019].iter().all(|k| *k == 0));
        // Plain values: zeros of the column's width.
        let mut plain = vec![9u8; 16];
        fill(&mut plain, 0, Encoding::PLAIN, &column, 3);
        assert_eq!(plain.len(), 40);
        assert!(plain[16..].iter().all(|b| *b == 0));
    }

    #[test]
    fn present_values_are_the_levels_at_their_most() {
        // Bit width 1: a bit-packed group of levels 1,0,1,1,0,1,1,1, then a run of 50 ones.
        let levels = [(1 << 1) | 1, 0b1110_1101, 50 << 1, 1];
        assert_eq!(present(&levels, 1, 0, 0), (0, 0));
        assert_eq!(present(&levels, 1, 2, 2), (1, 1));
        assert_eq!(present(&levels, 1, 8, 58), (6, 56));
        assert_eq!(present(&levels, 1, 50, 50), (48, 48));
        assert_eq!(present(&levels, 1, 58, 58), (56, 56));
        // Fewer levels than rows: those there are.
        assert_eq!(present(&levels, 1, 500, 500), (56, 56));
    }

    /// Counted as `present` did before it walked runs: every level decoded by the crate.
    fn present_decoded(levels: &[u8], max: i16, rows: usize, all: usize) -> (usize, usize) {
        let width = (16 - max.leading_zeros()) as u8;
        let mut decoder = parquet::encodings::rle::RleDecoder::new(width);
        // One level at a time, up to the first the crate cannot decode: the levels there
        // are (no levels at all is an error to it).
        let mut decoded = vec![0i16; all];
        let mut got = 0;
        if decoder
            .set_data(bytes::Bytes::copy_from_slice(levels))
            .is_ok()
        {
            while got < all && matches!(decoder.get_batch(&mut decoded[got..=got]), Ok(1)) {
                got += 1;
            }
        }
        let present = |n: usize| decoded[..n.min(got)].iter().filter(|l| **l == max).count();
        (present(rows.min(all)), present(all))
    }

    proptest::proptest! {
        #[test]
        fn present_values_walked_by_runs_are_those_the_crate_decodes(
            runs in proptest::collection::vec((0i16..4, 1usize..40), 0..30),
            max in 1i16..4,
            cut in 0usize..4,
            rows_share in 0usize..=100,
        ) {
            let width = (16 - max.leading_zeros()) as u8;
            let mut encoder = parquet::encodings::rle::RleEncoder::new(width, 256);
            let mut count = 0;
            for (level, n) in &runs {
                for _ in 0..*n {
                    encoder.put(u64::from((*level).min(max).unsigned_abs()));
                }
                count += n;
            }
            let encoded = encoder.consume();
            // Whole, and cut short (levels missing from the end).
            let levels = &encoded[..encoded.len().saturating_sub(cut)];
            let rows = count * rows_share / 100;
            proptest::prop_assert_eq!(
                present(levels, max, rows, count),
                present_decoded(levels, max, rows, count)
            );
        }
    }

    fn int64(name: &str) -> ColumnDescriptor {
        ColumnDescriptor::new(
            std::sync::Arc::new(
                parquet::schema::types::Type::primitive_type_builder(
                    name,
                    parquet::basic::Type::INT64,
                )
                .build()
                .unwrap(),
            ),
            0,
            0,
            parquet::schema::types::ColumnPath::from(name),
        )
    }

    fn plain_page(body: Vec<u8>, values: u32) -> Page {
        Page::DataPage {
            buf: bytes::Bytes::from(body),
            num_values: values,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    #[test]
    fn the_start_of_a_plain_page_then_zeros() {
        let values: Vec<u8> = (1..=20_000i64).flat_map(|v| v.to_le_bytes()).collect();
        let zstd = Compression::ZSTD(Default::default());
        for (codec, body) in [
            (
                Compression::SNAPPY,
                snap::raw::Encoder::new().compress_vec(&values).unwrap(),
            ),
            (zstd, zstd::bulk::compress(&values, 3).unwrap()),
        ] {
            let page = plain_page(body, 20_000);
            let start = page_start(&page, codec, &int64("v"), 0, 100, 20_000)
                .unwrap()
                .unwrap();
            let buf = start.buffer();
            assert_eq!(buf.len(), values.len());
            assert_eq!(&buf[..800], &values[..800]);
            assert!(buf[800..].iter().all(|b| *b == 0));
            // Most of the page, a header that disagrees with the offset index: whole.
            assert!(page_start(&page, codec, &int64("v"), 0, 16_000, 20_000)
                .unwrap()
                .is_none());
            assert!(page_start(&page, codec, &int64("v"), 0, 100, 19_999)
                .unwrap()
                .is_none());
        }
    }

    fn optional_int64(name: &str) -> ColumnDescriptor {
        let field =
            parquet::schema::types::Type::primitive_type_builder(name, parquet::basic::Type::INT64)
                .with_repetition(parquet::basic::Repetition::OPTIONAL)
                .build()
                .unwrap();
        let path = parquet::schema::types::ColumnPath::from(name);
        ColumnDescriptor::new(std::sync::Arc::new(field), 1, 0, path)
    }

    /// A Snappy page's values from `lo`, as `page_start` gives them after reading
    /// nothing of the first `before` of 20,000 rows and up to row `rows`.
    fn windowed_values(page: &Page, column: &ColumnDescriptor, at: (usize, usize)) -> Page {
        page_start(page, Compression::SNAPPY, column, at.0, at.1, 20_000)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_page_is_decoded_from_the_block_of_its_first_row_read() {
        let values: Vec<u8> = (1..=20_000i64).flat_map(|v| v.to_le_bytes()).collect();
        let body = snap::raw::Encoder::new().compress_vec(&values).unwrap();
        let page = plain_page(body, 20_000);
        // Rows 15,000..15,010: bytes 120,000..120,080, in the block from 65,536.
        let buf = windowed_values(&page, &int64("v"), (15_000, 15_010))
            .buffer()
            .clone();
        assert_eq!(buf.len(), values.len());
        assert!(buf[..65_536].iter().all(|b| *b == 0));
        assert_eq!(&buf[65_536..120_080], &values[65_536..120_080]);
        assert!(buf[120_080..].iter().all(|b| *b == 0));
        // Rows in the first block: the page's start.
        let buf = windowed_values(&page, &int64("v"), (5_000, 5_010))
            .buffer()
            .clone();
        assert_eq!(&buf[..40_080], &values[..40_080]);
        assert!(buf[40_080..].iter().all(|b| *b == 0));

        // Optional values: 1,000 present, 1,000 NULL, 18,000 present (RLE runs of
        // level 1, 0, 1). Rows 15,000..15,010 hold values 14,000..14,010.
        let mut levels = Vec::new();
        for (count, level) in [(1_000u32, 1u8), (1_000, 0), (18_000, 1)] {
            let mut header = count << 1;
            while header >= 0x80 {
                levels.push(header as u8 | 0x80);
                header >>= 7;
            }
            levels.extend([header as u8, level]);
        }
        let mut page_bytes = (levels.len() as u32).to_le_bytes().to_vec();
        page_bytes.extend(&levels);
        let from = page_bytes.len();
        page_bytes.extend(&values[..19_000 * 8]);
        let body = snap::raw::Encoder::new().compress_vec(&page_bytes).unwrap();
        let page = plain_page(body, 20_000);
        let column = optional_int64("v");
        let buf = windowed_values(&page, &column, (15_000, 15_010))
            .buffer()
            .clone();
        assert_eq!(buf.len(), page_bytes.len());
        assert_eq!(&buf[..from], &page_bytes[..from]);
        let (lo, hi) = (from + 14_000 * 8, from + 14_010 * 8);
        let block = lo / SNAPPY_BLOCK * SNAPPY_BLOCK;
        assert!(buf[from..block].iter().all(|b| *b == 0));
        assert_eq!(&buf[block..hi], &page_bytes[block..hi]);
        assert!(buf[hi..].iter().all(|b| *b == 0));
    }

    #[test]
    fn a_stream_reaching_back_before_the_block_is_decoded_from_its_start() {
        // A literal of 65,536 bytes, then three times as many copied from the 64 bytes
        // 65,536 back: every back-reference leaves its block.
        let first: Vec<u8> = (0..8_192i64).flat_map(|v| v.to_le_bytes()).collect();
        let mut body = Vec::new();
        let mut len = 4 * first.len() as u32;
        while len >= 0x80 {
            body.push(len as u8 | 0x80);
            len >>= 7;
        }
        body.push(len as u8);
        body.extend([62 << 2, 0xff, 0xff, 0x00]);
        body.extend(&first);
        for _ in 0..3 * first.len() / 64 {
            body.extend([(63 << 2) | 3]);
            body.extend((first.len() as u32).to_le_bytes());
        }
        let page = plain_page(body, 32_768);
        // Rows 9,000..9,010 (bytes 72,000..72,080): from the page's start.
        let start = page_start(
            &page,
            Compression::SNAPPY,
            &int64("v"),
            9_000,
            9_010,
            32_768,
        )
        .unwrap()
        .unwrap();
        let at = 72_000 - first.len();
        assert_eq!(&start.buffer()[72_000..72_080], &first[at..at + 80]);
        assert_eq!(&start.buffer()[..first.len()], &first[..]);
    }

    #[test]
    fn a_zstandard_frame_declaring_more_than_it_can_hold_is_decompressed_whole() {
        // 70 kB of zeros in a frame of a few bytes, its 4-byte content size then set to
        // 4 GiB: no start is decompressed, nothing of that size allocated.
        let mut body = zstd::bulk::compress(&vec![0u8; 70_000], 3).unwrap();
        let descriptor = body[4];
        assert_eq!(
            (descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3),
            (2, 1, 0)
        );
        body[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(zstd_declared(&body), Some(u32::MAX as usize));
        let page = plain_page(body, 8_750);
        let zstd = Compression::ZSTD(Default::default());
        assert!(page_start(&page, zstd, &int64("v"), 0, 1, 8_750)
            .unwrap()
            .is_none());
    }
}
