//! Reading a column chunk's Parquet split-block bloom filter: header and bitset, with every
//! offset and length checked against the file before anything is read or allocated.

use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ColumnChunkMetaData;

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::metadata::bloom_header::parse_bloom_header;

/// The largest bitset the format allows (parquet's own limit).
const MAX_BITSET: u64 = 128 * 1024 * 1024;
/// Enough bytes for any bloom filter header.
const HEADER_GUESS: u64 = 64;

/// Read the bloom filter of a column chunk, if it has one. Offsets and lengths are checked
/// against the file before anything is read or allocated.
pub fn read_bloom(file: &StorageFile, chunk: &ColumnChunkMetaData) -> Result<Option<Sbbf>> {
    let Some(offset) = chunk.bloom_filter_offset() else {
        return Ok(None);
    };
    let path = file.path();
    let size = file.identity().size;
    let corrupt = |why: String| Error::invalid_file(path, format!("corrupt bloom filter: {why}"));
    let offset = u64::try_from(offset)
        .ok()
        .filter(|o| *o < size)
        .ok_or_else(|| {
            corrupt(format!(
                "offset {offset} is outside the file ({size} bytes)"
            ))
        })?;
    let declared = chunk.bloom_filter_length().map(|l| l as i64);
    let first_read = match declared {
        Some(len) => u64::try_from(len)
            .ok()
            .filter(|l| *l <= MAX_BITSET + HEADER_GUESS && offset + l <= size)
            .ok_or_else(|| {
                corrupt(format!(
                    "length {len} at offset {offset} does not fit in the file ({size} bytes)"
                ))
            })?,
        None => HEADER_GUESS.min(size - offset),
    };
    let buf = file.read_range(offset, first_read as usize)?;
    let header = parse_bloom_header(&buf).map_err(corrupt)?;
    let num_bytes = u64::from(header.num_bytes);
    if !(32..=MAX_BITSET).contains(&num_bytes) || num_bytes % 32 != 0 {
        return Err(corrupt(format!("bitset of {num_bytes} bytes is not a whole number of 32-byte blocks within the format's limits")));
    }
    let start = header.header_len as u64;
    // A header that declares fewer (or more) bytes than the chunk's metadata gives the
    // filter maps each hash to another block than the writer did: probing it would
    // answer "absent" for values the column holds.
    if let Some(len) = declared {
        if start + num_bytes != len as u64 {
            return Err(corrupt(format!(
                "its header declares a bitset of {num_bytes} bytes, but the column chunk gives the filter {len} bytes ({start} of them header)"
            )));
        }
    }
    let bitset = if start + num_bytes <= buf.len() as u64 {
        buf.slice(start as usize..(start + num_bytes) as usize)
    } else {
        if declared.is_some() || offset + start + num_bytes > size {
            return Err(corrupt(format!(
                "bitset of {num_bytes} bytes runs past its declared length or the end of the file"
            )));
        }
        file.read_range(offset + start, num_bytes as usize)?
    };
    Ok(Some(Sbbf::new(&bitset)))
}
