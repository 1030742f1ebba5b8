//! The pages of a column chunk for the arrow reader, Zstandard and Snappy pages
//! decompressed here ([`crate::read::decode::page_codec`]) into buffers reused per thread
//! ([`crate::read::decode::page_buffers`]).
//!
//! The crate's page reader finds, fetches and decodes the pages (with the offset index
//! where there is one, so skipped pages are never fetched). A Zstandard or Snappy chunk is
//! described to it as uncompressed, so that it makes no codec (a Zstandard codec makes two
//! contexts) and no zero-filled buffer for each page, and its pages are decompressed here.
//! Chunks of other codecs keep the crate's reader as it is. The record reader is given
//! these pages through its [`RowGroups`] interface.
//!
//! Where a read uses only a few pages of a chunk and its dictionary is large, those pages
//! are decompressed before the dictionary, so that only the dictionary entries they use
//! are decompressed ([`crate::read::decode::dictionary_prefix`]). Such a dictionary page is fetched only
//! as far as those entries: the crate's reader is handed its header and the start of its
//! body ([`DictionaryHead`]), and the rest is fetched once the entries are known. A page
//! whose rows a read takes only from its start has only its start decompressed
//! ([`crate::read::decode::page_prefix`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, RowGroups, RowSelection, RowSelectionPolicy,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::page_index::offset_index::PageLocation;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::ColumnDescPtr;

use crate::metadata::page_header::page_sizes;
use crate::metadata::page_index::offset_index;
use crate::read::batches::reader_builder;
use crate::read::decode::dictionary_prefix::{
    byte_arrays_end, cuttable, entry_width, keys_used, pages_read, MAX_PAGES, MIN_BYTES,
};
use crate::read::decode::page_buffers;
use crate::read::decode::page_codec::{
    page_limit, snappy_declared, snappy_into, snappy_len, zstd_declared, zstd_into, zstd_prefix,
};
use crate::read::decode::page_prefix::{page_start, Runs};
use crate::read::decode::snappy_prefix::{snappy_prefix, snappy_window, BLOCK as SNAPPY_BLOCK};

/// A reader of `rows` (all when `None`) of row group `row_group` of `file`, `projection`
/// only, in batches of `batch_size` rows, the rows picked as `policy` says; `Auto` by the
/// crate's rule counted over the selected span ([`span_policy`]).
///
/// The record reader given these pages applies the crate's default policy. Where
/// `policy` would pick the rows differently (runs of rows where the default takes a
/// mask, which decodes every page of the rows it spans where runs leave pages holding no
/// selected row unfetched), the crate's builder reads instead, with its own pages.
pub(crate) fn reader<F: ChunkReader + 'static>(
    file: F,
    metadata: &ArrowReaderMetadata,
    row_group: usize,
    projection: ProjectionMask,
    batch_size: usize,
    rows: Option<RowSelection>,
    policy: RowSelectionPolicy,
) -> Result<ParquetRecordBatchReader> {
    let policy = match (policy, rows.as_ref()) {
        (RowSelectionPolicy::Auto { .. }, Some(rows)) => span_policy(rows),
        _ => policy,
    };
    let default = RowSelectionPolicy::default();
    if uses_mask(policy, rows.as_ref()) != uses_mask(default, rows.as_ref()) {
        return reader_builder(
            file,
            metadata.clone(),
            row_group,
            projection,
            batch_size,
            rows,
        )
        .with_row_selection_policy(policy)
        .build();
    }
    let md = metadata.metadata();
    let descr = md.file_metadata().schema_descr();
    let levels =
        parquet_to_arrow_field_levels(descr, projection, Some(metadata.schema().fields()))?;
    let group = RowGroupPages {
        file: Arc::new(file),
        metadata: md.clone(),
        row_group,
        mask: uses_mask(default, rows.as_ref()),
        rows: rows.clone(),
    };
    // As the crate's builder does: no batch larger than the file.
    let file_rows = usize::try_from(md.file_metadata().num_rows()).unwrap_or(0);
    let batch_size = batch_size.min(file_rows).max(1);
    ParquetRecordBatchReader::try_new_with_row_groups(&levels, &group, batch_size, rows)
}

/// Whether the record reader, under `policy`, reads `rows` through a mask rather than as
/// runs: never for all rows; for `Auto`, when the runs are shorter on average than its
/// threshold (the crate's own rule).
fn uses_mask(policy: RowSelectionPolicy, rows: Option<&RowSelection>) -> bool {
    let Some(rows) = rows else {
        return false;
    };
    match policy {
        RowSelectionPolicy::Selectors => false,
        RowSelectionPolicy::Mask => true,
        RowSelectionPolicy::Auto { threshold } => {
            let (total, runs) = rows
                .iter()
                .filter(|s| s.row_count > 0)
                .fold((0usize, 0usize), |(total, runs), s| {
                    (total + s.row_count, runs + 1)
                });
            runs == 0 || total < runs.saturating_mul(threshold)
        }
    }
}

/// Fewest runs of rows for which a read through a mask is considered: fewer cost little
/// read one by one, and a read by runs decompresses only the start of a page it ends in.
const MIN_MASK_RUNS: usize = 64;

/// The policy for reading `rows`: the crate's `Auto` rule, but counted over the rows from
/// the first selected one to the last. Rows skipped before and after them are passed over
/// at once either way; a piece of a row group (`read::split`) starts and ends with many,
/// and counted in they would make a scattered selection look sparse.
fn span_policy(rows: &RowSelection) -> RowSelectionPolicy {
    let default = RowSelectionPolicy::default();
    let RowSelectionPolicy::Auto { threshold } = default else {
        return default;
    };
    // Rows and runs from the first selected run through the last one seen.
    let (mut through, mut span) = ((0usize, 0usize), None);
    for s in rows.iter().filter(|s| s.row_count > 0) {
        if span.is_some() || !s.skip {
            through = (through.0 + s.row_count, through.1 + 1);
        }
        if !s.skip {
            span = Some(through);
        }
    }
    match span {
        Some((total, runs)) if runs >= MIN_MASK_RUNS && total < runs.saturating_mul(threshold) => {
            RowSelectionPolicy::Mask
        }
        _ => default,
    }
}

