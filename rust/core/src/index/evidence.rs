//! Embedded indexes at planning time: which units of a file may hold a row satisfying a
//! leaf, according to every usable index on the leaf's column (each kind decides what it
//! can answer: lookup indexes `=` and `IN`, page bounds any comparison in files without a
//! page index). Their verdicts meet by intersection and become row ranges per row group.
//!
//! An index is opened the first time a leaf it can answer is asked about; each kind reads
//! what it needs of its block (a distinct index only its header, then one bucket per
//! value). An index that is damaged, of an unknown kind or version, or does not fit the
//! file is skipped with a warning.

use std::collections::BTreeMap;
use std::ops::Range;

use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::index::block::BlockReader;
use crate::index::kind::{IndexKind, IndexProbe};
use crate::index::locator::{locators, Locator};
use crate::index::registry;
use crate::index::span::{check_spans, WHOLE_FILE};
use crate::io::StorageFile;
use crate::metadata::page_index::has_page_index;
use crate::metadata::schema::leaves_named;
use crate::plan::RowRanges;
use crate::predicate::Predicate;
use crate::prune::evidence::{Evidence, Report, Source};
use crate::prune::planner::FileIndexEvidence;

/// Which rows of a file may satisfy one leaf.
#[derive(Debug, Clone)]
pub struct LeafVerdict {
    /// Row ranges per row group that may match; a row group absent here cannot match.
    pub row_groups: BTreeMap<u32, RowRanges>,
    /// The kinds that gave this verdict.
    pub kinds: Vec<&'static str>,
}

impl LeafVerdict {
    pub fn any(&self) -> bool {
        self.row_groups.values().any(|r| !r.is_empty())
    }

    pub fn row_group(&self, rg: usize) -> bool {
        self.row_groups
            .get(&(rg as u32))
            .is_some_and(|r| !r.is_empty())
    }

    pub fn ranges(&self, rg: usize) -> RowRanges {
        self.row_groups
            .get(&(rg as u32))
            .cloned()
            .unwrap_or_else(RowRanges::empty)
    }

    fn intersect(mut self, other: LeafVerdict) -> LeafVerdict {
        self.row_groups = self
            .row_groups
            .into_iter()
            .filter_map(|(rg, r)| Some((rg, r.intersect(other.row_groups.get(&rg)?))))
            .collect();
        self.kinds.extend(other.kinds);
        self
    }
}

enum State {
    Unread,
    Open(Box<dyn IndexProbe>),
    Skipped,
}

struct Entry {
    locator: Locator,
    kind: &'static dyn IndexKind,
    state: State,
}

/// The embedded indexes of one file, read on demand.
pub struct FileIndexes<'a> {
    /// Where the index blocks are: the data file itself, or a file kept beside a table.
    file: StorageFile,
    md: &'a ParquetMetaData,
    entries: Vec<Entry>,
    body_end: Option<u64>,
    /// Verdicts given so far, by leaf: equal leaves get the same answer.
    verdicts: Vec<(Predicate, Option<LeafVerdict>)>,
    pub warnings: Vec<String>,
    pub indexes_read: u64,
}

impl<'a> FileIndexes<'a> {
    /// The indexes the footer declares that planning may use; entries that do not parse,
    /// or name a kind this pqindex does not know, are reported at once.
    pub fn new(file: &'a StorageFile, md: &'a ParquetMetaData) -> Self {
        let entries = locators(md.file_metadata().key_value_metadata());
        Self::with_locators(file.clone(), None, md, entries)
    }

