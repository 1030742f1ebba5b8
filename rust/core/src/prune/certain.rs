//! "Does every row here satisfy the predicate?", the question aggregates answered from
//! indexes ask. A row certainly satisfies P when it can make neither NOT P nor "P is NULL"
//! true; both are predicates the may-match machinery (statistics, page index, embedded
//! indexes) already answers, so the certain rows are the complement of its answer.

use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::plan::RowRanges;
use crate::predicate::expr::Predicate;
use crate::prune::evidence::{may_match, rows_may_match, Evidence};
use crate::prune::statistics::row_group_may_match;

/// A predicate TRUE on every row where `pred` is FALSE or NULL (and maybe on others).
pub fn failure(pred: &Predicate) -> Predicate {
    let mut parts = vec![pred.clone().negate()];
    for leaf in pred.leaves() {
        match leaf {
            Predicate::Cmp { col, .. }
            | Predicate::InList { col, .. }
            | Predicate::NullOr { col, .. }
            | Predicate::Match { col, .. } => parts.push(Predicate::IsNull {
                col: col.clone(),
                negated: false,
            }),
            Predicate::InKeys { cols, .. } => {
                parts.extend(cols.iter().map(|c| Predicate::IsNull {
                    col: c.clone(),
                    negated: false,
                }))
            }
            Predicate::Const(None) => parts.push(Predicate::Const(Some(true))),
            _ => {}
        }
    }
    if pred == &Predicate::Const(None) {
        parts.push(Predicate::Const(Some(true)));
    }
    Predicate::or(parts)
}

/// The rows of row group `rg` on which `pred` is certainly TRUE, from row-group statistics
/// and the row-level evidence of `sources` (the page index, embedded indexes) for the
/// failure predicate's leaves.
pub fn certain_ranges(
    md: &ParquetMetaData,
    rg: usize,
    pred: &Predicate,
    sources: &mut [&mut dyn Evidence],
) -> Result<RowRanges> {
    let rows = md.row_group(rg).num_rows().max(0) as u64;
    let fail = failure(pred);
    if !may_match(&fail, &mut |leaf| row_group_may_match(md, rg, leaf)) {
        return Ok(RowRanges::full(rows));
    }
    Ok(rows_may_match(&fail, rg, rows, sources)?.complement(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::expr::{CmpOp, ColumnRef};
    use crate::predicate::value::Value;
    use arrow_schema::DataType;

    #[test]
    fn failure_covers_false_and_null() {
        let x = ColumnRef::for_test("x", DataType::Int64);
        let p = Predicate::Cmp {
            col: x.clone(),
            op: CmpOp::Lt,
            value: Value::Int(3),
        };
        let f = failure(&p);
        assert_eq!(
            f,
            Predicate::or(vec![
                Predicate::Cmp {
                    col: x.clone(),
                    op: CmpOp::GtEq,
                    value: Value::Int(3),
                },
                Predicate::IsNull {
                    col: x,
                    negated: false
                },
            ])
        );
        assert_eq!(
            failure(&Predicate::Const(None)),
            Predicate::Const(Some(true))
        );
        assert_eq!(
            failure(&Predicate::Const(Some(true))),
            Predicate::Const(Some(false))
        );
    }

    #[test]
    fn complement_and_subtract() {
        let r = RowRanges::from_ranges([2..4, 6..8]);
        assert_eq!(
            r.complement(10),
            RowRanges::from_ranges([0..2, 4..6, 8..10])
        );
        assert_eq!(RowRanges::empty().complement(5), RowRanges::full(5));
        assert_eq!(
            RowRanges::full(10).subtract(&r, 10),
            RowRanges::from_ranges([0..2, 4..6, 8..10])
        );
    }
}
