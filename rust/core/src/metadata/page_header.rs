//! What a page's Thrift `PageHeader` declares: whether a data page needs its column
//! chunk's dictionary, and the sizes and counts a reader allocates from.
//!
//! Writers fall back from dictionary to plain encoding when a chunk's dictionary grows
//! too large, so one chunk can hold dictionary-encoded pages followed by plain ones. A
//! read that selects only plain pages can skip the dictionary page, which on an object
//! store is often a request of its own. The header is the only exact source: page
//! encoding statistics in the footer give counts, not positions.
//!
//! ```thrift
//! struct PageHeader {
//!   1: required PageType type;
//!   2: required i32 uncompressed_page_size;
//!   3: required i32 compressed_page_size;
//!   4: optional i32 crc;
//!   5: optional DataPageHeader data_page_header;        // 2: required Encoding encoding
//!   6: optional IndexPageHeader index_page_header;
//!   7: optional DictionaryPageHeader dictionary_page_header;
//!   8: optional DataPageHeaderV2 data_page_header_v2;   // 4: required Encoding encoding
//! }
//! ```

use parquet::basic::Encoding;

use crate::metadata::thrift::{Reader, T_BOOL_FALSE, T_BOOL_TRUE, T_I32, T_STRUCT};

const TYPE_FIELD: i16 = 1;
const DATA_PAGE_HEADER_FIELD: i16 = 5;
const DATA_PAGE_HEADER_V2_FIELD: i16 = 8;
/// `encoding` in `DataPageHeader`.
const V1_ENCODING_FIELD: i16 = 2;
/// `encoding` in `DataPageHeaderV2`.
const V2_ENCODING_FIELD: i16 = 4;
pub const DATA_PAGE: i64 = 0;
pub const DATA_PAGE_V2: i64 = 3;

/// Whether the data page whose bytes start `buf` is dictionary encoded.
///
/// Errors when `buf` does not start with a well-formed header of a data page (v1 or v2)
/// that names its encoding; a caller then keeps the dictionary, which is always safe.
pub fn needs_dictionary(buf: &[u8]) -> Result<bool, String> {
    let encoding = data_page_encoding(buf)?;
    Ok(
        encoding == Encoding::PLAIN_DICTIONARY as i64
            || encoding == Encoding::RLE_DICTIONARY as i64,
    )
}

/// The `encoding` of a data page header, as the raw Thrift enum value.
fn data_page_encoding(buf: &[u8]) -> Result<i64, String> {
    let mut r = Reader::new(buf, "page header");
    let mut page_type = None;
    let mut encoding = None;
    let mut last_id = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last_id)? {
        match (id, ty) {
            (TYPE_FIELD, T_I32) => page_type = Some(r.zigzag()?),
            (DATA_PAGE_HEADER_FIELD, T_STRUCT) => {
                encoding = struct_i32(&mut r, V1_ENCODING_FIELD)?.or(encoding)
            }
            (DATA_PAGE_HEADER_V2_FIELD, T_STRUCT) => {
                encoding = struct_i32(&mut r, V2_ENCODING_FIELD)?.or(encoding)
            }
            _ => r.skip_value(ty, 1)?,
        }
    }
    match page_type {
        Some(DATA_PAGE) | Some(DATA_PAGE_V2) => {
            encoding.ok_or_else(|| r.err("data page header without an encoding"))
        }
        Some(t) => Err(r.err(format!("page type {t} is not a data page"))),
        None => Err(r.err("no page type")),
    }
}

/// What a page header declares about the page's size: what a reader allocates from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageSizes {
    /// Bytes of the header itself; the page's data follows it.
    pub header_len: usize,
    /// `PageType` as the raw Thrift enum value.
    pub page_type: i64,
    pub uncompressed: i64,
    pub compressed: i64,
    /// Values (levels included) of a data page, or entries of a dictionary page.
    pub num_values: Option<i64>,
    /// `encoding` of a data or dictionary page, as the raw Thrift enum value.
    pub encoding: Option<i64>,
    /// A v2 data page's level sizes (definition, then repetition), which lie
    /// uncompressed before its values.
    pub v2_levels: Option<(i64, i64)>,
    /// A v2 data page's `num_nulls` and `num_rows`.
    pub v2_counts: Option<(i64, i64)>,
    /// A v2 data page's `is_compressed` (true when absent, as the format says).
    pub v2_compressed: bool,
}

