//! How likely a filter of values (a row group's Parquet bloom filters, an embedded bloom or
//! distinct index) is to rule out a unit of rows, estimated from footer statistics before
//! any filter is read.
//!
//! A filter only helps when every value a leaf asks about is absent from the unit. For an
//! integer-like column (integers, dates, decimals, timestamps) whose row group holds `n`
//! non-null values in `[min, max]`, a value inside the bounds is absent from a unit of `u`
//! of those rows with a chance of about `exp(-u / (max - min + 1))`, as if the values were
//! drawn evenly from the bounds: a dense column (`l_partkey`, 200,000 keys over 1M rows)
//! holds almost every value, and an IN list of ten keys of a sparse one is almost never
//! absent as a whole. The same holds for a page of a column sorted by that key: its bounds
//! are narrower by as much as it holds fewer rows. Where no such estimate exists (strings,
//! floats, missing bounds) a value is assumed absent, which is what a needle search
//! expects. Callers weigh this chance against what the filters cost; it never changes
//! which rows a scan returns.

use parquet::file::metadata::ParquetMetaData;

use crate::predicate::expr::Predicate;
use crate::predicate::plain::probe_values;
use crate::predicate::value::Value;
use crate::prune::selectivity::{equal_shares, valued_share};
use crate::prune::statistics::{leaf_may_match, row_group_stats, within_bounds, ChunkStats};

/// What a filter of values is to one leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The filter answers for the leaf.
    Filtered,
    /// Nothing answers for it beyond its statistics.
    Unfiltered,
    /// Another source answers for it: it must not veto an OR.
    Elsewhere,
}

/// The chance that row group `rg` is ruled out once its bloom filters are asked, given
/// that leaves on the `answered` leaf columns are left to embedded indexes.
pub fn chance_ruled_out(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    answered: &[usize],
) -> f64 {
    let coverage = |leaf: &Predicate, index: usize| {
        if answered.contains(&index) {
            return Coverage::Elsewhere;
        }
        let has_filter = md
            .row_groups()
            .get(rg)
            .and_then(|g| g.columns().get(index))
            .is_some_and(|c| c.bloom_filter_offset().is_some());
        if has_filter && probe_values(leaf).is_some() {
            Coverage::Filtered
        } else {
            Coverage::Unfiltered
        }
    };
    chance(pred, md, rg, Unit::whole(), &coverage, 0.0)
}

/// The rows a filter answers for at once, and what is known of the values they hold.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    /// Rows of the row group the unit covers (`None`: all of them).
    pub rows: Option<u64>,
    /// The share of the integers within the bounds that the column holds at all (1.0
    /// when unknown): a column of even numbers holds half, so a value inside its bounds
    /// is absent half the time however many rows there are.
    pub density: f64,
}

impl Unit {
    /// A whole row group of a column of unknown density.
    pub fn whole() -> Unit {
        Unit {
            rows: None,
            density: 1.0,
        }
    }
}

/// The chance that `unit` of row group `rg` is ruled out by a filter whose `coverage` of
/// each leaf (and its leaf column) is given. A leaf the filter answers that is not an `=`
/// or `IN` has no estimate: it counts as ruled out.
pub fn chance_unit_ruled_out(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    unit: Unit,
    coverage: &dyn Fn(&Predicate, usize) -> Coverage,
) -> f64 {
    chance(pred, md, rg, unit, coverage, 0.0)
}

/// `unknown`: the chance given to a leaf another source answers for (none of an AND's
/// parts needs it; an OR is ruled out only if every part is, so there it must not veto).
fn chance(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    unit: Unit,
    coverage: &dyn Fn(&Predicate, usize) -> Coverage,
    unknown: f64,
) -> f64 {
    match pred {
        Predicate::And(parts) => {
            1.0 - parts
                .iter()
                .map(|p| 1.0 - chance(p, md, rg, unit, coverage, 0.0))
                .product::<f64>()
        }
        Predicate::Or(parts) => parts
            .iter()
            .map(|p| chance(p, md, rg, unit, coverage, 1.0))
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
            let Some(index) = col.leaf else {
                return 0.0;
            };
            match coverage(leaf, index) {
                Coverage::Elsewhere => unknown,
                Coverage::Unfiltered => 0.0,
                Coverage::Filtered => match probe_values(leaf) {
                    Some(values) => absent(values, stats.as_ref(), unit),
                    None => 1.0,
                },
            }
        }
    }
}

