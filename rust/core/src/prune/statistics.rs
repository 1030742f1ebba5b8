//! "Could any row here satisfy the predicate?" from min/max/null-count statistics, for a
//! column chunk (footer) or a page (ColumnIndex).
//!
//! Only what the format guarantees is used: bounds from a column order the file declares,
//! legacy min/max only where their signed order is the type's order, no float bound when
//! NaN could satisfy the predicate (statistics leave NaN out), and `!=` only on exact
//! bounds. Truncated bounds are still bounds (a truncated min is below the true min).

use arrow_schema::DataType;
use parquet::basic::{ColumnOrder, SortOrder, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use crate::predicate::expr::{CmpOp, ColumnRef, Predicate};
use crate::predicate::value::{float_cmp, Domain, Value};
use crate::predicate::value_set::any_between;
use crate::prune::evidence::{Evidence, Source};

/// What is known about the values of one column in a chunk or a page.
#[derive(Debug, Clone, Default)]
pub struct ChunkStats {
    pub min: Option<Value>,
    pub max: Option<Value>,
    /// Both bounds are the actual min and max (not truncated).
    pub exact: bool,
    pub null_count: Option<u64>,
    /// Rows (one value per row: predicates never reach repeated columns).
    pub rows: u64,
    /// Known to hold only NULLs (a ColumnIndex null page).
    pub all_null: bool,
}

/// Could a row described by `stats` satisfy the leaf predicate `leaf`?
pub fn leaf_may_match(leaf: &Predicate, stats: &ChunkStats) -> bool {
    let all_null = stats.all_null || (stats.rows > 0 && stats.null_count == Some(stats.rows));
    match leaf {
        Predicate::IsNull { negated: false, .. } => stats.null_count != Some(0) || stats.all_null,
        _ if all_null => false,
        Predicate::IsNull { negated: true, .. } => true,
        Predicate::NullOr { value, .. } => *value,
        Predicate::Cmp { col, op, value } => {
            if is_float(col) && nan_could_satisfy(*op, value) {
                return true;
            }
            cmp_may_match(*op, value, stats)
        }
        Predicate::InList {
            col,
            values,
            negated: false,
        } => {
            // Values are sorted (NaN last): one search finds whether any lies in the bounds.
            (is_float(col) && values.last().is_some_and(Value::is_nan))
                || any_between(values, stats.min.as_ref(), stats.max.as_ref(), ordered)
        }
        Predicate::InList {
            col,
            values,
            negated: true,
        } => {
            // Values are sorted (NaN last). A NaN row is in no list without NaN.
            if is_float(col) && !values.last().is_some_and(Value::is_nan) {
                return true;
            }
            // `x <> v` rules out only a chunk of one value (exact bounds, min = max):
            // elsewhere the list need not be walked, however long.
            let one_value = match (&stats.min, &stats.max) {
                (Some(min), Some(max)) => {
                    stats.exact && ordered(min, max) == std::cmp::Ordering::Equal
                }
                _ => false,
            };
            !one_value || values.iter().all(|v| cmp_may_match(CmpOp::NotEq, v, stats))
        }
        Predicate::Match {
            pattern,
            negated: false,
            ..
        } => match pattern.prefix() {
            Some(p) => prefix_may_match(p.as_bytes(), stats),
            None => true,
        },
        Predicate::Match {
            pattern,
            negated: true,
            ..
        } => match pattern.prefix_only() {
            // `NOT LIKE 'p%'` fails on every value when both bounds start with p: the
            // values starting with p are one interval of the byte order.
            Some(p) => !matches!(
                (&stats.min, &stats.max),
                (Some(Value::Bytes(lo)), Some(Value::Bytes(hi)))
                    if lo.starts_with(p.as_bytes()) && hi.starts_with(p.as_bytes())
            ),
            None => true,
        },
        Predicate::InKeys { .. } => true,
        Predicate::Const(c) => *c == Some(true),
        Predicate::And(_) | Predicate::Or(_) => true,
    }
}

/// Whether a value starting with `prefix` may lie within the bounds. Such values form
/// one interval of the byte order, starting at `prefix`; a value above `prefix` that
/// does not start with it is above the whole interval.
fn prefix_may_match(prefix: &[u8], s: &ChunkStats) -> bool {
    let above_min = match &s.min {
        Some(Value::Bytes(min)) => min.as_slice() <= prefix || min.starts_with(prefix),
        _ => true,
    };
    let below_max = match &s.max {
        Some(Value::Bytes(max)) => max.as_slice() >= prefix,
        _ => true,
    };
    above_min && below_max
}

fn is_float(col: &ColumnRef) -> bool {
    matches!(col.domain, Domain::Float32 | Domain::Float64)
}

/// Whether a NaN value could make `x op value` TRUE (NaN is largest and equals NaN).
fn nan_could_satisfy(op: CmpOp, value: &Value) -> bool {
    let nan = Value::Float(f64::NAN);
    op.holds(nan.sql_cmp(value))
}

fn cmp_may_match(op: CmpOp, v: &Value, s: &ChunkStats) -> bool {
    use std::cmp::Ordering::*;
    let ge_min = |strict: bool| {
        s.min.as_ref().is_none_or(|m| {
            let o = ordered(v, m);
            if strict {
                o == Greater
            } else {
                o != Less
            }
        })
    };
    let le_max = |strict: bool| {
        s.max.as_ref().is_none_or(|m| {
            let o = ordered(v, m);
            if strict {
                o == Less
            } else {
                o != Greater
            }
        })
    };
    match op {
        CmpOp::Eq => ge_min(false) && le_max(false),
        // x < v is possible iff min < v
        CmpOp::Lt => ge_min(true),
        CmpOp::LtEq => ge_min(false),
        CmpOp::Gt => le_max(true),
        CmpOp::GtEq => le_max(false),
        CmpOp::NotEq => match (&s.min, &s.max) {
            (Some(min), Some(max)) if s.exact => {
                !(ordered(min, v) == Equal && ordered(max, v) == Equal)
            }
            _ => true,
        },
    }
}

fn ordered(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => float_cmp(*x, *y),
        _ => a.sql_cmp(b),
    }
}

