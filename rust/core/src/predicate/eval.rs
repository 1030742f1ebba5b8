//! Exact evaluation of a predicate over a record batch with arrow's compute kernels.
//!
//! Arrow orders floats by IEEE total order (-0.0 < +0.0, NaNs by sign and payload); SQL
//! wants -0.0 = +0.0 and every NaN equal and largest. Normalising both sides (-0.0 to
//! +0.0, every NaN to the positive canonical NaN) makes the total order the SQL order.

use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{make_array, Array, ArrayRef, BooleanArray, RecordBatch, Scalar, StringArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType};
use arrow_string::like;
use arrow_string::regexp::regexp_is_match_scalar;

use crate::predicate::expr::{CmpOp, ColumnRef, Predicate};
use crate::predicate::pattern::{lower, StrPattern};
use crate::predicate::value::{to_scalar_array, Value};
use crate::predicate::value_set::{integer_membership, membership};

/// IN lists longer than this are evaluated by searching the sorted set for each row.
const IN_LIST_COMPARISONS: usize = 32;

/// On integer columns, IN lists of at least this many values search the set for each row
/// too: one pass that turns away most rows with one load beats a pass per value.
const IN_LIST_INTEGER_SEARCH: usize = 4;

/// Evaluate `pred` on `batch`: TRUE, FALSE or NULL per row.
pub fn evaluate(pred: &Predicate, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
    let rows = batch.num_rows();
    match pred {
        Predicate::Const(Some(b)) => Ok(BooleanArray::from(vec![*b; rows])),
        Predicate::Const(None) => Ok(BooleanArray::new_null(rows)),
        Predicate::Cmp { col, op, value } => {
            let array = column(batch, col)?;
            compare(&array, *op, value)
        }
        // Up to a few dozen values (a few on integer columns), one vectorised comparison
        // per value beats a search per row; beyond, a search per row in the set's native
        // values.
        Predicate::InList {
            col,
            values,
            negated,
        } if values.len() > IN_LIST_COMPARISONS => {
            let array = column(batch, col)?;
            let hits = membership(&array, values)?;
            if *negated {
                not(&hits)
            } else {
                Ok(hits)
            }
        }
        Predicate::InList {
            col,
            values,
            negated,
        } => {
            let array = column(batch, col)?;
            if values.len() >= IN_LIST_INTEGER_SEARCH {
                if let Some(hits) = integer_membership(&array, values) {
                    return if *negated { not(&hits) } else { Ok(hits) };
                }
            }
            let mut acc: Option<BooleanArray> = None;
            for v in values {
                let eq = compare(&array, CmpOp::Eq, v)?;
                acc = Some(match acc {
                    None => eq,
                    Some(a) => or_kleene(&a, &eq)?,
                });
            }
            let any = acc.unwrap_or_else(|| BooleanArray::from(vec![false; rows]));
            if *negated {
                not(&any)
            } else {
                Ok(any)
            }
        }
        Predicate::IsNull { col, negated } => {
            let array = column(batch, col)?;
            if *negated {
                is_not_null(&array)
            } else {
                is_null(&array)
            }
        }
        Predicate::NullOr { col, value } => {
            let array = column(batch, col)?;
            let values = if *value {
                BooleanBuffer::new_set(rows)
            } else {
                BooleanBuffer::new_unset(rows)
            };
            Ok(BooleanArray::new(values, array.logical_nulls()))
        }
        Predicate::Match {
            col,
            pattern,
            negated,
        } => {
            let array = column(batch, col)?;
            string_match(&array, pattern, *negated)
        }
        Predicate::InKeys {
            cols,
            keys,
            negated,
        } => {
            // The tuples are rows of the declared types: views are cast back to them.
            let arrays = cols
                .iter()
                .map(|c| {
                    let array = column(batch, c)?;
                    match array.data_type() == &c.data_type {
                        true => Ok(array),
                        false => arrow_cast::cast(&array, &c.data_type),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            let hits = keys.contains(&arrays)?;
            if *negated {
                not(&hits)
            } else {
                Ok(hits)
            }
        }
        Predicate::And(parts) => fold(parts, batch, and_kleene),
        Predicate::Or(parts) => fold(parts, batch, or_kleene),
    }
}

/// A string column against a pattern, with arrow's string kernels.
fn string_match(
    array: &ArrayRef,
    pattern: &StrPattern,
    negated: bool,
) -> Result<BooleanArray, ArrowError> {
    let matched = match pattern {
        StrPattern::Like {
            case_insensitive, ..
        } => {
            let text = pattern.arrow_like().unwrap_or_default();
            let scalar = |dt: &DataType| -> Result<Scalar<ArrayRef>, ArrowError> {
                Ok(Scalar::new(
                    to_scalar_array(&Value::Bytes(text.clone().into_bytes()), dt)
                        .map_err(ArrowError::from)?,
                ))
            };
            if !case_insensitive {
                return if negated {
                    like::nlike(array, &scalar(array.data_type())?)
                } else {
                    like::like(array, &scalar(array.data_type())?)
                };
            }
            // DuckDB lower-cases both sides; on ASCII that is arrow's case-insensitive
            // match, elsewhere the values are lower-cased the same way first.
            if text.is_ascii() && all_ascii(array) {
                like::ilike(array, &scalar(array.data_type())?)?
            } else {
                let lowered = lower_strings(array)?;
                like::like(&lowered, &scalar(lowered.data_type())?)?
            }
        }
        StrPattern::Token { text } => tokens_found(array, text)?,
        StrPattern::Regex {
            pattern: text,
            case_insensitive,
            ..
        } => {
            let flag = case_insensitive.then_some("i");
            match array.data_type() {
                DataType::Utf8 => regexp_is_match_scalar(array.as_string::<i32>(), text, flag)?,
                DataType::LargeUtf8 => {
                    regexp_is_match_scalar(array.as_string::<i64>(), text, flag)?
                }
                DataType::Utf8View => regexp_is_match_scalar(array.as_string_view(), text, flag)?,
                other => {
                    return Err(ArrowError::InvalidArgumentError(format!(
                        "regexp_matches on a {other} column"
                    )))
                }
            }
        }
    };
    if negated {
        not(&matched)
    } else {
        Ok(matched)
    }
}

/// `has_token(array, text)` per row (NULL for NULL values).
fn tokens_found(array: &ArrayRef, text: &str) -> Result<BooleanArray, ArrowError> {
    let found = |v: Option<&str>| v.map(|v| crate::predicate::pattern::has_token(v, text));
    Ok(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().map(found).collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().map(found).collect(),
        DataType::Utf8View => array.as_string_view().iter().map(found).collect(),
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "has_token on a {other} column"
            )))
        }
    })
}

