//! Reading a footer with one speculative tail read, and the page index with at most one more.
//!
//! Lengths in the footer come from disk: every one is checked against the file size before
//! anything is allocated, and a parser panic on hostile bytes becomes an `InvalidFile`.
//! The parquet crate sizes some of its vectors from the element counts the Thrift
//! declares (the row groups, a page's locations), so before it parses, the footer and
//! the page index are walked with pqindex's own bounds-checked reader: no list may claim
//! more elements than it has bytes left.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use crate::error::{panic_message, Error, Result};
use crate::io::StorageFile;
use crate::metadata::encryption::{
    is_decryption_failure, is_encrypted, keys_needed, not_decrypted, Decryption,
    ENCRYPTED_FOOTER_MAGIC,
};
use crate::metadata::page_index::{checked_range, offset_index_ranges, page_index_ranges};
use crate::metadata::reserved_counts::{footer_counts, offset_index_counts};
use crate::metadata::thrift_lists::{repaired, Kind};

const MAGIC: &[u8; 4] = b"PAR1";

/// The largest footer read, and the largest page index: a footer of 10,000 columns in
/// 100 row groups takes about 100 MiB; a claim above this is refused before anything is
/// read.
pub const MAX_FOOTER_BYTES: u64 = 256 << 20;

/// Where the footer (Thrift metadata, its length and the magic) begins.
pub fn footer_start(file: &StorageFile) -> Result<u64> {
    let size = file.identity().size;
    let tail = file.read_range(size - 8, 8)?;
    let len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    size.checked_sub(8 + len)
        .ok_or_else(|| Error::invalid_file(file.path(), "footer length exceeds the file"))
}

/// Read and parse the footer of `file` (without the page index).
pub fn read_footer(file: &StorageFile) -> Result<ParquetMetaData> {
    read_footer_with(file, None)
}

/// [`read_footer`], decrypting an encrypted file's footer and column metadata with
/// `decryption`; an encrypted file without it is an [`Error::Encrypted`].
pub fn read_footer_with(
    file: &StorageFile,
    decryption: Option<&Decryption>,
) -> Result<ParquetMetaData> {
    let path = file.path();
    let size = file.identity().size;
    if size < 12 {
        return Err(Error::invalid_file(
            path,
            format!("not a Parquet file: {size} bytes is too small to hold a footer"),
        ));
    }
    // One read of the file's tail usually holds the whole footer; it is kept, so a page
    // index or index block inside it costs no second request.
    let tail_len = size.min(file.footer_hint());
    let tail = file.read_range(size - tail_len, tail_len as usize)?;
    file.keep([(size - tail_len, tail.clone())]);
    let end = &tail[tail.len() - 8..];
    let encrypted_footer = &end[4..] == ENCRYPTED_FOOTER_MAGIC;
    if encrypted_footer && decryption.is_none() {
        return Err(keys_needed(path, true));
    }
    if &end[4..] != MAGIC && !encrypted_footer {
        return Err(Error::invalid_file(
            path,
            "not a Parquet file: it does not end with the PAR1 magic",
        ));
    }
    let footer_len = u64::from(u32::from_le_bytes([end[0], end[1], end[2], end[3]]));
    if footer_len + 12 > size {
        return Err(Error::invalid_file(
            path,
            format!("corrupt footer: its length ({footer_len} bytes) exceeds the file size ({size} bytes)"),
        ));
    }
    if footer_len > MAX_FOOTER_BYTES {
        return Err(Error::invalid_file(
            path,
            format!("corrupt footer: its length ({footer_len} bytes) exceeds the {MAX_FOOTER_BYTES} bytes a footer may take"),
        ));
    }
    let needed = footer_len + 8;
    let buf = if needed <= tail_len {
        tail.slice((tail_len - needed) as usize..)
    } else {
        file.read_range(size - needed, needed as usize)?
    };
    if encrypted_footer {
        // Ciphertext cannot be walked; what decrypts is authenticated by the footer key.
        let md = catch_unwind(AssertUnwindSafe(|| {
            let mut reader =
                ParquetMetaDataReader::new().with_decryption_properties(decryption.cloned());
            reader.try_parse_sized(&buf, size)?;
            reader.finish()
        }))
        .map_err(|panic| {
            Error::invalid_file(
                path,
                format!("corrupt metadata: {}", panic_message(&*panic)),
            )
        })?
        .map_err(|e| not_decrypted(path, &e))?;
        return Ok(md);
    }
    footer_counts(&buf[..footer_len as usize])
        .map_err(|e| Error::invalid_file(path, format!("corrupt metadata: {e}")))?;
    let parse = |buf: &Bytes| {
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            let mut reader =
                ParquetMetaDataReader::new().with_decryption_properties(decryption.cloned());
            reader.try_parse_sized(buf, size)?;
            reader.finish()
        }));
        match parsed {
            // A plaintext footer of a file with encrypted columns: the crate needs keys
            // to read their metadata.
            Ok(Err(e)) if is_decryption_failure(&e) => Err(match decryption {
                None => keys_needed(path, false),
                Some(_) => not_decrypted(path, &e),
            }),
            Ok(r) => guarded(path, || r),
            Err(panic) => Err(Error::invalid_file(
                path,
                format!("corrupt metadata: {}", panic_message(&*panic)),
            )),
        }
    };
    let md = match parse(&buf) {
        Ok(md) => Ok(md),
        // Integer lists declared as another integer width (parquet-mr wrote some): read
        // as the format means them, or the first error stands.
        Err(e) => match repaired(&buf[..footer_len as usize], Kind::FileMetaData) {
            Some(fixed) => {
                guarded(path, || ParquetMetaDataReader::decode_metadata(&fixed)).map_err(|_| e)
            }
            None => Err(e),
        },
    }?;
    if is_encrypted(&md) {
        if decryption.is_none() {
            return Err(keys_needed(path, false));
        }
        // Mending reads page headers, which are ciphertext here.
        return Ok(md);
    }
    crate::metadata::mend::mended(file, md)
}