/// Decode a plain-encoded statistic of `col` stored with `physical` type; `None` when it
/// lies outside the column's logical range (a UINT_8 statistic of 4294967295, written by
/// a writer that sign-extended 255): the reader reads such values truncated, so bounds
/// taken from them can rule out rows that hold them.
pub fn decode(bytes: &[u8], physical: PhysicalType, col: &ColumnRef) -> Option<Value> {
    let value = decode_physical(bytes, physical, col)?;
    match (&value, col.domain) {
        (Value::Int(v), Domain::Int { min, max, .. }) if !(min..=max).contains(v) => None,
        _ => Some(value),
    }
}

fn decode_physical(bytes: &[u8], physical: PhysicalType, col: &ColumnRef) -> Option<Value> {
    let unsigned = matches!(
        col.data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    );
    match (col.domain, physical) {
        (Domain::Bool, PhysicalType::BOOLEAN) => bytes.first().map(|b| Value::Bool(*b != 0)),
        (Domain::Int { .. }, PhysicalType::INT32) => {
            let v = i32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
            Some(Value::Int(if unsigned {
                i128::from(v as u32)
            } else {
                i128::from(v)
            }))
        }
        (Domain::Int { .. }, PhysicalType::INT64) => {
            let v = i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
            Some(Value::Int(if unsigned {
                i128::from(v as u64)
            } else {
                i128::from(v)
            }))
        }
        (Domain::Int { .. }, PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY) => {
            big_endian_i128(bytes).map(Value::Int)
        }
        (Domain::Float32, PhysicalType::FIXED_LEN_BYTE_ARRAY)
            if col.data_type == DataType::Float16 =>
        {
            let v = half::f16::from_le_bytes(bytes.get(..2)?.try_into().ok()?);
            (!v.is_nan()).then_some(Value::Float(v.to_f64()))
        }
        (Domain::Float32, PhysicalType::FLOAT) => {
            let v = f32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
            (!v.is_nan()).then_some(Value::Float(f64::from(v)))
        }
        (Domain::Float64, PhysicalType::DOUBLE) => {
            let v = f64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
            (!v.is_nan()).then_some(Value::Float(v))
        }
        (
            Domain::Utf8 | Domain::Binary | Domain::Uuid,
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY,
        ) => Some(Value::Bytes(bytes.to_vec())),
        _ => None,
    }
}

/// A big-endian two's complement integer of 1 to 16 bytes (decimals in byte arrays).
pub fn big_endian_i128(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xFF } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