/// Whether every byte of a string array's values is ASCII.
fn all_ascii(array: &ArrayRef) -> bool {
    match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().values().is_ascii(),
        DataType::LargeUtf8 => array.as_string::<i64>().values().is_ascii(),
        DataType::Utf8View => array.as_string_view().iter().flatten().all(str::is_ascii),
        _ => false,
    }
}

/// The strings lower-cased as DuckDB's `lower()` does.
fn lower_strings(array: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let lowered: StringArray = match array.data_type() {
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(lower))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(lower))
            .collect(),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .map(|v| v.map(lower))
            .collect(),
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "ILIKE on a {other} column"
            )))
        }
    };
    Ok(Arc::new(lowered))
}

/// The rows where `pred` is TRUE (NULL counts as not selected).
pub fn selection(pred: &Predicate, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
    let result = evaluate(pred, batch)?;
    Ok(match result.nulls() {
        None => result,
        Some(nulls) => BooleanArray::new(result.values() & nulls.inner(), None),
    })
}

fn fold(
    parts: &[Predicate],
    batch: &RecordBatch,
    op: fn(&BooleanArray, &BooleanArray) -> Result<BooleanArray, ArrowError>,
) -> Result<BooleanArray, ArrowError> {
    let mut iter = parts.iter();
    let Some(first) = iter.next() else {
        return Ok(BooleanArray::new_null(batch.num_rows()));
    };
    let mut acc = evaluate(first, batch)?;
    for p in iter {
        acc = op(&acc, &evaluate(p, batch)?)?;
    }
    Ok(acc)
}

