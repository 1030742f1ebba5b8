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
use crate::prune::statistics::{leaf_may_match, row_group_stats, ChunkStats};

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
        Predicate::And(parts) => parts.iter().map(|p| share(p, md, rg)).product(),
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
    let nulls = match (s.null_count, s.rows) {
        (Some(n), rows) if rows > 0 => (n as f64 / rows as f64).min(1.0),
        _ => 0.0,
    };
    let valued = 1.0 - nulls;
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
            let any = values.iter().map(eq).sum::<f64>().min(1.0);
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

/// The share of valued rows equal to `v`: one of the values between the bounds, for
/// integer-like columns.
fn equal_share(v: &Value, s: &ChunkStats) -> f64 {
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
    let as_f64 = |x: &Value| match x {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    let (Some(min), Some(max), Some(v)) = (
        s.min.as_ref().and_then(as_f64),
        s.max.as_ref().and_then(as_f64),
        as_f64(v),
    ) else {
        return UNKNOWN;
    };
    if max <= min {
        // One value, which the statistics let satisfy the comparison.
        return 1.0;
    }
    let below = ((v - min) / (max - min)).clamp(0.0, 1.0);
    match op {
        CmpOp::Lt | CmpOp::LtEq => below,
        CmpOp::Gt | CmpOp::GtEq => 1.0 - below,
        CmpOp::Eq | CmpOp::NotEq => UNKNOWN,
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