/// The chance that every value of `sorted` is absent from `unit` of a chunk described by
/// `stats`: none of its valued rows holds any of them, each row holding a given one with
/// its `equal_share` (no estimate, or outside the bounds: absent). The product over the
/// values of `exp(-rows * share)` is one `exp` of the summed shares. Of a column of
/// density `d`, a value within the bounds is one the column holds with chance `d`, and
/// then in the unit as one of `d * width` values the rows are drawn from.
fn absent(sorted: &[Value], stats: Option<&ChunkStats>, unit: Unit) -> f64 {
    let Some(s) = stats else {
        return 1.0;
    };
    let rows = unit.rows.unwrap_or(s.rows).min(s.rows) as f64 * valued_share(s);
    let d = unit.density;
    match (&s.min, &s.max) {
        (Some(Value::Int(lo)), Some(Value::Int(hi))) if d > 0.0 && d < 1.0 => {
            let width = (hi - lo) as f64 + 1.0;
            let inside = within_bounds(sorted, s).len() as f64;
            let present = d * (1.0 - (-rows / (d * width)).exp());
            (1.0 - present).powf(inside)
        }
        _ => (-rows * equal_shares(sorted, s)).exp(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chance for the whole chunk.
    fn absent(sorted: &[Value], stats: Option<&ChunkStats>) -> f64 {
        super::absent(sorted, stats, Unit::whole())
    }

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

    fn unit(rows: u64, density: f64) -> Unit {
        Unit {
            rows: Some(rows),
            density,
        }
    }

    #[test]
    fn a_value_of_a_column_holding_half_its_bounds_is_absent_half_the_time() {
        // Even numbers only: 12,000 rows over 256 values, 128 of them held.
        let s = stats(-128, 127, 12_000);
        let p = super::absent(&[Value::Int(21)], Some(&s), unit(12_000, 0.5));
        assert!((p - 0.5).abs() < 1e-6, "{p}");
        // Dense: the same as without a density.
        let dense = super::absent(&[Value::Int(21)], Some(&s), unit(100, 1.0));
        assert_eq!(dense, (-100.0f64 / 256.0).exp());
        // Forty values are almost never all absent, half density or not: the rows are
        // drawn from the 128 values the column holds.
        let keys: Vec<Value> = (0..40).map(|k| Value::Int(k * 6 - 120)).collect();
        let p = super::absent(&keys, Some(&s), unit(500, 0.5));
        assert!(p > 0.0 && p < 1e-10, "{p}");
    }

    #[test]
    fn a_smaller_unit_lacks_a_value_more_often() {
        // 200,000 keys over 1M rows: a row group holds almost every one, a page of 20,000
        // rows lacks a given one nine times in ten, and 300 of them almost never.
        let s = stats(1, 200_000, 1_000_000);
        let key = [Value::Int(36_189)];
        let page = super::absent(&key, Some(&s), unit(20_000, 1.0));
        assert!((page - (-0.1f64).exp()).abs() < 1e-3, "{page}");
        assert!(page > absent(&key, Some(&s)));
        let keys: Vec<Value> = (1..=300).map(|k| Value::Int(k * 600)).collect();
        assert!(super::absent(&keys, Some(&s), unit(20_000, 1.0)) < 1e-6);
        // A unit larger than the chunk is the chunk.
        assert_eq!(
            super::absent(&key, Some(&s), unit(u64::MAX, 1.0)),
            absent(&key, Some(&s))
        );
    }
}
