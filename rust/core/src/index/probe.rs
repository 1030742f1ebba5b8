//! Embedded indexes at planning time: which units of a file may hold a row satisfying a
//! leaf, according to every usable index on the leaf's column: bloom and distinct indexes
//! for equality and IN leaves, page bounds (page_minmax and aggregates indexes) for any
//! leaf in files without a page index.
//!
//! Bloom and bounds indexes are read whole (one ranged read). Distinct indexes are read in part: the
//! header with its directory, then only the buckets of the probed values. An index that is
//! damaged, of an unknown version, or does not fit the file is skipped with a warning.

use std::collections::{BTreeMap, HashMap};

use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::index::aggregates::AggregatesIndex;
use crate::index::bloom::BloomIndex;
use crate::index::codec::invalid;
use crate::index::column_values::leaves_named;
use crate::index::container::{IndexKind, BLOCK_VERSION, CHECKSUM_LEN, HEADER_LEN, MAGIC};
use crate::index::distinct::DistinctHeader;
use crate::index::hash::leaf_hashes;
use crate::index::locator::{locators, Granularity, Locator};
use crate::index::units::{check_spans, UnitSpan, WHOLE_FILE};
use crate::io::StorageFile;
use crate::predicate::expr::Predicate;
use crate::prune::bloom::{is_probe, leaf_may_match};
use crate::prune::plan::has_page_index;
use crate::prune::row_ranges::RowRanges;
use crate::prune::stats::{self, decode, ChunkStats};

/// First read of a distinct index: usually the whole header and directory.
const HEADER_GUESS: usize = 32 * 1024;

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
    Bloom(BloomIndex),
    /// An aggregates or page_minmax index: bounds and null counts per unit.
    MinMax(AggregatesIndex),
    Distinct {
        header: DistinctHeader,
        /// Buckets already fetched, by number.
        buckets: HashMap<usize, bytes::Bytes>,
    },
    Skipped,
}

struct Entry {
    locator: Locator,
    kind: IndexKind,
    state: State,
}

/// The embedded indexes of one file, read on demand.
pub struct FileIndexes<'a> {
    file: &'a StorageFile,
    md: &'a ParquetMetaData,
    entries: Vec<Entry>,
    body_end: Option<u64>,
    pub warnings: Vec<String>,
    pub indexes_read: u64,
}

