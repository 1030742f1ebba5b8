//! Hashing values for the embedded indexes: XxHash64 (seed 0) of a value's Parquet plain
//! encoding, the hash Parquet's split-block bloom filters use. Index builders hash the
//! physical values a file stores; planners hash a predicate's literals the same way through
//! the bloom filter's encoding rules, so both sides agree for every physical type.

use parquet::basic::Type as PhysicalType;
use twox_hash::XxHash64;

use crate::predicate::expr::Predicate;
use crate::predicate::plain::{encodings, probe_values};

pub fn hash_bytes(bytes: &[u8]) -> u64 {
    XxHash64::oneshot(0, bytes)
}

/// The hashes any row satisfying `leaf` must have in the column, or `None` when the leaf
/// is not an equality or an IN list whose values can all be encoded (then an index of
/// hashes cannot answer for it).
pub fn leaf_hashes(leaf: &Predicate, physical: PhysicalType, type_length: i32) -> Option<Vec<u64>> {
    let values = probe_values(leaf)?;
    let col = leaf.column()?;
    let mut out = Vec::new();
    for v in values {
        for bytes in encodings(v, col, physical, type_length)? {
            out.push(hash_bytes(&bytes));
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_xxhash64_with_seed_zero() {
        // Reference vectors of XXH64.
        assert_eq!(hash_bytes(b""), 0xef46_db37_51d8_e999);
        assert_eq!(hash_bytes(b"abc"), 0x44bc_2cf5_ad77_0999);
    }
}
