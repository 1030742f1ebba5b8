//! How many rows of a row group a predicate is expected to keep, before any is read: the
//! textbook estimate from the footer's statistics (values spread evenly between a
//! column's bounds, conjuncts independent). Where the bounds cannot tell (an equality on
//! strings, a pattern), a leaf is taken to keep almost nothing, as a needle search does:
//! the estimate errs towards few rows, which a caller can confirm by reading them. It
//! decides where rows are read (a caller that would rather not gather many rows in one
//! place), never which rows come back.

use parquet::file::metadata::ParquetMetaData;

use crate::predicate::expr::{CmpOp, Predicate};
use crate::predicate::value::Value;
use crate::prune::statistics::{leaf_may_match, row_group_stats, within_bounds, ChunkStats};

/// The share of rows an equality, a range or a pattern keeps where the bounds cannot tell.
const UNKNOWN: f64 = 0.0;

/// The expected number of rows of row group `rg` that satisfy `pred`, at most `selected`
/// (the rows the page index left).
pub fn expected_rows(pred: &Predicate, md: &ParquetMetaData, rg: usize, selected: u64) -> u64 {
    let rows = md.row_group(rg).num_rows().max(0) as f64;
    let expected = (rows * share(pred, md, rg)).round();
    (expected as u64).min(selected)
}

/// The share of the row group's rows that satisfy `pred`.
pub fn share(pred: &Predicate, md: &ParquetMetaData, rg: usize) -> f64 {
    match pred {
        Predicate::And(parts) => {
            // Ranges on one column bound one interval (`BETWEEN`): they overlap rather
            // than multiply.
            let mut intervals: Vec<(usize, f64, f64, f64)> = Vec::new();
            let mut product = 1.0;
            for p in parts {
                match range_interval(p, md, rg) {
                    Some((leaf, lo, hi, valued)) => {
                        match intervals.iter_mut().find(|i| i.0 == leaf) {
                            Some(i) => (i.1, i.2) = (i.1.max(lo), i.2.min(hi)),
                            None => intervals.push((leaf, lo, hi, valued)),
                        }
                    }
                    None => product *= share(p, md, rg),
                }
            }
            intervals
                .iter()
                .map(|(_, lo, hi, valued)| valued * (hi - lo).max(0.0))
                .product::<f64>()
                * product
        }
        Predicate::Or(parts) => {
            1.0 - parts
                .iter()
                .map(|p| 1.0 - share(p, md, rg))
                .product::<f64>()
        }
        Predicate::Const(c) => f64::from(u8::from(*c == Some(true))),
        Predicate::InKeys { .. } => 1.0,
        leaf => {
            let stats = leaf.column().and_then(|c| row_group_stats(md, rg, c));
            match stats {
                Some(s) if !leaf_may_match(leaf, &s) => 0.0,
                Some(s) => leaf_share(leaf, &s),
                None => 1.0,
            }
        }
    }
}

fn leaf_share(leaf: &Predicate, s: &ChunkStats) -> f64 {
    let valued = valued_share(s);
    let nulls = 1.0 - valued;
    let eq = |v: &Value| equal_share(v, s);
    let share = match leaf {
        Predicate::Cmp { op, value, .. } => match op {
            CmpOp::Eq => eq(value),
            CmpOp::NotEq => 1.0 - eq(value),
            _ => range_share(*op, value, s),
        },
        Predicate::InList {
            values, negated, ..
        } => {
            let any = equal_shares(values, s).min(1.0);
            if *negated {
                1.0 - any
            } else {
                any
            }
        }
        Predicate::IsNull { negated, .. } => {
            return if *negated { valued } else { nulls };
        }
        Predicate::NullOr { value, .. } => f64::from(u8::from(*value)),
        Predicate::Match { negated, .. } => {
            if *negated {
                1.0 - UNKNOWN
            } else {
                UNKNOWN
            }
        }
        _ => 1.0,
    };
    valued * share.clamp(0.0, 1.0)
}

/// The sum of [`equal_share`] over `sorted` (an IN list's values, sorted in SQL order):
/// only the values within the bounds share anything.
pub(crate) fn equal_shares(sorted: &[Value], s: &ChunkStats) -> f64 {
    match (&s.min, &s.max) {
        (Some(Value::Int(lo)), Some(Value::Int(hi))) => {
            within_bounds(sorted, s).len() as f64 / ((hi - lo) as f64 + 1.0)
        }
        // `equal_share` knows no share without integer bounds: each value's is UNKNOWN.
        _ => sorted.len() as f64 * UNKNOWN,
    }
}