/// Whether the min/max statistics of leaf `leaf` may be used, given the file's column
/// order and whether they came from the legacy (signed-order) fields.
pub fn bounds_usable(md: &ParquetMetaData, leaf: usize, col: &ColumnRef, legacy: bool) -> bool {
    if !col.prunable {
        return false;
    }
    let physical = md
        .file_metadata()
        .schema_descr()
        .column(leaf)
        .physical_type();
    let unsigned = matches!(
        col.data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    );
    // Legacy min/max were computed with a signed comparison: right for signed numbers and
    // booleans, wrong for unsigned integers and for bytes.
    let legacy_ok = !unsigned
        && matches!(
            physical,
            PhysicalType::BOOLEAN
                | PhysicalType::INT32
                | PhysicalType::INT64
                | PhysicalType::FLOAT
                | PhysicalType::DOUBLE
        );
    match md.file_metadata().column_order(leaf) {
        ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNDEFINED) => false,
        ColumnOrder::TYPE_DEFINED_ORDER(_) => !legacy || legacy_ok,
        ColumnOrder::UNDEFINED => legacy_ok,
        ColumnOrder::UNKNOWN => false,
    }
}

/// The part of `sorted` (an IN list's values, sorted in SQL order) within the chunk's
/// integer or byte-string bounds: the only ones the chunk may hold. All of `sorted` for
/// other bounds (a float list may hold NaN, which bounds leave out). Two binary searches,
/// since a join's keys may be millions.
pub fn within_bounds<'a>(sorted: &'a [Value], s: &ChunkStats) -> &'a [Value] {
    &sorted[within_bounds_at(sorted, s)]
}

/// Where [`within_bounds`] lies in `sorted`.
pub fn within_bounds_at(sorted: &[Value], s: &ChunkStats) -> std::ops::Range<usize> {
    // Binding coerces a list to its column's type; one of another kind is not ordered
    // against these bounds, and is left whole.
    let alike = |v: Option<&Value>, b: &Value| {
        v.is_some_and(|v| std::mem::discriminant(v) == std::mem::discriminant(b))
    };
    match (&s.min, &s.max) {
        (Some(min), Some(max))
            if searchable_bounds(min, max)
                && alike(sorted.first(), min)
                && alike(sorted.last(), min) =>
        {
            let start = sorted.partition_point(|v| v.sql_cmp(min).is_lt());
            let end = sorted.partition_point(|v| v.sql_cmp(max).is_le());
            start..end.max(start)
        }
        _ => 0..sorted.len(),
    }
}

/// The integer bounds of `col` over every row group of the file (see [`file_bounds`]).
pub fn file_int_bounds(md: &ParquetMetaData, col: &ColumnRef) -> Option<ChunkStats> {
    file_bounds(md, col).filter(|s| matches!(s.min, Some(Value::Int(_))))
}

/// The integer or byte-string bounds of `col` over every row group of the file, for
/// narrowing a long IN list before an index hashes it; `None` when a row group holding
/// values has none.
pub fn file_bounds(md: &ParquetMetaData, col: &ColumnRef) -> Option<ChunkStats> {
    let mut bounds: Option<(Value, Value)> = None;
    let mut rows = 0u64;
    let mut exact = true;
    for rg in 0..md.num_row_groups() {
        let s = row_group_stats(md, rg, col)?;
        rows += s.rows;
        match (s.min, s.max) {
            (Some(lo), Some(hi)) if searchable_bounds(&lo, &hi) => {
                exact &= s.exact;
                bounds = Some(match bounds {
                    None => (lo, hi),
                    Some((a, b)) => (
                        if lo.sql_cmp(&a).is_lt() { lo } else { a },
                        if hi.sql_cmp(&b).is_gt() { hi } else { b },
                    ),
                });
            }
            // A row group of NULLs holds no value an IN list can match.
            _ if s.rows == 0 || s.null_count == Some(s.rows) => {}
            _ => return None,
        }
    }
    let (min, max) = bounds?;
    Some(ChunkStats {
        min: Some(min),
        max: Some(max),
        exact,
        null_count: None,
        rows,
        all_null: false,
    })
}

