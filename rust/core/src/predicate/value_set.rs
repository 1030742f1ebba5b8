//! Sets of values in a column's domain, kept sorted: the values of an IN list (which may
//! hold millions of join keys), read from Arrow arrays, and tested against a batch through
//! a bitmap or hash set of the column's native values rather than one comparison per value.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{ArrowError, DataType, TimeUnit};

use crate::predicate::value::Value;

/// `$each!(T)` for the Arrow type `T` of a column whose values are integers in SQL's order
/// (integers, dates, decimals, timestamps), else `$otherwise`.
macro_rules! by_integer_type {
    ($data_type:expr, $each:ident, $otherwise:expr) => {
        match $data_type {
            DataType::Int8 => $each!(Int8Type),
            DataType::Int16 => $each!(Int16Type),
            DataType::Int32 => $each!(Int32Type),
            DataType::Int64 => $each!(Int64Type),
            DataType::UInt8 => $each!(UInt8Type),
            DataType::UInt16 => $each!(UInt16Type),
            DataType::UInt32 => $each!(UInt32Type),
            DataType::UInt64 => $each!(UInt64Type),
            DataType::Date32 => $each!(Date32Type),
            DataType::Date64 => $each!(Date64Type),
            DataType::Decimal128(..) => $each!(Decimal128Type),
            DataType::Timestamp(TimeUnit::Second, _) => $each!(TimestampSecondType),
            DataType::Timestamp(TimeUnit::Millisecond, _) => $each!(TimestampMillisecondType),
            DataType::Timestamp(TimeUnit::Microsecond, _) => $each!(TimestampMicrosecondType),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => $each!(TimestampNanosecondType),
            _ => $otherwise,
        }
    };
}

/// Sort by SQL order and drop duplicates (NaN equals NaN, -0.0 equals +0.0).
pub fn sort_dedup(values: &mut Vec<Value>) {
    values.sort_by(Value::sql_cmp);
    values.dedup_by(|a, b| a.sql_cmp(b) == Ordering::Equal);
}

/// Whether `sorted` (see `sort_dedup`) holds a value equal to `v`.
pub fn contains(sorted: &[Value], v: &Value) -> bool {
    sorted.binary_search_by(|x| x.sql_cmp(v)).is_ok()
}

/// Whether `sorted` holds a value `v` with `lo <= v <= hi` (either bound open when
/// `None`), under `cmp`.
pub fn any_between(
    sorted: &[Value],
    lo: Option<&Value>,
    hi: Option<&Value>,
    cmp: impl Fn(&Value, &Value) -> Ordering,
) -> bool {
    let start = match lo {
        Some(lo) => sorted.partition_point(|x| cmp(x, lo) == Ordering::Less),
        None => 0,
    };
    match (sorted.get(start), hi) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(first), Some(hi)) => cmp(first, hi) != Ordering::Greater,
    }
}

