//! Page pruning with the ColumnIndex: each predicate column yields the row ranges of its
//! pages that may match; AND intersects, OR unions. Pages of different columns do not
//! line up, so they meet as row ranges, never as page numbers.

use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

use crate::predicate::expr::{ColumnRef, Predicate};
use crate::predicate::value::Value;
use crate::prune::row_ranges::RowRanges;
use crate::prune::stats::{bounds_usable, decode, leaf_may_match, ChunkStats};

/// The rows of row group `rg` that may satisfy `pred`, from the page index; the full row
/// group wherever a column has no usable index.
pub fn row_ranges(md: &ParquetMetaData, rg: usize, pred: &Predicate) -> RowRanges {
    row_ranges_with(md, rg, pred, &mut |_| None)
}

/// As `row_ranges`, with `extra` giving further row ranges for a leaf (from embedded
/// indexes), intersected with the page index's.
pub fn row_ranges_with(
    md: &ParquetMetaData,
    rg: usize,
    pred: &Predicate,
    extra: &mut dyn FnMut(&Predicate) -> Option<RowRanges>,
) -> RowRanges {
    let rows = md.row_group(rg).num_rows().max(0) as u64;
    match pred {
        Predicate::Const(Some(true)) => RowRanges::full(rows),
        Predicate::Const(_) => RowRanges::empty(),
        Predicate::And(parts) => parts.iter().fold(RowRanges::full(rows), |acc, p| {
            if acc.is_empty() {
                acc
            } else {
                acc.intersect(&row_ranges_with(md, rg, p, extra))
            }
        }),
        Predicate::Or(parts) => parts.iter().fold(RowRanges::empty(), |acc, p| {
            acc.union(&row_ranges_with(md, rg, p, extra))
        }),
        leaf => match (leaf_ranges(md, rg, leaf), extra(leaf)) {
            (Some(a), Some(b)) => a.intersect(&b),
            (Some(r), None) | (None, Some(r)) => r,
            (None, None) => RowRanges::full(rows),
        },
    }
}

/// The offset index of one column chunk, if loaded.
pub fn offset_index(md: &ParquetMetaData, rg: usize, leaf: usize) -> Option<&OffsetIndexMetaData> {
    md.offset_index()?.get(rg)?.get(leaf)
}

/// First row of each page and the row after the last: `pages + 1` boundaries.
pub fn page_boundaries(oi: &OffsetIndexMetaData, rows: u64) -> Vec<u64> {
    let mut b: Vec<u64> = oi
        .page_locations()
        .iter()
        .map(|p| p.first_row_index.max(0) as u64)
        .collect();
    b.push(rows);
    b
}

fn leaf_ranges(md: &ParquetMetaData, rg: usize, leaf: &Predicate) -> Option<RowRanges> {
    let col = leaf.column()?;
    let idx = col.leaf?;
    let rows = md.row_group(rg).num_rows().max(0) as u64;
    let oi = offset_index(md, rg, idx)?;
    let ci = md.column_index()?.get(rg)?.get(idx)?;
    if matches!(ci, ColumnIndexMetaData::NONE)
        || ci.num_pages() as usize != oi.page_locations().len()
    {
        return None;
    }
    let usable = bounds_usable(md, idx, col, false);
    let physical = md.row_group(rg).column(idx).column_type();
    let bounds = page_boundaries(oi, rows);
    let mut out = Vec::new();
    for page in 0..oi.page_locations().len() {
        let (start, end) = (bounds[page], bounds[page + 1].max(bounds[page]));
        let (min, max) = if usable {
            page_bounds(ci, page, physical, col)
        } else {
            (None, None)
        };
        let stats = ChunkStats {
            min,
            max,
            // Page bounds of byte arrays may be truncated; only exact types are exact.
            exact: !matches!(
                ci,
                ColumnIndexMetaData::BYTE_ARRAY(_) | ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(_)
            ),
            null_count: ci.null_count(page).map(|n| n.max(0) as u64),
            rows: end - start,
            all_null: ci.is_null_page(page),
        };
        if leaf_may_match(leaf, &stats) {
            out.push(start..end);
        }
    }
    Some(RowRanges::from_ranges(out))
}

/// The min and max of one page, decoded like footer statistics.
fn page_bounds(
    ci: &ColumnIndexMetaData,
    page: usize,
    physical: parquet::basic::Type,
    col: &ColumnRef,
) -> (Option<Value>, Option<Value>) {
    let dec = |b: Option<Vec<u8>>| b.and_then(|b| decode(&b, physical, col));
    let (min, max): (Option<Vec<u8>>, Option<Vec<u8>>) = match ci {
        ColumnIndexMetaData::BOOLEAN(x) => (
            x.min_value(page).map(|v| vec![u8::from(*v)]),
            x.max_value(page).map(|v| vec![u8::from(*v)]),
        ),
        ColumnIndexMetaData::INT32(x) => (
            x.min_value(page).map(|v| v.to_le_bytes().to_vec()),
            x.max_value(page).map(|v| v.to_le_bytes().to_vec()),
        ),
        ColumnIndexMetaData::INT64(x) => (
            x.min_value(page).map(|v| v.to_le_bytes().to_vec()),
            x.max_value(page).map(|v| v.to_le_bytes().to_vec()),
        ),
        ColumnIndexMetaData::FLOAT(x) => (
            x.min_value(page).map(|v| v.to_le_bytes().to_vec()),
            x.max_value(page).map(|v| v.to_le_bytes().to_vec()),
        ),
        ColumnIndexMetaData::DOUBLE(x) => (
            x.min_value(page).map(|v| v.to_le_bytes().to_vec()),
            x.max_value(page).map(|v| v.to_le_bytes().to_vec()),
        ),
        ColumnIndexMetaData::BYTE_ARRAY(x) | ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(x) => (
            x.min_value(page).map(|v| v.to_vec()),
            x.max_value(page).map(|v| v.to_vec()),
        ),
        _ => (None, None),
    };
    (dec(min), dec(max))
}
