//! `LIMIT n`: a scan that stops fetching soon after it has its rows.
//!
//! Units are read in an order that finds rows early: first those whose every kept row
//! certainly satisfies the predicate (row-group statistics and the page index prove it),
//! then those with some such rows, then the rest, each group in plan order. Each unit is
//! cut into pieces of growing size (`n` rows, then four times more, ...), read one after
//! the other, so an unselective condition reads the first page of each column and stops,
//! while a selective one still reaches its rows in a few pieces. The stream truncates the
//! last batch and drops what it has not read.

use crate::plan::{RowRanges, ScanUnit};
use crate::prune::certain::certain_ranges;
use crate::prune::page_index::ColumnIndexes;

/// The rows of the first piece; later pieces grow by this factor.
const GROWTH: u64 = 4;

/// What a LIMIT read of object-store files fetches ahead of the piece being consumed, in
/// bytes: enough to keep a selective read's requests overlapping, little beside a first
/// piece that may already hold every row. Local files are read one piece after the other.
const REMOTE_READ_AHEAD: usize = 4 << 20;

/// The read-ahead budget of a LIMIT read of `units`.
pub(crate) fn read_ahead(units: &[ScanUnit], budget: usize) -> usize {
    let remote = units
        .first()
        .is_some_and(|u| crate::io::object::is_remote(&u.file.path));
    if remote {
        budget.min(REMOTE_READ_AHEAD)
    } else {
        0
    }
}

/// `units` in the order and pieces a read of `limit` rows takes them.
pub(crate) fn limited_units(units: Vec<ScanUnit>, limit: u64) -> Vec<ScanUnit> {
    let mut ranked: Vec<(u8, usize, ScanUnit)> = units
        .into_iter()
        .enumerate()
        .map(|(i, u)| (rank(&u), i, u))
        .collect();
    ranked.sort_by_key(|(rank, i, _)| (*rank, *i));
    let mut out = Vec::new();
    for (_, _, unit) in ranked {
        let rows = unit.ranges.row_count();
        let mut at = 0;
        let mut size = limit.max(1);
        while at < rows {
            let piece = unit.ranges.slice(at, size);
            at += piece.row_count();
            out.push(ScanUnit {
                ranges: piece,
                conjunct_rows: Vec::new(),
                ..unit.clone()
            });
            size = size.saturating_mul(GROWTH);
        }
    }
    out
}

/// 0 when every kept row of `unit` satisfies its predicate, 1 when some do, 2 when none
/// is known to.
fn rank(unit: &ScanUnit) -> u8 {
    let Some(pred) = &unit.file.predicate else {
        return 0;
    };
    let md = unit.file.reader_metadata.metadata();
    let mut pages = ColumnIndexes::new(md);
    let certain = certain_ranges(md, unit.row_group, pred, &mut [&mut pages])
        .unwrap_or_else(|_| RowRanges::empty());
    let kept = unit.ranges.row_count();
    match certain.intersect(&unit.ranges).row_count() {
        n if n == kept => 0,
        0 => 2,
        _ => 1,
    }
}
