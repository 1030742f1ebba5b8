//! The one interface every source of pruning evidence implements, and how evidence about
//! leaves combines over a predicate's AND/OR tree.
//!
//! A source (footer statistics, the page index, Parquet bloom filters, an embedded index,
//! a catalog, a table's log) answers, for one leaf of the predicate (`x = 5`, `y IN (..)`,
//! `z IS NULL`), whether any row of the file, of a row group, or which rows of a row group
//! may satisfy it. `None` means the source has nothing to say at that level, which is
//! never a reason to prune. A `false` (or rows left out) must be certain: pruning may only
//! skip what cannot match.

use std::ops::Range;

use crate::error::Result;
use crate::plan::RowRanges;
use crate::predicate::Predicate;

/// Where a piece of evidence comes from; planning counts what each source ruled out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Hive partition values of the file's directories.
    Partition,
    /// A dataset catalog's per-file summary.
    Catalog,
    /// A table's per-file statistics, from its log or manifests.
    TableStats,
    /// Footer statistics of column chunks.
    Statistics,
    /// Parquet split-block bloom filters of column chunks.
    ParquetBloom,
    /// pqindex's embedded indexes.
    EmbeddedIndex,
    /// The ColumnIndex of the page index.
    PageIndex,
}

impl Source {
    /// What prunes, in words for `explain()`.
    pub fn what(self) -> &'static str {
        match self {
            Source::Partition => "partition values",
            Source::Catalog => "the catalog's bounds and bloom filters",
            Source::TableStats => "the table's file statistics",
            Source::Statistics => "statistics",
            Source::ParquetBloom => "bloom filters",
            Source::EmbeddedIndex => "embedded indexes",
            Source::PageIndex => "page index",
        }
    }
}

/// What a source did while answering, for the scan's metrics and `explain()`.
#[derive(Debug, Default)]
pub struct Report {
    /// What answered (index kinds, say), for `explain()`.
    pub used: Vec<&'static str>,
    /// Structures read (index blocks, say).
    pub read: u64,
    /// Bytes of them fetched.
    pub bytes: u64,
    /// Structures not read because they were not expected to pay for their bytes.
    pub declined: u64,
    /// Structures that could not be used, and why: the source skipped them.
    pub warnings: Vec<String>,
}

/// What one source knows about a predicate's leaves in one file.
pub trait Evidence {
    fn source(&self) -> Source;

    /// Whether any row of the file may satisfy `leaf`.
    fn file(&mut self, _leaf: &Predicate) -> Result<Option<bool>> {
        Ok(None)
    }

    /// Whether any row of row group `rg` may satisfy `leaf`.
    fn row_group(&mut self, _rg: usize, _leaf: &Predicate) -> Result<Option<bool>> {
        Ok(None)
    }

    /// The rows of row group `rg` that may satisfy `leaf`.
    fn rows(&mut self, _rg: usize, _leaf: &Predicate) -> Result<Option<RowRanges>> {
        Ok(None)
    }

    /// Byte ranges of the file this source will read to answer for `leaves` (leaf
    /// columns) in `row_groups`, so planning can fetch them with its other reads at once.
    fn planning_ranges(&self, _leaves: &[usize], _row_groups: &[usize]) -> Vec<Range<u64>> {
        Vec::new()
    }

    /// Whether the source can answer for `leaf` at all (known without reading).
    fn answers(&self, _leaf: &Predicate) -> bool {
        false
    }

    /// Fetch at once what answering for `pred`'s leaves in `row_groups` will read, once
    /// the planning ranges are in (a lookup index's buckets, say), so those reads cost one
    /// round trip together. A source may set aside here what would cost more to read than
    /// it is expected to save; that changes what is read, never which rows come back.
    fn prepare(&mut self, _pred: &Predicate, _row_groups: &[usize]) -> Result<()> {
        Ok(())
    }

    /// What the source read and used so far, and what it had to skip.
    fn report(&self) -> Report {
        Report::default()
    }
}

/// Could any row make `pred` TRUE, when `leaf` says whether one can make each leaf TRUE?
/// `false` means no row can. AND stops at its first impossible part, so a source is not
/// asked about leaves that no longer matter.
pub fn may_match(pred: &Predicate, leaf: &mut impl FnMut(&Predicate) -> bool) -> bool {
    match pred {
        Predicate::Const(c) => *c == Some(true),
        Predicate::And(parts) => parts.iter().all(|p| may_match(p, leaf)),
        Predicate::Or(parts) => parts.iter().any(|p| may_match(p, leaf)),
        _ => leaf(pred),
    }
}

/// `may_match` with a leaf answer that can fail (a source that reads the file).
pub fn try_may_match(
    pred: &Predicate,
    leaf: &mut impl FnMut(&Predicate) -> Result<bool>,
) -> Result<bool> {
    Ok(match pred {
        Predicate::Const(c) => *c == Some(true),
        Predicate::And(parts) => {
            for p in parts {
                if !try_may_match(p, leaf)? {
                    return Ok(false);
                }
            }
            true
        }
        Predicate::Or(parts) => {
            for p in parts {
                if try_may_match(p, leaf)? {
                    return Ok(true);
                }
            }
            false
        }
        _ => leaf(pred)?,
    })
}

