//! Every kind of embedded index. Adding a kind is a file beside this one implementing
//! [`IndexKind`], one line in `KINDS`, and its section in `docs/index-format.md`: the
//! Python classes, CLI flags, Spark builds, verification and planning all come from here.

use crate::error::{Error, Result};
use crate::index::aggregates::Aggregates;
use crate::index::block::BlockReader;
use crate::index::bloom::Bloom;
use crate::index::distinct::Distinct;
use crate::index::hll::Hll;
use crate::index::kind::IndexKind;
use crate::index::locator::Locator;
use crate::index::minmax::MinMax;
use crate::index::ngram::Ngram;
use crate::index::token::Token;
use crate::io::StorageFile;

static KINDS: &[&dyn IndexKind] = &[
    &Distinct,
    &Bloom,
    &Hll,
    &MinMax,
    &Aggregates,
    &Ngram,
    &Token,
];

/// Every kind, in the order users see them.
pub fn kinds() -> &'static [&'static dyn IndexKind] {
    KINDS
}

/// The kind stored under `name` in locators.
pub fn by_name(name: &str) -> Option<&'static dyn IndexKind> {
    KINDS.iter().copied().find(|k| k.info().name == name)
}

/// The kind of the block `locator` names, and a reader of it in `file` (whose body ends
/// at `body_end`).
pub fn open_block<'a>(
    file: &'a StorageFile,
    locator: &'a Locator,
    body_end: u64,
) -> Result<(&'static dyn IndexKind, BlockReader<'a>)> {
    let kind = by_name(&locator.kind)
        .ok_or_else(|| Error::InvalidIndex(format!("unknown index kind {:?}", locator.kind)))?;
    let info = kind.info();
    Ok((
        kind,
        BlockReader::new(file, locator, body_end, info.code, info.name)?,
    ))
}

/// Every kind's stored name.
pub fn names() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.info().name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_codes_classes_and_flags_are_unique() {
        let infos: Vec<_> = kinds().iter().map(|k| k.info()).collect();
        for field in [
            infos.iter().map(|i| i.name).collect::<Vec<_>>(),
            infos.iter().map(|i| i.class_name).collect(),
            infos.iter().map(|i| i.cli_flag).collect(),
        ] {
            assert_eq!(field.iter().collect::<HashSet<_>>().len(), field.len());
        }
        let codes: HashSet<u16> = infos.iter().map(|i| i.code).collect();
        assert_eq!(codes.len(), infos.len());
        for i in &infos {
            assert!(!i.granularities.is_empty(), "{}", i.name);
            assert!(i.class_name.ends_with("Index"), "{}", i.name);
            assert_eq!(by_name(i.name).map(|k| k.info().code), Some(i.code));
        }
    }
}
