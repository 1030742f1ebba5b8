//! Units ruled out by their chunks' dictionary pages before any data page is read.
//!
//! An `=` or `IN` on a column whose chunk is all dictionary encoded cannot match a row
//! group whose dictionary page holds none of its values
//! ([`crate::metadata::dictionary_page`]): exact, where statistics cannot speak for a
//! value between a chunk's bounds and a bloom filter only probably can. The read needs
//! that page anyway when the row group may match, and keeps it once fetched, so asking
//! costs no byte then; when it does not match, the page is all that is read. Spark's
//! Parquet reader asks dictionaries the same way. Only local files are asked: on an
//! object store the page would be a round trip of its own before the others, and there
//! bloom filters, fetched with the page index, answer.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::metadata::dictionary_page::{any_plain_value, probe_range};
use crate::metadata::page_header::DICTIONARY_PAGE;
use crate::plan::{Metrics, ScanUnit};
use crate::predicate::expr::Predicate;
use crate::predicate::plain::{encodings, probe_values};
use crate::read::decode::whole_page;
use crate::read::page_guard::PageGuard;
use crate::read::shared_pages::SharedPages;

/// Longer IN lists are not asked: a join's keys are left to bloom filters and indexes.
const MAX_PROBED_VALUES: usize = 1024;

/// Whether no row of `unit` (read from `file`, its pages checked by `guard`) can satisfy
/// `pred`, by the dictionary pages of the chunks the unit's `dictionary_probes` name. The
/// pages asked are fetched through `shared` when the read is one piece of a unit, and kept
/// in `file` for the read.
pub(crate) fn rules_out(
    file: &StorageFile,
    guard: &PageGuard,
    unit: &ScanUnit,
    pred: &Predicate,
    shared: Option<&SharedPages>,
    metrics: &Metrics,
) -> Result<bool> {
    let mut probe = Probe {
        file,
        guard,
        md: unit.file.reader_metadata.metadata(),
        rg: unit.row_group,
        leaves: &unit.dictionary_probes,
        shared,
        metrics,
        pages: HashMap::new(),
    };
    Ok(!probe.may_match(pred)?)
}

/// A decompressed dictionary page: its plain values and how many there are.
struct Dictionary {
    values: Bytes,
    count: usize,
}

struct Probe<'a> {
    file: &'a StorageFile,
    guard: &'a PageGuard,
    md: &'a ParquetMetaData,
    rg: usize,
    /// The leaf columns whose dictionaries are asked.
    leaves: &'a [usize],
    shared: Option<&'a SharedPages>,
    metrics: &'a Metrics,
    /// Pages read so far, by leaf column; `None` where the chunk's first page is not one.
    pages: HashMap<usize, Option<Dictionary>>,
}

impl Probe<'_> {
    /// `false` only when no row can make `pred` TRUE.
    fn may_match(&mut self, pred: &Predicate) -> Result<bool> {
        match pred {
            Predicate::Const(c) => Ok(*c == Some(true)),
            Predicate::And(parts) => {
                for p in parts {
                    if !self.may_match(p)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Predicate::Or(parts) => {
                for p in parts {
                    if self.may_match(p)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            leaf => self.leaf_may_match(leaf),
        }
    }

    fn leaf_may_match(&mut self, leaf: &Predicate) -> Result<bool> {
        let (Some(values), Some(col)) = (probe_values(leaf), leaf.column()) else {
            return Ok(true);
        };
        let Some(index) = col.leaf.filter(|l| self.leaves.contains(l)) else {
            return Ok(true);
        };
        if values.len() > MAX_PROBED_VALUES || probe_range(self.md, self.rg, index).is_none() {
            return Ok(true);
        }
        let descr = self.md.file_metadata().schema_descr().column(index);
        let (physical, type_length) = (descr.physical_type(), descr.type_length());
        let mut wanted = Vec::new();
        for v in values {
            match encodings(v, col, physical, type_length) {
                Some(e) => wanted.extend(e),
                // A value that cannot be compared as stored: it may be there.
                None => return Ok(true),
            }
        }
        let Some(dictionary) = self.dictionary(index)? else {
            return Ok(true);
        };
        let found = if wanted.len() <= 8 {
            any_plain_value(
                &dictionary.values,
                dictionary.count,
                physical,
                type_length,
                |v| wanted.iter().any(|w| w[..] == *v),
            )
        } else {
            let set: HashSet<&[u8]> = wanted.iter().map(|w| &w[..]).collect();
            any_plain_value(
                &dictionary.values,
                dictionary.count,
                physical,
                type_length,
                |v| set.contains(v),
            )
        };
        found.map_err(|e| Error::invalid_file(self.file.path(), format!("column {index}: {e}")))
    }

    /// The dictionary page of leaf column `index`, read the first time it is asked for.
    fn dictionary(&mut self, index: usize) -> Result<Option<&Dictionary>> {
        if !self.pages.contains_key(&index) {
            let page = self.read(index)?;
            self.pages.insert(index, page);
        }
        Ok(self.pages.get(&index).and_then(Option::as_ref))
    }

    /// The page is read with a codec kept per thread and its header checked first
    /// ([`crate::read::decode::whole_page`]).
    fn read(&self, index: usize) -> Result<Option<Dictionary>> {
        let Some(range) = probe_range(self.md, self.rg, index) else {
            return Ok(None);
        };
        match self.shared {
            Some(shared) => shared.prefetch(self.file, vec![range.clone()])?,
            None => self.file.prefetch(vec![range.clone()])?,
        }
        self.metrics.dictionary_pages_probed.incr();
        let codec = self.md.row_group(self.rg).column(index).compression();
        let Some(page) = whole_page::read(self.file, self.guard, index, codec, range, |h| {
            h.page_type == DICTIONARY_PAGE
        })?
        else {
            return Ok(None);
        };
        let count = usize::try_from(page.header.num_values.unwrap_or(0)).map_err(|_| {
            Error::invalid_file(
                self.file.path(),
                format!("column {index}: a dictionary page of a negative count"),
            )
        })?;
        Ok(Some(Dictionary {
            values: page.data,
            count,
        }))
    }
}