/// The pages of leaf column `leaf` in row group `rg` of `file`, for a read of
/// `selected` rows (all when `None`), through a `mask` or as runs.
pub(crate) fn page_reader<F: ChunkReader + 'static>(
    file: Arc<F>,
    md: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    selected: Option<&RowSelection>,
    mask: bool,
) -> Result<Box<dyn PageReader>> {
    let group = md.row_group(rg);
    let rows = usize::try_from(group.num_rows())
        .map_err(|_| ParquetError::General("a row group's row count is negative".into()))?;
    let locations = offset_index(md, rg, leaf).map(|o| o.page_locations().clone());
    let chunk = group.column(leaf);
    Ok(match chunk.compression() {
        codec @ (Compression::ZSTD(_) | Compression::SNAPPY) => {
            let bare = chunk
                .clone()
                .into_builder()
                .set_compression(Compression::UNCOMPRESSED)
                .build()?;
            // A read of a few pages may cut the chunk's dictionary to the entries they
            // use. The pages read ahead are held for the reader, not fetched again.
            let read = match &locations {
                Some(locations) if cuttable(chunk) => {
                    pages_read(locations, rows as u64, selected, mask)
                }
                _ => None,
            };
            let held = read.as_ref().map(|_| Held::default());
            // Its dictionary page, when large, is fetched only as far as the read uses it.
            let head = match (&read, &locations) {
                (Some(read), Some(locations)) => DictionaryHead::of(chunk, locations, read.len()),
                _ => None,
            };
            let ahead = read
                .map(|read| -> Result<Ahead<F>> {
                    let keeping = HeldPages {
                        inner: file.clone(),
                        held: held.clone(),
                        keep: true,
                        head: None,
                    };
                    let pages = SerializedPageReader::new(
                        Arc::new(keeping),
                        &bare,
                        rows,
                        locations.clone(),
                    )?;
                    Ok(Ahead { pages, read })
                })
                .transpose()?;
            let taking = HeldPages {
                inner: file.clone(),
                held,
                keep: false,
                head: head.clone(),
            };
            // A read by runs takes from each page the rows up to its last selected one; a
            // read through a mask, every row up to the last selected of all.
            let runs = match (&locations, selected) {
                (Some(locations), Some(selected)) => Some(PageRows {
                    firsts: locations.iter().map(|p| p.first_row_index as u64).collect(),
                    rows: rows as u64,
                    runs: match mask {
                        true => Runs::span(selected),
                        false => Runs::of(selected),
                    },
                }),
                _ => None,
            };
            Box::new(OwnPages {
                pages: SerializedPageReader::new(Arc::new(taking), &bare, rows, locations)?,
                codec,
                sizes: (
                    u64::try_from(chunk.uncompressed_size()).unwrap_or(0),
                    u64::try_from(chunk.compressed_size()).unwrap_or(0),
                ),
                column: chunk.column_descr_ptr(),
                file,
                head,
                ahead,
                early: VecDeque::new(),
                cut: None,
                runs,
                at: 0,
            })
        }
        _ => Box::new(SerializedPageReader::new(file, chunk, rows, locations)?),
    })
}

/// One row group of a file, its column chunks read by [`page_reader`].
struct RowGroupPages<F> {
    file: Arc<F>,
    metadata: Arc<ParquetMetaData>,
    row_group: usize,
    /// The rows the reader is given (all when `None`), and whether it reads them
    /// through a mask.
    rows: Option<RowSelection>,
    mask: bool,
}

impl<F: ChunkReader + 'static> RowGroups for RowGroupPages<F> {
    fn num_rows(&self) -> usize {
        usize::try_from(self.metadata.row_group(self.row_group).num_rows()).unwrap_or(0)
    }

    fn column_chunks(&self, leaf: usize) -> Result<Box<dyn PageIterator>> {
        let pages = page_reader(
            self.file.clone(),
            &self.metadata,
            self.row_group,
            leaf,
            self.rows.as_ref(),
            self.mask,
        );
        Ok(Box::new(OneChunk(Some(pages))))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.metadata.row_group(self.row_group)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// The page readers of a column across the row groups read: here one.
struct OneChunk(Option<Result<Box<dyn PageReader>>>);

impl Iterator for OneChunk {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.take()
    }
}

impl PageIterator for OneChunk {}

/// Byte ranges fetched ahead of a reader: where each starts, and its bytes.
type Held = Arc<Mutex<Vec<(u64, Bytes)>>>;

/// A file whose page reads are held for a second reader of the same pages: a reader
/// that keeps holds what it fetches, one that does not takes what is held rather than
/// fetching it again.
struct HeldPages<F> {
    inner: Arc<F>,
    /// Byte ranges fetched ahead; `None` when nothing is read ahead.
    held: Option<Held>,
    keep: bool,
    /// The chunk's dictionary page, of which only the head is handed over.
    head: Option<Arc<DictionaryHead>>,
}

/// Bytes of a dictionary page fetched before its entries are counted: its header (tens of
/// bytes) and the start of its body.
const HEAD_BYTES: usize = 4 << 10;

/// Dictionary pages at least this large are fetched in part.
const FETCHED_IN_PART: usize = 64 << 10;

/// Bytes of a dictionary page's stream its head holds at least: more than a Snappy
/// stream's length (a varint of up to 5 bytes) or a Zstandard frame's header (18).
const STREAM_START: usize = 32;

/// The most bytes a Zstandard block decompresses to.
const ZSTD_BLOCK: usize = 128 << 10;

/// A large dictionary page of a read that uses only a few of a chunk's pages: the reader
/// is handed only its head ([`HEAD_BYTES`]), and its dictionary step fetches as much of
/// the body as the entries those pages use need ([`OwnPages::dictionary`]). The crate's
/// reader takes the head as the page: it checks no length against the header, and no
/// checksum (its `crc` feature is off; with it on, a head would fail the page's CRC).
struct DictionaryHead {
    /// Where the page starts, and the bytes up to the chunk's first data page (what the
    /// crate's reader asks for).
    start: u64,
    len: usize,
    /// The header's length, once the head was handed over.
    header: Mutex<Option<usize>>,
}

/// Whether a read of `pages` of the `of` data pages of `chunk`, whose dictionary page
/// takes `len` bytes, fetches that page only as far as those pages use it: it is not to
/// be fetched ahead then ([`crate::read::dictionary::fetch_selected_pages`]).
pub(crate) fn dictionary_in_part(
    chunk: &ColumnChunkMetaData,
    pages: usize,
    of: usize,
    len: u64,
) -> bool {
    cuttable(chunk)
        && sized_by_head(chunk)
        && pages > 0
        && pages <= MAX_PAGES
        && pages < of
        && len >= FETCHED_IN_PART as u64
}

/// Whether the size of `chunk`'s dictionary is known from the head of its page: from a
/// Snappy stream's start, or from its entries' count and width. A Zstandard stream of
/// byte arrays is sized only by its whole frame ([`zstd_declared`]).
fn sized_by_head(chunk: &ColumnChunkMetaData) -> bool {
    chunk.compression() == Compression::SNAPPY || entry_width(chunk.column_descr()).is_some()
}

impl DictionaryHead {
    /// The dictionary page of `chunk`, whose data pages are at `locations`, for a read of
    /// `pages` of them, if it is to be fetched in part ([`dictionary_in_part`]).
    fn of(
        chunk: &ColumnChunkMetaData,
        locations: &[PageLocation],
        pages: usize,
    ) -> Option<Arc<Self>> {
        let (start, _) = chunk.byte_range();
        let first = u64::try_from(locations.first()?.offset).ok()?;
        let len = usize::try_from(first.checked_sub(start)?).ok()?;
        dictionary_in_part(chunk, pages, locations.len(), len as u64).then(|| {
            Arc::new(DictionaryHead {
                start,
                len,
                header: Mutex::new(None),
            })
        })
    }

    /// The header's length if only the head was handed over.
    fn handed_over(&self) -> Option<usize> {
        *self.header.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The head of the page in `file`, or `None` where its header, and the start of its
    /// stream (a Snappy stream's length, or a Zstandard frame's header), do not end in it.
    fn fetch<F: ChunkReader>(&self, file: &F) -> Option<Bytes> {
        let bytes = file.get_bytes(self.start, HEAD_BYTES.min(self.len)).ok()?;
        let header = page_sizes(&bytes).ok()?.header_len;
        (header.saturating_add(STREAM_START) <= bytes.len()).then(|| {
            *self.header.lock().unwrap_or_else(|e| e.into_inner()) = Some(header);
            bytes
        })
    }

    /// The first `n` bytes of the page's body (all of it past its end), fetched with its
    /// header: a read at the page's start is checked as a page read.
    fn body<F: ChunkReader>(&self, file: &F, header: usize, n: usize) -> Result<Bytes> {
        let len = header.saturating_add(n).min(self.len);
        Ok(file.get_bytes(self.start, len)?.slice(header.min(len)..))
    }
}

impl<F: ChunkReader> Length for HeldPages<F> {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl<F: ChunkReader> ChunkReader for HeldPages<F> {
    type T = F::T;

