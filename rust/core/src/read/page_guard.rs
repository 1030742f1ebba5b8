//! Page headers checked before the arrow reader decodes their pages.
//!
//! The arrow reader allocates from what a page header declares: the decompressed page
//! from `uncompressed_page_size` (and Snappy and LZ4 fill all of it with zeros first), a
//! dictionary's values from its `num_values`. A header of a few bytes can declare 2 GiB,
//! and a failed allocation aborts the process. Every page the reader is given passes
//! through here first: a header that declares more than its page can hold is an
//! `InvalidFile` error, and a page larger than [`MAX_PAGE_BYTES`] is refused.
//!
//! What a page can hold is known from its codec: no codec expands its input by more than
//! a fixed ratio (Snappy about 21x, LZ4 255x, deflate 1032x, Zstandard 32768x), and a
//! dictionary page's values are plain encoded, at least a byte each (a bit for booleans).
//! Brotli has no such bound; its pages are bounded by [`MAX_PAGE_BYTES`] alone.

use std::ops::Range;

use parquet::basic::{Compression, Type};
use parquet::file::metadata::ParquetMetaData;

use crate::error::Error;
use crate::metadata::page_header::{page_sizes, PageSizes, DICTIONARY_PAGE};
use crate::metadata::page_index::offset_index;

/// The largest page, decompressed, that a read holds in memory. Writers cut pages at
/// about 1 MiB; only a single value larger than that makes a larger page.
pub const MAX_PAGE_BYTES: i64 = 256 << 20;

/// The largest page header read: the arrow C++ reader's limit. Headers are tens of
/// bytes, more only with statistics of long values.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;

/// Bytes of a header read when the reader streams headers (chunks without an offset
/// index); a longer header is read again whole, up to [`MAX_HEADER_BYTES`].
pub const HEADER_WINDOW: u64 = 64 << 10;

/// Most bytes `compressed` bytes of `codec` can decompress to; `None` for a codec of no
/// fixed bound.
pub(super) fn most_uncompressed(codec: Compression, compressed: i64) -> Option<i64> {
    expansion(codec)
        .map(|(ratio, framing)| compressed.saturating_mul(ratio).saturating_add(framing))
}

/// Most bytes one byte of `codec`'s output can stand for, and a constant for its framing.
fn expansion(codec: Compression) -> Option<(i64, i64)> {
    match codec {
        // A two-byte-offset copy: 3 bytes for up to 64.
        Compression::SNAPPY => Some((22, 64)),
        // Each extra length byte of a match adds 255 bytes.
        Compression::LZ4 | Compression::LZ4_RAW => Some((256, 64)),
        // Deflate's longest match, 258 bytes, in as little as a quarter byte.
        Compression::GZIP(_) => Some((1032, 64)),
        // An RLE block: 4 bytes for up to 128 KiB.
        Compression::ZSTD(_) => Some((32768, 64)),
        _ => None,
    }
}

/// The codec's name, without its level.
fn codec_name(codec: Compression) -> String {
    let name = format!("{codec:?}");
    name.split('(').next().unwrap_or_default().to_string()
}

/// Fewest bits a plain-encoded value of `physical` takes (its length prefix, for byte
/// arrays); `None` when not known (a fixed-length array of no declared length).
fn min_value_bits(physical: Type, type_length: i32) -> Option<i64> {
    match physical {
        Type::BOOLEAN => Some(1),
        Type::INT32 | Type::FLOAT | Type::BYTE_ARRAY => Some(32),
        Type::INT64 | Type::DOUBLE => Some(64),
        Type::INT96 => Some(96),
        Type::FIXED_LEN_BYTE_ARRAY if type_length > 0 => Some(i64::from(type_length) * 8),
        Type::FIXED_LEN_BYTE_ARRAY => None,
    }
}

/// One column chunk of the row group being read.
struct Chunk {
    range: Range<u64>,
    leaf: usize,
    codec: Compression,
    physical: Type,
    type_length: i32,
    /// Whether the reader finds its pages through the offset index, reading each page
    /// with its header in one read; otherwise it streams each header, then reads the
    /// page's data.
    indexed: bool,
}

/// The checks for one row group's pages.
pub struct PageGuard {
    path: String,
    /// Sorted by start.
    chunks: Vec<Chunk>,
}

impl PageGuard {
    pub fn new(md: &ParquetMetaData, rg: usize, path: &str) -> PageGuard {
        let group = md.row_group(rg);
        let mut chunks: Vec<Chunk> = group
            .columns()
            .iter()
            .enumerate()
            // An encrypted chunk's page headers are ciphertext; the crate decrypts and
            // authenticates them, so what they declare was written by a key holder.
            .filter(|(_, c)| c.crypto_metadata().is_none())
            .map(|(leaf, c)| {
                let (start, len) = c.byte_range();
                Chunk {
                    range: start..start.saturating_add(len),
                    leaf,
                    codec: c.compression(),
                    physical: c.column_type(),
                    type_length: c.column_descr().type_length(),
                    indexed: offset_index(md, rg, leaf)
                        .is_some_and(|oi| !oi.page_locations().is_empty()),
                }
            })
            .collect();
        chunks.sort_by_key(|c| c.range.start);
        PageGuard {
            path: path.to_string(),
            chunks,
        }
    }

