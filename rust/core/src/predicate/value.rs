//! Typed scalar values in a column's own domain, ordered the way DuckDB orders them.
//!
//! Every integer-like type (signed and unsigned integers, dates in days, timestamps in their
//! unit, decimals as unscaled integers) is an `Int` in `i128`, which holds `u64` and every
//! 38-digit decimal, so statistics, literals and partition values compare without casts.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Date64Array,
    Decimal128Array, FixedSizeBinaryArray, Float16Array, Float32Array, Float64Array, Int16Array,
    Int32Array, Int64Array, Int8Array, LargeBinaryArray, LargeStringArray, StringArray,
    StringViewArray, Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray,
    Time64NanosecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i128),
    Float(f64),
    Bytes(Vec<u8>),
}

impl Value {
    /// SQL ordering within one type: NaN is the largest float and equal to itself, and
    /// -0.0 equals +0.0 (DuckDB's and Spark's order). Values of different kinds never meet:
    /// binding coerces both sides into the column's domain.
    pub fn sql_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => float_cmp(*a, *b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (a, b) => kind_rank(a).cmp(&kind_rank(b)),
        }
    }

    pub fn is_nan(&self) -> bool {
        matches!(self, Value::Float(f) if f.is_nan())
    }
}

fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Bool(_) => 0,
        Value::Int(_) => 1,
        Value::Float(_) => 2,
        Value::Bytes(_) => 3,
    }
}

/// Floats under SQL order: NaN largest and equal to NaN; -0.0 == +0.0.
pub fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => write!(f, "'{}'", s.replace('\'', "''")),
                Err(_) => {
                    write!(f, "X'")?;
                    for byte in b {
                        write!(f, "{byte:02X}")?;
                    }
                    write!(f, "'")
                }
            },
        }
    }
}

/// The domain a column's values live in, derived from its Arrow type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    Bool,
    /// Integers with inclusive bounds; `scale` is the decimal scale, `unit_ns` the length of
    /// one step in nanoseconds for dates and timestamps.
    Int {
        min: i128,
        max: i128,
        kind: IntKind,
    },
    Float32,
    Float64,
    Utf8,
    Binary,
    /// A UUID (16 bytes, the Parquet UUID logical type): text literals are read as UUIDs,
    /// as DuckDB casts them, and the bytes compare as unsigned bytes.
    Uuid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntKind {
    Integer,
    Decimal {
        scale: i8,
    },
    Date,
    Timestamp {
        unit_ns: i128,
        tz: bool,
    },
    /// A time of day, in steps of `unit_ns` nanoseconds since midnight.
    Time {
        unit_ns: i128,
    },
}

impl Domain {
    /// The domain of an Arrow type, or `None` when predicates on it are not supported.
    pub fn of(data_type: &DataType) -> Option<Domain> {
        use DataType::*;
        let int = |min: i128, max: i128| Domain::Int {
            min,
            max,
            kind: IntKind::Integer,
        };
        Some(match data_type {
            Boolean => Domain::Bool,
            Int8 => int(i8::MIN as i128, i8::MAX as i128),
            Int16 => int(i16::MIN as i128, i16::MAX as i128),
            Int32 => int(i32::MIN as i128, i32::MAX as i128),
            Int64 => int(i64::MIN as i128, i64::MAX as i128),
            UInt8 => int(0, u8::MAX as i128),
            UInt16 => int(0, u16::MAX as i128),
            UInt32 => int(0, u32::MAX as i128),
            UInt64 => int(0, u64::MAX as i128),
            // Half floats compare as FLOAT, as DuckDB reads them.
            Float16 | Float32 => Domain::Float32,
            Float64 => Domain::Float64,
            Utf8 | LargeUtf8 | Utf8View => Domain::Utf8,
            Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => Domain::Binary,
            Date32 => Domain::Int {
                min: i32::MIN as i128,
                max: i32::MAX as i128,
                kind: IntKind::Date,
            },
            // Not bounded by the declared precision: files hold values beyond it (the
            // reader does not check them), and a literal beyond it may equal one.
            Decimal128(_, s) => Domain::Int {
                min: i128::MIN,
                max: i128::MAX,
                kind: IntKind::Decimal { scale: *s },
            },
            Time32(unit) => Domain::Int {
                min: i32::MIN as i128,
                max: i32::MAX as i128,
                kind: IntKind::Time {
                    unit_ns: unit_ns(unit),
                },
            },
            Time64(unit) => Domain::Int {
                min: i64::MIN as i128,
                max: i64::MAX as i128,
                kind: IntKind::Time {
                    unit_ns: unit_ns(unit),
                },
            },
            Timestamp(unit, tz) => Domain::Int {
                min: i64::MIN as i128,
                max: i64::MAX as i128,
                kind: IntKind::Timestamp {
                    unit_ns: unit_ns(unit),
                    tz: tz.is_some(),
                },
            },
            Dictionary(_, value) => return Domain::of(value),
            _ => return None,
        })
    }
}