    fn get_read(&self, start: u64) -> Result<Self::T> {
        self.inner.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        let head = self.head.as_ref();
        if let Some(head) = head.filter(|h| h.start == start && h.len == length) {
            if let Some(bytes) = head.fetch(&*self.inner) {
                return Ok(bytes);
            }
        }
        let Some(held) = &self.held else {
            return self.inner.get_bytes(start, length);
        };
        let mut held = held
            .lock()
            .map_err(|_| ParquetError::General("a page reader panicked".into()))?;
        if self.keep {
            let bytes = self.inner.get_bytes(start, length)?;
            held.push((start, bytes.clone()));
            return Ok(bytes);
        }
        match held
            .iter()
            .position(|(at, b)| *at == start && b.len() == length)
        {
            Some(i) => Ok(held.swap_remove(i).1),
            None => self.inner.get_bytes(start, length),
        }
    }
}

/// The crate's pages of a Zstandard or Snappy chunk described as uncompressed,
/// decompressed here.
struct OwnPages<F: ChunkReader> {
    pages: SerializedPageReader<HeldPages<F>>,
    codec: Compression,
    /// The chunk's uncompressed and compressed sizes: a page is expected to decompress in
    /// the same ratio.
    sizes: (u64, u64),
    column: ColumnDescPtr,
    file: Arc<F>,
    /// The dictionary page handed over in part, if it is.
    head: Option<Arc<DictionaryHead>>,
    /// The pages the read may use, to be decompressed before the dictionary.
    ahead: Option<Ahead<F>>,
    /// Those pages' bodies, raw and decompressed, until the reader asks for them.
    early: VecDeque<(Bytes, Bytes)>,
    /// The dictionary entries decoded, when fewer than the chunk's: from the first of
    /// them (those before are filler) to the end of the range.
    cut: Option<(usize, usize)>,
    /// The rows the read takes from each page; `None` for a read of every row, or
    /// without an offset index.
    runs: Option<PageRows>,
    /// The position of the next data page in the chunk.
    at: usize,
}

/// Where a chunk's pages start, and the runs of rows a read takes.
struct PageRows {
    firsts: Vec<u64>,
    rows: u64,
    runs: Runs,
}

impl PageRows {
    /// How many rows of page `at` come before the first the read takes, how many it
    /// takes from its first to its last selected, and how many the offset index says it
    /// holds.
    fn used(&self, at: usize) -> Option<(usize, usize, usize)> {
        let first = *self.firsts.get(at)?;
        let end = self.firsts.get(at + 1).copied().unwrap_or(self.rows);
        let used = usize::try_from(self.runs.used(first, end)?).ok()?;
        let before = usize::try_from(self.runs.before(first, end)?).ok()?;
        let of = usize::try_from(end.checked_sub(first)?).ok()?;
        Some((before, used, of))
    }
}

/// A second reader of the chunk's pages, and the positions of those a read uses, in
/// order.
struct Ahead<F: ChunkReader> {
    pages: SerializedPageReader<HeldPages<F>>,
    read: Vec<usize>,
}

impl<F: ChunkReader> Ahead<F> {
    /// The pages the read may use, raw (described as uncompressed), with their positions.
    fn raw_pages(mut self) -> Result<Vec<(usize, Page)>> {
        let mut out = Vec::with_capacity(self.read.len());
        let (mut at, end) = (0, self.read.last().map_or(0, |p| p + 1));
        while at < end {
            let Some(next) = self.pages.peek_next_page()? else {
                break;
            };
            if next.is_dict || self.read.binary_search(&at).is_err() {
                self.pages.skip_next_page()?;
            } else {
                match self.pages.get_next_page()? {
                    Some(page) => out.push((at, page)),
                    None => break,
                }
            }
            at += usize::from(!next.is_dict);
        }
        Ok(out)
    }
}

impl<F: ChunkReader> Iterator for OwnPages<F> {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<F: ChunkReader> OwnPages<F> {
    /// Data page `at`, raw from the crate's reader, decompressed: only its start when the
    /// read takes only the rows there.
    fn decompress_data(&self, page: Page, at: usize) -> Result<Page> {
        if let Some((before, rows, of)) = self.runs.as_ref().and_then(|r| r.used(at)) {
            let column = &self.column;
            if let Some(start) = page_start(&page, self.codec, column, before, rows, of)? {
                return Ok(start);
            }
        }
        self.decompress(page)
    }

    /// `page`, raw from the crate's reader, decompressed.
    fn decompress(&self, page: Page) -> Result<Page> {
        let (whole, packed) = self.sizes;
        let expected = |compressed: usize| {
            ((compressed as u64).saturating_mul(whole) / packed.max(1)) as usize
        };
        decompressed(page, self.codec, expected)
    }

    /// The dictionary page `page` (raw), decompressed whole, or only the entries the
    /// pages the read may use need, those pages decompressed now and kept. A page handed
    /// over in part ([`DictionaryHead`]) has the body those entries need fetched here, or
    /// all of it where they cannot be cut.
    fn dictionary(&mut self, page: Page) -> Result<Page> {
        let Some(ahead) = self.ahead.take() else {
            return self.whole_dictionary(page);
        };
        let Page::DictionaryPage {
            buf,
            num_values,
            encoding,
            is_sorted,
        } = &page
        else {
            return self.whole_dictionary(page);
        };
        // The body's length, of which `buf` may hold only the start.
        let partial = self.partial();
        let body_len = partial
            .as_ref()
            .map_or(buf.len(), |(h, header)| h.len - header);
        let width = entry_width(&self.column);
        let all = *num_values as usize;
        // The dictionary's size: its entries' for fixed widths, else what the stream
        // declares; within what its bytes can hold.
        let size = match (self.codec, width) {
            (Compression::SNAPPY, _) => snappy_declared(buf, body_len)?,
            (_, Some(w)) => all.saturating_mul(w),
            (_, None) if partial.is_none() => zstd_declared(buf).unwrap_or(0),
            (_, None) => 0,
        };
        let plain = matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY);
        if !plain
            || size < MIN_BYTES
            || size > page_limit(self.codec, body_len)
            || width.is_some_and(|w| all.saturating_mul(w) != size)
        {
            return self.whole_dictionary(page);
        }
        // Entries of a fixed width in a Snappy page may be decoded from the 64 KiB block
        // before the first used ([`snappy_window`]); others from the start. Past half the
        // dictionary a cut from the start is not worth making: the keys are not counted
        // further. Any page whose keys cannot be found leaves the dictionary whole.
        let window = self.codec == Compression::SNAPPY && width.is_some();
        let most = match width {
            Some(_) if window => all,
            Some(w) => size / w / 2,
            None => all / 2,
        };
        let (mut lowest, mut used) = (usize::MAX, 0);
        for (at, raw) in ahead.raw_pages()? {
            let body = raw.buffer().clone();
            let page = self.decompress_data(raw, at)?;
            if used <= most {
                match keys_used(&page, &self.column, most) {
                    Ok(Some((lo, end))) => (lowest, used) = (lowest.min(lo), used.max(end)),
                    Ok(None) => {}
                    Err(_) => used = usize::MAX,
                }
            }
            self.early.push_back((body, page.buffer().clone()));
        }
        let entries = used.min(all);
        // The first entry's byte, and the start of its Snappy block.
        let first = match width {
            Some(w) if window && lowest < entries => lowest * w,
            _ => 0,
        };
        let block = first / SNAPPY_BLOCK * SNAPPY_BLOCK;
        // Byte arrays: their mean size, and half again, as a guess.
        let start = match width {
            Some(w) => entries * w,
            None => {
                let mean = (size as u128 * entries as u128 / all.max(1) as u128) as usize;
                mean.saturating_add(mean / 2).saturating_add(4096).min(size)
            }
        };
        if (start - block.min(start)).saturating_mul(2) > size {
            return self.whole_dictionary(page);
        }
        let mut out = page_buffers::take(start);
        if out.len() < start {
            out.resize(start, 0);
        }
        // The body as far as `start` bytes of its stream are expected to come from: in
        // the page's ratio, and a quarter again; for Zstandard, whose compressed blocks
        // decode whole, up to the end of the block holding them. A guess that falls short
        // is an error of the decoder, and the whole body is decoded then.
        let decoded = match partial {
            Some((head, header)) => {
                let upto = match self.codec {
                    Compression::ZSTD(_) => start.next_multiple_of(ZSTD_BLOCK).min(size),
                    _ => start,
                };
                let want = (upto as u128 * body_len as u128 / size.max(1) as u128) as usize;
                let want = want.saturating_add(want / 4).saturating_add(HEAD_BYTES);
                let part = match want < buf.len() {
                    true => buf.clone(),
                    false => head.body(&*self.file, header, want)?,
                };
                match self.dictionary_start(&part, &mut out[..start], first, size) {
                    Err(_) if part.len() < body_len => {
                        let whole = head.body(&*self.file, header, body_len)?;
                        self.dictionary_start(&whole, &mut out[..start], first, size)
                    }
                    decoded => decoded,
                }
            }
            None => self.dictionary_start(buf, &mut out[..start], first, size),
        }?;
        let Some(from) = decoded else {
            return self.whole_dictionary(page);
        };
        let bytes = match width {
            Some(_) => start,
            None => match byte_arrays_end(&out[..start], entries) {
                Some(end) => end,
                None => return self.whole_dictionary(page),
            },
        };
        self.cut = Some((from, entries));
        Ok(Page::DictionaryPage {
            buf: page_buffers::page(out, bytes),
            num_values: entries as u32,
            encoding: *encoding,
            is_sorted: *is_sorted,
        })
    }

