//! The embedded index block: the bytes of one index inside a Parquet file's body, between
//! the last Parquet structure and the footer, where every other reader ignores them.
//!
//! ```text
//! magic "PQIX" | version u16 LE | kind u16 LE | payload length u64 LE | payload | crc32c u32 LE
//! ```
//!
//! The checksum covers everything before it. A block is trusted only after its magic,
//! version, length (against the bytes actually there) and checksum all agree; anything else
//! is `InvalidIndex`, which readers treat as "no index" and stay correct.
//! `docs/index-format.md` is the full specification.

use crate::error::{Error, Result};

pub const MAGIC: &[u8; 4] = b"PQIX";
/// The block format this code writes and reads.
pub const BLOCK_VERSION: u16 = 1;
/// Magic, version, kind and payload length.
pub const HEADER_LEN: usize = 4 + 2 + 2 + 8;
pub const CHECKSUM_LEN: usize = 4;

/// A whole block for `payload` of the kind with block code `code`.
pub fn encode_block(code: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + CHECKSUM_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&BLOCK_VERSION.to_le_bytes());
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The checksum stored at the end of an encoded block (also recorded in its locator).
pub fn block_checksum(block: &[u8]) -> Option<u32> {
    let tail = block.len().checked_sub(CHECKSUM_LEN)?;
    Some(u32::from_le_bytes(block[tail..].try_into().ok()?))
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidIndex(reason.into())
}

/// The payload of `block`, after checking everything the block says about itself against
/// the kind expected (block code `code`, named `name`). Lengths read from the bytes are
/// checked against the bytes present before any use, so a hostile length cannot cause a
/// large allocation or an out-of-bounds read.
pub fn decode_block<'b>(block: &'b [u8], code: u16, name: &str) -> Result<&'b [u8]> {
    if block.len() < HEADER_LEN + CHECKSUM_LEN {
        return Err(invalid(format!(
            "block of {} bytes is truncated",
            block.len()
        )));
    }
    if &block[..4] != MAGIC {
        return Err(invalid("bad magic"));
    }
    let version = u16::from_le_bytes([block[4], block[5]]);
    if version != BLOCK_VERSION {
        return Err(invalid(format!(
            "block version {version} (this pqindex reads version {BLOCK_VERSION})"
        )));
    }
    let stored = u16::from_le_bytes([block[6], block[7]]);
    if stored != code {
        return Err(invalid(format!(
            "block holds an index of kind code {stored}, expected a {name} index (code {code})"
        )));
    }
    let declared = u64::from_le_bytes(block[8..16].try_into().expect("8 bytes"));
    let available = (block.len() - HEADER_LEN - CHECKSUM_LEN) as u64;
    if declared != available {
        return Err(invalid(format!(
            "payload length {declared} does not match the {available} bytes present"
        )));
    }
    let body = block.len() - CHECKSUM_LEN;
    let stored = block_checksum(block).expect("length checked");
    if crc32c::crc32c(&block[..body]) != stored {
        return Err(invalid("checksum mismatch"));
    }
    Ok(&block[HEADER_LEN..body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_round_trip() {
        let block = encode_block(2, b"payload");
        assert_eq!(block.len(), HEADER_LEN + 7 + CHECKSUM_LEN);
        assert_eq!(decode_block(&block, 2, "bloom").unwrap(), b"payload");
        assert!(decode_block(&block, 1, "distinct").is_err());
    }

    #[test]
    fn damage_is_detected() {
        let block = encode_block(4, &[7u8; 100]);
        for i in 0..block.len() {
            let mut bad = block.clone();
            bad[i] ^= 0x40;
            assert!(
                matches!(decode_block(&bad, 4, "hll"), Err(Error::InvalidIndex(_))),
                "flip at {i}"
            );
        }
        for n in 0..block.len() {
            assert!(decode_block(&block[..n], 4, "hll").is_err());
        }
        let mut huge = block.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_block(&huge, 4, "hll").is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_block(&bytes, 1, "distinct");
        }
    }
}