/// Decode a footer and its page index laid out as `ParquetMetaDataWriter` writes them (a
/// catalog keeps each file's so), with the checks a file's own footer and page index get;
/// `path` names them in errors.
pub fn decode_tail(path: &str, tail: &Bytes) -> Result<ParquetMetaData> {
    let n = tail.len();
    let corrupt = |e: String| Error::invalid_file(path, format!("corrupt metadata: {e}"));
    if n < 8 || &tail[n - 4..] != MAGIC {
        return Err(corrupt("a serialised footer must end with PAR1".into()));
    }
    let len = u32::from_le_bytes([tail[n - 8], tail[n - 7], tail[n - 6], tail[n - 5]]) as usize;
    let Some(start) = (n - 8).checked_sub(len) else {
        return Err(corrupt(format!("a footer of {len} bytes in {n}")));
    };
    let footer = &tail[start..n - 8];
    footer_counts(footer).map_err(corrupt)?;
    let md = guarded(path, || ParquetMetaDataReader::decode_metadata(footer))?;
    let ranges = page_index_ranges(&md);
    if ranges.iter().any(|r| r.end > start as u64) {
        return Err(corrupt("a page index outside its bytes".into()));
    }
    offset_indexes_fit(&md, tail, 0).map_err(corrupt)?;
    let md = guarded(path, || {
        let mut reader = ParquetMetaDataReader::new_with_metadata(md)
            .with_page_index_policy(PageIndexPolicy::Optional);
        reader.read_page_indexes(tail)?;
        reader.finish()
    })?;
    pages_in_row_order(&md).map_err(|e| corrupt(format!("corrupt page index: {e}")))?;
    Ok(md)
}

/// Whether every offset index lists its pages in row order from the row group's first
/// row: readers find a row's page by a binary search of the pages' first rows, and
/// pages out of order would hide rows from it.
fn pages_in_row_order(md: &ParquetMetaData) -> Result<(), String> {
    let Some(groups) = md.offset_index() else {
        return Ok(());
    };
    for (rg, columns) in groups.iter().enumerate() {
        let rows = md.row_groups().get(rg).map_or(0, |g| g.num_rows());
        for (leaf, oi) in columns.iter().enumerate() {
            let pages = oi.page_locations();
            let ordered = pages.first().is_none_or(|p| p.first_row_index == 0)
                && pages
                    .windows(2)
                    .all(|w| w[0].first_row_index < w[1].first_row_index)
                && pages.last().is_none_or(|p| p.first_row_index < rows.max(1));
            if !ordered {
                return Err(format!(
                    "the pages of column {leaf} in row group {rg} do not start at rows in order within its {rows} rows"
                ));
            }
        }
    }
    Ok(())
}

/// Fetch the page index of `metadata` (one range, as the parquet crate reads it) and
/// check the counts of its offset indexes.
fn check_page_index(file: &StorageFile, metadata: &ParquetMetaData) -> Result<()> {
    let ranges = page_index_ranges(metadata);
    let (Some(start), Some(end)) = (
        ranges.iter().map(|r| r.start).min(),
        ranges.iter().map(|r| r.end).max(),
    ) else {
        return Ok(());
    };
    let path = file.path();
    if end - start > MAX_FOOTER_BYTES {
        return Err(Error::invalid_file(
            path,
            format!(
                "corrupt page index: it spans {} bytes, more than the {MAX_FOOTER_BYTES} it may take",
                end - start
            ),
        ));
    }
    file.prefetch(std::iter::once(start..end).collect())?;
    let Some(bytes) = file.prefetched(start..end) else {
        return Ok(());
    };
    offset_indexes_fit(metadata, &bytes, start)
        .map_err(|e| Error::invalid_file(path, format!("corrupt page index: {e}")))
}