fn compare(array: &ArrayRef, op: CmpOp, value: &Value) -> Result<BooleanArray, ArrowError> {
    let (array, value) = match (array.data_type(), value) {
        (DataType::Float32 | DataType::Float64, _) => {
            (normalise_floats(array), normalise_value(value))
        }
        // Fixed-width bytes against bytes of another length compare as byte strings.
        (DataType::FixedSizeBinary(w), Value::Bytes(b)) if b.len() != *w as usize => {
            (arrow_cast::cast(array, &DataType::Binary)?, value.clone())
        }
        _ => (array.clone(), value.clone()),
    };
    let scalar = to_scalar_array(&value, array.data_type()).map_err(ArrowError::from)?;
    let scalar = Scalar::new(scalar);
    match op {
        CmpOp::Eq => cmp::eq(&array, &scalar),
        CmpOp::NotEq => cmp::neq(&array, &scalar),
        CmpOp::Lt => cmp::lt(&array, &scalar),
        CmpOp::LtEq => cmp::lt_eq(&array, &scalar),
        CmpOp::Gt => cmp::gt(&array, &scalar),
        CmpOp::GtEq => cmp::gt_eq(&array, &scalar),
    }
}

fn normalise_value(v: &Value) -> Value {
    match v {
        Value::Float(f) if f.is_nan() => Value::Float(f64::NAN),
        Value::Float(f) if *f == 0.0 => Value::Float(0.0),
        other => other.clone(),
    }
}

fn normalise_floats(array: &ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Float32 => Arc::new(array.as_primitive::<Float32Type>().unary::<_, Float32Type>(
            |v| {
                if v.is_nan() {
                    f32::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                }
            },
        )),
        DataType::Float64 => Arc::new(array.as_primitive::<Float64Type>().unary::<_, Float64Type>(
            |v| {
                if v.is_nan() {
                    f64::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                }
            },
        )),
        _ => array.clone(),
    }
}

/// The column `col` of `batch`, descending into structs (a NULL struct makes its fields
/// NULL) and decoding dictionaries.
pub fn column(batch: &RecordBatch, col: &ColumnRef) -> Result<ArrayRef, ArrowError> {
    let missing = || ArrowError::SchemaError(format!("column {} is not in the batch", col.name));
    let (first, rest) = col.path.split_first().ok_or_else(missing)?;
    let mut array = batch.column_by_name(first).ok_or_else(missing)?.clone();
    for part in rest {
        let parent_nulls = array.logical_nulls();
        let child = array
            .as_struct_opt()
            .and_then(|s| s.column_by_name(part))
            .ok_or_else(missing)?
            .clone();
        let nulls = NullBuffer::union(parent_nulls.as_ref(), child.logical_nulls().as_ref());
        let data = child.to_data().into_builder().nulls(nulls).build()?;
        array = make_array(data);
    }
    if let DataType::Dictionary(_, value_type) = array.data_type() {
        array = arrow_cast::cast(&array, value_type)?;
    }
    // A table's file may store the column in a narrower type than the table declares
    // (type widening): compare in the table's. Strings read as views compare as they are.
    if !same_values(array.data_type(), &col.data_type) {
        array = arrow_cast::cast(&array, &col.data_type)?;
    }
    // Half floats compare as FLOAT, as DuckDB reads them (every half is a float exactly).
    if array.data_type() == &DataType::Float16 {
        array = arrow_cast::cast(&array, &DataType::Float32)?;
    }
    Ok(array)
}

