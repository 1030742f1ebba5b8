//! Values out of Arrow arrays, in a column's domain: what table metadata (Delta's parsed
//! statistics and partition values, Iceberg's bounds) becomes for pruning.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use crate::predicate::Value;

/// The value at `row` of `array` after casting it to `target` (the column's logical type),
/// or `None` when it is NULL, cannot be cast, or has no domain pqindex prunes with.
pub fn value_as(array: &ArrayRef, row: usize, target: &DataType) -> Option<Value> {
    let one = array.slice(row, 1);
    let one = if one.data_type() == target {
        one
    } else {
        arrow_cast::cast(&one, target).ok()?
    };
    scalar(&one)
}

/// The single value of a one-row array.
fn scalar(a: &ArrayRef) -> Option<Value> {
    if a.is_null(0) {
        return None;
    }
    Some(match a.data_type() {
        DataType::Boolean => Value::Bool(a.as_boolean().value(0)),
        DataType::Int8 => Value::Int(a.as_primitive::<Int8Type>().value(0).into()),
        DataType::Int16 => Value::Int(a.as_primitive::<Int16Type>().value(0).into()),
        DataType::Int32 => Value::Int(a.as_primitive::<Int32Type>().value(0).into()),
        DataType::Int64 => Value::Int(a.as_primitive::<Int64Type>().value(0).into()),
        DataType::UInt8 => Value::Int(a.as_primitive::<UInt8Type>().value(0).into()),
        DataType::UInt16 => Value::Int(a.as_primitive::<UInt16Type>().value(0).into()),
        DataType::UInt32 => Value::Int(a.as_primitive::<UInt32Type>().value(0).into()),
        DataType::UInt64 => Value::Int(a.as_primitive::<UInt64Type>().value(0).into()),
        DataType::Float32 => Value::Float(a.as_primitive::<Float32Type>().value(0).into()),
        DataType::Float64 => Value::Float(a.as_primitive::<Float64Type>().value(0)),
        DataType::Date32 => Value::Int(a.as_primitive::<Date32Type>().value(0).into()),
        DataType::Decimal128(..) => Value::Int(a.as_primitive::<Decimal128Type>().value(0)),
        DataType::Timestamp(TimeUnit::Second, _) => {
            Value::Int(a.as_primitive::<TimestampSecondType>().value(0).into())
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            Value::Int(a.as_primitive::<TimestampMillisecondType>().value(0).into())
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Value::Int(a.as_primitive::<TimestampMicrosecondType>().value(0).into())
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            Value::Int(a.as_primitive::<TimestampNanosecondType>().value(0).into())
        }
        DataType::Utf8 => Value::Bytes(a.as_string::<i32>().value(0).as_bytes().to_vec()),
        DataType::LargeUtf8 => Value::Bytes(a.as_string::<i64>().value(0).as_bytes().to_vec()),
        DataType::Utf8View => Value::Bytes(a.as_string_view().value(0).as_bytes().to_vec()),
        DataType::Binary => Value::Bytes(a.as_binary::<i32>().value(0).to_vec()),
        DataType::LargeBinary => Value::Bytes(a.as_binary::<i64>().value(0).to_vec()),
        _ => return None,
    })
}

/// A partition value as table metadata writes it (text), as a value of `target`.
pub fn from_text(text: Option<&str>, target: &DataType) -> Option<Value> {
    let text = text?;
    let array: ArrayRef = std::sync::Arc::new(arrow_array::StringArray::from(vec![text]));
    value_as(&array, 0, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_arrays_become_domain_values() {
        assert_eq!(
            from_text(Some("42"), &DataType::Int64),
            Some(Value::Int(42))
        );
        assert_eq!(
            from_text(Some("2024-02-29"), &DataType::Date32),
            Some(Value::Int(19782))
        );
        assert_eq!(
            from_text(Some("12.50"), &DataType::Decimal128(10, 2)),
            Some(Value::Int(1250))
        );
        assert_eq!(
            from_text(Some("a b"), &DataType::Utf8),
            Some(Value::Bytes(b"a b".to_vec()))
        );
        assert_eq!(from_text(None, &DataType::Utf8), None);
        assert_eq!(from_text(Some("x"), &DataType::Int32), None);
        let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
        assert_eq!(
            from_text(Some("1970-01-01 00:00:01"), &micros),
            Some(Value::Int(1_000_000))
        );
        // Widened: an Int32 array read as Int64.
        let a: ArrayRef = std::sync::Arc::new(arrow_array::Int32Array::from(vec![Some(7), None]));
        assert_eq!(value_as(&a, 0, &DataType::Int64), Some(Value::Int(7)));
        assert_eq!(value_as(&a, 1, &DataType::Int64), None);
    }
}