/// Check the counts of every OffsetIndex of `metadata` in `bytes`, which start at file
/// offset `start` and hold them all.
fn offset_indexes_fit(metadata: &ParquetMetaData, bytes: &[u8], start: u64) -> Result<(), String> {
    for r in offset_index_ranges(metadata) {
        offset_index_counts(&bytes[(r.start - start) as usize..(r.end - start) as usize])?;
    }
    Ok(())
}

/// Add the page index (ColumnIndex and OffsetIndex) to `metadata`, with one read of the
/// range that holds all of them. Files written without one are returned unchanged.
///
/// It takes the footer by value: a deep copy of a wide footer costs a fifth of the index
/// load itself.
pub fn load_page_index(file: &StorageFile, metadata: ParquetMetaData) -> Result<ParquetMetaData> {
    load_page_index_with(file, metadata, None)
}

/// [`load_page_index`] of a file whose page index may be encrypted, with its keys.
pub fn load_page_index_with(
    file: &StorageFile,
    metadata: ParquetMetaData,
    decryption: Option<&Decryption>,
) -> Result<ParquetMetaData> {
    let path = file.path();
    let encrypted = is_encrypted(&metadata);
    // An encrypted page index is ciphertext to pqindex's walk and repair; the crate
    // decrypts and authenticates it.
    let patched = if encrypted {
        None
    } else {
        check_page_index(file, &metadata)?;
        repaired_page_index(file, &metadata)
    };
    // The crate decrypts every column's page index or none: without the key of some
    // column the file is planned without a page index (evidence lost, never rows).
    let without_index = encrypted.then(|| metadata.clone());
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        let mut reader = ParquetMetaDataReader::new_with_metadata(metadata)
            .with_page_index_policy(PageIndexPolicy::Optional)
            .with_decryption_properties(decryption.cloned());
        match &patched {
            Some(p) => reader.read_page_indexes(p)?,
            None => reader.read_page_indexes(file)?,
        }
        reader.finish()
    }));
    let loaded = match (loaded, without_index) {
        (Ok(Err(e)), Some(md)) if is_decryption_failure(&e) => return Ok(md),
        (loaded, _) => loaded,
    };
    let md = guarded(path, || match loaded {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    })
    .map_err(|e| match e {
        Error::InvalidFile { path, reason } => Error::InvalidFile {
            path,
            reason: format!("corrupt page index: {reason}"),
        },
        other => other,
    })?;
    pages_in_row_order(&md)
        .map_err(|e| Error::invalid_file(path, format!("corrupt page index: {e}")))?;
    Ok(md)
}

/// The page index bytes of `metadata` with their integer lists' headers repaired
/// ([`thrift_lists`](crate::metadata::thrift_lists)), served in place of the file's;
/// `None` when none needed it (or the index was not prefetched whole).
fn repaired_page_index(file: &StorageFile, metadata: &ParquetMetaData) -> Option<PatchedFile> {
    let (start, end) = page_index_span(metadata)?;
    let bytes = file.prefetched(start..end)?;
    let mut out: Option<Vec<u8>> = None;
    let kinds = metadata
        .row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .flat_map(|c| {
            let column = checked_range(
                c.column_index_offset(),
                c.column_index_length().map(i64::from),
            );
            let offset = checked_range(
                c.offset_index_offset(),
                c.offset_index_length().map(i64::from),
            );
            [(column, Kind::ColumnIndex), (offset, Kind::OffsetIndex)]
        });
    for (range, kind) in kinds {
        let Some(r) = range.filter(|r| r.start >= start && r.end <= end) else {
            continue;
        };
        let (a, b) = ((r.start - start) as usize, (r.end - start) as usize);
        if let Some(fixed) = repaired(&bytes[a..b], kind).filter(|f| f.len() == b - a) {
            out.get_or_insert_with(|| bytes.to_vec())[a..b].copy_from_slice(&fixed);
        }
    }
    Some(PatchedFile {
        file: file.clone(),
        start,
        bytes: Bytes::from(out?),
    })
}

/// The one range holding every page index of `metadata`.
fn page_index_span(metadata: &ParquetMetaData) -> Option<(u64, u64)> {
    let ranges = page_index_ranges(metadata);
    Some((
        ranges.iter().map(|r| r.start).min()?,
        ranges.iter().map(|r| r.end).max()?,
    ))
}

