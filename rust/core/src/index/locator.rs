//! Footer key/value entries that locate embedded index blocks: `pqindex.index.<n>` → a
//! small JSON object. The footer says where each index is (offset and length) so a reader
//! fetches one with a single ranged read; the payload itself stays out of the footer, which
//! every reader parses.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::container::{block_checksum, decode_block, IndexKind, BLOCK_VERSION};
use crate::io::StorageFile;

pub const KEY_PREFIX: &str = "pqindex.index.";

/// What one index covers: the whole file, each row group, or each page of its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    File,
    RowGroup,
    Page,
}

/// Where one index block is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Locator {
    pub kind: String,
    pub columns: Vec<String>,
    pub granularity: Granularity,
    pub offset: u64,
    pub length: u64,
    pub checksum: u32,
    pub version: u16,
}

impl Locator {
    /// Indexes with the same identity replace each other; others coexist.
    pub fn identity(&self) -> (&str, &[String], Granularity) {
        (&self.kind, &self.columns, self.granularity)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a locator always serialises")
    }

    pub fn from_json(text: &str) -> Result<Locator> {
        serde_json::from_str(text).map_err(|e| Error::InvalidIndex(format!("bad locator: {e}")))
    }

    /// Read and check the block this locator names; `body_end` is where the footer starts.
    pub fn read_payload(&self, file: &StorageFile, body_end: u64) -> Result<Vec<u8>> {
        let kind = IndexKind::from_name(&self.kind)
            .ok_or_else(|| Error::InvalidIndex(format!("unknown index kind {:?}", self.kind)))?;
        if self.version != BLOCK_VERSION {
            return Err(Error::InvalidIndex(format!(
                "index version {} (this pqindex reads version {BLOCK_VERSION})",
                self.version
            )));
        }
        let end = self.offset.checked_add(self.length);
        if end.is_none_or(|e| e > body_end) {
            return Err(Error::InvalidIndex(format!(
                "block at {}+{} lies outside the file body",
                self.offset, self.length
            )));
        }
        let block = file.read_range(self.offset, self.length as usize)?;
        if block_checksum(&block) != Some(self.checksum) {
            return Err(Error::InvalidIndex(
                "block checksum differs from its locator".into(),
            ));
        }
        Ok(decode_block(&block, kind)?.to_vec())
    }
}

/// The locators of a footer's key/value metadata, each with its key; entries that do not
/// parse come back as errors so callers can report and skip them.
pub fn locators(
    kv: Option<&Vec<parquet::file::metadata::KeyValue>>,
) -> Vec<(String, Result<Locator>)> {
    kv.into_iter()
        .flatten()
        .filter(|e| e.key.starts_with(KEY_PREFIX))
        .map(|e| {
            let parsed = match &e.value {
                Some(v) => Locator::from_json(v),
                None => Err(Error::InvalidIndex(format!("{} has no value", e.key))),
            };
            (e.key.clone(), parsed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_round_trip_through_json() {
        let l = Locator {
            kind: "bloom".into(),
            columns: vec!["a".into(), "b.c".into()],
            granularity: Granularity::RowGroup,
            offset: 4,
            length: 100,
            checksum: 0xdead_beef,
            version: 1,
        };
        let json = l.to_json();
        assert!(json.contains("\"granularity\":\"row_group\""), "{json}");
        assert_eq!(Locator::from_json(&json).unwrap(), l);
        assert!(Locator::from_json("{\"kind\": 1}").is_err());
    }
}
