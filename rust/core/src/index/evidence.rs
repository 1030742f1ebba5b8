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
use parquet::schema::types::ColumnDescPtr;

use crate::error::{Error, Result};
use crate::index::block::BlockReader;
use crate::index::container::HEADER_LEN;
use crate::index::kind::{IndexKind, IndexProbe};
use crate::index::locator::{locators, Granularity, Locator};
use crate::index::registry;
use crate::index::span::{check_spans, WHOLE_FILE};
use crate::index::worth;
use crate::io::StorageFile;
use crate::metadata::page_index::has_page_index;
use crate::metadata::schema::leaves_named;
use crate::plan::RowRanges;
use crate::predicate::Predicate;
use crate::prune::evidence::{Evidence, Report, Source};
use crate::prune::planner::FileIndexEvidence;
use crate::prune::statistics::{file_bounds, within_bounds_at};

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
    /// Damaged or not fitting the file: reported.
    Skipped,
    /// Opened, then set aside as not worth asking for this scan ([`worth::pays`]).
    Declined,
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
    indexes_declined: u64,
    /// Bytes of index blocks fetched for planning: heads (or whole blocks) with the page
    /// index, then the sections lookups need.
    bytes_fetched: std::cell::Cell<u64>,
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
            indexes_declined: 0,
            bytes_fetched: std::cell::Cell::new(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The combined verdict of every usable index on the leaf's column, or `None` when no
    /// index can answer for this leaf.
    pub fn verdict(&mut self, leaf: &Predicate) -> Option<LeafVerdict> {
        let (found, descr) = self.answering(leaf)?;
        let narrowed = narrowed(self.md, leaf);
        let leaf = narrowed.as_ref().unwrap_or(leaf);
        let mut out: Option<LeafVerdict> = None;
        for i in found {
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

    /// Open index `i` for planning, if it is not open yet.
    fn open(&mut self, i: usize) -> Result<()> {
        if !matches!(self.entries[i].state, State::Unread) {
            return Ok(());
        }
        let body_end = self.body_end()?;
        let entry = &mut self.entries[i];
        let info = entry.kind.info();
        let block = BlockReader::new(&self.file, &entry.locator, body_end, info.code, info.name)?;
        self.indexes_read += 1;
        let probe = entry.kind.probe(&block)?;
        check_spans(probe.spans(), self.md)?;
        entry.state = State::Open(probe);
        Ok(())
    }

    /// The ids of the units of index `i` that may hold a matching value.
    fn units_for(
        &mut self,
        i: usize,
        leaf: &Predicate,
        column: &parquet::schema::types::ColumnDescriptor,
    ) -> Result<Option<Vec<u32>>> {
        self.open(i)?;
        let body_end = self.body_end()?;
        let entry = &mut self.entries[i];
        let info = entry.kind.info();
        let block = BlockReader::new(&self.file, &entry.locator, body_end, info.code, info.name)?;
        match &mut entry.state {
            State::Open(probe) => probe.units(leaf, column, &block),
            _ => Ok(None),
        }
    }

    /// The indexes that may answer for `leaf`, with the leaf's column.
    fn answering(&self, leaf: &Predicate) -> Option<(Vec<usize>, ColumnDescPtr)> {
        let leaf_idx = leaf.column()?.leaf?;
        let schema = self.md.file_metadata().schema_descr();
        let descr = schema.column(leaf_idx);
        let name = descr.path().string();
        if leaves_named(schema, &name).len() != 1 {
            return None;
        }
        let found: Vec<usize> = (0..self.entries.len())
            .filter(|&i| {
                let e = &self.entries[i];
                e.locator.columns == [name.clone()]
                    && !matches!(e.state, State::Skipped | State::Declined)
                    && e.kind.answers(leaf)
            })
            .collect();
        Some((found, descr))
    }

    /// Open every index that may answer for a leaf of `pred`, set aside those not worth
    /// asking in `row_groups` ([`worth::pays`]), and fetch, at once, what the others will
    /// read to answer (buckets, bloom rows).
    fn fetch_for(&mut self, pred: &Predicate, row_groups: &[usize]) -> Result<()> {
        // Per index: the leaves it will be asked about, and the ranges they read.
        let mut asked: Vec<(Vec<&Predicate>, Vec<Range<u64>>)> = (0..self.entries.len())
            .map(|_| Default::default())
            .collect();
        for leaf in pred.leaves() {
            let Some((found, descr)) = self.answering(leaf) else {
                continue;
            };
            let narrowed = narrowed(self.md, leaf);
            let cut = narrowed.as_ref().unwrap_or(leaf);
            for i in found {
                if let Err(e) = self.open(i) {
                    self.skip(i, e);
                    continue;
                }
                if let State::Open(probe) = &self.entries[i].state {
                    let base = self.entries[i].locator.offset + HEADER_LEN as u64;
                    asked[i].0.push(leaf);
                    asked[i].1.extend(
                        probe
                            .wanted(cut, &descr)
                            .into_iter()
                            .map(|r| base + r.start..base + r.end),
                    );
                }
            }
        }
        let mut ranges = Vec::new();
        for (i, (leaves, wanted)) in asked.into_iter().enumerate() {
            let State::Open(probe) = &self.entries[i].state else {
                continue;
            };
            if leaves.is_empty() {
                continue;
            }
            let cost: u64 = wanted.iter().map(|r| r.end - r.start).sum();
            let distinct = probe.distinct_values();
            let spans = probe.spans();
            if !worth::pays(spans, self.md, pred, row_groups, &leaves, distinct, cost) {
                self.entries[i].state = State::Declined;
                self.indexes_declined += 1;
                continue;
            }
            ranges.extend(wanted);
        }
        if !ranges.is_empty() {
            let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            self.bytes_fetched.set(self.bytes_fetched.get() + bytes);
            self.file.prefetch_with_scattered(Vec::new(), ranges)?;
        }
        Ok(())
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
        // Indexes read in part: their head now, the rest once the leaves are known
        // (`prepare`); others whole.
        let mut ranges: Vec<Range<u64>> = self
            .entries
            .iter()
            .filter(|e| e.locator.columns.iter().any(|c| names.contains(c)))
            .filter_map(|e| {
                let len = match e.kind.head_len() {
                    Some(head) => e.locator.length.min(HEADER_LEN as u64 + head),
                    None => e.locator.length,
                };
                Some(e.locator.offset..e.locator.offset.checked_add(len)?)
            })
            .collect();
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        self.bytes_fetched.set(self.bytes_fetched.get() + bytes);
        // Opening an index checks its block against where the footer starts: the file's
        // last 8 bytes, fetched now unless the footer's read kept them.
        let size = self.file.identity().size;
        if !ranges.is_empty() && self.body_end.is_none() && size >= 8 {
            ranges.push(size - 8..size);
        }
        ranges
    }

    fn answers(&self, leaf: &Predicate) -> bool {
        self.answering(leaf).is_some_and(|(found, _)| {
            found
                .iter()
                .any(|&i| self.entries[i].locator.granularity != Granularity::File)
        })
    }

    fn prepare(&mut self, pred: &Predicate, row_groups: &[usize]) -> Result<()> {
        self.fetch_for(pred, row_groups)
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
            bytes: self.bytes_fetched.get(),
            declined: self.indexes_declined,
            warnings: self.warnings.clone(),
        }
    }
}

/// `leaf` with its IN list cut to the values within the file's bounds, or `None` when
/// the bounds leave out none. Every value an index is asked about is hashed (and a
/// distinct index fetches its bucket), and most of a join's keys fall outside any one file
/// of a sorted layout.
fn narrowed(md: &ParquetMetaData, leaf: &Predicate) -> Option<Predicate> {
    let Predicate::InList {
        col,
        values,
        negated: false,
    } = leaf
    else {
        return None;
    };
    if values.len() < 2 {
        return None;
    }
    let at = within_bounds_at(values, &file_bounds(md, col)?);
    (at.len() < values.len()).then(|| Predicate::InList {
        col: col.clone(),
        values: values.sublist(at),
        negated: false,
    })
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

    fn none_in(&self, md: &ParquetMetaData) -> bool {
        locators(md.file_metadata().key_value_metadata()).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::build::add_indexes;
    use crate::index::locator::Granularity;
    use crate::index::spec::IndexSpec;
    use crate::io::IoStats;
    use crate::metadata::MetadataCache;
    use crate::predicate::plain::probe_values;
    use crate::query::binding::Binding;
    use crate::testing::{int64s, write_file, Layout};
    use std::sync::Arc;

    /// `u` unsorted over 2 row groups of 1,000 rows in 100-row pages, with a page-level
    /// distinct index on `u`; each value appears once.
    fn indexed(dir: &std::path::Path) -> String {
        let u = int64s((0..2000).map(|i| (i * 7919) % 2000));
        let path = write_file(
            dir,
            "u.parquet",
            vec![("u", u)],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                bloom: &[],
            },
        );
        let spec = IndexSpec::new("distinct", "u", Some(Granularity::Page), &[]).unwrap();
        add_indexes(&path, &[spec]).unwrap();
        path
    }

    /// The file of [`indexed`], opened: its footer with the page index, and its binding.
    fn opened(dir: &std::path::Path) -> (Arc<ParquetMetaData>, StorageFile, Binding) {
        let path = indexed(dir);
        let md = crate::metadata::read_metadata(&path, true, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let file = StorageFile::open(&path, Arc::new(IoStats::default())).unwrap();
        let binding = Binding::of(&md, &path, Vec::new()).unwrap();
        (md, file, binding)
    }

    #[test]
    fn a_page_index_answers_for_the_file_its_row_groups_and_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (md, file, binding) = opened(dir.path());
        let mut indexes = FileIndexes::new(&file, &md);
        assert!(!indexes.is_empty() && indexes.warnings.is_empty());
        let bind = |t: &str| binding.bind_where(Some(t), 0).unwrap().unwrap();

        // Row 1234 holds u = (1234 * 7919) % 2000: row group 1, its page 2.
        let value = (1234 * 7919) % 2000;
        let needle = bind(&format!("u = {value}"));
        assert_eq!(indexes.file(&needle).unwrap(), Some(true));
        assert_eq!(indexes.row_group(0, &needle).unwrap(), Some(false));
        assert_eq!(indexes.row_group(1, &needle).unwrap(), Some(true));
        let rows = indexes
            .rows(1, &needle)
            .unwrap()
            .expect("a page-level answer");
        assert_eq!(
            rows.ranges(),
            std::slice::from_ref(&(200..300)),
            "the page of row 234"
        );

        let absent = bind("u = 5000");
        assert_eq!(indexes.file(&absent).unwrap(), Some(false));
        // A leaf on no indexed column gets no answer.
        assert_eq!(indexes.row_group(0, &bind("u IS NULL")).unwrap(), None);
        assert!(indexes.report().read > 0);
    }

    #[test]
    fn an_in_list_is_cut_to_the_files_bounds_before_an_index_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (md, file, binding) = opened(dir.path());
        let bind = |t: &str| binding.bind_where(Some(t), 0).unwrap().unwrap();
        let value = (1234 * 7919) % 2000;
        let alone = bind(&format!("u IN ({value}, -1)"));
        // 500 keys above the file's largest value (1999), none of which it can hold.
        let outside: Vec<String> = (5000..5500).map(|k| k.to_string()).collect();
        let many = bind(&format!("u IN ({value}, {})", outside.join(", ")));

        let cut = narrowed(&md, &many).expect("keys outside the bounds");
        assert_eq!(cut.column(), many.column());
        let Predicate::InList { values, .. } = &cut else {
            panic!("an IN list")
        };
        let needle = bind(&format!("u = {value}"));
        assert_eq!(values.as_slice(), probe_values(&needle).unwrap());

        let fetched = |leaf: &Predicate| {
            let mut indexes = FileIndexes::new(&file, &md);
            indexes.prepare(leaf, &[0, 1]).unwrap();
            let rows = indexes.rows(1, leaf).unwrap().expect("a page-level answer");
            assert_eq!(rows.ranges(), std::slice::from_ref(&(200..300)));
            assert_eq!(indexes.row_group(0, leaf).unwrap(), Some(false));
            indexes.report().bytes
        };
        // The distinct index fetches the buckets of the one key the file may hold, as
        // for that key alone.
        assert_eq!(fetched(&many), fetched(&alone));
        // A list the bounds leave whole is not copied.
        assert!(narrowed(&md, &bind(&format!("u IN ({value}, 7)"))).is_none());
    }

    #[test]
    fn a_list_of_strings_is_cut_to_the_files_string_bounds() {
        use crate::predicate::Value;
        use crate::testing::strings;
        let dir = tempfile::tempdir().unwrap();
        let words = ["kiwi", "lemon", "lime", "mango", "melon"];
        let path = write_file(
            dir.path(),
            "s.parquet",
            vec![("s", strings(words.iter().map(Some)))],
            Layout::default(),
        );
        let md = crate::metadata::read_metadata(&path, true, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let binding = Binding::of(&md, &path, Vec::new()).unwrap();
        let bind = |t: &str| binding.bind_where(Some(t), 0).unwrap().unwrap();
        let many = bind("s IN ('apple', 'kiwi', 'lime', 'mangosteen', 'pear', 'melon')");
        let Some(Predicate::InList { values, .. }) = narrowed(&md, &many) else {
            panic!("keys outside the bounds are cut")
        };
        let kept: Vec<&[u8]> = values
            .as_slice()
            .iter()
            .map(|v| match v {
                Value::Bytes(b) => b.as_slice(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(kept, [&b"kiwi"[..], b"lime", b"mangosteen", b"melon"]);
        assert!(narrowed(&md, &bind("s IN ('kiwi', 'melon')")).is_none());
    }
}