    /// Fill `out` with the start of the dictionary stream `body` (of a dictionary of
    /// `size` bytes) from the Snappy block holding byte `first` on (fixed widths), and say
    /// from which entry on it is decoded (those before are filler); `None` where the whole
    /// stream is to be decompressed instead.
    fn dictionary_start(
        &self,
        body: &[u8],
        out: &mut [u8],
        first: usize,
        size: usize,
    ) -> Result<Option<usize>> {
        let block = first / SNAPPY_BLOCK * SNAPPY_BLOCK;
        let width = entry_width(&self.column);
        let window = match (self.codec, width) {
            (Compression::SNAPPY, Some(w)) if block > 0 => {
                snappy_window(body, out, first)?.map(|block| (block, w))
            }
            _ => None,
        };
        // The entries before the window's block (and one it cuts) are never read: filler.
        Ok(match window {
            Some((block, w)) => {
                out[..block].fill(0);
                Some(block.div_ceil(w))
            }
            // A stream not in independent blocks, whose start is most of it.
            None if block > 0 && out.len().saturating_mul(2) > size => None,
            None if self.codec == Compression::SNAPPY => {
                snappy_prefix(body, out)?;
                Some(0)
            }
            None => {
                zstd_prefix(body, out)?;
                Some(0)
            }
        })
    }

    /// The dictionary page handed over as its head only, and the length of its header.
    fn partial(&self) -> Option<(Arc<DictionaryHead>, usize)> {
        let head = self.head.as_ref()?;
        Some((head.clone(), head.handed_over()?))
    }

    /// The dictionary page `page` (raw) decompressed whole: its body fetched whole first
    /// where only its head was handed over.
    fn whole_dictionary(&self, mut page: Page) -> Result<Page> {
        if let Some((head, header)) = self.partial() {
            if let Page::DictionaryPage { buf, .. } = &mut page {
                *buf = head.body(&*self.file, header, head.len - header)?;
            }
        }
        self.decompress(page)
    }

    /// The data page `page` (raw), at position `at`, decompressed: kept from before its
    /// dictionary, or now.
    fn data(&mut self, mut page: Page, at: usize) -> Result<Page> {
        let early = self.early.iter().position(|(raw, _)| raw == page.buffer());
        if let (Some(i), Page::DataPage { buf, .. } | Page::DataPageV2 { buf, .. }) =
            (early, &mut page)
        {
            *buf = self
                .early
                .swap_remove_back(i)
                .map_or_else(|| buf.clone(), |(_, b)| b);
            return Ok(page);
        }
        let page = self.decompress_data(page, at)?;
        // A page not read ahead must not use the entries left out.
        if let Some((from, entries)) = self.cut {
            if let Some((lo, end)) = keys_used(&page, &self.column, entries)? {
                if lo < from || end > entries {
                    return Err(ParquetError::General(format!(
                        "a page uses dictionary entries {lo} to {end}, of which {from} to \
                         {entries} were decoded"
                    )));
                }
            }
        }
        Ok(page)
    }
}

impl<F: ChunkReader> PageReader for OwnPages<F> {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        match self.pages.get_next_page()? {
            Some(page @ Page::DictionaryPage { .. }) => self.dictionary(page).map(Some),
            Some(page) => {
                self.at += 1;
                self.data(page, self.at - 1).map(Some)
            }
            None => Ok(None),
        }
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.pages.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        // Pages are counted only for a read that takes some from their start.
        if self.runs.is_some() && self.pages.peek_next_page()?.is_some_and(|p| !p.is_dict) {
            self.at += 1;
        }
        self.pages.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.pages.at_record_boundary()
    }
}

/// `page` with its body decompressed: all of it, but for a version 2 data page, whose
/// levels come first uncompressed, and which may not be compressed at all.
fn decompressed(
    mut page: Page,
    codec: Compression,
    expected: impl Fn(usize) -> usize,
) -> Result<Page> {
    match &mut page {
        Page::DataPage { buf, .. } | Page::DictionaryPage { buf, .. } => {
            *buf = inflated(buf, 0, codec, &expected)?;
        }
        Page::DataPageV2 {
            buf,
            is_compressed: true,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            let levels = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
            *buf = inflated(buf, levels, codec, &expected)?;
        }
        Page::DataPageV2 { .. } => {}
    }
    Ok(page)
}

/// `buf`'s first `kept` bytes as they are, the rest decompressed with `codec` after them
/// (`expected`: the bytes a compressed length is expected to decompress to), in a buffer
/// of the thread's pool.
fn inflated(
    buf: &Bytes,
    kept: usize,
    codec: Compression,
    expected: impl Fn(usize) -> usize,
) -> Result<Bytes> {
    if kept > buf.len() {
        return Err(ParquetError::General(format!(
            "corrupt page: levels of {kept} bytes in a page of {}",
            buf.len()
        )));
    }
    let (levels, body) = buf.split_at(kept);
    // Values of no bytes (a page of NULLs only), which a writer may leave uncompressed.
    if body.is_empty() {
        return Ok(buf.clone());
    }
    // A buffer of a page that fails to decompress is freed, not kept.
    if codec == Compression::SNAPPY {
        let size = kept + snappy_len(body)?;
        let mut out = page_buffers::take(size);
        // Only bytes never written before are zero-filled; a reused buffer has them.
        if out.len() < size {
            out.resize(size, 0);
        }
        out[..kept].copy_from_slice(levels);
        snappy_into(body, &mut out[kept..size])?;
        return Ok(page_buffers::page(out, size));
    }
    let expected = expected(body.len());
    let mut out = page_buffers::take(kept + expected);
    // The Zstandard stream writes into the spare capacity: nothing needs initialising.
    out.clear();
    out.extend_from_slice(levels);
    zstd_into(body, &mut out, expected)?;
    let size = out.len();
    Ok(page_buffers::page(out, size))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelector,
    };
    use parquet::arrow::ArrowWriter;
    use parquet::basic::ZstdLevel;
    use parquet::file::metadata::PageIndexPolicy;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    use super::*;