/// One value per row (`None` for NULL), as the column's domain holds it.
fn for_each_value(
    array: &dyn Array,
    f: &mut dyn FnMut(usize, Option<Value>),
) -> Result<(), ArrowError> {
    macro_rules! ints {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            for (i, v) in a.iter().enumerate() {
                f(i, v.map(|v| Value::Int(v as i128)));
            }
        }};
    }
    match array.data_type() {
        DataType::Boolean => {
            for (i, v) in array.as_boolean().iter().enumerate() {
                f(i, v.map(Value::Bool));
            }
        }
        DataType::Float32 => {
            for (i, v) in array.as_primitive::<Float32Type>().iter().enumerate() {
                f(i, v.map(|v| Value::Float(f64::from(v))));
            }
        }
        DataType::Float64 => {
            for (i, v) in array.as_primitive::<Float64Type>().iter().enumerate() {
                f(i, v.map(Value::Float));
            }
        }
        DataType::Utf8 => {
            for (i, v) in array.as_string::<i32>().iter().enumerate() {
                f(i, v.map(|s| Value::Bytes(s.as_bytes().to_vec())));
            }
        }
        DataType::LargeUtf8 => {
            for (i, v) in array.as_string::<i64>().iter().enumerate() {
                f(i, v.map(|s| Value::Bytes(s.as_bytes().to_vec())));
            }
        }
        DataType::Utf8View => {
            for (i, v) in array.as_string_view().iter().enumerate() {
                f(i, v.map(|s| Value::Bytes(s.as_bytes().to_vec())));
            }
        }
        DataType::Binary => {
            for (i, v) in array.as_binary::<i32>().iter().enumerate() {
                f(i, v.map(<[u8]>::to_vec).map(Value::Bytes));
            }
        }
        DataType::LargeBinary => {
            for (i, v) in array.as_binary::<i64>().iter().enumerate() {
                f(i, v.map(<[u8]>::to_vec).map(Value::Bytes));
            }
        }
        DataType::BinaryView => {
            for (i, v) in array.as_binary_view().iter().enumerate() {
                f(i, v.map(<[u8]>::to_vec).map(Value::Bytes));
            }
        }
        DataType::FixedSizeBinary(_) => {
            for (i, v) in array.as_fixed_size_binary().iter().enumerate() {
                f(i, v.map(<[u8]>::to_vec).map(Value::Bytes));
            }
        }
        other => by_integer_type!(other, ints, {
            return Err(ArrowError::NotYetImplemented(format!(
                "values of a {other} column"
            )));
        }),
    }
    Ok(())
}

/// The value at `row` of `array` (`None` for NULL).
pub fn value_at(array: &dyn Array, row: usize) -> Result<Option<Value>, ArrowError> {
    let one = array.slice(row, 1);
    let mut out = None;
    for_each_value(one.as_ref(), &mut |_, v| out = v)?;
    Ok(out)
}

/// The distinct non-NULL values of `array`, as a list. Integer columns (most join keys,
/// of which there may be millions) are sorted in their native values, with no `Value`
/// made until the duplicates are gone.
pub fn distinct_values(array: &dyn Array) -> Result<ValueList, ArrowError> {
    macro_rules! ints {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            return Ok(ValueList::from_ints(
                a.iter().flatten().map(|v| v as i128).collect(),
            ));
        }};
    }
    by_integer_type!(array.data_type(), ints, {});
    let mut out = Vec::with_capacity(array.len() - array.null_count());
    for_each_value(array, &mut |_, v| out.extend(v))?;
    Ok(ValueList::new(out))
}

/// The values of an IN list: sorted in SQL order and distinct (evidence sources search
/// them; see [`sort_dedup`]), shared by every copy of the predicate (a join's keys may be
/// millions, and a predicate is copied per file), and searched in a batch's native values
/// through sets made once, on first use, rather than once per batch.
#[derive(Clone)]
pub struct ValueList(Arc<Listed>);

struct Listed {
    values: Vec<Value>,
    /// The search set for integer-like columns (`None`: not every value is an integer).
    ints: OnceLock<Option<IntSet>>,
    /// The search set for string and binary columns (`None`: not every value is bytes).
    bytes: OnceLock<Option<ByteSet>>,
    /// The search set for float columns (`None`: not every value is a float).
    floats: OnceLock<Option<FloatSet>>,
}

