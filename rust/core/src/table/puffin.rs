//! Puffin files: how indexes of a table's data files are kept outside the files.
//!
//! A table's data files are immutable by contract and its metadata records their sizes,
//! so their indexes cannot be embedded. They go into Puffin files (the Iceberg format for
//! statistics kept beside a table, which Iceberg tables register in their metadata), one
//! blob per index: the blob is the index's block (`index::container`, checksum included),
//! and the blob's properties name the data file (path and size) and the index (kind,
//! column, granularity). Layout (Iceberg's Puffin specification):
//!
//! ```text
//! "PFA1" | blob 1 | ... | blob n | "PFA1" | footer payload (UTF-8 JSON) | payload length u32 LE | flags u32 LE | "PFA1"
//! ```

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::StorageFile;

pub const MAGIC: &[u8; 4] = b"PFA1";
/// The blob type of a pqindex index.
pub const BLOB_TYPE: &str = "pqindex-index-v1";
/// Footer payloads larger than this are refused (a length read off disk).
const MAX_FOOTER: u64 = 64 << 20;

/// One blob as the footer describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlobMetadata {
    #[serde(rename = "type")]
    pub blob_type: String,
    /// Iceberg field ids of the indexed column (empty for Delta tables).
    #[serde(default)]
    pub fields: Vec<i32>,
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    #[serde(rename = "sequence-number")]
    pub sequence_number: i64,
    pub offset: u64,
    pub length: u64,
    #[serde(rename = "compression-codec", skip_serializing_if = "Option::is_none")]
    pub compression_codec: Option<String>,
    #[serde(default)]
    pub properties: HashMap<String, String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Footer {
    blobs: Vec<BlobMetadata>,
    #[serde(default)]
    properties: HashMap<String, String>,
}

/// A Puffin file of `blobs` (their bytes, and metadata whose offset and length are filled
/// in here).
pub fn encode(blobs: Vec<(BlobMetadata, Vec<u8>)>, properties: HashMap<String, String>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let mut described = Vec::with_capacity(blobs.len());
    for (mut meta, bytes) in blobs {
        meta.offset = out.len() as u64;
        meta.length = bytes.len() as u64;
        out.extend_from_slice(&bytes);
        described.push(meta);
    }
    let footer = serde_json::to_vec(&Footer {
        blobs: described,
        properties,
    })
    .expect("a footer always serialises");
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&footer);
    out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(MAGIC);
    out
}

fn invalid(file: &StorageFile, why: impl std::fmt::Display) -> Error {
    Error::invalid_file(file.path(), format!("not a readable Puffin file: {why}"))
}

/// The blobs a Puffin file's footer describes, each checked to lie within the blob area,
/// and where the blob area ends.
pub fn read_footer(file: &StorageFile) -> Result<(Vec<BlobMetadata>, u64)> {
    let size = file.identity().size;
    if size < 4 + 4 + 12 {
        return Err(invalid(file, format!("{size} bytes is too small")));
    }
    let tail = file.read_range(size - 12, 12)?;
    if &tail[8..12] != MAGIC {
        return Err(invalid(file, "no closing magic"));
    }
    let flags = u32::from_le_bytes(tail[4..8].try_into().expect("4 bytes"));
    if flags & 1 != 0 {
        return Err(invalid(file, "a compressed footer"));
    }
    let length = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    if length > MAX_FOOTER || length + 4 + 12 + 4 > size {
        return Err(invalid(file, format!("a footer of {length} bytes")));
    }
    let footer_start = size - 12 - length - 4;
    let footer = file.read_range(footer_start, (length + 4) as usize)?;
    if &footer[..4] != MAGIC {
        return Err(invalid(file, "no footer magic"));
    }
    let parsed: Footer = serde_json::from_slice(&footer[4..])
        .map_err(|e| invalid(file, format!("its footer is not Puffin JSON: {e}")))?;
    for b in &parsed.blobs {
        let end = b.offset.checked_add(b.length);
        if b.offset < 4 || end.is_none_or(|e| e > footer_start) {
            return Err(invalid(file, "a blob lies outside the blob area"));
        }
    }
    Ok((parsed.blobs, footer_start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::io::IoStats;

    fn blob(data_file: &str) -> BlobMetadata {
        BlobMetadata {
            blob_type: BLOB_TYPE.into(),
            fields: vec![1],
            snapshot_id: 7,
            sequence_number: 3,
            offset: 0,
            length: 0,
            compression_codec: None,
            properties: HashMap::from([("data-file".to_string(), data_file.to_string())]),
        }
    }

    #[test]
    fn blobs_round_trip_and_damage_is_refused() {
        let bytes = encode(
            vec![(blob("a"), b"first".to_vec()), (blob("b"), vec![7u8; 100])],
            HashMap::new(),
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.puffin");
        std::fs::write(&path, &bytes).unwrap();
        let open = |p: &std::path::Path| {
            StorageFile::open(&p.to_string_lossy(), Arc::new(IoStats::default())).unwrap()
        };
        let (blobs, end) = read_footer(&open(&path)).unwrap();
        assert_eq!(blobs.len(), 2);
        assert_eq!(&bytes[blobs[0].offset as usize..][..5], b"first");
        assert_eq!(blobs[1].length, 100);
        assert!(blobs[1].offset + blobs[1].length <= end);
        for cut in [0, 10, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            assert!(read_footer(&open(&path)).is_err(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 12..n - 8].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&path, &bad).unwrap();
        assert!(read_footer(&open(&path)).is_err());
    }
}