/// The share of valued rows equal to `v`: one of the values between the bounds, for
/// integer-like columns.
pub(crate) fn equal_share(v: &Value, s: &ChunkStats) -> f64 {
    match (&s.min, &s.max, v) {
        (Some(Value::Int(min)), Some(Value::Int(max)), Value::Int(v)) => {
            if v < min || v > max {
                0.0
            } else {
                1.0 / ((max - min) as f64 + 1.0)
            }
        }
        _ => UNKNOWN,
    }
}

/// The share of valued rows with `x op v`: the part of the bounds on that side of `v`.
fn range_share(op: CmpOp, v: &Value, s: &ChunkStats) -> f64 {
    match side(op, v, s) {
        Some((lo, hi)) => hi - lo,
        None => UNKNOWN,
    }
}

/// The part of the bounds (as `0.0..=1.0`) where `x op v` holds, for a range comparison
/// on numeric bounds.
fn side(op: CmpOp, v: &Value, s: &ChunkStats) -> Option<(f64, f64)> {
    let as_f64 = |x: &Value| match x {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    let min = s.min.as_ref().and_then(as_f64)?;
    let max = s.max.as_ref().and_then(as_f64)?;
    let v = as_f64(v)?;
    if max <= min {
        // One value, which the statistics let satisfy the comparison.
        return Some((0.0, 1.0));
    }
    let below = ((v - min) / (max - min)).clamp(0.0, 1.0);
    match op {
        CmpOp::Lt | CmpOp::LtEq => Some((0.0, below)),
        CmpOp::Gt | CmpOp::GtEq => Some((below, 1.0)),
        CmpOp::Eq | CmpOp::NotEq => None,
    }
}

/// A range comparison of an AND as `(leaf, lo, hi, valued)`: the part of its column's
/// bounds it keeps and the share of rows with a value. `None` for anything else, or where
/// the statistics rule it out or cannot tell.
fn range_interval(
    p: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
) -> Option<(usize, f64, f64, f64)> {
    let Predicate::Cmp { col, op, value } = p else {
        return None;
    };
    let leaf = col.leaf?;
    let s = row_group_stats(md, rg, col)?;
    if !leaf_may_match(p, &s) {
        return None;
    }
    let (lo, hi) = side(*op, value, &s)?;
    Some((leaf, lo, hi, valued_share(&s)))
}

/// The share of rows with a value (not NULL).
pub(crate) fn valued_share(s: &ChunkStats) -> f64 {
    match (s.null_count, s.rows) {
        (Some(n), rows) if rows > 0 => 1.0 - (n as f64 / rows as f64).min(1.0),
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: i128, max: i128, rows: u64, nulls: u64) -> ChunkStats {
        ChunkStats {
            min: Some(Value::Int(min)),
            max: Some(Value::Int(max)),
            exact: true,
            null_count: Some(nulls),
            rows,
            all_null: false,
        }
    }

    #[test]
    fn ranges_keep_their_part_of_the_bounds_and_equalities_one_value() {
        let s = stats(1, 50, 1000, 0);
        // `l_quantity < 5` of 1..50: about 8%.
        let lt = range_share(CmpOp::Lt, &Value::Int(5), &s);
        assert!((lt - 4.0 / 49.0).abs() < 1e-9, "{lt}");
        assert!((range_share(CmpOp::GtEq, &Value::Int(5), &s) - (1.0 - lt)).abs() < 1e-9);
        assert_eq!(equal_share(&Value::Int(7), &s), 1.0 / 50.0);
        assert_eq!(equal_share(&Value::Int(70), &s), 0.0);
        assert_eq!(equal_share(&Value::Bytes(b"x".to_vec()), &s), UNKNOWN);
    }

    #[test]
    fn nulls_satisfy_no_comparison() {
        let s = stats(0, 9, 100, 50);
        let col = crate::predicate::expr::ColumnRef::for_test("x", arrow_schema::DataType::Int64);
        let all = Predicate::Cmp {
            col: col.clone(),
            op: CmpOp::GtEq,
            value: Value::Int(0),
        };
        assert!((leaf_share(&all, &s) - 0.5).abs() < 1e-9);
        let null = Predicate::IsNull {
            col,
            negated: false,
        };
        assert!((leaf_share(&null, &s) - 0.5).abs() < 1e-9);
    }
}