pub fn unit_ns(unit: &TimeUnit) -> i128 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// A one-element array holding `value` as `data_type`, for arrow's comparison kernels.
pub fn to_scalar_array(value: &Value, data_type: &DataType) -> Result<ArrayRef> {
    use DataType::*;
    let mismatch = || {
        Error::predicate(format!(
            "internal: value {value} does not fit column type {data_type}"
        ))
    };
    let int = |v: &Value| -> Result<i128> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err(mismatch()),
        }
    };
    macro_rules! prim {
        ($arr:ty, $t:ty) => {{
            let v = <$t>::try_from(int(value)?).map_err(|_| mismatch())?;
            Arc::new(<$arr>::from(vec![v])) as ArrayRef
        }};
    }
    let bytes = |v: &Value| -> Result<Vec<u8>> {
        match v {
            Value::Bytes(b) => Ok(b.clone()),
            _ => Err(mismatch()),
        }
    };
    Ok(match data_type {
        Boolean => match value {
            Value::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
            _ => return Err(mismatch()),
        },
        Int8 => prim!(Int8Array, i8),
        Int16 => prim!(Int16Array, i16),
        Int32 => prim!(Int32Array, i32),
        Int64 => prim!(Int64Array, i64),
        UInt8 => prim!(UInt8Array, u8),
        UInt16 => prim!(UInt16Array, u16),
        UInt32 => prim!(UInt32Array, u32),
        UInt64 => prim!(UInt64Array, u64),
        Date32 => prim!(Date32Array, i32),
        Date64 => prim!(Date64Array, i64),
        Float16 => match value {
            Value::Float(f) => Arc::new(Float16Array::from(vec![half::f16::from_f64(*f)])),
            _ => return Err(mismatch()),
        },
        Float32 => match value {
            Value::Float(f) => Arc::new(Float32Array::from(vec![*f as f32])),
            _ => return Err(mismatch()),
        },
        Float64 => match value {
            Value::Float(f) => Arc::new(Float64Array::from(vec![*f])),
            _ => return Err(mismatch()),
        },
        Decimal128(p, s) => {
            Arc::new(Decimal128Array::from(vec![int(value)?]).with_precision_and_scale(*p, *s)?)
        }
        Time32(TimeUnit::Second) => prim!(Time32SecondArray, i32),
        Time32(TimeUnit::Millisecond) => prim!(Time32MillisecondArray, i32),
        Time64(TimeUnit::Microsecond) => prim!(Time64MicrosecondArray, i64),
        Time64(TimeUnit::Nanosecond) => prim!(Time64NanosecondArray, i64),
        Timestamp(unit, tz) => {
            let v = i64::try_from(int(value)?).map_err(|_| mismatch())?;
            match unit {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from(vec![v]).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from(vec![v]).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from(vec![v]).with_timezone_opt(tz.clone()))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from(vec![v]).with_timezone_opt(tz.clone()))
                }
            }
        }
        Utf8 => Arc::new(StringArray::from(vec![utf8(bytes(value)?)?])),
        LargeUtf8 => Arc::new(LargeStringArray::from(vec![utf8(bytes(value)?)?])),
        Utf8View => Arc::new(StringViewArray::from(vec![utf8(bytes(value)?)?])),
        Binary => Arc::new(BinaryArray::from_vec(vec![&bytes(value)?[..]])),
        LargeBinary => Arc::new(LargeBinaryArray::from_vec(vec![&bytes(value)?[..]])),
        BinaryView => Arc::new(BinaryViewArray::from_iter_values([bytes(value)?])),
        FixedSizeBinary(n) => {
            let b = bytes(value)?;
            if b.len() != *n as usize {
                return Err(mismatch());
            }
            Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(b))?)
        }
        _ => return Err(mismatch()),
    })
}

fn utf8(b: Vec<u8>) -> Result<String> {
    String::from_utf8(b).map_err(|_| Error::predicate("string literal is not valid UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_order_is_sql_order() {
        assert_eq!(float_cmp(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(float_cmp(f64::NAN, -f64::NAN), Ordering::Equal);
        assert_eq!(float_cmp(-0.0, 0.0), Ordering::Equal);
        assert_eq!(float_cmp(-1.0, 0.0), Ordering::Less);
    }

    #[test]
    fn unsigned_64_fits() {
        let a = to_scalar_array(&Value::Int(u64::MAX as i128), &DataType::UInt64).unwrap();
        assert_eq!(a.len(), 1);
        assert!(to_scalar_array(&Value::Int(-1), &DataType::UInt64).is_err());
    }
}