/// Whether an array of type `read` holds the values of type `declared` as they are: the
/// same type, or the view layout of the same strings or bytes.
fn same_values(read: &DataType, declared: &DataType) -> bool {
    use DataType::*;
    read == declared
        || matches!(
            (read, declared),
            (Utf8View, Utf8 | LargeUtf8) | (BinaryView, Binary | LargeBinary)
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array};
    use arrow_schema::{Field, Schema};

    fn col(name: &str, dt: DataType) -> Arc<ColumnRef> {
        ColumnRef::for_test(name, dt)
    }

    fn batch(a: ArrayRef, name: &str) -> RecordBatch {
        let schema = Schema::new(vec![Field::new(name, a.data_type().clone(), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![a]).unwrap()
    }

    #[test]
    fn floats_follow_sql_order() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            Some(0.0),
            Some(f64::NAN),
            Some(-f64::NAN),
            Some(f64::INFINITY),
            None,
        ]));
        let b = batch(a, "f");
        let c = col("f", DataType::Float64);
        let eq0 = selection(
            &Predicate::Cmp {
                col: c.clone(),
                op: CmpOp::Eq,
                value: Value::Float(0.0),
            },
            &b,
        )
        .unwrap();
        assert_eq!(
            eq0,
            BooleanArray::from(vec![true, true, false, false, false, false])
        );
        let gt = selection(
            &Predicate::Cmp {
                col: c.clone(),
                op: CmpOp::Gt,
                value: Value::Float(f64::INFINITY),
            },
            &b,
        )
        .unwrap();
        assert_eq!(
            gt,
            BooleanArray::from(vec![false, false, true, true, false, false])
        );
        let nan = selection(
            &Predicate::Cmp {
                col: c,
                op: CmpOp::Eq,
                value: Value::Float(f64::NAN),
            },
            &b,
        )
        .unwrap();
        assert_eq!(
            nan,
            BooleanArray::from(vec![false, false, true, true, false, false])
        );
    }

    #[test]
    fn string_patterns_match_as_duckdb() {
        use arrow_array::LargeStringArray;
        let values = vec![
            Some("abc%def"),
            Some("ABC_x"),
            None,
            Some("école"),
            Some("İSTANBUL"),
            Some(""),
            Some("a\\b"),
        ];
        let check = |a: ArrayRef| {
            let b = batch(a.clone(), "s");
            let s = col("s", a.data_type().clone());
            let run = |p: StrPattern, negated: bool| {
                evaluate(
                    &Predicate::Match {
                        col: s.clone(),
                        pattern: Arc::new(p),
                        negated,
                    },
                    &b,
                )
                .unwrap()
            };
            let like = |p: &str, esc: Option<char>, ci: bool| StrPattern::like(p, esc, ci).unwrap();
            assert_eq!(
                run(like("abc!%%", Some('!'), false), false),
                BooleanArray::from(vec![
                    Some(true),
                    Some(false),
                    None,
                    Some(false),
                    Some(false),
                    Some(false),
                    Some(false)
                ])
            );
            let ci = run(like("abc\\_%", Some('\\'), true), false);
            assert!(ci.value(1));
            assert!(!ci.value(0));
            assert!(run(like("É%", None, true), false).value(3));
            assert!(run(like("istanbul", None, true), false).value(4));
            assert!(run(like("a\\b", None, false), false).value(6));
            let n = run(StrPattern::contains("c"), true);
            assert!(!n.value(0));
            assert!(n.is_null(2));
            assert!(n.value(5));
            let r = run(StrPattern::regex("^[a-z]+%", None).unwrap(), false);
            assert!(r.value(0) && !r.value(1) && r.is_null(2));
            let r = run(StrPattern::regex("^abc", Some("i")).unwrap(), false);
            assert!(r.value(1));
        };
        check(Arc::new(StringArray::from(values.clone())));
        check(Arc::new(LargeStringArray::from(values.clone())));
        check(Arc::new(arrow_array::StringViewArray::from(values)));
    }

    #[test]
    fn strings_and_bytes_read_as_views_test_as_their_declared_types() {
        use crate::predicate::key_tuples::KeyTuples;
        use crate::predicate::value_set::ValueList;
        use arrow_array::{BinaryArray, BinaryViewArray, StringViewArray};
        let words: Vec<Option<String>> = (0..100)
            .map(|i| (i % 7 != 0).then(|| format!("a longer word than twelve {i}")))
            .collect();
        let bytes: Vec<Option<Vec<u8>>> = words
            .iter()
            .map(|w| w.as_ref().map(|w| w.as_bytes().to_vec()))
            .collect();
        let wanted = |i: i32| Value::Bytes(format!("a longer word than twelve {i}").into_bytes());
        let few = ValueList::new((0..5).map(wanted).collect());
        let many = ValueList::new((0..60).map(wanted).collect());
        for (declared, plain, view) in [
            (
                DataType::Utf8,
                Arc::new(StringArray::from(words.clone())) as ArrayRef,
                Arc::new(StringViewArray::from(words.clone())) as ArrayRef,
            ),
            (
                DataType::Binary,
                Arc::new(BinaryArray::from_iter(bytes.clone())) as ArrayRef,
                Arc::new(BinaryViewArray::from_iter(bytes.clone())) as ArrayRef,
            ),
        ] {
            let c = col("s", declared.clone());
            let keys =
                KeyTuples::new(std::slice::from_ref(&declared), &[plain.slice(10, 5)]).unwrap();
            let predicates = [
                Predicate::Cmp {
                    col: c.clone(),
                    op: CmpOp::GtEq,
                    value: wanted(50),
                },
                Predicate::InList {
                    col: c.clone(),
                    values: few.clone(),
                    negated: false,
                },
                Predicate::InList {
                    col: c.clone(),
                    values: many.clone(),
                    negated: true,
                },
                Predicate::IsNull {
                    col: c.clone(),
                    negated: false,
                },
                Predicate::InKeys {
                    cols: vec![c.clone()],
                    keys: Arc::new(keys),
                    negated: false,
                },
            ];
            for p in &predicates {
                let expected = evaluate(p, &batch(plain.clone(), "s")).unwrap();
                assert!(expected.true_count() > 0, "{p:?}");
                assert_eq!(evaluate(p, &batch(view.clone(), "s")).unwrap(), expected);
            }
        }
        assert!(same_values(&DataType::Utf8View, &DataType::Utf8));
        assert!(!same_values(&DataType::Utf8View, &DataType::Binary));
    }

    #[test]
    fn integer_in_lists_searched_per_row_answer_as_a_comparison_per_value() {
        use crate::predicate::value_set::ValueList;
        use arrow_array::{Date32Array, Decimal128Array, Int64Array, UInt64Array};
        let rows = 5_000usize;
        let value = |i: usize| (i * 7919 % 10_007) as i64 - 5_000;
        let present = |i: usize| !i.is_multiple_of(13);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter(
                (0..rows).map(|i| present(i).then(|| value(i))),
            )),
            Arc::new(UInt64Array::from_iter((0..rows).map(|i| {
                present(i).then(|| (value(i) + 5_000) as u64 | (u64::from(i % 2 == 0) << 63))
            }))),
            Arc::new(
                Decimal128Array::from_iter(
                    (0..rows).map(|i| present(i).then(|| i128::from(value(i)) * 100)),
                )
                .with_precision_and_scale(20, 2)
                .unwrap(),
            ),
            Arc::new(Date32Array::from_iter(
                (0..rows).map(|i| present(i).then(|| value(i) as i32)),
            )),
        ];
        for array in columns {
            let dt = array.data_type().clone();
            let scale = if matches!(dt, DataType::Decimal128(..)) {
                100
            } else {
                1
            };
            let hi = if dt == DataType::UInt64 {
                1i128 << 63
            } else {
                0
            };
            for n in [IN_LIST_INTEGER_SEARCH, 10, IN_LIST_COMPARISONS] {
                // Listed values from the rows' own, and some no row holds.
                let listed: Vec<Value> = (0..n)
                    .map(|k| {
                        let v = i128::from(value(k * 37 + 1)) * scale;
                        let v = if dt == DataType::UInt64 {
                            v + 5_000 + hi
                        } else {
                            v
                        };
                        Value::Int(if k % 3 == 2 { v + 20_000 * scale } else { v })
                    })
                    .collect();
                for negated in [false, true] {
                    let p = Predicate::InList {
                        col: col("x", dt.clone()),
                        values: ValueList::new(listed.clone()),
                        negated,
                    };
                    let searched = evaluate(&p, &batch(array.clone(), "x")).unwrap();
                    let mut any: Option<BooleanArray> = None;
                    for v in &listed {
                        let eq = compare(&array, CmpOp::Eq, v).unwrap();
                        any = Some(match any {
                            None => eq,
                            Some(a) => or_kleene(&a, &eq).unwrap(),
                        });
                    }
                    let any = any.unwrap();
                    let expected = if negated { not(&any).unwrap() } else { any };
                    assert_eq!(searched, expected, "{dt} {n} {negated}");
                    assert!(expected.true_count() > 0 && expected.null_count() > 0);
                }
            }
        }
    }

    #[test]
    fn null_or_keeps_nulls() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let b = batch(a, "x");
        let p = Predicate::NullOr {
            col: col("x", DataType::Int32),
            value: true,
        };
        let r = evaluate(&p, &b).unwrap();
        assert!(r.value(0));
        assert!(r.is_null(1));
        let n = evaluate(&p.negate(), &b).unwrap();
        assert!(!n.value(0));
        assert!(n.is_null(1));
    }
}
