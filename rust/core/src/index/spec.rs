//! The definition of one index, as a user writes it: a kind from the registry, a column,
//! and the kind's settings.

use crate::error::{Error, Result};
use crate::index::kind::{IndexKind, ParamValue, Settings};
use crate::index::locator::Granularity;
use crate::index::registry;

/// The definition of one index: what a user asks for.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub kind: &'static dyn IndexKind,
    pub column: String,
    pub settings: Settings,
}

impl PartialEq for IndexSpec {
    fn eq(&self, other: &Self) -> bool {
        self.kind.info().name == other.kind.info().name
            && self.column == other.column
            && self.settings == other.settings
    }
}

impl IndexSpec {
    /// The definition of a `kind` index on `column`; a granularity or parameter left out
    /// takes the kind's default.
    pub fn new(
        kind: &str,
        column: &str,
        granularity: Option<Granularity>,
        params: &[(String, ParamValue)],
    ) -> Result<IndexSpec> {
        let kind = registry::by_name(kind).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown index kind {kind:?} (kinds: {})",
                registry::names().join(", ")
            ))
        })?;
        if column.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "a {} index needs a column name",
                kind.info().name
            )));
        }
        Ok(IndexSpec {
            kind,
            column: column.to_string(),
            settings: Settings::new(kind.info(), granularity, params)?,
        })
    }

    /// The granularity the built index will have.
    pub fn stored_granularity(&self) -> Granularity {
        self.kind.stored_granularity(self.settings.granularity)
    }

    /// What identifies the index in a file: adding another with the same one replaces it.
    pub fn identity(&self) -> (&'static str, &str, Granularity) {
        (
            self.kind.info().name,
            &self.column,
            self.stored_granularity(),
        )
    }
}
