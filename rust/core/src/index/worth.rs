//! Whether an embedded lookup index is worth asking for a predicate in a file, decided
//! once its head (the unit table) is read and before its lookups fetch anything more.
//!
//! An index rules out units (the file, a row group, a page) that hold none of the values
//! asked about. When the values are almost surely in every unit it could rule out (a
//! join's hundreds of keys against a dense key column, every page holding some), asking
//! costs the buckets it fetches and walks and prunes nothing. The rows each unit is
//! expected to be ruled out with ([`chance_unit_ruled_out`]), as their share of their row
//! group's compressed bytes, are weighed against the bytes the lookups read. The estimate
//! errs towards asking: where it has no model (strings, patterns, missing bounds) the
//! index is asked, and a scan's rows never depend on it. The model takes values to be
//! spread evenly over the bounds; a layout that clusters them in a way the bounds do not
//! show (row groups of one region each, whose keys span the same range) defeats it, so
//! each unit keeps at least [`CLUSTERED`] of a chance: an index whose lookups cost less
//! than that share of the bytes it could rule out is always asked.

use parquet::file::metadata::ParquetMetaData;

use crate::index::span::{Span, WHOLE_FILE};
use crate::predicate::value::Value;
use crate::predicate::Predicate;
use crate::prune::bloom_odds::{chance_unit_ruled_out, Coverage, Unit};
use crate::prune::statistics::file_int_bounds;

/// The least chance a unit is taken to be ruled out with, whatever the model says.
const CLUSTERED: f64 = 0.01;

/// Whether an index with units `spans`, asked about `asked` (leaves of `pred`), may save
/// more bytes of `row_groups` than the `cost` bytes its lookups read. `distinct` is how
/// many distinct values the column holds in the file, where the index knows.
pub fn pays(
    spans: &[Span],
    md: &ParquetMetaData,
    pred: &Predicate,
    row_groups: &[usize],
    asked: &[&Predicate],
    distinct: Option<u64>,
    cost: u64,
) -> bool {
    let density = density(md, asked, distinct);
    // The leaves are `pred`'s own (an equality would miss `x = NaN`).
    let coverage = |l: &Predicate, _leaf: usize| {
        if asked.iter().any(|a| std::ptr::eq(*a, l)) {
            Coverage::Filtered
        } else {
            Coverage::Elsewhere
        }
    };
    let rows = |rg: usize| md.row_group(rg).num_rows().max(0) as u64;
    let bytes = |rg: usize| md.row_group(rg).compressed_size().max(0) as f64;
    let chance = |rg: usize, rows: u64| {
        let unit = Unit {
            rows: Some(rows),
            density,
        };
        chance_unit_ruled_out(pred, md, rg, unit, &coverage)
    };
    let mut kept = vec![false; md.num_row_groups()];
    for &rg in row_groups {
        if let Some(k) = kept.get_mut(rg) {
            *k = true;
        }
    }
    let mut saved = 0.0;
    // Pages of a row group mostly hold the same rows: their chance is the same.
    let mut last: Option<((usize, u64), f64)> = None;
    for s in spans {
        if s.row_group == WHOLE_FILE {
            let all: f64 = row_groups.iter().map(|&rg| chance(rg, rows(rg))).product();
            saved += all.max(CLUSTERED) * row_groups.iter().map(|&rg| bytes(rg)).sum::<f64>();
            continue;
        }
        let rg = s.row_group as usize;
        if kept.get(rg).copied().unwrap_or(false) && rows(rg) > 0 {
            let share = s.rows.min(rows(rg)) as f64 / rows(rg) as f64;
            let c = match last {
                Some((key, c)) if key == (rg, s.rows) => c,
                _ => chance(rg, s.rows),
            };
            last = Some(((rg, s.rows), c));
            saved += c.max(CLUSTERED) * share * bytes(rg);
        }
    }
    saved >= cost as f64
}