impl ValueList {
    /// The list of `values`, sorted and with duplicates dropped.
    pub fn new(mut values: Vec<Value>) -> Self {
        let ints: Option<Vec<i128>> = values
            .iter()
            .map(|v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect();
        match ints {
            // Integers (most join keys) sort natively, without SQL's comparison per pair.
            Some(ints) => Self::from_ints(ints),
            None => {
                sort_dedup(&mut values);
                Self::sorted(values)
            }
        }
    }

    /// The list of the integers `ints`, in any order and with duplicates.
    fn from_ints(mut ints: Vec<i128>) -> Self {
        // Keys nearly always fit 64 bits, which sort in half the memory traffic.
        let narrow: Option<Vec<i64>> = ints.iter().map(|&i| i64::try_from(i).ok()).collect();
        if let Some(mut narrow) = narrow {
            drop(ints);
            narrow.sort_unstable();
            narrow.dedup();
            return Self::sorted(narrow.into_iter().map(|i| Value::Int(i.into())).collect());
        }
        ints.sort_unstable();
        ints.dedup();
        Self::sorted(ints.into_iter().map(Value::Int).collect())
    }

    /// `values` must be sorted and distinct.
    fn sorted(values: Vec<Value>) -> Self {
        ValueList(Arc::new(Listed {
            values,
            ints: OnceLock::new(),
            bytes: OnceLock::new(),
            floats: OnceLock::new(),
        }))
    }

    /// The values at `range` of this list, as a list of their own (still sorted and
    /// distinct).
    pub fn sublist(&self, range: std::ops::Range<usize>) -> Self {
        Self::sorted(self.0.values[range].to_vec())
    }

    pub fn as_slice(&self) -> &[Value] {
        &self.0.values
    }

    /// Whether the list holds a value equal to `v` in SQL.
    pub fn contains_value(&self, v: &Value) -> bool {
        contains(&self.0.values, v)
    }

    fn ints(&self) -> Option<&IntSet> {
        self.0
            .ints
            .get_or_init(|| {
                let sorted: Vec<i128> = self
                    .0
                    .values
                    .iter()
                    .map(|v| match v {
                        Value::Int(i) => Some(*i),
                        _ => None,
                    })
                    .collect::<Option<_>>()?;
                Some(IntSet::new(&sorted))
            })
            .as_ref()
    }

    fn bytes(&self) -> Option<&ByteSet> {
        self.0
            .bytes
            .get_or_init(|| {
                self.0
                    .values
                    .iter()
                    .map(|v| match v {
                        Value::Bytes(b) => Some(Box::<[u8]>::from(b.as_slice())),
                        _ => None,
                    })
                    .collect::<Option<ByteSet>>()
            })
            .as_ref()
    }
}

impl ValueList {
    fn floats(&self) -> Option<&FloatSet> {
        self.0
            .floats
            .get_or_init(|| {
                self.0
                    .values
                    .iter()
                    .map(|v| match v {
                        Value::Float(f) => Some(float_key(*f)),
                        _ => None,
                    })
                    .collect::<Option<FloatSet>>()
            })
            .as_ref()
    }
}

impl From<Vec<Value>> for ValueList {
    fn from(values: Vec<Value>) -> Self {
        Self::new(values)
    }
}

impl Deref for ValueList {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.0.values
    }
}

impl<'a> IntoIterator for &'a ValueList {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.values.iter()
    }
}

impl PartialEq for ValueList {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.values == other.0.values
    }
}

impl fmt::Debug for ValueList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.values.fmt(f)
    }
}

/// For each row of `array`: whether its value is in `list`, NULL where it is NULL.
pub fn membership(array: &ArrayRef, list: &ValueList) -> Result<BooleanArray, ArrowError> {
    let hits = match native_membership(array.as_ref(), list) {
        Some(hits) => hits,
        None => {
            let mut hits = vec![false; array.len()];
            for_each_value(array.as_ref(), &mut |i, v| {
                if let Some(v) = v {
                    hits[i] = list.contains_value(&v);
                }
            })?;
            BooleanBuffer::from(hits)
        }
    };
    Ok(BooleanArray::new(hits, array.logical_nulls()))
}

/// For a column of integers in SQL's order and a list of integers: whether each row's value
/// is in the list, NULL where it is NULL; `None` for other columns and lists.
pub fn integer_membership(array: &ArrayRef, list: &ValueList) -> Option<BooleanArray> {
    let hits = integer_hits(array.as_ref(), list)?;
    Some(BooleanArray::new(hits, array.logical_nulls()))
}

/// For each row of an integer column, whether its value is in the list of integers.
fn integer_hits(array: &dyn Array, list: &ValueList) -> Option<BooleanBuffer> {
    macro_rules! ints {
        ($t:ty) => {{
            let set = list.ints()?;
            let values = array.as_primitive::<$t>().values();
            BooleanBuffer::collect_bool(values.len(), |i| set.contains(values[i] as i128))
        }};
    }
    Some(by_integer_type!(array.data_type(), ints, return None))
}

