//! Row-group pruning with Parquet split-block bloom filters, for `=` and `IN`.
//!
//! A bloom filter hashes the *physical* plain encoding of a value, so the probe must encode
//! exactly as writers do: small and unsigned integers as their INT32 bits, UINT64 as INT64
//! bits, decimals as INT32/INT64 or as big-endian bytes sign-extended to the column's
//! fixed length, floats by their bits (both zeros probed, as -0.0 = +0.0).

use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ColumnChunkMetaData;

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::predicate::expr::{CmpOp, ColumnRef, Predicate};
use crate::predicate::value::{Domain, IntKind, Value};
use crate::prune::bloom_header::parse_bloom_header;

/// The largest bitset the format allows (parquet's own limit).
const MAX_BITSET: u64 = 128 * 1024 * 1024;
/// Enough bytes for any bloom filter header.
const HEADER_GUESS: u64 = 64;

/// Read the bloom filter of a column chunk, if it has one. Offsets and lengths are checked
/// against the file before anything is read or allocated.
pub fn read_bloom(file: &StorageFile, chunk: &ColumnChunkMetaData) -> Result<Option<Sbbf>> {
    let Some(offset) = chunk.bloom_filter_offset() else {
        return Ok(None);
    };
    let path = file.path();
    let size = file.identity().size;
    let corrupt = |why: String| Error::invalid_file(path, format!("corrupt bloom filter: {why}"));
    let offset = u64::try_from(offset)
        .ok()
        .filter(|o| *o < size)
        .ok_or_else(|| {
            corrupt(format!(
                "offset {offset} is outside the file ({size} bytes)"
            ))
        })?;
    let declared = chunk.bloom_filter_length().map(|l| l as i64);
    let first_read = match declared {
        Some(len) => u64::try_from(len)
            .ok()
            .filter(|l| *l <= MAX_BITSET + HEADER_GUESS && offset + l <= size)
            .ok_or_else(|| {
                corrupt(format!(
                    "length {len} at offset {offset} does not fit in the file ({size} bytes)"
                ))
            })?,
        None => HEADER_GUESS.min(size - offset),
    };
    let buf = file.read_range(offset, first_read as usize)?;
    let header = parse_bloom_header(&buf).map_err(corrupt)?;
    let num_bytes = u64::from(header.num_bytes);
    if !(32..=MAX_BITSET).contains(&num_bytes) || num_bytes % 32 != 0 {
        return Err(corrupt(format!("bitset of {num_bytes} bytes is not a whole number of 32-byte blocks within the format's limits")));
    }
    let start = header.header_len as u64;
    let bitset = if start + num_bytes <= buf.len() as u64 {
        buf.slice(start as usize..(start + num_bytes) as usize)
    } else {
        if declared.is_some() || offset + start + num_bytes > size {
            return Err(corrupt(format!(
                "bitset of {num_bytes} bytes runs past its declared length or the end of the file"
            )));
        }
        file.read_range(offset + start, num_bytes as usize)?
    };
    Ok(Some(Sbbf::new(&bitset)))
}

/// Whether the leaf could be TRUE in a chunk whose filter is `sbbf`: `false` only when
/// every value the leaf needs is definitely absent.
pub fn leaf_may_match(
    leaf: &Predicate,
    sbbf: &Sbbf,
    physical: PhysicalType,
    type_length: i32,
) -> bool {
    let Some(values) = probe_values(leaf) else {
        return true;
    };
    let Some(col) = leaf.column() else {
        return true;
    };
    values
        .iter()
        .any(|v| match encodings(v, col, physical, type_length) {
            Some(candidates) => candidates.iter().any(|bytes| sbbf.check(&bytes[..])),
            None => true,
        })
}

/// Whether a bloom filter can answer for this leaf at all.
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
        } => Some(values),
        _ => None,
    }
}

/// The plain encodings a value may have been hashed as, or `None` when it cannot be
/// probed safely.
pub(crate) fn encodings(
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use std::sync::Arc;

    fn col(dt: DataType) -> Arc<ColumnRef> {
        ColumnRef::for_test("x", dt)
    }

    #[test]
    fn probes_the_physical_encoding() {
        let mut sbbf = Sbbf::new_with_ndv_fpp(100, 0.01).unwrap();
        // A UINT32 value above i32::MAX is stored as its INT32 bits.
        sbbf.insert(&(4_000_000_000u32 as i32));
        let c = col(DataType::UInt32);
        let hit = Predicate::Cmp {
            col: c.clone(),
            op: CmpOp::Eq,
            value: Value::Int(4_000_000_000),
        };
        assert!(leaf_may_match(&hit, &sbbf, PhysicalType::INT32, 0));
        let miss = Predicate::Cmp {
            col: c,
            op: CmpOp::Eq,
            value: Value::Int(17),
        };
        assert!(!leaf_may_match(&miss, &sbbf, PhysicalType::INT32, 0));
    }

    #[test]
    fn both_zeros_are_probed() {
        let mut sbbf = Sbbf::new_with_ndv_fpp(100, 0.01).unwrap();
        sbbf.insert(&-0.0f64);
        let p = Predicate::Cmp {
            col: col(DataType::Float64),
            op: CmpOp::Eq,
            value: Value::Float(0.0),
        };
        assert!(leaf_may_match(&p, &sbbf, PhysicalType::DOUBLE, 0));
    }

    #[test]
    fn decimals_in_fixed_bytes_are_sign_extended() {
        let mut sbbf = Sbbf::new_with_ndv_fpp(100, 0.01).unwrap();
        let v: i128 = -12345;
        sbbf.insert(&v.to_be_bytes()[16 - 9..]);
        let p = Predicate::Cmp {
            col: col(DataType::Decimal128(20, 2)),
            op: CmpOp::Eq,
            value: Value::Int(v),
        };
        assert!(leaf_may_match(
            &p,
            &sbbf,
            PhysicalType::FIXED_LEN_BYTE_ARRAY,
            9
        ));
    }
}
