//! Reading one index block from a file: whole (checked end to end) or in part (the block
//! header checked against its locator, then any range of the payload), so a lookup index
//! can be read a section at a time.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::index::container::{
    block_checksum, decode_block, BLOCK_VERSION, CHECKSUM_LEN, HEADER_LEN, MAGIC,
};
use crate::index::locator::Locator;
use crate::io::StorageFile;

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidIndex(why.into())
}

/// The block a locator names, in a file whose body ends (and footer starts) at `body_end`.
pub struct BlockReader<'a> {
    file: &'a StorageFile,
    locator: &'a Locator,
    code: u16,
    name: &'static str,
}

impl<'a> BlockReader<'a> {
    /// The block of `locator` in `file`, expected to hold the kind with block code `code`
    /// (named `name`). Its place is checked against the body before anything is read.
    pub fn new(
        file: &'a StorageFile,
        locator: &'a Locator,
        body_end: u64,
        code: u16,
        name: &'static str,
    ) -> Result<Self> {
        if locator.version != BLOCK_VERSION {
            return Err(invalid(format!(
                "index version {} (this pqindex reads version {BLOCK_VERSION})",
                locator.version
            )));
        }
        let end = locator.offset.checked_add(locator.length);
        if end.is_none_or(|e| e > body_end) || locator.length < (HEADER_LEN + CHECKSUM_LEN) as u64 {
            return Err(invalid(format!(
                "block at {}+{} lies outside the file body",
                locator.offset, locator.length
            )));
        }
        Ok(BlockReader {
            file,
            locator,
            code,
            name,
        })
    }

    pub fn locator(&self) -> &Locator {
        self.locator
    }

    /// Bytes of the payload, from the locator's length.
    pub fn payload_len(&self) -> u64 {
        self.locator.length - (HEADER_LEN + CHECKSUM_LEN) as u64
    }

    /// The whole payload, after checking the block's magic, version, kind, length and
    /// checksum (also against the locator's).
    pub fn payload(&self) -> Result<Vec<u8>> {
        let block = self
            .file
            .read_range(self.locator.offset, self.locator.length as usize)?;
        if block_checksum(&block) != Some(self.locator.checksum) {
            return Err(invalid("block checksum differs from its locator"));
        }
        Ok(decode_block(&block, self.code, self.name)?.to_vec())
    }

    /// The payload's bytes `offset..offset + len`, with the block header (read with them
    /// when `offset` is 0) checked against the locator. The block's checksum covers the
    /// whole block, so a kind read in part checks its own sections.
    pub fn payload_range(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.payload_len()) {
            return Err(invalid(format!(
                "range {offset}+{len} lies outside the {} index's payload",
                self.name
            )));
        }
        let start = self.locator.offset + HEADER_LEN as u64 + offset;
        if offset == 0 {
            let bytes = self
                .file
                .read_range(self.locator.offset, HEADER_LEN + len)?;
            self.check_header(&bytes)?;
            return Ok(bytes.slice(HEADER_LEN..));
        }
        self.file.read_range(start, len)
    }

    fn check_header(&self, bytes: &[u8]) -> Result<()> {
        let declared = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        if &bytes[..4] != MAGIC
            || u16::from_le_bytes([bytes[4], bytes[5]]) != BLOCK_VERSION
            || u16::from_le_bytes([bytes[6], bytes[7]]) != self.code
            || declared != self.payload_len()
        {
            return Err(invalid("block header does not match its locator"));
        }
        Ok(())
    }
}