/// Membership of integer, float and byte columns searched in the column's native values,
/// with no `Value` made per row (SQL order is numeric order for integers, byte order for
/// strings, and for floats the order of [`float_key`]). `None` for other columns and for
/// lists whose values are not all of the column's kind.
fn native_membership(array: &dyn Array, list: &ValueList) -> Option<BooleanBuffer> {
    macro_rules! bytes {
        ($a:expr) => {{
            let a = $a;
            let set = list.bytes()?;
            BooleanBuffer::collect_bool(a.len(), |i| {
                let v: &[u8] = a.value(i).as_ref();
                set.contains(v)
            })
        }};
    }
    macro_rules! floats {
        ($t:ty) => {{
            let set = list.floats()?;
            let values = array.as_primitive::<$t>().values();
            BooleanBuffer::collect_bool(values.len(), |i| {
                set.contains(&float_key(f64::from(values[i])))
            })
        }};
    }
    Some(match array.data_type() {
        DataType::Float32 => floats!(Float32Type),
        DataType::Float64 => floats!(Float64Type),
        DataType::Utf8 => bytes!(array.as_string::<i32>()),
        DataType::LargeUtf8 => bytes!(array.as_string::<i64>()),
        DataType::Utf8View => bytes!(array.as_string_view()),
        DataType::Binary => bytes!(array.as_binary::<i32>()),
        DataType::LargeBinary => bytes!(array.as_binary::<i64>()),
        DataType::BinaryView => bytes!(array.as_binary_view()),
        _ => return integer_hits(array, list),
    })
}

type ByteSet = HashSet<Box<[u8]>, foldhash::fast::RandomState>;

type FloatSet = HashSet<u64, foldhash::fast::RandomState>;

