//! Footer key/value entries that locate embedded index blocks: `pqindex.index.<n>` → a
//! small JSON object. The footer says where each index is (offset and length) so a reader
//! fetches one with a single ranged read; the payload itself stays out of the footer, which
//! every reader parses.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const KEY_PREFIX: &str = "pqindex.index.";

/// What one index covers: the whole file, each row group, or each page of its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    File,
    RowGroup,
    Page,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [Granularity::File, Granularity::RowGroup, Granularity::Page];

    /// The name users write (`"row_group"`).
    pub fn name(self) -> &'static str {
        match self {
            Granularity::File => "file",
            Granularity::RowGroup => "row_group",
            Granularity::Page => "page",
        }
    }

    pub fn from_name(name: &str) -> Option<Granularity> {
        Self::ALL.into_iter().find(|g| g.name() == name)
    }
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