/// The rows of a row group of `rows` rows that may satisfy `pred`, when `leaf` gives the
/// rows that may satisfy each leaf (`None`: all of them). AND intersects, OR unions.
pub fn try_row_ranges(
    pred: &Predicate,
    rows: u64,
    leaf: &mut impl FnMut(&Predicate) -> Result<Option<RowRanges>>,
) -> Result<RowRanges> {
    Ok(match pred {
        Predicate::Const(Some(true)) => RowRanges::full(rows),
        Predicate::Const(_) => RowRanges::empty(),
        Predicate::And(parts) => {
            let mut acc = RowRanges::full(rows);
            for p in parts {
                if acc.is_empty() {
                    break;
                }
                acc = acc.intersect(&try_row_ranges(p, rows, leaf)?);
            }
            acc
        }
        Predicate::Or(parts) => {
            let mut acc = RowRanges::empty();
            for p in parts {
                acc = acc.union(&try_row_ranges(p, rows, leaf)?);
            }
            acc
        }
        _ => leaf(pred)?.unwrap_or_else(|| RowRanges::full(rows)),
    })
}

/// Whether a row group may hold a match by every one of `sources` at once: each leaf is
/// answered by all of them (a leaf is possible only if none rules it out).
pub fn row_group_may_match(
    pred: &Predicate,
    rg: usize,
    sources: &mut [&mut dyn Evidence],
) -> Result<bool> {
    try_may_match(pred, &mut |leaf| {
        for s in sources.iter_mut() {
            if s.row_group(rg, leaf)? == Some(false) {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// Whether the file may hold a match by every one of `sources` at once.
pub fn file_may_match(pred: &Predicate, sources: &mut [&mut dyn Evidence]) -> Result<bool> {
    try_may_match(pred, &mut |leaf| {
        for s in sources.iter_mut() {
            if s.file(leaf)? == Some(false) {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// The rows of row group `rg` (of `rows` rows) that may match by every one of `sources`:
/// each leaf's rows are the intersection of what the sources leave.
pub fn rows_may_match(
    pred: &Predicate,
    rg: usize,
    rows: u64,
    sources: &mut [&mut dyn Evidence],
) -> Result<RowRanges> {
    try_row_ranges(pred, rows, &mut |leaf| {
        let mut out: Option<RowRanges> = None;
        for s in sources.iter_mut() {
            if let Some(r) = s.rows(rg, leaf)? {
                out = Some(match out {
                    Some(prev) => prev.intersect(&r),
                    None => r,
                });
            }
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::expr::{CmpOp, ColumnRef};
    use crate::predicate::Value;
    use arrow_schema::DataType;

    /// Says which leaves are impossible (by the literal) and which rows each leaves.
    struct Fixed {
        impossible: Vec<i128>,
        rows: Vec<(i128, Range<u64>)>,
        asked: usize,
    }

    fn literal(leaf: &Predicate) -> i128 {
        match leaf {
            Predicate::Cmp {
                value: Value::Int(v),
                ..
            } => *v,
            _ => panic!("test leaves are comparisons"),
        }
    }

    impl Evidence for Fixed {
        fn source(&self) -> Source {
            Source::Statistics
        }
        fn row_group(&mut self, _rg: usize, leaf: &Predicate) -> Result<Option<bool>> {
            self.asked += 1;
            Ok(Some(!self.impossible.contains(&literal(leaf))))
        }
        fn rows(&mut self, _rg: usize, leaf: &Predicate) -> Result<Option<RowRanges>> {
            let v = literal(leaf);
            Ok(self
                .rows
                .iter()
                .find(|(k, _)| *k == v)
                .map(|(_, r)| RowRanges::from_ranges([r.clone()])))
        }
    }

    fn eq(v: i128) -> Predicate {
        Predicate::Cmp {
            col: ColumnRef::for_test("x", DataType::Int64),
            op: CmpOp::Eq,
            value: Value::Int(v),
        }
    }

    #[test]
    fn leaves_combine_over_and_and_or() {
        let mut a = Fixed {
            impossible: vec![1],
            rows: vec![(2, 0..10), (3, 5..20)],
            asked: 0,
        };
        let and = Predicate::And(vec![eq(1), eq(2)]);
        assert!(!row_group_may_match(&and, 0, &mut [&mut a]).unwrap());
        // AND stopped at its first impossible leaf.
        assert_eq!(a.asked, 1);
        let or = Predicate::Or(vec![eq(1), eq(2)]);
        assert!(row_group_may_match(&or, 0, &mut [&mut a]).unwrap());
        let both = Predicate::And(vec![eq(2), eq(3)]);
        assert_eq!(
            rows_may_match(&both, 0, 100, &mut [&mut a]).unwrap(),
            RowRanges::from_ranges(std::iter::once(5..10))
        );
        let either = Predicate::Or(vec![eq(2), eq(3)]);
        assert_eq!(
            rows_may_match(&either, 0, 100, &mut [&mut a]).unwrap(),
            RowRanges::from_ranges(std::iter::once(0..20))
        );
        // A leaf no source knows keeps every row.
        assert_eq!(
            rows_may_match(&eq(9), 0, 100, &mut [&mut a]).unwrap(),
            RowRanges::full(100)
        );
    }

    #[test]
    fn sources_agree_by_intersection() {
        let mut a = Fixed {
            impossible: vec![],
            rows: vec![(2, 0..10)],
            asked: 0,
        };
        let mut b = Fixed {
            impossible: vec![2],
            rows: vec![(2, 5..50)],
            asked: 0,
        };
        assert!(!row_group_may_match(&eq(2), 0, &mut [&mut a, &mut b]).unwrap());
        assert_eq!(
            rows_may_match(&eq(2), 0, 100, &mut [&mut a, &mut b]).unwrap(),
            RowRanges::from_ranges(std::iter::once(5..10))
        );
    }
}
