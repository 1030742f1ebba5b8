//! Checking every embedded index of a file in full: container checksum, payload structure
//! and that its units describe this file's row groups.

use std::sync::Arc;

use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::index::codec::invalid;
use crate::index::locator::{locators, Locator};
use crate::index::registry;
use crate::index::span::check_spans;
use crate::io::{IoStats, StorageFile};
use crate::metadata::read_footer;
use crate::metadata::schema::leaves_named;

/// The outcome of checking one footer entry.
pub struct Checked {
    pub key: String,
    pub locator: Option<Locator>,
    pub error: Option<String>,
}

/// Check every `pqindex.index.*` entry of the file at `path`.
pub fn verify(path: &str) -> Result<Vec<Checked>> {
    let file = StorageFile::open(path, Arc::new(IoStats::default()))?;
    let md = read_footer(&file)?;
    let body_end = crate::metadata::footer_start(&file)?;
    Ok(locators(md.file_metadata().key_value_metadata())
        .into_iter()
        .map(|(key, parsed)| match parsed {
            Err(e) => Checked {
                key,
                locator: None,
                error: Some(e.to_string()),
            },
            Ok(l) => {
                let error = check(&file, &md, &l, body_end).err().map(|e| e.to_string());
                Checked {
                    key,
                    locator: Some(l),
                    error,
                }
            }
        })
        .collect())
}

fn check(file: &StorageFile, md: &ParquetMetaData, l: &Locator, body_end: u64) -> Result<()> {
    let (kind, block) = registry::open_block(file, l, body_end)?;
    let spans = kind.verify(&block.payload()?)?;
    check_spans(&spans, md)?;
    let descr = md.file_metadata().schema_descr();
    match &l.columns[..] {
        [column] if leaves_named(descr, column).len() == 1 => Ok(()),
        _ => Err(invalid(format!(
            "{:?} does not name exactly one column of the file",
            l.columns
        ))),
    }
}