/// Bounds an IN list can be cut to by search: both integers or both byte strings. Not
/// floats: a NaN in a list lies outside any bounds, yet a chunk may hold NaN. Truncated
/// string bounds still bound: writers cut a minimum short and round a cut maximum up.
fn searchable_bounds(min: &Value, max: &Value) -> bool {
    matches!(
        (min, max),
        (Value::Int(_), Value::Int(_)) | (Value::Bytes(_), Value::Bytes(_))
    )
}

/// The footer statistics of `col` in row group `rg`, or `None` when there are none that
/// can be trusted.
pub fn row_group_stats(md: &ParquetMetaData, rg: usize, col: &ColumnRef) -> Option<ChunkStats> {
    let leaf = col.leaf?;
    let rg_md = md.row_group(rg);
    let chunk = rg_md.column(leaf);
    let stats = chunk.statistics()?;
    let rows = u64::try_from(rg_md.num_rows()).ok()?;
    let usable = bounds_usable(md, leaf, col, stats.is_min_max_deprecated());
    let physical = chunk.column_type();
    let (min, max) = if usable {
        (
            stats.min_bytes_opt().and_then(|b| decode(b, physical, col)),
            stats.max_bytes_opt().and_then(|b| decode(b, physical, col)),
        )
    } else {
        (None, None)
    };
    Some(ChunkStats {
        exact: stats.min_is_exact() && stats.max_is_exact(),
        min,
        max,
        null_count: stats
            .null_count_opt()
            .and_then(|n| trusted_null_count(md, leaf, n, rows)),
        rows,
        all_null: false,
    })
}

/// A NULL count that can be believed for `rows` rows of leaf `leaf`: `None` when it
/// contradicts the schema (NULLs in a REQUIRED column) or the rows (more NULLs than rows
/// of a column that is not repeated). Believed, such a count would rule out rows that hold
/// values.
pub fn trusted_null_count(md: &ParquetMetaData, leaf: usize, nulls: u64, rows: u64) -> Option<u64> {
    let descr = md.file_metadata().schema_descr().column(leaf);
    if descr.max_def_level() == 0 && nulls > 0 {
        return None;
    }
    if descr.max_rep_level() == 0 && nulls > rows {
        return None;
    }
    Some(nulls)
}

/// Whether a row of row group `rg` may satisfy `leaf`, by its footer statistics (`true`
/// when there are none to trust).
pub fn row_group_may_match(md: &ParquetMetaData, rg: usize, leaf: &Predicate) -> bool {
    match leaf.column().and_then(|c| row_group_stats(md, rg, c)) {
        Some(s) => leaf_may_match(leaf, &s),
        None => true,
    }
}

/// The footer statistics of a file's column chunks, as evidence for its row groups.
pub struct FooterStatistics<'a> {
    md: &'a ParquetMetaData,
}

impl<'a> FooterStatistics<'a> {
    pub fn new(md: &'a ParquetMetaData) -> Self {
        FooterStatistics { md }
    }
}