impl<'a> FileIndexes<'a> {
    /// The usable-looking indexes the footer declares; entries that do not parse are
    /// reported at once.
    pub fn new(file: &'a StorageFile, md: &'a ParquetMetaData) -> Self {
        let mut warnings = Vec::new();
        let mut entries = Vec::new();
        // Page bounds from an embedded index serve files without a page index; elsewhere
        // the ColumnIndex says the same.
        let page_bounds_wanted = !has_page_index(md);
        for (key, parsed) in locators(md.file_metadata().key_value_metadata()) {
            match parsed {
                Ok(l) => match IndexKind::from_name(&l.kind) {
                    Some(kind @ (IndexKind::Bloom | IndexKind::Distinct)) => entries.push(Entry {
                        locator: l,
                        kind,
                        state: State::Unread,
                    }),
                    Some(kind @ (IndexKind::PageMinMax | IndexKind::Aggregates))
                        if page_bounds_wanted && l.granularity == Granularity::Page =>
                    {
                        entries.push(Entry {
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
            entries,
            body_end: None,
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
        let probe = is_probe(leaf);
        let col = leaf.column()?;
        let leaf_idx = col.leaf?;
        let schema = self.md.file_metadata().schema_descr();
        let descr = schema.column(leaf_idx);
        let name = descr.path().string();
        if leaves_named(schema, &name).len() != 1 {
            return None;
        }
        let (physical, type_length) = (descr.physical_type(), descr.type_length());
        let mut out: Option<LeafVerdict> = None;
        for i in 0..self.entries.len() {
            let bounds = matches!(
                self.entries[i].kind,
                IndexKind::PageMinMax | IndexKind::Aggregates
            );
            if self.entries[i].locator.columns != [name.clone()] || !(probe || bounds) {
                continue;
            }
            let units = match self.units_for(i, leaf, physical, type_length) {
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

    fn skip(&mut self, i: usize, e: crate::error::Error) {
        let l = &self.entries[i].locator;
        self.warnings.push(format!(
            "{}: {} index on {} skipped: {e}",
            self.file.path(),
            l.kind,
            l.columns.join(",")
        ));
        self.entries[i].state = State::Skipped;
    }

    /// The ids of the units that may hold a matching value.
    fn units_for(
        &mut self,
        i: usize,
        leaf: &Predicate,
        physical: parquet::basic::Type,
        type_length: i32,
    ) -> Result<Option<Vec<u32>>> {
        if matches!(self.entries[i].state, State::Unread) {
            self.load(i)?;
        }
        match &mut self.entries[i].state {
            State::Bloom(b) => Ok(Some(
                (0..b.filters.len() as u32)
                    .filter(|&u| {
                        leaf_may_match(leaf, &b.filters[u as usize], physical, type_length)
                    })
                    .collect(),
            )),
            State::MinMax(index) => {
                let Some(col) = leaf.column() else {
                    return Ok(None);
                };
                Ok(Some(
                    (0..index.units.len() as u32)
                        .filter(|&u| {
                            let (span, unit) = (&index.spans[u as usize], &index.units[u as usize]);
                            let bound = |b: &Option<Vec<u8>>| {
                                b.as_deref()
                                    .filter(|_| col.prunable)
                                    .and_then(|b| decode(b, physical, col))
                            };
                            let stats = ChunkStats {
                                min: bound(&unit.min),
                                max: bound(&unit.max),
                                exact: true,
                                null_count: Some(unit.nulls),
                                rows: span.rows,
                                all_null: unit.nulls == span.rows,
                            };
                            stats::leaf_may_match(leaf, &stats)
                        })
                        .collect(),
                ))
            }
            State::Distinct { .. } => {
                let Some(hashes) = leaf_hashes(leaf, physical, type_length) else {
                    return Ok(None);
                };
                let mut units = Vec::new();
                for h in hashes {
                    units.extend(self.distinct_lookup(i, h)?);
                }
                units.sort_unstable();
                units.dedup();
                Ok(Some(units))
            }
            _ => Ok(None),
        }
    }

    fn distinct_lookup(&mut self, i: usize, hash: u64) -> Result<Vec<u32>> {
        let offset = self.entries[i].locator.offset;
        let file = self.file;
        let State::Distinct { header, buckets } = &mut self.entries[i].state else {
            return Ok(Vec::new());
        };
        let b = header.bucket_of(hash);
        if let std::collections::hash_map::Entry::Vacant(slot) = buckets.entry(b) {
            let (off, len, _) = header.directory[b];
            slot.insert(file.read_range(offset + HEADER_LEN as u64 + off, len as usize)?);
        }
        header.lookup(hash, &buckets[&b])
    }

    fn body_end(&mut self) -> Result<u64> {
        if let Some(e) = self.body_end {
            return Ok(e);
        }
        let e = crate::append::footer_start(self.file)?;
        self.body_end = Some(e);
        Ok(e)
    }

    fn load(&mut self, i: usize) -> Result<()> {
        let body_end = self.body_end()?;
        let l = self.entries[i].locator.clone();
        self.indexes_read += 1;
        let state = match self.entries[i].kind {
            IndexKind::PageMinMax | IndexKind::Aggregates => {
                let index = AggregatesIndex::decode(&l.read_payload(self.file, body_end)?)?;
                check_spans(&index.spans, self.md)?;
                State::MinMax(index)
            }
            IndexKind::Bloom => {
                let payload = l.read_payload(self.file, body_end)?;
                let b = BloomIndex::decode(&payload)?;
                check_spans(&b.spans, self.md)?;
                State::Bloom(b)
            }
            _ => {
                let header = self.read_distinct_header(&l, body_end)?;
                check_spans(&header.spans, self.md)?;
                State::Distinct {
                    header,
                    buckets: HashMap::new(),
                }
            }
        };
        self.entries[i].state = state;
        Ok(())
    }

    /// The block header and the distinct header, read without the buckets; the block's
    /// own checksum covers the whole block, so the header's checksum stands in for it.
    fn read_distinct_header(&self, l: &Locator, body_end: u64) -> Result<DistinctHeader> {
        if l.version != BLOCK_VERSION {
            return Err(invalid(format!("index version {}", l.version)));
        }
        let end = l.offset.checked_add(l.length);
        if end.is_none_or(|e| e > body_end) || l.length < (HEADER_LEN + CHECKSUM_LEN) as u64 {
            return Err(invalid("block outside the file body"));
        }
        let payload_len = l.length - (HEADER_LEN + CHECKSUM_LEN) as u64;
        let first = (HEADER_LEN as u64 + payload_len).min((HEADER_LEN + HEADER_GUESS) as u64);
        let mut bytes = self.file.read_range(l.offset, first as usize)?;
        if &bytes[..4] != MAGIC
            || u16::from_le_bytes([bytes[4], bytes[5]]) != BLOCK_VERSION
            || u16::from_le_bytes([bytes[6], bytes[7]]) != IndexKind::Distinct.code()
            || u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) != payload_len
        {
            return Err(invalid("block header does not match its locator"));
        }
        let needed = DistinctHeader::needed_len(&bytes[HEADER_LEN..])?
            .ok_or_else(|| invalid("distinct header truncated"))?;
        if needed as u64 > payload_len {
            return Err(invalid("distinct header longer than its payload"));
        }
        if HEADER_LEN + needed > bytes.len() {
            bytes = self.file.read_range(l.offset, HEADER_LEN + needed)?;
        }
        DistinctHeader::decode(&bytes[HEADER_LEN..HEADER_LEN + needed], payload_len)
    }

    fn to_verdict(&self, i: usize, units: &[u32]) -> LeafVerdict {
        let spans: &[UnitSpan] = match &self.entries[i].state {
            State::Bloom(b) => &b.spans,
            State::Distinct { header, .. } => &header.spans,
            State::MinMax(index) => &index.spans,
            _ => &[],
        };
        let mut row_groups: BTreeMap<u32, Vec<std::ops::Range<u64>>> = BTreeMap::new();
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
            kinds: vec![self.entries[i].kind.name()],
        }
    }
}