pub const DICTIONARY_PAGE: i64 = 2;
const DICTIONARY_PAGE_HEADER_FIELD: i16 = 7;

/// The sizes and counts declared by the page header that starts `buf`.
///
/// Errors when `buf` does not hold a whole, well-formed header with the three required
/// fields (type, uncompressed and compressed size). Every field is read with bounds
/// checks; nothing is allocated from a value read off the buffer.
pub fn page_sizes(buf: &[u8]) -> Result<PageSizes, String> {
    let mut r = Reader::new(buf, "page header");
    let mut out = PageSizes {
        v2_compressed: true,
        ..Default::default()
    };
    let (mut page_type, mut uncompressed, mut compressed) = (None, None, None);
    let mut last_id = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last_id)? {
        match (id, ty) {
            (TYPE_FIELD, T_I32) => page_type = Some(r.zigzag()?),
            (2, T_I32) => uncompressed = Some(r.zigzag()?),
            (3, T_I32) => compressed = Some(r.zigzag()?),
            (DATA_PAGE_HEADER_FIELD, T_STRUCT) | (DICTIONARY_PAGE_HEADER_FIELD, T_STRUCT) => {
                // Both start `1: num_values, 2: encoding`.
                let mut last = 0i16;
                while let Some((sub, sub_ty)) = r.field_header(&mut last)? {
                    match (sub, sub_ty) {
                        (1, T_I32) => out.num_values = Some(r.zigzag()?),
                        (2, T_I32) => out.encoding = Some(r.zigzag()?),
                        _ => r.skip_value(sub_ty, 2)?,
                    }
                }
            }
            (DATA_PAGE_HEADER_V2_FIELD, T_STRUCT) => {
                let (mut nulls, mut rows, mut def, mut rep) = (0, 0, 0, 0);
                let mut last = 0i16;
                while let Some((sub, sub_ty)) = r.field_header(&mut last)? {
                    match (sub, sub_ty) {
                        (1, T_I32) => out.num_values = Some(r.zigzag()?),
                        (2, T_I32) => nulls = r.zigzag()?,
                        (3, T_I32) => rows = r.zigzag()?,
                        (V2_ENCODING_FIELD, T_I32) => out.encoding = Some(r.zigzag()?),
                        (5, T_I32) => def = r.zigzag()?,
                        (6, T_I32) => rep = r.zigzag()?,
                        (7, T_BOOL_TRUE) => out.v2_compressed = true,
                        (7, T_BOOL_FALSE) => out.v2_compressed = false,
                        _ => r.skip_value(sub_ty, 2)?,
                    }
                }
                out.v2_levels = Some((def, rep));
                out.v2_counts = Some((nulls, rows));
            }
            _ => r.skip_value(ty, 1)?,
        }
    }
    out.page_type = page_type.ok_or_else(|| r.err("no page type"))?;
    out.uncompressed = uncompressed.ok_or_else(|| r.err("no uncompressed_page_size"))?;
    out.compressed = compressed.ok_or_else(|| r.err("no compressed_page_size"))?;
    out.header_len = r.pos;
    Ok(out)
}

