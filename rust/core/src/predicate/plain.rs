//! A literal as writers plain-encode it: the bytes a Parquet bloom filter hashes and a
//! dictionary page holds for the value.
//!
//! Small and unsigned integers are their INT32 bits, UINT64 its INT64 bits, decimals
//! INT32/INT64 or big-endian bytes sign-extended to the column's fixed length, floats
//! their bits (both zeros, as -0.0 = +0.0), strings and binaries their bytes (a dictionary
//! page puts a 4-byte length before them; a bloom filter hashes them bare).

use parquet::basic::Type as PhysicalType;

use crate::predicate::expr::{CmpOp, ColumnRef, Predicate};
use crate::predicate::value::{Domain, IntKind, Value};

/// Whether a filter of values (a bloom filter, a dictionary) can answer for this leaf.
pub fn is_probe(leaf: &Predicate) -> bool {
    probe_values(leaf).is_some()
}

/// The values one of which a row must equal to satisfy the leaf (`=` and `IN`), the only
/// leaves a filter of values (bloom filters, distinct sets) can answer.
pub fn probe_values(leaf: &Predicate) -> Option<&[Value]> {
    match leaf {
        Predicate::Cmp {
            op: CmpOp::Eq,
            value,
            ..
        } => Some(std::slice::from_ref(value)),
        Predicate::InList {
            values,
            negated: false,
            ..
        } => Some(values.as_slice()),
        _ => None,
    }
}

/// The plain encodings a value may have been hashed as, or `None` when it cannot be
/// probed safely.
pub fn encodings(
    v: &Value,
    col: &ColumnRef,
    physical: PhysicalType,
    type_length: i32,
) -> Option<Vec<Vec<u8>>> {
    if !col.prunable {
        return None;
    }
    match (v, physical) {
        (Value::Int(i), PhysicalType::INT32) => Some(int32_encodings(*i, &col.data_type)),
        (Value::Int(i), PhysicalType::INT64) => Some(vec![(*i as u64).to_le_bytes().to_vec()]),
        (Value::Int(i), PhysicalType::FIXED_LEN_BYTE_ARRAY)
            if matches!(
                col.domain,
                Domain::Int {
                    kind: IntKind::Decimal { .. },
                    ..
                }
            ) =>
        {
            let len = usize::try_from(type_length)
                .ok()
                .filter(|l| (1..=16).contains(l))?;
            Some(vec![i.to_be_bytes()[16 - len..].to_vec()])
        }
        (Value::Float(f), PhysicalType::FIXED_LEN_BYTE_ARRAY)
            if col.data_type == arrow_schema::DataType::Float16
                && type_length == 2
                && !f.is_nan() =>
        {
            let h = half::f16::from_f64(*f);
            // Only a value a half holds exactly can be stored; -0.0 = +0.0.
            if h.to_f64() != *f {
                return Some(Vec::new());
            }
            Some(if *f == 0.0 {
                vec![
                    half::f16::from_f64(0.0).to_le_bytes().to_vec(),
                    half::f16::from_f64(-0.0).to_le_bytes().to_vec(),
                ]
            } else {
                vec![h.to_le_bytes().to_vec()]
            })
        }
        (Value::Float(f), PhysicalType::FLOAT) if !f.is_nan() => {
            let f = *f as f32;
            Some(if f == 0.0 {
                vec![
                    0.0f32.to_le_bytes().to_vec(),
                    (-0.0f32).to_le_bytes().to_vec(),
                ]
            } else {
                vec![f.to_le_bytes().to_vec()]
            })
        }
        (Value::Float(f), PhysicalType::DOUBLE) if !f.is_nan() => Some(if *f == 0.0 {
            vec![
                0.0f64.to_le_bytes().to_vec(),
                (-0.0f64).to_le_bytes().to_vec(),
            ]
        } else {
            vec![f.to_le_bytes().to_vec()]
        }),
        (Value::Bytes(b), PhysicalType::BYTE_ARRAY) => Some(vec![b.clone()]),
        (Value::Bytes(b), PhysicalType::FIXED_LEN_BYTE_ARRAY) if b.len() as i32 == type_length => {
            Some(vec![b.clone()])
        }
        _ => None,
    }
}

/// The INT32 bits a value of an 8- or 16-bit column may have been written as. The reader
/// keeps a stored INT32's low bits, so writers that sign-extend an unsigned value (255 as
/// -1) or zero-extend a signed one (-1 as 255) store values it reads back alike: both
/// forms are probed. Other columns have one form.
fn int32_encodings(i: i128, data_type: &arrow_schema::DataType) -> Vec<Vec<u8>> {
    use arrow_schema::DataType::*;
    let bits = i as u32;
    let widened = match data_type {
        Int8 | UInt8 => Some((bits as u8 as u32, bits as u8 as i8 as i32 as u32)),
        Int16 | UInt16 => Some((bits as u16 as u32, bits as u16 as i16 as i32 as u32)),
        _ => None,
    };
    match widened {
        Some((zero, sign)) if zero != sign => {
            vec![zero.to_le_bytes().to_vec(), sign.to_le_bytes().to_vec()]
        }
        Some((zero, _)) => vec![zero.to_le_bytes().to_vec()],
        None => vec![bits.to_le_bytes().to_vec()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;

    #[test]
    fn small_integers_are_probed_zero_and_sign_extended() {
        let both = |i: i128, dt: DataType| -> Vec<u32> {
            int32_encodings(i, &dt)
                .into_iter()
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                .collect()
        };
        assert_eq!(both(255, DataType::UInt8), vec![255, u32::MAX]);
        assert_eq!(both(-1, DataType::Int8), vec![255, u32::MAX]);
        assert_eq!(both(5, DataType::UInt8), vec![5]);
        assert_eq!(both(65535, DataType::UInt16), vec![65535, u32::MAX]);
        assert_eq!(both(-2, DataType::Int32), vec![u32::MAX - 1]);
        assert_eq!(both(4_000_000_000, DataType::UInt32), vec![4_000_000_000]);
    }
}
