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
        (Value::Int(i), PhysicalType::INT32) => Some(vec![(*i as u32).to_le_bytes().to_vec()]),
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