/// Reads a nested struct, returning its i32 field `wanted` and skipping the rest.
fn struct_i32(r: &mut Reader<'_>, wanted: i16) -> Result<Option<i64>, String> {
    let mut value = None;
    let mut last_id = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last_id)? {
        if id == wanted && ty == T_I32 {
            value = Some(r.zigzag()?);
        } else {
            r.skip_value(ty, 2)?;
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
    use proptest::prelude::*;

    /// A file whose two columns fall back from dictionary to plain encoding part way,
    /// with small pages so each chunk has many.
    fn fallback_file(version: WriterVersion) -> Bytes {
        let n = 20_000i64;
        let batch = RecordBatch::try_from_iter([
            (
                "k",
                Arc::new(Int64Array::from_iter_values(0..n)) as arrow_array::ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("v{i}")),
                )),
            ),
        ])
        .expect("valid batch");
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_page_size_limit(4096)
            .set_data_page_row_count_limit(500)
            .set_write_batch_size(500)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        Bytes::from(buf)
    }

    /// Per column, whether each data page (in file order) is dictionary encoded.
    fn page_flags(file: &Bytes) -> Vec<Vec<bool>> {
        let md = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(file)
            .expect("metadata");
        let oi = &md.offset_index().expect("offset index")[0];
        oi.iter()
            .map(|col| {
                col.page_locations()
                    .iter()
                    .map(|p| {
                        let start = p.offset as usize;
                        let end = start + p.compressed_page_size as usize;
                        needs_dictionary(&file[start..end]).expect("a data page header")
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn fallback_chunks_start_with_dictionary_pages_then_plain() {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for flags in page_flags(&fallback_file(version)) {
                let dict = flags.iter().take_while(|f| **f).count();
                assert!(dict > 0, "{version:?}: the first pages use the dictionary");
                assert!(dict < flags.len(), "{version:?}: the chunk falls back");
                assert!(flags[dict..].iter().all(|f| !f), "{version:?}: {flags:?}");
            }
        }
    }

    #[test]
    fn dictionary_pages_and_garbage_are_errors() {
        let file = fallback_file(WriterVersion::PARQUET_1_0);
        let md = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .expect("metadata");
        let dict_at = md
            .row_group(0)
            .column(0)
            .dictionary_page_offset()
            .expect("dict") as usize;
        let err = needs_dictionary(&file[dict_at..]).expect_err("not a data page");
        assert!(err.contains("page type 2"), "{err}");
        assert!(needs_dictionary(&[]).is_err());
        assert!(
            needs_dictionary(&[0x15, 0x00, 0x00]).is_err(),
            "no encoding"
        );
    }

    #[test]
    fn every_truncation_errors() {
        let file = fallback_file(WriterVersion::PARQUET_2_0);
        let md = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&file)
            .expect("metadata");
        let first = &md.offset_index().expect("offset index")[0][0].page_locations()[0];
        let start = first.offset as usize;
        let mut header_len = 0;
        for n in 0..64 {
            if needs_dictionary(&file[start..start + n]).is_ok() {
                header_len = n;
                break;
            }
        }
        assert!(header_len > 0, "the header parses within 64 bytes");
        for n in 0..header_len {
            assert!(
                needs_dictionary(&file[start..start + n]).is_err(),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn sizes_match_the_chunks_pages() {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let file = fallback_file(version);
            let md = ParquetMetaDataReader::new()
                .parse_and_finish(&file)
                .expect("metadata");
            for chunk in md.row_group(0).columns() {
                // Walking the chunk header by header lands exactly on its end, and the
                // pages' values add up to the chunk's.
                let (start, len) = chunk.byte_range();
                let (mut at, mut values, mut dictionaries) = (start, 0, 0);
                while at < start + len {
                    let s = page_sizes(&file[at as usize..]).expect("a header");
                    assert!(s.compressed >= 0 && s.uncompressed >= 0);
                    if s.page_type == DICTIONARY_PAGE {
                        dictionaries += 1;
                    } else {
                        values += s.num_values.expect("data page values");
                        assert_eq!(s.v2_levels.is_some(), version == WriterVersion::PARQUET_2_0);
                    }
                    at += s.header_len as u64 + s.compressed as u64;
                }
                assert_eq!(at, start + len);
                assert_eq!(values, chunk.num_values());
                assert_eq!(dictionaries, 1);
            }
        }
    }

    #[test]
    fn sizes_of_a_cut_header_are_errors() {
        let file = fallback_file(WriterVersion::PARQUET_2_0);
        let md = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .expect("metadata");
        let start = md.row_group(0).column(1).byte_range().0 as usize;
        let whole = page_sizes(&file[start..]).expect("a header");
        for n in 0..whole.header_len {
            assert!(page_sizes(&file[start..start + n]).is_err(), "{n} bytes");
        }
    }

    proptest! {
        #[test]
        fn prop_random_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..128)) {
            let _ = needs_dictionary(&buf);
            let _ = page_sizes(&buf);
        }
    }
}