/// The bits of `f` with SQL's equalities made bitwise: every NaN the one canonical NaN,
/// -0.0 as +0.0. (A float32 column's values widen to f64 exactly.)
fn float_key(f: f64) -> u64 {
    if f.is_nan() {
        f64::NAN.to_bits()
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// A set of integers, searched the cheapest way its shape allows: a bitmap over its span
/// when that is small (join keys of a dimension's surrogate key are), else a hash set
/// behind a filter. A batch asks once per row, so a binary search over hundreds of keys
/// (eight unpredictable branches a row) would be most of a keyed scan's predicate time.
enum IntSet {
    Bitmap {
        lo: i128,
        span: u128,
        bits: Vec<u64>,
    },
    Hashed(Filtered),
}

/// A bitmap is used for spans up to this many bits (2 MiB), and at most this many bits
/// per value of the set.
const BITMAP_MAX_BITS: u128 = 1 << 24;
const BITMAP_BITS_PER_VALUE: u128 = 1024;

impl IntSet {
    /// `sorted` must be sorted.
    fn new(sorted: &[i128]) -> Self {
        if let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) {
            let span = hi.abs_diff(lo);
            if span < BITMAP_MAX_BITS && span < BITMAP_BITS_PER_VALUE * sorted.len() as u128 {
                let mut bits = vec![0u64; (span / 64 + 1) as usize];
                for v in sorted {
                    let d = v.abs_diff(lo);
                    bits[(d / 64) as usize] |= 1 << (d % 64);
                }
                return Self::Bitmap { lo, span, bits };
            }
        }
        Self::Hashed(Filtered::new(sorted))
    }

    #[inline]
    fn contains(&self, v: i128) -> bool {
        match self {
            Self::Bitmap { lo, span, bits } => {
                if v < *lo {
                    return false;
                }
                let d = v.abs_diff(*lo);
                d <= *span && bits[(d / 64) as usize] & (1 << (d % 64)) != 0
            }
            Self::Hashed(h) => h.contains(v),
        }
    }
}

/// A hash set behind a one-hash filter of its values' multiplicative hashes. Nearly every
/// row of a scan holds a value outside the set; the filter answers those with one load
/// from a bitmap that stays in cache, where the hash set would hash 16 bytes and probe.
struct Filtered {
    /// One bit per slot; a value's slot is the top bits of its hash.
    filter: Vec<u64>,
    /// 64 minus the slot count's log2.
    shift: u32,
    set: HashSet<i128, foldhash::fast::RandomState>,
}

/// The filter has about this many bits per value of the set (a value outside the set
/// passes it with a chance of about 1/16), from 1 KiB bits to 8 Mi bits (1 MiB).
const FILTER_BITS_PER_VALUE: usize = 16;
const FILTER_MIN_BITS: usize = 1 << 10;
const FILTER_MAX_BITS: usize = 1 << 23;

impl Filtered {
    fn new(values: &[i128]) -> Self {
        let bits = (values.len() * FILTER_BITS_PER_VALUE)
            .next_power_of_two()
            .clamp(FILTER_MIN_BITS, FILTER_MAX_BITS);
        let shift = 64 - bits.trailing_zeros();
        let mut filter = vec![0u64; bits / 64];
        for &v in values {
            let slot = Self::slot(v, shift);
            filter[slot / 64] |= 1 << (slot % 64);
        }
        Filtered {
            filter,
            shift,
            set: values.iter().copied().collect(),
        }
    }

    /// Fibonacci hashing of the value's two halves folded together: keys that differ only
    /// in their high bits, or are all multiples of a power of two, still spread.
    #[inline]
    fn slot(v: i128, shift: u32) -> usize {
        let folded = (v as u64) ^ ((v >> 64) as u64);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
    }

    #[inline]
    fn contains(&self, v: i128) -> bool {
        let slot = Self::slot(v, self.shift);
        self.filter[slot / 64] & (1 << (slot % 64)) != 0 && self.set.contains(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, StringArray};

    #[test]
    fn sets_are_sorted_and_searched_in_sql_order() {
        let mut v = vec![
            Value::Float(f64::NAN),
            Value::Float(1.0),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(-f64::NAN),
        ];
        sort_dedup(&mut v);
        assert_eq!(v.len(), 3);
        assert!(contains(&v, &Value::Float(0.0)));
        assert!(contains(&v, &Value::Float(f64::NAN)));
        let ints: Vec<Value> = [1, 5, 9].into_iter().map(Value::Int).collect();
        let cmp = |a: &Value, b: &Value| a.sql_cmp(b);
        assert!(any_between(
            &ints,
            Some(&Value::Int(2)),
            Some(&Value::Int(5)),
            cmp
        ));
        assert!(!any_between(
            &ints,
            Some(&Value::Int(6)),
            Some(&Value::Int(8)),
            cmp
        ));
        assert!(!any_between(&ints, Some(&Value::Int(10)), None, cmp));
        assert!(any_between(&ints, None, Some(&Value::Int(1)), cmp));
    }

    #[test]
    fn membership_keeps_nulls() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(7)]));
        let set =
            distinct_values(&Int32Array::from(vec![Some(7), None, Some(3), Some(7)])).unwrap();
        assert_eq!(set.as_slice(), &[Value::Int(3), Value::Int(7)]);
        let m = membership(&a, &set).unwrap();
        assert!(!m.value(0) && m.is_null(1) && m.value(2));
        let s: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let m = membership(&s, &vec![Value::Bytes(b"b".to_vec())].into()).unwrap();
        assert!(!m.value(0) && m.value(1));
        let f: ArrayRef = Arc::new(Float64Array::from(vec![-0.0, f64::NAN]));
        let list = vec![Value::Float(0.0), Value::Float(f64::NAN)].into();
        let m = membership(&f, &list).unwrap();
        assert!(m.value(0) && m.value(1));
    }

    #[test]
    fn float_sets_answer_as_sql_equality() {
        use arrow_array::Float32Array;
        let odd_nan = f64::from_bits(f64::NAN.to_bits() | 0x8000_0000_0001);
        let listed = [0.5, -0.0, odd_nan, 1e300, -7.25, f64::from(0.1f32)];
        let list: ValueList = listed
            .iter()
            .map(|&f| Value::Float(f))
            .collect::<Vec<_>>()
            .into();
        let rows64 = [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            0.1,
            f64::from(0.1f32),
            -7.25,
            2.0,
        ];
        let rows32: Vec<f32> = rows64.iter().map(|&f| f as f32).collect();
        let arrays: [ArrayRef; 2] = [
            Arc::new(Float64Array::from(rows64.to_vec())),
            Arc::new(Float32Array::from(rows32)),
        ];
        for a in arrays {
            let hits = native_membership(a.as_ref(), &list).expect("a float set");
            let mut expected = Vec::new();
            for_each_value(a.as_ref(), &mut |_, v| {
                expected.push(list.contains_value(&v.unwrap()))
            })
            .unwrap();
            assert_eq!(
                hits.iter().collect::<Vec<_>>(),
                expected,
                "{:?}",
                a.data_type()
            );
            // Every zero and NaN; 0.1 only as a float32 holds it; -7.25; not 2.0.
            let wide = a.data_type() == &DataType::Float64;
            assert_eq!(
                expected.iter().filter(|&&h| h).count(),
                if wide { 6 } else { 7 }
            );
        }
        // A list that is not all floats keeps the search by `Value`.
        let mixed: ValueList = vec![Value::Float(1.0), Value::Int(2)].into();
        let one: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        assert!(native_membership(one.as_ref(), &mixed).is_none());
    }

    #[test]
    fn integer_sets_of_every_shape_answer_as_a_binary_search() {
        // Dense (a bitmap, with values at both ends of its span and at the extremes of
        // i128) and sparse (hashed).
        let shapes: Vec<Vec<i128>> = vec![
            vec![],
            vec![5],
            (0..10).map(|i| i * 3 - 7).collect(),
            (0..300).map(|i| i * 5 - 700).collect(),
            (0..64).map(|i| i * 64 + 63).collect(),
            (0..200)
                .map(|i| i * 1_000_003 + i128::from(i64::MIN))
                .collect(),
            (0..40).map(|i| i128::MAX - 1000 + i * 25).collect(),
            (0..40).map(|i| i128::MIN + i * 25).collect(),
            // Hashed: multiples of a power of two, and keys apart only in their high half.
            (0..500).map(|i| (i - 250) << 40).collect(),
            (0..500).map(|i| (i - 250) << 64).collect(),
            (0..500).map(|i| ((i - 250) << 64) + 7).collect(),
        ];
        for sorted in shapes {
            let set = IntSet::new(&sorted);
            let probes = sorted
                .iter()
                .flat_map(|v| [v.saturating_sub(1), *v, v.saturating_add(1)])
                .chain([i128::MIN, i128::MAX, 0, -1, 1, i128::from(i64::MIN)]);
            for p in probes {
                assert_eq!(set.contains(p), sorted.binary_search(&p).is_ok(), "{p}");
            }
        }
        let dense: Vec<i128> = (0..300).collect();
        assert!(matches!(IntSet::new(&dense), IntSet::Bitmap { .. }));
        let sparse: Vec<i128> = (0..300).map(|i| i * 1_000_000_007).collect();
        assert!(matches!(IntSet::new(&sparse), IntSet::Hashed(_)));
    }

    #[test]
    fn the_filter_before_a_hash_set_turns_away_most_values_outside_it() {
        // Ten keys spread over six million (an IN list of order keys), and keys that share
        // their low 40 bits: about one value in sixteen outside the set may pass.
        let spread: Vec<i128> = (0..10).map(|i| 300_256 + i * 600_077).collect();
        let aligned: Vec<i128> = (0..1000).map(|i| i << 40).collect();
        for keys in [spread, aligned] {
            let Filtered { filter, shift, set } = Filtered::new(&keys);
            let step = keys[1] - keys[0];
            let probes: Vec<i128> = (0..100_000).map(|i| keys[0] + 1 + i * step / 997).collect();
            let outside = probes.iter().filter(|p| !set.contains(p)).count();
            let passed = probes
                .iter()
                .filter(|&&p| !set.contains(&p))
                .filter(|&&p| {
                    let slot = Filtered::slot(p, shift);
                    filter[slot / 64] & (1 << (slot % 64)) != 0
                })
                .count();
            assert!(outside > 90_000, "{outside}");
            assert!(passed * 8 < outside, "{passed} of {outside} passed");
        }
    }

    #[test]
    fn a_list_is_sorted_and_distinct_and_its_copies_share_one_search_set() {
        let list = ValueList::new([9, 1, 5, 1, -3, 9].map(Value::Int).to_vec());
        assert_eq!(list.as_slice(), &[-3, 1, 5, 9].map(Value::Int));
        let words = ValueList::from(vec![
            Value::Bytes(b"b".to_vec()),
            Value::Bytes(b"a".to_vec()),
            Value::Bytes(b"b".to_vec()),
        ]);
        assert_eq!(words.len(), 2);
        assert!(words.contains_value(&Value::Bytes(b"a".to_vec())));
        let copy = list.clone();
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5, 6]));
        membership(&a, &list).unwrap();
        // The copy finds the set the original made.
        assert!(std::ptr::eq(
            copy.ints().unwrap() as *const IntSet,
            list.ints().unwrap() as *const IntSet
        ));
        assert_eq!(copy, ValueList::new([1, 5, 9, -3].map(Value::Int).to_vec()));
        // A list that is not all integers has no integer set.
        assert!(words.ints().is_none() && list.bytes().is_none());
    }

    #[test]
    fn distinct_values_of_integer_columns_of_every_width() {
        use arrow_array::{Int64Array, UInt64Array};
        let wide = UInt64Array::from(vec![Some(u64::MAX), None, Some(3), Some(u64::MAX), Some(0)]);
        let expected = [0, 3, i128::from(u64::MAX)].map(Value::Int);
        assert_eq!(distinct_values(&wide).unwrap().as_slice(), &expected);
        let narrow = Int64Array::from(vec![Some(-5), Some(i64::MIN), None, Some(-5)]);
        let expected = [i128::from(i64::MIN), -5].map(Value::Int);
        assert_eq!(distinct_values(&narrow).unwrap().as_slice(), &expected);
        let none = Int64Array::from(vec![None, None]);
        assert!(distinct_values(&none).unwrap().is_empty());
    }

    #[test]
    fn native_membership_agrees_with_the_generic_search() {
        use arrow_array::{StringViewArray, UInt64Array};
        let set: Vec<Value> = (0..40).map(|i| Value::Int(i * 7)).collect();
        let u: ArrayRef = Arc::new(UInt64Array::from(
            (0..300u64)
                .map(|i| (i % 5 != 0).then_some(i))
                .collect::<Vec<_>>(),
        ));
        let words: Vec<Option<String>> = (0..300)
            .map(|i| (i % 7 != 0).then(|| format!("w{}", i % 50)))
            .collect();
        let bytes: Vec<Value> = (0..40)
            .map(|i| Value::Bytes(format!("w{}", i * 3).into_bytes()))
            .collect();
        let mut bytes_sorted = bytes.clone();
        sort_dedup(&mut bytes_sorted);
        let (set, bytes_sorted) = (ValueList::new(set), ValueList::new(bytes_sorted));
        let cases: Vec<(ArrayRef, &ValueList)> = vec![
            (u, &set),
            (Arc::new(StringArray::from(words.clone())), &bytes_sorted),
            (
                Arc::new(StringViewArray::from(words.clone())),
                &bytes_sorted,
            ),
            (
                Arc::new(StringArray::from(words[..30].to_vec())),
                &bytes_sorted,
            ),
        ];
        for (array, set) in cases {
            let fast = membership(&array, set).unwrap();
            let mut slow = Vec::new();
            for_each_value(array.as_ref(), &mut |_, v| {
                slow.push(v.map(|v| contains(set, &v)));
            })
            .unwrap();
            assert_eq!(fast, BooleanArray::from(slow));
            assert!(fast.true_count() > 0);
        }
    }
}