/// A file whose bytes from `start` are `bytes` instead of what it holds.
struct PatchedFile {
    file: StorageFile,
    start: u64,
    bytes: Bytes,
}

impl parquet::file::reader::Length for PatchedFile {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl parquet::file::reader::ChunkReader for PatchedFile {
    type T = <StorageFile as parquet::file::reader::ChunkReader>::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.file.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = self.start + self.bytes.len() as u64;
        if start >= self.start && start + length as u64 <= end {
            let at = (start - self.start) as usize;
            return Ok(self.bytes.slice(at..at + length));
        }
        self.file.get_bytes(start, length)
    }
}

/// Run a parser on untrusted bytes: its errors, and any panic, become `InvalidFile`.
fn guarded<T>(path: &str, f: impl FnOnce() -> Result<T, ParquetError>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(ParquetError::External(e))) => match e.downcast::<Error>() {
            Ok(inner) => Err(*inner),
            Err(e) => Err(Error::invalid_file(path, format!("corrupt metadata: {e}"))),
        },
        Ok(Err(e)) => Err(Error::invalid_file(path, format!("corrupt metadata: {e}"))),
        Err(panic) => Err(Error::invalid_file(
            path,
            format!("corrupt metadata: {}", panic_message(&*panic)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};

    use crate::metadata::{read_metadata, MetadataCache};
    use crate::testing::{int64s, write_file, Layout};

    /// A file's footer and page index as a catalog keeps them.
    fn tail() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "t.parquet",
            vec![("k", int64s(0..5_000)), ("v", int64s(0..5_000))],
            Layout {
                row_group_size: 2_000,
                page_rows: Some(500),
                ..Default::default()
            },
        );
        let md = read_metadata(&path, true, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let mut out = Vec::new();
        parquet::file::metadata::ParquetMetaDataWriter::new(&mut out, &md)
            .finish()
            .unwrap();
        out
    }

    #[test]
    fn a_serialised_tail_decodes_with_its_page_index() {
        let md = decode_tail("t", &Bytes::from(tail())).unwrap();
        assert_eq!(md.num_row_groups(), 3);
        assert_eq!(md.offset_index().unwrap()[2][1].page_locations().len(), 2);
    }

    #[test]
    fn pages_out_of_row_order_are_refused() {
        let md = decode_tail("t", &Bytes::from(tail())).unwrap();
        assert_eq!(pages_in_row_order(&md), Ok(()));
        // Each way a column's pages can leave their rows: swapped, not from the row
        // group's first row, past its last, starting at one row twice.
        let bad: [fn(&mut Vec<PageLocation>); 4] = [
            |p| p.swap(0, 1),
            |p| p[0].first_row_index = 1,
            |p| p[1].first_row_index = 2_000,
            |p| p[1].first_row_index = 0,
        ];
        for damage in bad {
            let mut index = md.offset_index().unwrap().clone();
            let oi = &mut index[1][1];
            let mut pages = oi.page_locations().clone();
            damage(&mut pages);
            *oi = OffsetIndexMetaData {
                page_locations: pages,
                unencoded_byte_array_data_bytes: None,
            };
            let damaged = md
                .clone()
                .into_builder()
                .set_offset_index(Some(index))
                .build();
            let mut out = Vec::new();
            parquet::file::metadata::ParquetMetaDataWriter::new(&mut out, &damaged)
                .finish()
                .unwrap();
            let err = decode_tail("t", &Bytes::from(out)).unwrap_err().to_string();
            assert!(
                err.contains("corrupt page index: the pages of column 1 in row group 1"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_serialised_tail_claiming_two_billion_children_is_refused() {
        let good = tail();
        let n = good.len();
        let len = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
        let start = n - 8 - len;
        // The root's name, then its num_children (2, zigzag 4) in a short field header.
        let name = b"arrow_schema";
        let at = good[start..]
            .windows(name.len())
            .position(|w| w == name)
            .unwrap()
            + start
            + name.len();
        assert_eq!(good[at..at + 2], [0x15, 0x04]);
        let mut bad = good[..at + 1].to_vec();
        bad.extend([0xFE, 0xFF, 0xFF, 0xFF, 0x0F]); // zigzag of i32::MAX
        bad.extend(&good[at + 2..n - 8]);
        bad.extend(((len + 4) as u32).to_le_bytes());
        bad.extend(b"PAR1");
        let e = decode_tail("t", &Bytes::from(bad)).unwrap_err().to_string();
        assert!(e.contains("claims 2147483647 children"), "{e}");
        let e = decode_tail("t", &Bytes::from(good[..n - 1].to_vec())).unwrap_err();
        assert!(e.to_string().contains("PAR1"), "{e}");
    }
}