    /// The indexes `entries` locate in `blocks` (whose block area ends at `body_end`,
    /// found from its footer when `None`), for the data file whose footer is `md`.
    pub fn with_locators(
        blocks: StorageFile,
        body_end: Option<u64>,
        md: &'a ParquetMetaData,
        entries: Vec<(String, Result<Locator>)>,
    ) -> Self {
        let file = blocks;
        let mut warnings = Vec::new();
        let mut usable = Vec::new();
        let page_index = has_page_index(md);
        for (key, parsed) in entries {
            match parsed {
                Ok(l) => match registry::by_name(&l.kind) {
                    Some(kind) if kind.used_in_planning(l.granularity, page_index) => {
                        usable.push(Entry {
                            locator: l,
                            kind,
                            state: State::Unread,
                        })
                    }
                    Some(_) => {}
                    None => warnings.push(format!(
                        "{}: index {key} has unknown kind {:?}; skipped",
                        file.path(),
                        l.kind
                    )),
                },
                Err(e) => warnings.push(format!("{}: index {key} skipped: {e}", file.path())),
            }
        }
        FileIndexes {
            file,
            md,
            entries: usable,
            body_end,
            verdicts: Vec::new(),
            warnings,
            indexes_read: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The combined verdict of every usable index on the leaf's column, or `None` when no
    /// index can answer for this leaf.
    pub fn verdict(&mut self, leaf: &Predicate) -> Option<LeafVerdict> {
        let leaf_idx = leaf.column()?.leaf?;
        let schema = self.md.file_metadata().schema_descr();
        let descr = schema.column(leaf_idx);
        let name = descr.path().string();
        if leaves_named(schema, &name).len() != 1 {
            return None;
        }
        let mut out: Option<LeafVerdict> = None;
        for i in 0..self.entries.len() {
            let e = &self.entries[i];
            if e.locator.columns != [name.clone()] || !e.kind.answers(leaf) {
                continue;
            }
            let units = match self.units_for(i, leaf, &descr) {
                Ok(Some(u)) => u,
                Ok(None) => continue,
                Err(e) => {
                    self.skip(i, e);
                    continue;
                }
            };
            let v = self.to_verdict(i, &units);
            out = Some(match out {
                None => v,
                Some(prev) => prev.intersect(v),
            });
        }
        out
    }

    fn skip(&mut self, i: usize, e: Error) {
        let l = &self.entries[i].locator;
        self.warnings.push(format!(
            "{}: {} index on {} skipped: {e}",
            self.file.path(),
            l.kind,
            l.columns.join(",")
        ));
        self.entries[i].state = State::Skipped;
    }

    /// The ids of the units of index `i` that may hold a matching value.
    fn units_for(
        &mut self,
        i: usize,
        leaf: &Predicate,
        column: &parquet::schema::types::ColumnDescriptor,
    ) -> Result<Option<Vec<u32>>> {
        let body_end = self.body_end()?;
        let (file, md) = (&self.file, self.md);
        let entry = &mut self.entries[i];
        let info = entry.kind.info();
        let block = BlockReader::new(file, &entry.locator, body_end, info.code, info.name)?;
        if matches!(entry.state, State::Unread) {
            self.indexes_read += 1;
            let probe = entry.kind.probe(&block)?;
            check_spans(probe.spans(), md)?;
            entry.state = State::Open(probe);
        }
        match &mut entry.state {
            State::Open(probe) => probe.units(leaf, column, &block),
            _ => Ok(None),
        }
    }

    fn body_end(&mut self) -> Result<u64> {
        if let Some(e) = self.body_end {
            return Ok(e);
        }
        let e = crate::metadata::footer_start(&self.file)?;
        self.body_end = Some(e);
        Ok(e)
    }

    fn to_verdict(&self, i: usize, units: &[u32]) -> LeafVerdict {
        let spans = match &self.entries[i].state {
            State::Open(probe) => probe.spans(),
            _ => &[],
        };
        let mut row_groups: BTreeMap<u32, Vec<Range<u64>>> = BTreeMap::new();
        for &u in units {
            let s = spans[u as usize];
            if s.row_group == WHOLE_FILE {
                for (rg, r) in self.md.row_groups().iter().enumerate() {
                    row_groups
                        .entry(rg as u32)
                        .or_default()
                        .push(0..r.num_rows().max(0) as u64);
                }
            } else {
                row_groups
                    .entry(s.row_group)
                    .or_default()
                    .push(s.first_row..s.first_row + s.rows);
            }
        }
        LeafVerdict {
            row_groups: row_groups
                .into_iter()
                .map(|(rg, r)| (rg, RowRanges::from_ranges(r)))
                .collect(),
            kinds: vec![self.entries[i].kind.info().name],
        }
    }
}

impl FileIndexes<'_> {
    /// The verdict for `leaf`, computed once per distinct leaf.
    fn cached(&mut self, leaf: &Predicate) -> Option<&LeafVerdict> {
        let i = match self.verdicts.iter().position(|(p, _)| p == leaf) {
            Some(i) => i,
            None => {
                let v = self.verdict(leaf);
                self.verdicts.push((leaf.clone(), v));
                self.verdicts.len() - 1
            }
        };
        self.verdicts[i].1.as_ref()
    }
}

impl Evidence for FileIndexes<'_> {
    fn source(&self) -> Source {
        Source::EmbeddedIndex
    }

    fn file(&mut self, leaf: &Predicate) -> Result<Option<bool>> {
        Ok(self.cached(leaf).map(LeafVerdict::any))
    }

    fn row_group(&mut self, rg: usize, leaf: &Predicate) -> Result<Option<bool>> {
        Ok(self.cached(leaf).map(|v| v.row_group(rg)))
    }

    fn rows(&mut self, rg: usize, leaf: &Predicate) -> Result<Option<RowRanges>> {
        Ok(self.cached(leaf).map(|v| v.ranges(rg)))
    }

    fn planning_ranges(&self, leaves: &[usize], _row_groups: &[usize]) -> Vec<Range<u64>> {
        let schema = self.md.file_metadata().schema_descr();
        let names: Vec<String> = leaves
            .iter()
            .filter(|l| **l < schema.num_columns())
            .map(|l| schema.column(*l).path().string())
            .collect();
        self.entries
            .iter()
            .filter(|e| e.locator.columns.iter().any(|c| names.contains(c)))
            .filter_map(|e| Some(e.locator.offset..e.locator.offset.checked_add(e.locator.length)?))
            .collect()
    }

    fn report(&self) -> Report {
        let mut used: Vec<&'static str> = self
            .verdicts
            .iter()
            .filter_map(|(_, v)| v.as_ref())
            .flat_map(|v| v.kinds.iter().copied())
            .collect();
        used.sort_unstable();
        used.dedup();
        Report {
            used,
            read: self.indexes_read,
            warnings: self.warnings.clone(),
        }
    }
}

/// Embedded indexes as the planner's evidence of an opened file.
pub struct EmbeddedIndexes;

impl FileIndexEvidence for EmbeddedIndexes {
    fn open<'f>(
        &self,
        file: &'f StorageFile,
        md: &'f ParquetMetaData,
    ) -> Option<Box<dyn Evidence + 'f>> {
        let indexes = FileIndexes::new(file, md);
        (!indexes.is_empty() || !indexes.warnings.is_empty())
            .then(|| Box::new(indexes) as Box<dyn Evidence>)
    }
}
