//! Page pruning with the ColumnIndex: each predicate column yields the row ranges of its
//! pages that may match; AND intersects, OR unions. Pages of different columns do not
//! line up, so they meet as row ranges, never as page numbers.

use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;

use std::ops::Range;

use crate::error::Result;
use crate::metadata::page_index::{
    has_page_index, offset_index, page_boundaries, page_index_ranges,
};
use crate::plan::RowRanges;
use crate::predicate::expr::{ColumnRef, Predicate};
use crate::predicate::value::Value;
use crate::prune::evidence::{rows_may_match, Evidence, Source};
use crate::prune::statistics::{bounds_usable, decode, leaf_may_match, ChunkStats};

/// The rows of row group `rg` that may satisfy `pred`, from the page index; the full row
/// group wherever a column has no usable index.
pub fn row_ranges(md: &ParquetMetaData, rg: usize, pred: &Predicate) -> RowRanges {
    let rows = md.row_group(rg).num_rows().max(0) as u64;
    rows_may_match(pred, rg, rows, &mut [&mut ColumnIndexes::new(md)])
        .expect("the ColumnIndex is read from memory and cannot fail")
}

/// Per conjunct of `pred`, the rows of `ranges` (in row group `rg`) its pages may hold:
/// an estimate of how selective each is. Empty when it cannot tell (a single conjunct, or
/// no page index loaded).
pub fn conjunct_rows(
    md: &ParquetMetaData,
    rg: usize,
    pred: &Predicate,
    ranges: &RowRanges,
) -> Vec<u64> {
    let conjuncts = pred.conjuncts();
    if conjuncts.len() < 2 || md.offset_index().is_none() {
        return Vec::new();
    }
    conjuncts
        .into_iter()
        .map(|c| row_ranges(md, rg, c).intersect(ranges).row_count())
        .collect()
}

/// The page index (ColumnIndex with OffsetIndex) of a file, as evidence for the rows of its
/// row groups.
pub struct ColumnIndexes<'a> {
    md: &'a ParquetMetaData,
}

impl<'a> ColumnIndexes<'a> {
    /// Evidence from `md`'s page index (none when it is not loaded).
    pub fn new(md: &'a ParquetMetaData) -> Self {
        ColumnIndexes { md }
    }
}

impl Evidence for ColumnIndexes<'_> {
    fn source(&self) -> Source {
        Source::PageIndex
    }

    fn rows(&mut self, rg: usize, leaf: &Predicate) -> Result<Option<RowRanges>> {
        Ok(leaf_ranges(self.md, rg, leaf))
    }

    fn planning_ranges(&self, _leaves: &[usize], _row_groups: &[usize]) -> Vec<Range<u64>> {
        if has_page_index(self.md) && self.md.offset_index().is_none() {
            page_index_ranges(self.md)
        } else {
            Vec::new()
        }
    }
}

fn leaf_ranges(md: &ParquetMetaData, rg: usize, leaf: &Predicate) -> Option<RowRanges> {
    let pages = page_stats(md, rg, leaf.column()?)?;
    let out = pages
        .into_iter()
        .filter(|(_, stats)| leaf_may_match(leaf, stats))
        .map(|(rows, _)| rows);
    Some(RowRanges::from_ranges(out.collect::<Vec<_>>()))
}

/// The rows of each page of `col` in row group `rg` and what its ColumnIndex says of them,
/// or `None` when there is no index to believe.
pub fn page_stats(
    md: &ParquetMetaData,
    rg: usize,
    col: &ColumnRef,
) -> Option<Vec<(Range<u64>, ChunkStats)>> {
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
    if !trusted(md, idx, ci, &bounds) {
        return None;
    }
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
            // A negative count (parquet-mr writes -1) says nothing.
            null_count: ci.null_count(page).filter(|n| *n >= 0).map(|n| n as u64),
            rows: end - start,
            all_null: ci.is_null_page(page),
        };
        out.push((start..end, stats));
    }
    Some(out)
}

/// Whether a column index can be believed: no page of a REQUIRED column called all NULL,
/// and no NULL count of a page that contradicts its rows (a column that is not repeated
/// holds one value per row). parquet-mr 1.13 writes, for REQUIRED columns without
/// statistics, an index whose every page is a "null page": believed, it rules out every
/// row.
fn trusted(md: &ParquetMetaData, leaf: usize, ci: &ColumnIndexMetaData, bounds: &[u64]) -> bool {
    let descr = md.file_metadata().schema_descr().column(leaf);
    let required = descr.max_def_level() == 0;
    let repeated = descr.max_rep_level() > 0;
    (0..ci.num_pages() as usize).all(|page| {
        let rows = bounds[page + 1].saturating_sub(bounds[page]);
        let nulls = ci.null_count(page).filter(|n| *n >= 0).map(|n| n as u64);
        let null_page = ci.is_null_page(page);
        if required && (null_page || nulls.is_some_and(|n| n > 0)) {
            return false;
        }
        if repeated {
            return true;
        }
        match (null_page, nulls) {
            (_, Some(n)) if n > rows => false,
            (true, Some(n)) => n == rows,
            _ => true,
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    /// The footer (with page index) of 3 row groups of 1,000 sorted keys in 100-row pages,
    /// with a Parquet bloom filter on `k`, and its bound predicate for `text`.
    fn evidence_file(
        dir: &std::path::Path,
        text: &str,
    ) -> (
        String,
        std::sync::Arc<parquet::file::metadata::ParquetMetaData>,
        Predicate,
    ) {
        use crate::testing::{int64s, write_file, Layout};
        let path = write_file(
            dir,
            "e.parquet",
            vec![("k", int64s(0..3000))],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                bloom: &["k"],
            },
        );
        let md = crate::metadata::read_metadata(
            &path,
            true,
            &crate::metadata::MetadataCache::new(1 << 20),
        )
        .unwrap()
        .metadata;
        let binding = crate::query::binding::Binding::of(&md, &path, Vec::new()).unwrap();
        let pred = binding.bind_where(Some(text), 0).unwrap().unwrap();
        (path, md, pred)
    }

    #[test]
    fn the_column_index_gives_the_rows_of_matching_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (_, md, pred) = evidence_file(dir.path(), "k BETWEEN 1150 AND 1250");
        let mut pages = ColumnIndexes::new(&md);
        assert_eq!(
            pages.rows(1, &pred.conjuncts()[0].clone()).unwrap(),
            Some(RowRanges::from_ranges(std::iter::once(100..1000)))
        );
        assert_eq!(
            row_ranges(&md, 1, &pred),
            RowRanges::from_ranges(std::iter::once(100..300))
        );
        assert_eq!(row_ranges(&md, 0, &pred), RowRanges::empty());
        // Without the page index loaded it has nothing to say.
        let footer_only = crate::metadata::read_metadata(
            &dir.path().join("e.parquet").to_string_lossy(),
            false,
            &crate::metadata::MetadataCache::new(1 << 20),
        )
        .unwrap()
        .metadata;
        assert_eq!(
            ColumnIndexes::new(&footer_only).rows(1, &pred).unwrap(),
            None
        );
        assert!(!ColumnIndexes::new(&footer_only)
            .planning_ranges(&[0], &[0])
            .is_empty());
        let all = RowRanges::full(1000);
        assert_eq!(conjunct_rows(&md, 1, &pred, &all), vec![900, 300]);
    }
}
