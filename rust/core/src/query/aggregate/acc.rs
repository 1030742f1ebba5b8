//! The running state of the aggregates over one column, fed from index units (whose rows
//! all satisfy the predicate) and from the matching rows read from data pages, and turned
//! into DuckDB's result types at the end.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, Decimal128Array, Float64Array};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};
use crate::index::aggregates::{FloatSum, Sum, UnitStats};
use crate::predicate::expr::ColumnRef;
use crate::predicate::value::{float_cmp, to_scalar_array, Domain, IntKind, Value};
use crate::prune::statistics::decode;

/// Largest magnitude of a DECIMAL(38) result.
const DECIMAL38: i128 = 10i128.pow(38);

/// Aggregates of one column so far.
#[derive(Debug, Clone, Default)]
pub struct ColumnAcc {
    /// Non-null values, NaNs included.
    pub count: u64,
    pub nans: u64,
    pub min: Option<Value>,
    pub max: Option<Value>,
    pub int_sum: i128,
    pub float_sum: FloatSum,
    overflow: bool,
}

/// What the aggregates of a column need from each index unit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    pub bounds: bool,
    pub sum: bool,
}

fn ordered(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => float_cmp(*x, *y),
        _ => a.sql_cmp(b),
    }
}

impl ColumnAcc {
    fn value(&mut self, v: Value) {
        if self.min.as_ref().is_none_or(|m| ordered(&v, m).is_lt()) {
            self.min = Some(v.clone());
        }
        if self.max.as_ref().is_none_or(|m| ordered(&v, m).is_gt()) {
            self.max = Some(v);
        }
    }

    fn add_int(&mut self, x: i128) {
        match self.int_sum.checked_add(x) {
            Some(s) => self.int_sum = s,
            None => self.overflow = true,
        }
    }

    /// Fold in one index unit of `rows` rows, if it has what `needs` asks for; `false`
    /// when it does not (its rows must then be read).
    pub fn unit(
        &mut self,
        rows: u64,
        u: &UnitStats,
        needs: Needs,
        physical: parquet::basic::Type,
        col: &ColumnRef,
    ) -> bool {
        let values = rows - u.nulls - u.nans;
        let bounds = match (&u.min, &u.max) {
            (Some(min), Some(max)) => {
                match (decode(min, physical, col), decode(max, physical, col)) {
                    (Some(a), Some(b)) => Some((a, b)),
                    _ => None,
                }
            }
            _ => None,
        };
        if needs.bounds && values > 0 && bounds.is_none() {
            return false;
        }
        let sum_ok = matches!(
            (u.sum, col.domain),
            (Some(Sum::Int(_)), Domain::Int { .. })
                | (Some(Sum::Float(_)), Domain::Float32 | Domain::Float64)
        );
        if needs.sum && !sum_ok {
            return false;
        }
        self.count += values + u.nans;
        self.nans += u.nans;
        if let Some((a, b)) = bounds.filter(|_| values > 0) {
            self.value(a);
            self.value(b);
        }
        match u.sum {
            Some(Sum::Int(s)) if needs.sum => self.add_int(s),
            Some(Sum::Float(s)) if needs.sum => self.float_sum.add(s),
            _ => {}
        }
        true
    }

    /// Fold in the values of `array` (rows that satisfy the predicate).
    pub fn array(&mut self, array: &ArrayRef, col: &ColumnRef) -> Result<()> {
        let array = match array.data_type() {
            DataType::Dictionary(_, value) => arrow_cast::cast(array, value)?,
            _ => array.clone(),
        };
        match col.domain {
            Domain::Int { .. } => self.ints(&array),
            Domain::Float32 | Domain::Float64 => {
                let floats = arrow_cast::cast(&array, &DataType::Float64)?;
                for x in floats.as_primitive::<Float64Type>().iter().flatten() {
                    self.count += 1;
                    if x.is_nan() {
                        self.nans += 1;
                    } else {
                        self.value(Value::Float(x));
                        self.float_sum.add(x);
                    }
                }
                Ok(())
            }
            Domain::Utf8 | Domain::Binary | Domain::Uuid => {
                let bytes = arrow_cast::cast(&array, &DataType::LargeBinary)?;
                for b in bytes.as_binary::<i64>().iter().flatten() {
                    self.count += 1;
                    self.value(Value::Bytes(b.to_vec()));
                }
                Ok(())
            }
            Domain::Bool => {
                for b in array.as_boolean().iter().flatten() {
                    self.count += 1;
                    self.value(Value::Bool(b));
                }
                Ok(())
            }
        }
    }

