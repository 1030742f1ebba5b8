//! Which dictionary pages the reader asks before a unit's data pages, whether the unit can
//! match at all ([`crate::metadata::dictionary_page`]).
//!
//! Asking costs no byte the unit would not read anyway when it may match, but it does cost
//! a second decompression of each dictionary. It pays when the chance the dictionaries
//! rule the unit out, times what reading the unit would cost, outweighs that: not for a
//! dense column (every value of a narrow range held by millions of rows).

use parquet::file::metadata::ParquetMetaData;

use crate::metadata::dictionary_page::probe_range;
use crate::metadata::page_index::{offset_index, page_boundaries};
use crate::plan::RowRanges;
use crate::predicate::expr::Predicate;
use crate::predicate::plain::is_probe;
use crate::prune::bloom_odds::{chance_unit_ruled_out, Coverage, Unit};

/// What making a page reader for a chunk costs, as bytes decompressed: a Zstandard chunk's
/// reader sets up a compression and a decompression context each time.
const READER_COST: u64 = 16 << 10;

/// The leaf columns of `pred`'s `=` and `IN` leaves whose dictionary pages in row group
/// `rg` (of `rows` rows) are worth asking before the `selected` rows of the `needed` leaf
/// columns are read; empty when none is.
pub fn dictionary_probes(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    rows: u64,
    selected: &RowRanges,
    needed: &[usize],
) -> Vec<usize> {
    let mut probed: Vec<(usize, u64)> = pred
        .leaves()
        .into_iter()
        .filter(|l| is_probe(l))
        .filter_map(|l| l.column().and_then(|c| c.leaf))
        .filter_map(|leaf| probe_range(md, rg, leaf).map(|r| (leaf, r.end - r.start)))
        .collect();
    probed.sort_unstable();
    probed.dedup();
    if probed.is_empty() {
        return Vec::new();
    }
    let cost: u64 = probed.iter().map(|(_, bytes)| bytes).sum();
    let reading: u64 = needed
        .iter()
        .map(|&leaf| selected_bytes(md, rg, leaf, rows, selected) + READER_COST)
        .sum();
    let coverage = |leaf: &Predicate, index: usize| {
        if is_probe(leaf) && probed.iter().any(|(l, _)| *l == index) {
            Coverage::Filtered
        } else {
            Coverage::Unfiltered
        }
    };
    let chance = chance_unit_ruled_out(pred, md, rg, Unit::whole(), &coverage);
    if chance * reading as f64 > cost as f64 {
        probed.into_iter().map(|(leaf, _)| leaf).collect()
    } else {
        Vec::new()
    }
}

/// Compressed bytes of the pages of `leaf` in row group `rg` that hold `selected` rows (the
/// whole chunk without an offset index); a page's size includes its header, so no page
/// selected is 0.
pub fn selected_bytes(
    md: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    rows: u64,
    selected: &RowRanges,
) -> u64 {
    let Some(chunk) = md.row_groups().get(rg).and_then(|g| g.columns().get(leaf)) else {
        return 0;
    };
    let Some(oi) = offset_index(md, rg, leaf) else {
        return chunk.compressed_size().max(0) as u64;
    };
    let bounds = page_boundaries(oi, rows);
    oi.page_locations()
        .iter()
        .zip(bounds.windows(2))
        .filter(|(_, w)| selected.overlaps(&(w[0]..w[1].max(w[0]))))
        .map(|(page, _)| u64::try_from(page.compressed_page_size).unwrap_or(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use crate::testing::{int64s, plan, scan_keys, write_file, Layout};

    /// Four 1,000-row row groups of `k`, all dictionary encoded: `dense` holds 10 values,
    /// `sparse` 1,000 distinct ones spread over 0..8000 (so a value between them is absent
    /// from a row group about as often as not).
    fn file(dir: &std::path::Path, name: &str, keys: impl Iterator<Item = i64>) -> String {
        write_file(
            dir,
            name,
            vec![("k", int64s(keys))],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                ..Default::default()
            },
        )
    }

    #[test]
    fn dictionaries_are_asked_where_a_value_is_likely_absent() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = file(
            dir.path(),
            "sparse.parquet",
            (0..4000).map(|k| k * 7919 % 1000 * 8),
        );
        let p = plan(&sparse, "k = 4004");
        assert!(!p.units.is_empty());
        assert!(p.units.iter().all(|u| u.dictionary_probes == [0]));
        // Read, every row group is ruled out by its dictionary before its data pages.
        let (keys, s) = scan_keys(&sparse, "k = 4004");
        assert!(keys.is_empty());
        assert_eq!(s.metric("units_pruned_by_dictionary"), Some(4));
        assert_eq!(s.metric("pages_read"), Some(0));
        let (keys, s) = scan_keys(&sparse, "k = 4000");
        assert_eq!(keys, vec![4000; 4]);
        assert_eq!(s.metric("units_pruned_by_dictionary"), Some(0));
    }

    #[test]
    fn a_dense_column_is_not_asked() {
        let dir = tempfile::tempdir().unwrap();
        let dense = file(dir.path(), "dense.parquet", (0..4000).map(|k| k % 10 * 2));
        let p = plan(&dense, "k = 3");
        assert_eq!(p.units.len(), 4);
        assert!(p.units.iter().all(|u| u.dictionary_probes.is_empty()));
        let (keys, s) = scan_keys(&dense, "k = 3");
        assert!(keys.is_empty());
        assert_eq!(s.metric("dictionary_pages_probed"), Some(0));
    }
}