/// The share of the integers within the file's bounds that its column holds: `distinct`
/// over the bounds' width (1.0 where either is unknown).
fn density(md: &ParquetMetaData, asked: &[&Predicate], distinct: Option<u64>) -> f64 {
    let bounds = asked
        .first()
        .and_then(|l| l.column())
        .and_then(|c| file_int_bounds(md, c));
    match (distinct, bounds.as_ref().map(|b| (&b.min, &b.max))) {
        (Some(d), Some((Some(Value::Int(lo)), Some(Value::Int(hi))))) => {
            (d as f64 / ((hi - lo) as f64 + 1.0)).min(1.0)
        }
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use crate::index::build::add_indexes;
    use crate::index::locator::Granularity;
    use crate::index::rewrite::list_indexes;
    use crate::index::spec::IndexSpec;
    use crate::testing::{int64s, scan_keys, write_file, Layout};

    /// 200,000 rows in two row groups of 20,000-row pages: `k` in order, `dense` 20,000
    /// values ten times each, `sparse` 200,000 values a thousand apart, both unsorted;
    /// page distinct indexes on both. Also the rows `queries` select before indexing.
    fn indexed(dir: &std::path::Path) -> (String, Vec<Vec<i64>>) {
        let n = 200_000i64;
        let path = write_file(
            dir,
            "t.parquet",
            vec![
                ("k", int64s(0..n)),
                ("dense", int64s((0..n).map(|i| (i * 7919) % 20_000))),
                ("sparse", int64s((0..n).map(|i| (i * 7919) % n * 1000))),
            ],
            Layout {
                row_group_size: 100_000,
                page_rows: Some(20_000),
                ..Default::default()
            },
        );
        let before = [DENSE_KEYS, SPARSE_KEYS]
            .iter()
            .map(|q| scan_keys(&path, q).0)
            .collect();
        let spec = |c| IndexSpec::new("distinct", c, Some(Granularity::Page), &[]).unwrap();
        add_indexes(&path, &[spec("dense"), spec("sparse")]).unwrap();
        (path, before)
    }

    /// 44 keys of a column whose every page holds two in three of its values.
    const DENSE_KEYS: &str = "dense IN (0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, \
        70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120, 125, 130, 135, 140, 145, 150, 155, \
        160, 165, 170, 175, 180, 185, 190, 195, 200, 1000, 1995) OR dense = 1500";
    /// Three keys of a column whose values are each in one page.
    const SPARSE_KEYS: &str = "sparse IN (7919000, 15838000, 23757000)";

    #[test]
    fn an_index_that_would_rule_out_no_page_is_not_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (path, before) = indexed(dir.path());
        let (rows, s) = scan_keys(&path, DENSE_KEYS);
        assert_eq!(rows, before[0]);
        assert_eq!(s.metric("indexes_declined"), Some(1));
        assert_eq!(s.metric("rows_pruned_by_index"), Some(0));
        // Its head was read, none of its buckets.
        let indexes = list_indexes(&path).unwrap();
        let block = indexes
            .iter()
            .find(|l| l.columns == ["dense"])
            .unwrap()
            .length;
        let read = s.metric("index_bytes_read").unwrap();
        assert!(block > 200_000 && read < 40_000, "{read} of {block}");
    }

    #[test]
    fn an_index_that_may_rule_out_pages_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (path, before) = indexed(dir.path());
        let (rows, s) = scan_keys(&path, SPARSE_KEYS);
        assert_eq!(rows, before[1]);
        assert_eq!(rows.len(), 3);
        assert_eq!(s.metric("indexes_declined"), Some(0));
        // Three values hold at most three of the ten pages.
        assert!(s.metric("pages_pruned").unwrap() >= 7, "{:?}", s.metrics());
        // Both at once: each index is weighed on its own.
        let both = format!("({DENSE_KEYS}) AND {SPARSE_KEYS}");
        let (_, s) = scan_keys(&path, &both);
        assert_eq!(s.metric("indexes_declined"), Some(1));
        assert_eq!(s.metric("indexes_read"), Some(2));
        assert!(s.metric("pages_pruned").unwrap() >= 7, "{:?}", s.metrics());
    }

    #[test]
    fn an_index_over_row_groups_clustered_unseen_by_their_bounds_is_asked() {
        // Row groups of 20,000 rows: the first half holds even parts, the second odd ones,
        // each spanning 0-999, so the bounds cannot tell them apart (nor can the model).
        let dir = tempfile::tempdir().unwrap();
        let n = 100_000i64;
        let part = (0..n).map(|i| {
            if i < n / 2 {
                i * 2 % 1000
            } else {
                (i * 2 + 1) % 1000
            }
        });
        let path = write_file(
            dir.path(),
            "t.parquet",
            vec![("k", int64s(0..n)), ("part", int64s(part))],
            Layout {
                row_group_size: 20_000,
                ..Default::default()
            },
        );
        let spec = IndexSpec::new("distinct", "part", Some(Granularity::Page), &[]).unwrap();
        add_indexes(&path, &[spec]).unwrap();
        let (rows, s) = scan_keys(&path, "part IN (1, 3, 5, 7, 9)");
        assert_eq!(rows.len(), 500);
        assert!(rows.iter().all(|&k| k >= n / 2));
        assert_eq!(s.metric("indexes_declined"), Some(0));
        assert_eq!(
            s.metric("row_groups_pruned_by_index"),
            Some(2),
            "{:?}",
            s.metrics()
        );
    }
}
