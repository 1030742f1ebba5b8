//! How likely a row group's Parquet bloom filters are to rule it out, estimated from its
//! footer statistics before any filter is read.
//!
//! A filter only helps when every value a leaf asks about is absent from the row group.
//! For an integer-like column (integers, dates, decimals, timestamps) whose `n` non-null
//! values lie in `[min, max]`, a value inside the bounds is absent with a chance of about
//! `exp(-n / (max - min + 1))`, as if the values were drawn evenly from the bounds: a
//! dense column (`l_partkey`, 200,000 keys over 1M rows) holds almost every value, and an
//! IN list of ten keys of a sparse one is almost never absent as a whole. Where no such
//! estimate exists (strings, floats, missing bounds) a value is assumed absent, which is
//! what a needle search expects. The planner weighs this chance against what the filters
//! cost; it never changes which rows a scan returns.

use parquet::file::metadata::ParquetMetaData;

use crate::predicate::expr::Predicate;
use crate::predicate::value::Value;
use crate::prune::parquet_bloom::probe_values;
use crate::prune::selectivity::{equal_shares, valued_share};
use crate::prune::statistics::{leaf_may_match, row_group_stats, ChunkStats};

/// The chance that row group `rg` is ruled out once its bloom filters are asked, given
/// that leaves on the `answered` leaf columns are left to embedded indexes.
pub fn chance_ruled_out(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    answered: &[usize],
) -> f64 {
    chance(pred, md, rg, answered, 0.0)
}

/// `unknown`: the chance given to a leaf another source answers for (none of an AND's
/// parts needs it; an OR is ruled out only if every part is, so there it must not veto).
fn chance(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    answered: &[usize],
    unknown: f64,
) -> f64 {
    match pred {
        Predicate::And(parts) => {
            1.0 - parts
                .iter()
                .map(|p| 1.0 - chance(p, md, rg, answered, 0.0))
                .product::<f64>()
        }
        Predicate::Or(parts) => parts
            .iter()
            .map(|p| chance(p, md, rg, answered, 1.0))
            .product(),
        Predicate::Const(c) => {
            if *c == Some(true) {
                0.0
            } else {
                1.0
            }
        }
        leaf => {
            let Some(col) = leaf.column() else {
                return 0.0;
            };
            let stats = row_group_stats(md, rg, col);
            if stats.as_ref().is_some_and(|s| !leaf_may_match(leaf, s)) {
                return 1.0;
            }
            let (Some(values), Some(index)) = (probe_values(leaf), col.leaf) else {
                return 0.0;
            };
            if answered.contains(&index) {
                return unknown;
            }
            let has_filter = md
                .row_groups()
                .get(rg)
                .and_then(|g| g.columns().get(index))
                .is_some_and(|c| c.bloom_filter_offset().is_some());
            if !has_filter {
                return 0.0;
            }
            absent(values, stats.as_ref())
        }
    }
}

/// The chance that every value of `sorted` is absent from a chunk described by `stats`:
/// none of its valued rows holds any of them, each row holding a given one with its
/// `equal_share` (no estimate, or outside the bounds: absent). The product over the values
/// of `exp(-rows * share)` is one `exp` of the summed shares.
fn absent(sorted: &[Value], stats: Option<&ChunkStats>) -> f64 {
    let Some(s) = stats else {
        return 1.0;
    };
    let values = s.rows as f64 * valued_share(s);
    (-values * equal_shares(sorted, s)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: i128, max: i128, rows: u64) -> ChunkStats {
        ChunkStats {
            min: Some(Value::Int(min)),
            max: Some(Value::Int(max)),
            exact: true,
            null_count: Some(0),
            rows,
            all_null: false,
        }
    }

    #[test]
    fn a_value_of_a_dense_column_is_almost_surely_present() {
        // 200,000 keys over 1M rows: each key about 5 times.
        let p = absent(&[Value::Int(36_189)], Some(&stats(1, 200_000, 1_000_000)));
        assert!(p < 0.01, "{p}");
        // A sparse column: 1M rows over 6M keys.
        let p = absent(
            &[Value::Int(2_520_353)],
            Some(&stats(1, 6_000_000, 1_000_000)),
        );
        assert!(p > 0.8, "{p}");
        // Several values: the product of their chances; those outside the bounds count
        // as absent.
        let (one, two) = (Value::Int(1_000_000), Value::Int(3_000_000));
        let alone = absent(
            std::slice::from_ref(&one),
            Some(&stats(1, 6_000_000, 1_000_000)),
        );
        let both = absent(&[one, two], Some(&stats(1, 6_000_000, 1_000_000)));
        assert!((both - alone * alone).abs() < 1e-12, "{both} {alone}");
        let outside = [0, 7, 8].map(Value::Int);
        assert_eq!(absent(&outside, Some(&stats(1, 6, 1_000))), 1.0);
    }

    #[test]
    fn values_outside_the_bounds_or_without_an_estimate_count_as_absent() {
        assert_eq!(absent(&[Value::Int(0)], Some(&stats(1, 10, 1_000))), 1.0);
        assert_eq!(absent(&[Value::Int(5)], None), 1.0);
        let strings = ChunkStats {
            min: Some(Value::Bytes(b"a".to_vec())),
            max: Some(Value::Bytes(b"z".to_vec())),
            ..stats(0, 0, 1_000)
        };
        assert_eq!(absent(&[Value::Bytes(b"m".to_vec())], Some(&strings)), 1.0);
    }
}
