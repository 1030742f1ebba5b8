//! One page read whole, apart from the crate's page reader: its header checked by the
//! page guard, its data decompressed with a codec kept per thread ([`crate::read::decode::page_codec`]).
//!
//! The probes that look at a page before the read decides what to decode (a dictionary
//! page asked for values, a PLAIN page searched for bytes) read it this way: the crate's
//! reader would set up a codec for each chunk (for Zstandard a compression context and a
//! decompression one, costing more than decompressing a small page).

use std::ops::Range;

use bytes::Bytes;
use parquet::basic::Compression;

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::metadata::page_header::{page_sizes, PageSizes};
use crate::read::decode::page_codec::decompressed;
use crate::read::page_guard::PageGuard;

/// A page's header and its data (levels and values), decompressed.
pub(crate) struct WholePage {
    pub header: PageSizes,
    pub data: Bytes,
}

/// The page at `range` of `file` (leaf column `leaf`, compressed with `codec`), when its
/// header is `wanted`; `None`, decompressing nothing, when it is not. A header the guard
/// refuses, or a page longer than `range`, is a damaged file.
pub(crate) fn read(
    file: &StorageFile,
    guard: &PageGuard,
    leaf: usize,
    codec: Compression,
    range: Range<u64>,
    wanted: impl Fn(&PageSizes) -> bool,
) -> Result<Option<WholePage>> {
    let bytes = file.read_range(range.start, (range.end - range.start) as usize)?;
    guard.check(range.start, &bytes, true)?;
    let damaged = |why: String| Error::invalid_file(file.path(), format!("column {leaf}: {why}"));
    let header = page_sizes(&bytes).map_err(damaged)?;
    if !wanted(&header) {
        return Ok(None);
    }
    let body = usize::try_from(header.compressed)
        .ok()
        .and_then(|len| bytes.get(header.header_len..header.header_len.checked_add(len)?))
        .ok_or_else(|| damaged("a page longer than its bytes".into()))?;
    let data = match codec {
        Compression::UNCOMPRESSED => bytes.slice_ref(body),
        codec => {
            let size = usize::try_from(header.uncompressed)
                .map_err(|_| damaged("a negative page size".into()))?;
            Bytes::from(decompressed(codec, body, size).map_err(|e| damaged(e.to_string()))?)
        }
    };
    Ok(Some(WholePage { header, data }))
}