    fn chunk_at(&self, offset: u64) -> Option<&Chunk> {
        let i = self.chunks.partition_point(|c| c.range.start <= offset);
        self.chunks[..i]
            .iter()
            .rev()
            .find(|c| c.range.contains(&offset))
    }

    /// Where the header of a page read whole at `offset` must be checked: the chunk's
    /// end, when `offset` is in a chunk the reader reads page by page with the offset
    /// index (each such read starts with a header).
    pub fn page_read_at(&self, offset: u64) -> bool {
        self.chunk_at(offset).is_some_and(|c| c.indexed)
    }

    /// The end of the chunk holding `offset`, when the reader streams that chunk's
    /// headers (each streamed read starts at a header).
    pub fn streamed_chunk_end(&self, offset: u64) -> Option<u64> {
        self.chunk_at(offset)
            .filter(|c| !c.indexed)
            .map(|c| c.range.end)
    }

    /// Check the header at the start of `buf`, which lies at `offset` in the file.
    /// `whole` says `buf` runs to the end of the chunk (or holds the whole page), so a
    /// header cut short by it is damaged rather than read short; `Ok(false)` asks for
    /// more bytes.
    pub fn check(&self, offset: u64, buf: &[u8], whole: bool) -> Result<bool, Error> {
        let Some(chunk) = self.chunk_at(offset) else {
            return Ok(true);
        };
        let sizes = match page_sizes(buf) {
            Ok(s) => s,
            Err(_) if !whole => return Ok(false),
            Err(e) => return Err(self.invalid(chunk, offset, e)),
        };
        check_sizes(chunk, offset, &sizes).map_err(|e| self.invalid(chunk, offset, e))?;
        Ok(true)
    }

    fn invalid(&self, chunk: &Chunk, offset: u64, reason: String) -> Error {
        Error::invalid_file(
            &self.path,
            format!("column {} page at byte {offset}: {reason}", chunk.leaf),
        )
    }
}