    /// The footer of `bytes` with its page index.
    fn with_page_index(bytes: &Bytes) -> ArrowReaderMetadata {
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        ArrowReaderMetadata::load(bytes, options).unwrap()
    }

    fn file(version: WriterVersion, codec: Compression) -> Bytes {
        let n = 20_000;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 13 != 0).then_some(i * 7 % 1000)),
        ));
        let names: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| format!("name {}", i % 300))),
        ));
        let batch = RecordBatch::try_from_iter([("id", ids), ("name", names)]).unwrap();
        written(&batch, version, codec)
    }

    /// `batch` written in 1,000-row pages (dictionaries of up to 1 MiB, the default).
    fn written(batch: &RecordBatch, version: WriterVersion, codec: Compression) -> Bytes {
        written_as(batch, version, codec, 1000, &[])
    }

    /// `batch` written in `page_rows`-row pages, the columns `plain` without a dictionary.
    fn written_as(
        batch: &RecordBatch,
        version: WriterVersion,
        codec: Compression,
        page_rows: usize,
        plain: &[&str],
    ) -> Bytes {
        let props = plain
            .iter()
            .fold(WriterProperties::builder(), |props, c| {
                props.set_column_dictionary_enabled((*c).into(), false)
            })
            .set_writer_version(version)
            .set_compression(codec)
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(1000)
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
        Bytes::from(out)
    }

    /// `rows` (all when `None`) of `file` read by [`reader`] under `policy`, in one batch.
    fn read_ours<F: ChunkReader + Clone + 'static>(
        file: &F,
        meta: &ArrowReaderMetadata,
        rows: Option<RowSelection>,
        policy: RowSelectionPolicy,
    ) -> RecordBatch {
        let batches = reader(
            file.clone(),
            meta,
            0,
            ProjectionMask::all(),
            1024,
            rows,
            policy,
        )
        .unwrap()
        .collect::<std::result::Result<Vec<_>, _>>()
        .unwrap();
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    }

    /// The same rows read by the crate's own reader.
    fn read_theirs(
        bytes: &Bytes,
        meta: &ArrowReaderMetadata,
        rows: Option<RowSelection>,
    ) -> RecordBatch {
        let mut theirs =
            ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), meta.clone())
                .with_batch_size(1024);
        if let Some(rows) = rows {
            theirs = theirs.with_row_selection(rows);
        }
        let batches = theirs
            .build()
            .unwrap()
            .collect::<std::result::Result<Vec<_>, _>>()
            .unwrap();
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    }

    #[test]
    fn reads_match_the_crates_reader_for_both_page_versions_and_codecs() {
        let selection = RowSelection::from(vec![
            RowSelector::skip(2500),
            RowSelector::select(700),
            RowSelector::skip(9000),
            RowSelector::select(3),
            RowSelector::skip(10),
            RowSelector::select(5000),
        ]);
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for codec in [
                Compression::ZSTD(ZstdLevel::default()),
                Compression::SNAPPY,
                Compression::UNCOMPRESSED,
            ] {
                let bytes = file(version, codec);
                let meta = with_page_index(&bytes);
                for rows in [None, Some(selection.clone())] {
                    let ours =
                        read_ours(&bytes, &meta, rows.clone(), RowSelectionPolicy::default());
                    let theirs = read_theirs(&bytes, &meta, rows.clone());
                    assert_eq!(ours, theirs, "{version:?} {codec:?} {}", rows.is_some());
                    assert!(ours.num_rows() > 0);
                }
            }
        }
    }

    /// A sorted key of 51,429 distinct values (a 411 kB dictionary) in 1,000-row pages,
    /// every seventh NULL, beside a column of 30,000 keys in a random order, twice, and
    /// one of 30,000 sorted strings (a 750 kB dictionary).
    fn sorted_keys(version: WriterVersion, codec: Compression) -> Bytes {
        let n = 60_000i64;
        let sorted: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 3).then_some(i * 3)),
        ));
        let random: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| (i * 7919) % 30_000),
        ));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("customer {:08}", i / 2)),
        ));
        let batch =
            RecordBatch::try_from_iter([("k", sorted), ("r", random), ("s", names)]).unwrap();
        written(&batch, version, codec)
    }

    /// The dictionary page `page_reader` gives for `selected` rows of leaf `leaf`: its
    /// entry count and bytes.
    fn dictionary_page(bytes: &Bytes, leaf: usize, selected: &RowSelection) -> (u32, Bytes) {
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let meta = ArrowReaderMetadata::load(bytes, options).unwrap();
        let mask = uses_mask(RowSelectionPolicy::default(), Some(selected));
        let mut pages = page_reader(
            Arc::new(bytes.clone()),
            meta.metadata(),
            0,
            leaf,
            Some(selected),
            mask,
        )
        .unwrap();
        match pages.get_next_page().unwrap() {
            Some(Page::DictionaryPage {
                num_values, buf, ..
            }) => (num_values, buf),
            other => panic!("not a dictionary page: {other:?}"),
        }
    }

    /// How many entries that dictionary page of leaf `leaf` (of eight bytes) holds, and
    /// how many of its first are all zero bytes.
    fn dictionary_window(bytes: &Bytes, leaf: usize, selected: &RowSelection) -> (u32, usize) {
        let (entries, buf) = dictionary_page(bytes, leaf, selected);
        let zeros = buf.chunks(8).take_while(|e| e.iter().all(|b| *b == 0));
        (entries, zeros.count())
    }

    /// How many entries that dictionary page holds, checked against its bytes.
    fn dictionary_entries(bytes: &Bytes, leaf: usize, selected: &RowSelection) -> u32 {
        let (entries, buf) = dictionary_page(bytes, leaf, selected);
        let width = if leaf == 2 { 4 + 17 } else { 8 };
        assert_eq!(buf.len(), entries as usize * width);
        entries
    }

    /// A file that counts the reads of each byte range.
    #[derive(Clone)]
    struct Counted(Bytes, Arc<Mutex<Vec<(u64, usize)>>>);

    impl Length for Counted {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }

    impl ChunkReader for Counted {
        type T = <Bytes as ChunkReader>::T;

        fn get_read(&self, start: u64) -> Result<Self::T> {
            self.0.get_read(start)
        }

        fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
            self.1.lock().unwrap().push((start, length));
            self.0.get_bytes(start, length)
        }
    }

    #[test]
    fn pages_read_before_the_dictionary_are_fetched_once() {
        let bytes = sorted_keys(WriterVersion::PARQUET_1_0, Compression::SNAPPY);
        let meta = with_page_index(&bytes);
        let file = Counted(bytes, Arc::default());
        let rows = RowSelection::from(vec![
            RowSelector::skip(3100),
            RowSelector::select(5),
            RowSelector::skip(3000),
            RowSelector::select(1),
            RowSelector::skip(53_894),
        ]);
        let got: usize = reader(
            file.clone(),
            &meta,
            0,
            ProjectionMask::all(),
            1024,
            Some(rows),
            RowSelectionPolicy::Selectors,
        )
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
        assert_eq!(got, 6);
        let mut reads = file.1.lock().unwrap().clone();
        let all = reads.len();
        reads.sort_unstable();
        reads.dedup();
        assert_eq!(reads.len(), all, "a range read twice");
        // The dictionary and the two selected pages of each of the three columns, at
        // least; the pages between them only ahead, for the dictionaries.
        assert!(all >= 9, "{all}");
    }

    #[test]
    fn a_few_pages_of_a_sorted_key_decode_only_the_dictionary_entries_they_use() {
        let select = |s: Vec<RowSelector>| RowSelection::from(s);
        let first = select(vec![RowSelector::select(1000), RowSelector::skip(59_000)]);
        let two = select(vec![
            RowSelector::skip(3100),
            RowSelector::select(5),
            RowSelector::skip(3000),
            RowSelector::select(1),
            RowSelector::skip(53_894),
        ]);
        let many = select(vec![RowSelector::skip(100), RowSelector::select(20_000)]);
        let versions = [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0];
        let codecs = [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())];
        for (version, codec) in versions.into_iter().flat_map(|v| codecs.map(|c| (v, c))) {
            let bytes = sorted_keys(version, codec);
            // Page 0 holds keys 0..1000 less its NULLs; pages 3 to 6 up to key 7000.
            assert_eq!(dictionary_entries(&bytes, 0, &first), 857);
            assert_eq!(dictionary_entries(&bytes, 0, &two), 6000);
            // Entries are numbered as the writer meets them: the first page of any column
            // uses the first. A later page uses entries 15,000 to 16,000: from the start,
            // more than half of them, so no cut; a Snappy page's are decoded from the
            // 64 KiB block holding entry 15,000 (byte 120,000), the entries before it
            // left as filler.
            assert_eq!(dictionary_entries(&bytes, 1, &first), 1000);
            let late = select(vec![RowSelector::skip(45_000), RowSelector::select(10)]);
            let (entries, filler) = dictionary_window(&bytes, 1, &late);
            match codec {
                Compression::SNAPPY => assert_eq!((entries, filler), (16_000, 8192)),
                // Whole: only the first entry, the value 0, is zero.
                _ => assert_eq!((entries, filler), (30_000, 1)),
            }
            // Byte arrays: 500 of the strings on the first page, 3,500 up to page 6.
            assert_eq!(dictionary_entries(&bytes, 2, &first), 500);
            assert_eq!(dictionary_entries(&bytes, 2, &two), 3500);
            assert_eq!(dictionary_entries(&bytes, 2, &late), 30_000);
            // Twenty pages are too many to read first.
            assert_eq!(dictionary_entries(&bytes, 0, &many), 51_429);

            let meta = with_page_index(&bytes);
            for rows in [first.clone(), two.clone(), many.clone(), late.clone()] {
                for policy in [RowSelectionPolicy::Selectors, RowSelectionPolicy::default()] {
                    let ours = read_ours(&bytes, &meta, Some(rows.clone()), policy);
                    let theirs = read_theirs(&bytes, &meta, Some(rows.clone()));
                    assert_eq!(ours, theirs, "{version:?} {codec:?} {policy:?}");
                    assert!(ours.num_rows() > 0);
                }
            }
        }
    }

    /// The bytes of `reads` (start, length) that fall in `range`, each read counted.
    fn bytes_in(reads: &[(u64, usize)], range: &std::ops::Range<u64>) -> u64 {
        reads
            .iter()
            .map(|&(s, l)| {
                (s + l as u64)
                    .min(range.end)
                    .saturating_sub(s.max(range.start))
            })
            .sum()
    }

    /// Where the dictionary page of leaf `leaf` lies: up to the chunk's first data page.
    fn dictionary_bytes(meta: &ArrowReaderMetadata, leaf: usize) -> std::ops::Range<u64> {
        let (start, _) = meta.metadata().row_group(0).column(leaf).byte_range();
        let index = offset_index(meta.metadata(), 0, leaf).unwrap();
        start..index.page_locations()[0].offset as u64
    }

    /// `rows` of `bytes` read by [`reader`] in runs, checked against the crate's reader;
    /// the reads made of the file, (start, length) each.
    fn read_counted(
        bytes: &Bytes,
        meta: &ArrowReaderMetadata,
        rows: &RowSelection,
    ) -> Vec<(u64, usize)> {
        let file = Counted(bytes.clone(), Arc::default());
        let ours = read_ours(
            &file,
            meta,
            Some(rows.clone()),
            RowSelectionPolicy::Selectors,
        );
        assert_eq!(ours, read_theirs(bytes, meta, Some(rows.clone())));
        assert!(ours.num_rows() > 0);
        let reads = file.1.lock().unwrap().clone();
        reads
    }

    #[test]
    fn a_large_dictionary_page_is_fetched_only_as_far_as_the_pages_read_use_it() {
        let first = RowSelection::from(vec![RowSelector::select(1000), RowSelector::skip(59_000)]);
        let late = RowSelection::from(vec![RowSelector::skip(45_000), RowSelector::select(10)]);
        let versions = [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0];
        let codecs = [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())];
        for (version, codec) in versions.into_iter().flat_map(|v| codecs.map(|c| (v, c))) {
            let bytes = sorted_keys(version, codec);
            let meta = with_page_index(&bytes);
            for rows in [&first, &late] {
                let reads = read_counted(&bytes, &meta, rows);
                if std::ptr::eq(rows, &late) {
                    // Entries from the middle of each dictionary: fetched as far as the
                    // guess or whole, and read as the crate reads them.
                    continue;
                }
                let mut cut = 0;
                for leaf in 0..3 {
                    let page = dictionary_bytes(&meta, leaf);
                    let (len, read) = (page.end - page.start, bytes_in(&reads, &page));
                    // The first page uses each dictionary's first entries.
                    if len >= FETCHED_IN_PART as u64 {
                        assert!(
                            read * 4 < len,
                            "{version:?} {codec:?} {leaf}: {read} of {len}"
                        );
                        cut += 1;
                    } else {
                        assert!(read >= len, "{version:?} {codec:?} {leaf}: {read} of {len}");
                    }
                }
                // Zstandard makes each of these dictionaries smaller than a page fetched
                // in part (`a_zstandard_dictionary_is_fetched_in_part_too`).
                if codec == Compression::SNAPPY {
                    assert!(cut > 0, "{version:?}: no dictionary fetched in part");
                }
            }
        }
    }

    #[test]
    fn a_zstandard_dictionary_is_fetched_in_part_too() {
        // 100,000 keys of scattered bits: a dictionary Zstandard cannot shrink.
        let n = 100_000i64;
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64),
        ));
        let batch = RecordBatch::try_from_iter([("k", keys)]).unwrap();
        let rows = RowSelection::from(vec![RowSelector::select(1000), RowSelector::skip(99_000)]);
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let bytes = written(&batch, version, Compression::ZSTD(ZstdLevel::default()));
            let meta = with_page_index(&bytes);
            let reads = read_counted(&bytes, &meta, &rows);
            let page = dictionary_bytes(&meta, 0);
            let (len, read) = (page.end - page.start, bytes_in(&reads, &page));
            assert!(len >= FETCHED_IN_PART as u64, "{len}");
            assert!(read * 4 < len, "{version:?}: {read} of {len}");
        }
    }

    #[test]
    fn a_dictionary_start_that_compresses_worse_than_the_rest_is_fetched_again_whole() {
        // 6,000 keys of scattered bits, then 98,000 counting up: the first six pages use
        // the entries of the scattered keys, which take more of the stream than the page's
        // ratio says, so the start fetched falls short and the page is fetched whole.
        let n = 104_000i64;
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| match i {
            0..6_000 => (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64,
            _ => i,
        })));
        let batch = RecordBatch::try_from_iter([("k", keys)]).unwrap();
        let rows = RowSelection::from(vec![RowSelector::select(6_000), RowSelector::skip(98_000)]);
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let bytes = written(&batch, version, Compression::SNAPPY);
            let meta = with_page_index(&bytes);
            let page = dictionary_bytes(&meta, 0);
            assert!(page.end - page.start >= FETCHED_IN_PART as u64);
            let reads = read_counted(&bytes, &meta, &rows);
            // The head, a start that fell short, then the whole page.
            let head = (page.start, HEAD_BYTES);
            let whole = (page.start, (page.end - page.start) as usize);
            assert!(reads.contains(&head), "{version:?}: {reads:?}");
            assert!(reads.contains(&whole), "{version:?}: {reads:?}");
            assert_eq!(reads.iter().filter(|r| r.0 == page.start).count(), 3);
        }
    }

    /// Four columns of 40,000 rows in 5,000-row pages: a sorted key with NULLs and a
    /// required one (dictionary encoded), strings and doubles with NULLs (plain).
    fn mixed(version: WriterVersion, codec: Compression) -> Bytes {
        let n = 40_000i64;
        let keys: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 3).then_some(i / 3)),
        ));
        let required: ArrayRef = Arc::new(arrow_array::Int32Array::from_iter_values(
            (0..n).map(|i| (i * 7919 % 5000) as i32),
        ));
        let strings: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| {
            (i % 11 != 5)
                .then(|| format!("comment {} {}", i * 31 % 977, "x".repeat((i % 40) as usize)))
        })));
        let doubles: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter(
            (0..n).map(|i| (i % 5 != 1).then_some(i as f64 * 1.5)),
        ));
        let batch = RecordBatch::try_from_iter([
            ("k", keys),
            ("r", required),
            ("s", strings),
            ("d", doubles),
        ])
        .unwrap();
        written_as(&batch, version, codec, 5000, &["s", "d"])
    }

    /// The data pages of leaf `leaf` handed to a reader of `selected` by runs (empty for
    /// a page it skips, holding no selected row).
    fn data_pages(bytes: &Bytes, leaf: usize, selected: Option<&RowSelection>) -> Vec<Bytes> {
        data_pages_read(bytes, leaf, selected, false)
    }

    /// The same, read through a `mask` or not.
    fn data_pages_read(
        bytes: &Bytes,
        leaf: usize,
        selected: Option<&RowSelection>,
        mask: bool,
    ) -> Vec<Bytes> {
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let meta = ArrowReaderMetadata::load(bytes, options).unwrap();
        let md = meta.metadata();
        let rows = md.row_group(0).num_rows() as u64;
        let firsts: Vec<u64> = offset_index(md, 0, leaf)
            .unwrap()
            .page_locations()
            .iter()
            .map(|p| p.first_row_index as u64)
            .collect();
        let runs = selected.map(|s| if mask { Runs::span(s) } else { Runs::of(s) });
        let mut pages = page_reader(Arc::new(bytes.clone()), md, 0, leaf, selected, mask).unwrap();
        let mut lengths = Vec::new();
        while let Some(next) = pages.peek_next_page().unwrap() {
            let at = lengths.len();
            let end = firsts.get(at + 1).copied().unwrap_or(rows);
            let read = runs
                .as_ref()
                .is_none_or(|r| r.used(firsts[at], end).is_some());
            if next.is_dict || read {
                match pages.get_next_page().unwrap().unwrap() {
                    Page::DictionaryPage { .. } => {}
                    page => lengths.push(page.buffer().clone()),
                }
            } else {
                pages.skip_next_page().unwrap();
                lengths.push(Bytes::new());
            }
        }
        lengths
    }

    #[test]
    fn pages_read_from_their_start_decompress_only_it_and_read_as_the_crate_does() {
        let select = |s: Vec<RowSelector>| RowSelection::from(s);
        let selections = [
            // One row at a page's start; the first rows of a page; runs ending early in
            // a page; a run across a page's end; a page's last row; a whole page; rows
            // of three pages.
            select(vec![RowSelector::skip(15_000), RowSelector::select(1)]),
            select(vec![RowSelector::select(5)]),
            select(vec![
                RowSelector::skip(25_010),
                RowSelector::select(3),
                RowSelector::skip(40),
                RowSelector::select(100),
                RowSelector::skip(20),
                RowSelector::select(1),
            ]),
            select(vec![RowSelector::skip(34_990), RowSelector::select(30)]),
            select(vec![RowSelector::skip(4999), RowSelector::select(1)]),
            select(vec![RowSelector::skip(10_000), RowSelector::select(5000)]),
            select(vec![
                RowSelector::skip(150),
                RowSelector::select(2),
                RowSelector::skip(19_000),
                RowSelector::select(7),
                RowSelector::skip(19_500),
                RowSelector::select(1),
            ]),
        ];
        let versions = [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0];
        let codecs = [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())];
        for (version, codec) in versions.into_iter().flat_map(|v| codecs.map(|c| (v, c))) {
            let bytes = mixed(version, codec);
            let meta = with_page_index(&bytes);
            for rows in &selections {
                let ours = read_ours(
                    &bytes,
                    &meta,
                    Some(rows.clone()),
                    RowSelectionPolicy::Selectors,
                );
                let theirs = read_theirs(&bytes, &meta, Some(rows.clone()));
                assert_eq!(ours, theirs, "{version:?} {codec:?} {rows:?}");
                assert_eq!(ours.num_rows(), rows.row_count());
            }
            // Every other row of 800 from a page's start: the reader takes a mask, and
            // decodes every row from the first selected to the last.
            let scattered = RowSelection::from(
                std::iter::once(RowSelector::skip(15_000))
                    .chain((0..400).flat_map(|_| [RowSelector::select(1), RowSelector::skip(1)]))
                    .collect::<Vec<_>>(),
            );
            assert!(uses_mask(RowSelectionPolicy::default(), Some(&scattered)));
            let ours = read_ours(
                &bytes,
                &meta,
                Some(scattered.clone()),
                RowSelectionPolicy::default(),
            );
            assert_eq!(ours, read_theirs(&bytes, &meta, Some(scattered.clone())));
            assert_eq!(ours.num_rows(), 400);
            // The doubles' page holding them: filler after the rows read.
            let start = data_pages_read(&bytes, 3, Some(&scattered), true);
            let whole = data_pages(&bytes, 3, None);
            let tail = whole[3].len() - 1000..;
            assert!(
                start[3][tail.clone()].iter().all(|b| *b == 0),
                "{version:?} {codec:?}"
            );
            assert!(whole[3][tail].iter().any(|b| *b != 0));
            // The page holding row 15,000 alone is shorter than whole in every column but
            // the plain doubles, where filler of zeros follows the first.
            for leaf in 0..4 {
                let whole = data_pages(&bytes, leaf, None);
                let start = data_pages(&bytes, leaf, Some(&selections[0]));
                let (start, whole) = (&start[3], &whole[3]);
                let tail = whole.len() - 1000..;
                let v2 = version == WriterVersion::PARQUET_2_0;
                if leaf == 3 {
                    assert_eq!(start.len(), whole.len());
                    assert!(start[tail.clone()].iter().all(|b| *b == 0));
                    assert!(whole[tail].iter().any(|b| *b != 0));
                } else if !v2 || leaf == 0 {
                    // (Version 2 pages the writer may keep uncompressed, where compressing
                    // would not make them smaller, and strings it delta encodes.)
                    // A Snappy page's start is decoded apart only where it is at most
                    // two thirds of the page, 4 KiB of margin included: not of a small
                    // page.
                    let (start, whole) = (start.len(), whole.len());
                    if codec == Compression::SNAPPY && whole / 3 * 2 < 4096 {
                        assert_eq!(start, whole, "{version:?} {codec:?} {leaf}");
                    } else {
                        assert!(
                            start * 4 < whole,
                            "{version:?} {codec:?} {leaf}: {start} {whole}"
                        );
                    }
                }
                let pages = |s: &RowSelection| data_pages(&bytes, leaf, Some(s));
                // The page whose last row is read, or all of whose rows are, is whole.
                let whole = data_pages(&bytes, leaf, None);
                assert!(pages(&selections[4])[0] == whole[0]);
                assert!(pages(&selections[5])[2] == whole[2]);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(24))]
        /// Any runs of rows read from pages' starts are the rows the crate reads whole.
        #[test]
        fn any_runs_read_from_pages_starts_match_the_crates_reader(
            runs in proptest::collection::vec((0usize..6000, 1usize..40), 1..6),
            v2 in proptest::bool::ANY,
        ) {
            let version = if v2 { WriterVersion::PARQUET_2_0 } else { WriterVersion::PARQUET_1_0 };
            let bytes = mixed(version, Compression::SNAPPY);
            let meta = with_page_index(&bytes);
            let mut selectors = Vec::new();
            let mut at = 0;
            for (skip, select) in runs {
                let select = select.min(40_000 - at - skip.min(40_000 - at));
                let skip = skip.min(40_000 - at);
                selectors.push(RowSelector::skip(skip));
                selectors.push(RowSelector::select(select));
                at += skip + select;
            }
            let rows = RowSelection::from(selectors);
            let ours = read_ours(&bytes, &meta, Some(rows.clone()), RowSelectionPolicy::Selectors);
            proptest::prop_assert_eq!(ours.num_rows(), rows.row_count());
            proptest::prop_assert_eq!(ours, read_theirs(&bytes, &meta, Some(rows)));
        }
    }

    #[test]
    fn scattered_rows_are_read_in_runs_all_the_same() {
        let bytes = file(
            WriterVersion::PARQUET_1_0,
            Compression::ZSTD(ZstdLevel::default()),
        );
        let meta = with_page_index(&bytes);
        // Every third row of the first 3,000: runs of one and two rows, which the reader's
        // own policy would read through a mask. Then one run of whole pages, which it would
        // not.
        let scattered = RowSelection::from(
            (0..1000)
                .flat_map(|_| [RowSelector::select(1), RowSelector::skip(2)])
                .chain([RowSelector::skip(17_000)])
                .collect::<Vec<_>>(),
        );
        let paged = RowSelection::from(vec![
            RowSelector::skip(5000),
            RowSelector::select(3000),
            RowSelector::skip(12_000),
        ]);
        let default = RowSelectionPolicy::default();
        assert!(uses_mask(default, Some(&scattered)));
        assert!(!uses_mask(default, Some(&paged)));
        assert!(!uses_mask(default, None));
        for rows in [scattered, paged] {
            let read = |policy| read_ours(&bytes, &meta, Some(rows.clone()), policy);
            let ids = read(RowSelectionPolicy::Selectors);
            assert_eq!(ids.num_rows(), rows.row_count());
            assert_eq!(ids, read(default));
        }
    }

    #[test]
    fn scattered_rows_behind_a_long_skip_are_read_through_a_mask() {
        let bytes = file(
            WriterVersion::PARQUET_1_0,
            Compression::ZSTD(ZstdLevel::default()),
        );
        let meta = with_page_index(&bytes);
        let scattered =
            |runs: usize| (0..runs).flat_map(|_| [RowSelector::select(1), RowSelector::skip(3)]);
        // A piece of a row group: every fourth row of 800, behind 12,000 skipped rows and
        // before 7,200. Counted with them, the runs average 50 rows: the crate reads them
        // one by one; counted from the first selected row to the last, 2.
        let piece = RowSelection::from(
            std::iter::once(RowSelector::skip(12_000))
                .chain(scattered(200))
                .chain([RowSelector::skip(7_200)])
                .collect::<Vec<_>>(),
        );
        assert!(!uses_mask(RowSelectionPolicy::default(), Some(&piece)));
        assert_eq!(span_policy(&piece), RowSelectionPolicy::Mask);
        // A few runs are left to the crate's rule, whose runs decompress page starts.
        let few = RowSelection::from(
            std::iter::once(RowSelector::skip(12_000))
                .chain(scattered(20))
                .collect::<Vec<_>>(),
        );
        assert_eq!(span_policy(&few), RowSelectionPolicy::default());
        // Long runs too; and a selection of nothing.
        let long = RowSelection::from(
            (0..100)
                .flat_map(|_| [RowSelector::select(100), RowSelector::skip(100)])
                .collect::<Vec<_>>(),
        );
        assert_eq!(span_policy(&long), RowSelectionPolicy::default());
        let none = RowSelection::from(vec![RowSelector::skip(20_000)]);
        assert_eq!(span_policy(&none), RowSelectionPolicy::default());
        // Both ways give the same rows.
        let read = |policy| read_ours(&bytes, &meta, Some(piece.clone()), policy);
        let ids = read(span_policy(&piece));
        assert_eq!(ids.num_rows(), 200);
        assert_eq!(ids, read(RowSelectionPolicy::Selectors));
    }

    #[test]
    fn levels_stay_before_the_values_and_values_of_no_bytes_need_no_codec() {
        let expected = |n: usize| n * 3;
        let zstd = Compression::ZSTD(ZstdLevel::default());
        for codec in [Compression::SNAPPY, zstd] {
            let levels = Bytes::from_static(b"levels");
            assert_eq!(inflated(&levels, 6, codec, expected).unwrap(), levels);
            let values = b"values values values values".repeat(100);
            let body = match codec {
                Compression::SNAPPY => snap::raw::Encoder::new().compress_vec(&values).unwrap(),
                _ => zstd::bulk::compress(&values, 3).unwrap(),
            };
            let page = Bytes::from([&b"levels"[..], &body].concat());
            let out = inflated(&page, 6, codec, expected).unwrap();
            assert_eq!(&out[..6], b"levels");
            assert_eq!(&out[6..], &values[..]);
            assert!(inflated(&page, page.len() + 1, codec, expected).is_err());
        }
    }

    #[test]
    fn a_damaged_zstandard_page_is_an_error() {
        let bytes = file(
            WriterVersion::PARQUET_1_0,
            Compression::ZSTD(ZstdLevel::default()),
        );
        let meta = ArrowReaderMetadata::load(&bytes, Default::default()).unwrap();
        let chunk = meta.metadata().row_group(0).column(0);
        let (start, len) = chunk.byte_range();
        let mut damaged = bytes.to_vec();
        // Every byte of the chunk's second half, past its headers' fields that say where
        // pages end, flipped.
        for b in &mut damaged[(start + len / 2) as usize..(start + len) as usize] {
            *b ^= 0x5a;
        }
        let read = reader(
            Bytes::from(damaged),
            &meta,
            0,
            ProjectionMask::all(),
            1024,
            None,
            RowSelectionPolicy::default(),
        )
        .unwrap()
        .collect::<std::result::Result<Vec<_>, _>>();
        assert!(read.is_err());
    }
}