    fn ints(&mut self, array: &ArrayRef) -> Result<()> {
        fn fold<T: ArrowPrimitiveType>(acc: &mut ColumnAcc, array: &ArrayRef)
        where
            T::Native: Into<i128>,
        {
            for x in array.as_primitive::<T>().iter().flatten() {
                let x: i128 = x.into();
                acc.count += 1;
                acc.value(Value::Int(x));
                acc.add_int(x);
            }
        }
        use DataType::*;
        match array.data_type() {
            Int8 => fold::<Int8Type>(self, array),
            Int16 => fold::<Int16Type>(self, array),
            Int32 => fold::<Int32Type>(self, array),
            Int64 => fold::<Int64Type>(self, array),
            UInt8 => fold::<UInt8Type>(self, array),
            UInt16 => fold::<UInt16Type>(self, array),
            UInt32 => fold::<UInt32Type>(self, array),
            UInt64 => fold::<UInt64Type>(self, array),
            Decimal128(..) => fold::<Decimal128Type>(self, array),
            Date32 => fold::<Date32Type>(self, array),
            Date64 => fold::<Date64Type>(self, array),
            Timestamp(TimeUnit::Second, _) => fold::<TimestampSecondType>(self, array),
            Timestamp(TimeUnit::Millisecond, _) => fold::<TimestampMillisecondType>(self, array),
            Timestamp(TimeUnit::Microsecond, _) => fold::<TimestampMicrosecondType>(self, array),
            Timestamp(TimeUnit::Nanosecond, _) => fold::<TimestampNanosecondType>(self, array),
            other => {
                return Err(Error::unsupported(format!(
                    "aggregates over {other} columns are not supported"
                )))
            }
        }
        Ok(())
    }

    /// `min` or `max` as a one-row array of the column's type (NaN is the largest float).
    pub fn bound(&self, max: bool, col: &ColumnRef) -> Result<ArrayRef> {
        let v = if self.count == 0 {
            None
        } else if self.nans > 0 && (max || self.count == self.nans) {
            Some(Value::Float(f64::NAN))
        } else if max {
            self.max.clone()
        } else {
            self.min.clone()
        };
        match v {
            Some(v) => to_scalar_array(&v, &col.data_type),
            None => Ok(arrow_array::new_null_array(&col.data_type, 1)),
        }
    }

    /// `sum` in DuckDB's result type: DECIMAL(38, scale) for integers and decimals, DOUBLE
    /// for floats; NULL over no values.
    pub fn sum(&self, col: &ColumnRef) -> Result<ArrayRef> {
        match col.domain {
            Domain::Int {
                kind: kind @ (IntKind::Integer | IntKind::Decimal { .. }),
                ..
            } => {
                let scale = match kind {
                    IntKind::Decimal { scale } => scale,
                    _ => 0,
                };
                if self.overflow || self.int_sum.unsigned_abs() >= DECIMAL38 as u128 {
                    return Err(Error::InvalidArgument(format!(
                        "sum({}) overflows DECIMAL(38)",
                        col.name
                    )));
                }
                let v = (self.count > 0).then_some(self.int_sum);
                Ok(Arc::new(
                    Decimal128Array::from(vec![v]).with_precision_and_scale(38, scale)?,
                ))
            }
            Domain::Float32 | Domain::Float64 => Ok(Arc::new(Float64Array::from(vec![(self
                .count
                > 0)
            .then(|| {
                if self.nans > 0 {
                    f64::NAN
                } else {
                    self.float_sum.value()
                }
            })]))),
            _ => Err(sum_unsupported(col)),
        }
    }

    /// `avg` as DOUBLE.
    pub fn avg(&self, col: &ColumnRef) -> Result<ArrayRef> {
        let values = self.count;
        let v = match col.domain {
            _ if values == 0 => None,
            Domain::Int {
                kind: kind @ (IntKind::Integer | IntKind::Decimal { .. }),
                ..
            } => {
                let scale = match kind {
                    IntKind::Decimal { scale } => i32::from(scale),
                    _ => 0,
                };
                Some(self.int_sum as f64 / values as f64 / 10f64.powi(scale))
            }
            Domain::Float32 | Domain::Float64 if self.nans > 0 => Some(f64::NAN),
            Domain::Float32 | Domain::Float64 => Some(self.float_sum.value() / values as f64),
            _ => return Err(sum_unsupported(col)),
        };
        Ok(Arc::new(Float64Array::from(vec![v])))
    }
}

/// Whether `sum` and `avg` apply to the column.
pub fn summable(col: &ColumnRef) -> bool {
    matches!(
        col.domain,
        Domain::Int {
            kind: IntKind::Integer | IntKind::Decimal { .. },
            ..
        } | Domain::Float32
            | Domain::Float64
    )
}

pub fn sum_unsupported(col: &ColumnRef) -> Error {
    Error::unsupported(format!(
        "sum and avg need a numeric column; {} is {}",
        col.name, col.data_type
    ))
}