impl Evidence for FooterStatistics<'_> {
    fn source(&self) -> Source {
        Source::Statistics
    }

    fn row_group(&mut self, rg: usize, leaf: &Predicate) -> Result<Option<bool>> {
        Ok(Some(row_group_may_match(self.md, rg, leaf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_values_within_integer_bounds_are_found_by_search() {
        let stats = |min: Option<Value>, max: Option<Value>| ChunkStats {
            min,
            max,
            exact: true,
            null_count: Some(0),
            rows: 100,
            all_null: false,
        };
        let sorted: Vec<Value> = [-5, 0, 3, 7, 10, 11, 40].map(Value::Int).to_vec();
        let within = |lo: i128, hi: i128| {
            within_bounds(&sorted, &stats(Some(Value::Int(lo)), Some(Value::Int(hi)))).to_vec()
        };
        assert_eq!(within(0, 10), [0, 3, 7, 10].map(Value::Int));
        assert_eq!(within(1, 6), [3].map(Value::Int));
        assert!(within(12, 39).is_empty());
        assert!(within(50, 60).is_empty());
        assert!(within(-9, -6).is_empty());
        // Bounds that are not integers (or missing) leave every value.
        assert_eq!(
            within_bounds(&sorted, &stats(None, None)).len(),
            sorted.len()
        );
        let text = stats(
            Some(Value::Bytes(b"a".to_vec())),
            Some(Value::Bytes(b"b".to_vec())),
        );
        assert_eq!(within_bounds(&sorted, &text).len(), sorted.len());
        // String bounds narrow a list of strings alike.
        let words: Vec<Value> = ["", "a", "abc", "b", "ba", "é"]
            .map(|w| Value::Bytes(w.into()))
            .to_vec();
        assert_eq!(
            within_bounds(&words, &text),
            ["a", "abc", "b"].map(|w| Value::Bytes(w.into()))
        );
        let past = stats(
            Some(Value::Bytes(b"c".to_vec())),
            Some(Value::Bytes(b"d".to_vec())),
        );
        assert!(within_bounds(&words, &past).is_empty());
        // Float bounds leave every value: a NaN in the list lies outside any bounds.
        let floats = [1.0, 5.0, f64::NAN].map(Value::Float).to_vec();
        let narrow = stats(Some(Value::Float(0.0)), Some(Value::Float(2.0)));
        assert_eq!(within_bounds(&floats, &narrow).len(), 3);
    }
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
    fn footer_statistics_answer_for_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let (_, md, pred) = evidence_file(dir.path(), "k >= 1500");
        let mut s = FooterStatistics::new(&md);
        let answers: Vec<Option<bool>> = (0..3).map(|rg| s.row_group(rg, &pred).unwrap()).collect();
        assert_eq!(answers, [Some(false), Some(true), Some(true)]);
        assert_eq!(
            s.rows(0, &pred).unwrap(),
            None,
            "statistics know nothing of rows"
        );
    }

    use crate::predicate::expr::Column;

    fn col(dt: DataType) -> Column {
        ColumnRef::for_test("x", dt)
    }

    fn stats(min: Value, max: Value) -> ChunkStats {
        ChunkStats {
            min: Some(min),
            max: Some(max),
            exact: true,
            null_count: Some(0),
            rows: 10,
            all_null: false,
        }
    }

    fn cmp(c: &Column, op: CmpOp, v: Value) -> Predicate {
        Predicate::Cmp {
            col: c.clone(),
            op,
            value: v,
        }
    }

    #[test]
    fn integer_ranges() {
        let c = col(DataType::Int32);
        let s = stats(Value::Int(10), Value::Int(20));
        assert!(!leaf_may_match(&cmp(&c, CmpOp::Eq, Value::Int(9)), &s));
        assert!(leaf_may_match(&cmp(&c, CmpOp::Eq, Value::Int(10)), &s));
        assert!(!leaf_may_match(&cmp(&c, CmpOp::Lt, Value::Int(10)), &s));
        assert!(leaf_may_match(&cmp(&c, CmpOp::LtEq, Value::Int(10)), &s));
        assert!(!leaf_may_match(&cmp(&c, CmpOp::Gt, Value::Int(20)), &s));
        let one = stats(Value::Int(5), Value::Int(5));
        assert!(!leaf_may_match(&cmp(&c, CmpOp::NotEq, Value::Int(5)), &one));
        let inexact = ChunkStats {
            exact: false,
            ..one
        };
        assert!(leaf_may_match(
            &cmp(&c, CmpOp::NotEq, Value::Int(5)),
            &inexact
        ));
    }

    #[test]
    fn not_in_rules_out_only_a_chunk_of_one_listed_value() {
        let not_in = |c: &Column, values: Vec<Value>| Predicate::in_list(c.clone(), values, true);
        let c = col(DataType::Int64);
        let many = not_in(&c, (0..10_000).map(Value::Int).collect());
        assert!(!leaf_may_match(&many, &stats(Value::Int(5), Value::Int(5))));
        assert!(leaf_may_match(
            &many,
            &stats(Value::Int(20_000), Value::Int(20_000))
        ));
        // Every value of [3, 7] is listed, but bounds alone cannot say the chunk holds no other.
        assert!(leaf_may_match(&many, &stats(Value::Int(3), Value::Int(7))));
        let inexact = ChunkStats {
            exact: false,
            ..stats(Value::Int(5), Value::Int(5))
        };
        assert!(leaf_may_match(&many, &inexact));
        let f = col(DataType::Float64);
        let one = stats(Value::Float(1.0), Value::Float(1.0));
        // Without NaN in the list a NaN row satisfies NOT IN; with it, only a 1.0 is ruled out.
        assert!(leaf_may_match(&not_in(&f, vec![Value::Float(1.0)]), &one));
        let with_nan = not_in(&f, vec![Value::Float(1.0), Value::Float(f64::NAN)]);
        assert!(!leaf_may_match(&with_nan, &one));
        assert!(leaf_may_match(
            &with_nan,
            &stats(Value::Float(1.0), Value::Float(2.0))
        ));
    }

    #[test]
    fn floats_never_prune_what_nan_satisfies() {
        let c = col(DataType::Float64);
        let s = stats(Value::Float(1.0), Value::Float(2.0));
        assert!(leaf_may_match(&cmp(&c, CmpOp::Gt, Value::Float(5.0)), &s));
        assert!(!leaf_may_match(&cmp(&c, CmpOp::Lt, Value::Float(0.5)), &s));
        assert!(leaf_may_match(
            &cmp(&c, CmpOp::Eq, Value::Float(f64::NAN)),
            &s
        ));
        assert!(!leaf_may_match(
            &cmp(&c, CmpOp::Gt, Value::Float(f64::NAN)),
            &s
        ));
        let zero = stats(Value::Float(0.0), Value::Float(0.0));
        assert!(leaf_may_match(
            &cmp(&c, CmpOp::Eq, Value::Float(-0.0)),
            &zero
        ));
    }

    #[test]
    fn prefixes_prune_by_the_interval_they_span() {
        use crate::predicate::pattern::StrPattern;
        use std::sync::Arc;
        let s = ColumnRef::for_test("s", DataType::Utf8);
        let stats = |lo: &str, hi: &str| ChunkStats {
            min: Some(Value::Bytes(lo.into())),
            max: Some(Value::Bytes(hi.into())),
            exact: false,
            null_count: Some(0),
            rows: 10,
            all_null: false,
        };
        let like = |p: &str, negated: bool| Predicate::Match {
            col: s.clone(),
            pattern: Arc::new(StrPattern::like(p, None, false).unwrap()),
            negated,
        };
        assert!(leaf_may_match(&like("ab%", false), &stats("aa", "ac")));
        assert!(leaf_may_match(&like("ab%", false), &stats("abz", "b")));
        assert!(leaf_may_match(&like("ab%", false), &stats("a", "ab")));
        assert!(!leaf_may_match(&like("ab%", false), &stats("ac", "b")));
        assert!(!leaf_may_match(&like("ab%", false), &stats("a", "aazzz")));
        // A truncated min is below the true min: still a bound.
        assert!(leaf_may_match(&like("abc%x", false), &stats("ab", "b")));
        assert!(leaf_may_match(&like("%ab", false), &stats("x", "y")));
        assert!(!leaf_may_match(&like("AB%", false), &stats("ab", "ab")));
        assert!(!leaf_may_match(&like("ab%", true), &stats("ab", "abzz")));
        assert!(leaf_may_match(&like("ab%", true), &stats("ab", "ac")));
        assert!(leaf_may_match(&like("ab%c", true), &stats("ab", "abzz")));
        // Multi-byte prefixes order by their bytes.
        assert!(!leaf_may_match(&like("é%", false), &stats("f", "z")));
        assert!(leaf_may_match(&like("é%", false), &stats("e", "ë")));
    }

    #[test]
    fn nulls() {
        let c = col(DataType::Int32);
        let all_null = ChunkStats {
            min: None,
            max: None,
            exact: false,
            null_count: Some(10),
            rows: 10,
            all_null: false,
        };
        assert!(!leaf_may_match(
            &cmp(&c, CmpOp::NotEq, Value::Int(1)),
            &all_null
        ));
        assert!(leaf_may_match(
            &Predicate::IsNull {
                col: c.clone(),
                negated: false
            },
            &all_null
        ));
        assert!(!leaf_may_match(
            &Predicate::IsNull {
                col: c.clone(),
                negated: true
            },
            &all_null
        ));
        let none = stats(Value::Int(1), Value::Int(2));
        assert!(!leaf_may_match(
            &Predicate::IsNull {
                col: c,
                negated: false
            },
            &none
        ));
    }

    #[test]
    fn decimals_from_bytes() {
        assert_eq!(big_endian_i128(&[0xFF, 0x38]), Some(-200));
        assert_eq!(big_endian_i128(&[0x01, 0x00]), Some(256));
        assert_eq!(big_endian_i128(&[]), None);
    }
}