/// Whether the page at `offset` of `chunk` can hold what its header `s` declares.
fn check_sizes(chunk: &Chunk, offset: u64, s: &PageSizes) -> Result<(), String> {
    if s.compressed < 0 || s.uncompressed < 0 {
        return Err(format!(
            "negative page size ({} compressed, {} uncompressed)",
            s.compressed, s.uncompressed
        ));
    }
    let end = offset
        .saturating_add(s.header_len as u64)
        .saturating_add(s.compressed as u64);
    if end > chunk.range.end {
        return Err(format!(
            "its {} bytes run past the end of the column chunk (byte {})",
            s.compressed, chunk.range.end
        ));
    }
    let v2_plain = s.v2_levels.is_some() && !s.v2_compressed;
    let decompressed = chunk.codec != Compression::UNCOMPRESSED && !v2_plain;
    if decompressed {
        if let Some(most) = most_uncompressed(chunk.codec, s.compressed) {
            if s.uncompressed > most {
                return Err(format!(
                    "it declares {} bytes uncompressed, more than {} bytes of {} can hold",
                    s.uncompressed,
                    s.compressed,
                    codec_name(chunk.codec)
                ));
            }
        }
        if s.uncompressed > MAX_PAGE_BYTES {
            return Err(format!(
                "it declares {} bytes uncompressed; pages of up to {MAX_PAGE_BYTES} bytes are read",
                s.uncompressed
            ));
        }
    }
    let values = s.num_values.unwrap_or(0);
    if values < 0 {
        return Err(format!("{values} values"));
    }
    if let Some((nulls, rows)) = s.v2_counts {
        if nulls < 0 || rows < 0 || nulls > values || rows > values {
            return Err(format!("{values} values with {nulls} nulls in {rows} rows"));
        }
    }
    if let Some((def, rep)) = s.v2_levels {
        if def < 0 || rep < 0 || def.saturating_add(rep) > s.compressed.min(s.uncompressed) {
            return Err(format!(
                "{def} + {rep} bytes of levels in a page of {} bytes",
                s.compressed.min(s.uncompressed)
            ));
        }
    }
    if s.page_type == DICTIONARY_PAGE {
        // The reader makes room for every entry at once: they must fit in the page.
        if let Some(bits) = min_value_bits(chunk.physical, chunk.type_length) {
            let room = s.uncompressed.saturating_mul(8) / bits;
            if values > room {
                return Err(format!(
                    "a dictionary page of {} bytes cannot hold {values} {} values",
                    s.uncompressed, chunk.physical
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    fn file(codec: Compression, version: WriterVersion) -> (Bytes, ParquetMetaData) {
        let n = 4_000i64;
        let batch = RecordBatch::try_from_iter([
            (
                "k",
                Arc::new(Int64Array::from_iter_values(0..n)) as arrow_array::ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("v{}", i % 7)),
                )),
            ),
        ])
        .expect("batch");
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_writer_version(version)
            .set_data_page_row_count_limit(1000)
            .set_write_batch_size(1000)
            .build();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        let bytes = Bytes::from(buf);
        let md = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes)
            .expect("metadata");
        (bytes, md)
    }

    /// Every page of every chunk, as (offset, header + data).
    fn pages(bytes: &Bytes, md: &ParquetMetaData) -> Vec<(u64, Bytes)> {
        let mut out = Vec::new();
        for c in md.row_group(0).columns() {
            let (start, len) = c.byte_range();
            let mut at = start;
            while at < start + len {
                let s = page_sizes(&bytes[at as usize..]).expect("header");
                let end = at + s.header_len as u64 + s.compressed as u64;
                out.push((at, bytes.slice(at as usize..end as usize)));
                at = end;
            }
        }
        out
    }

    #[test]
    fn pages_written_by_arrow_pass() {
        for codec in [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::ZSTD(Default::default()),
            Compression::GZIP(Default::default()),
            Compression::LZ4_RAW,
        ] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                let (bytes, md) = file(codec, version);
                let guard = PageGuard::new(&md, 0, "f.parquet");
                let pages = pages(&bytes, &md);
                assert!(pages.len() > 4, "{codec:?} {version:?}");
                for (at, page) in pages {
                    assert!(guard.check(at, &page, true).expect("valid"), "{codec:?}");
                }
            }
        }
    }

    #[test]
    fn declared_sizes_beyond_the_codec_are_invalid() {
        let (bytes, md) = file(Compression::SNAPPY, WriterVersion::PARQUET_1_0);
        let guard = PageGuard::new(&md, 0, "f.parquet");
        let chunk = guard.chunk_at(pages(&bytes, &md)[0].0).expect("chunk");
        let (at, page) = pages(&bytes, &md).remove(0);
        let mut s = page_sizes(&page).expect("header");
        s.uncompressed = s.compressed * 30;
        let err = check_sizes(chunk, at, &s).expect_err("accepted");
        assert!(err.contains("more than"), "{err}");
        s.uncompressed = -1;
        assert!(check_sizes(chunk, at, &s).is_err());
    }

    #[test]
    fn pages_past_the_limit_are_refused_as_too_large() {
        let (bytes, md) = file(
            Compression::ZSTD(Default::default()),
            WriterVersion::PARQUET_1_0,
        );
        let guard = PageGuard::new(&md, 0, "f.parquet");
        let (at, page) = pages(&bytes, &md).remove(0);
        let chunk = guard.chunk_at(at).expect("chunk");
        let mut s = page_sizes(&page).expect("header");
        s.compressed = 16 << 10;
        s.uncompressed = MAX_PAGE_BYTES + 1;
        // Zstandard could hold it; the limit refuses it. (The page would also run past
        // its chunk: the size check comes after that one, so move the chunk's end.)
        let mut big = PageGuard::new(&md, 0, "f.parquet");
        big.chunks.iter_mut().for_each(|c| c.range.end = u64::MAX);
        let chunk_big = big.chunk_at(at).expect("chunk");
        let err = check_sizes(chunk_big, at, &s).expect_err("accepted");
        assert!(err.contains("pages of up to"), "{err}");
        let err = check_sizes(chunk, at, &s).expect_err("accepted");
        assert!(err.contains("past the end"), "{err}");
    }

    #[test]
    fn a_dictionary_must_hold_its_entries() {
        let (bytes, md) = file(Compression::UNCOMPRESSED, WriterVersion::PARQUET_1_0);
        let guard = PageGuard::new(&md, 0, "f.parquet");
        let (at, page) = pages(&bytes, &md)
            .into_iter()
            .find(|(_, p)| page_sizes(p).expect("header").page_type == DICTIONARY_PAGE)
            .expect("a dictionary page");
        let chunk = guard.chunk_at(at).expect("chunk");
        let mut s = page_sizes(&page).expect("header");
        assert!(check_sizes(chunk, at, &s).is_ok());
        s.num_values = Some(i64::from(i32::MAX));
        let err = check_sizes(chunk, at, &s).expect_err("accepted");
        assert!(err.contains("dictionary"), "{err}");
    }

    #[test]
    fn short_reads_ask_for_more_and_offsets_outside_chunks_pass() {
        let (bytes, md) = file(Compression::SNAPPY, WriterVersion::PARQUET_2_0);
        let guard = PageGuard::new(&md, 0, "f.parquet");
        let (at, page) = pages(&bytes, &md).remove(0);
        assert!(!guard.check(at, &page[..3], false).expect("no error"));
        assert!(guard.check(at, &page[..3], true).is_err());
        assert!(guard.check(0, b"PAR1", true).expect("not a chunk"));
    }
}
