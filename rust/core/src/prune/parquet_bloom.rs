//! Row-group pruning with Parquet split-block bloom filters, for `=` and `IN`.
//!
//! A bloom filter hashes the *physical* plain encoding of a value, so the probe must encode
//! exactly as writers do: small and unsigned integers as their INT32 bits, UINT64 as INT64
//! bits, decimals as INT32/INT64 or as big-endian bytes sign-extended to the column's
//! fixed length, floats by their bits (both zeros probed, as -0.0 = +0.0).

use std::collections::HashMap;
use std::ops::Range;

use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::metadata::bloom_filter::read_bloom;
use crate::metadata::page_index::checked_range;
use crate::plan::Counter;
use crate::predicate::expr::{ColumnRef, Predicate};
use crate::predicate::plain::{encodings, is_probe, probe_values};
use crate::predicate::value::Value;
use crate::prune::evidence::{Evidence, Report, Source};
use crate::prune::statistics::{row_group_stats, within_bounds, ChunkStats};

/// The Parquet bloom filters of a file's column chunks, as evidence for its row groups.
/// Each filter is read the first time a leaf on its column is asked about, and kept.
pub struct ParquetBlooms<'a> {
    file: &'a StorageFile,
    md: &'a ParquetMetaData,
    /// Filters read so far, by (row group, leaf column); `None` for a chunk without one.
    filters: HashMap<(usize, usize), Option<Sbbf>>,
    read: &'a Counter,
    /// Leaf columns whose filters are not read: finer evidence answers for them.
    skipped: Vec<usize>,
    /// Filters that could not be used (damaged), and why: evidence, never a failed query.
    warnings: Vec<String>,
}

impl<'a> ParquetBlooms<'a> {
    /// Evidence from the bloom filters of `file` (whose footer is `md`); `read` counts the
    /// filters read.
    pub fn new(file: &'a StorageFile, md: &'a ParquetMetaData, read: &'a Counter) -> Self {
        ParquetBlooms {
            file,
            md,
            filters: HashMap::new(),
            read,
            skipped: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The same, without the filters of `leaves` (columns an embedded lookup index answers
    /// for at row-group level or finer: reading their filters would rule out nothing more).
    pub fn without(mut self, leaves: Vec<usize>) -> Self {
        self.skipped = leaves;
        self
    }
}

impl Evidence for ParquetBlooms<'_> {
    fn source(&self) -> Source {
        Source::ParquetBloom
    }

    fn row_group(&mut self, rg: usize, leaf: &Predicate) -> Result<Option<bool>> {
        if !is_probe(leaf) {
            return Ok(None);
        }
        let Some(leaf_idx) = leaf.column().and_then(|c| c.leaf) else {
            return Ok(None);
        };
        if self.skipped.contains(&leaf_idx) {
            return Ok(None);
        }
        let chunk = self.md.row_group(rg).column(leaf_idx);
        // An encrypted column's filter is ciphertext; it is not consulted.
        if chunk.crypto_metadata().is_some() {
            return Ok(None);
        }
        let filter = match self.filters.entry((rg, leaf_idx)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if chunk.bloom_filter_offset().is_some() {
                    self.read.incr();
                }
                match read_bloom(self.file, chunk) {
                    Ok(filter) => e.insert(filter),
                    // A damaged filter is no evidence: the rows come from the data.
                    Err(Error::InvalidFile { reason, .. }) => {
                        self.warnings.push(format!(
                            "{}: the Parquet bloom filter of column {} in row group {rg} was ignored: {reason}",
                            self.file.path(),
                            descr_path(self.md, leaf_idx),
                        ));
                        e.insert(None)
                    }
                    Err(other) => return Err(other),
                }
            }
        };
        let (Some(sbbf), Some(values), Some(col)) =
            (filter.as_ref(), probe_values(leaf), leaf.column())
        else {
            return Ok(None);
        };
        let descr = self.md.file_metadata().schema_descr().column(leaf_idx);
        Ok(Some(values_may_match(
            values,
            row_group_stats(self.md, rg, col).as_ref(),
            col,
            sbbf,
            descr.physical_type(),
            descr.type_length(),
        )))
    }

    fn report(&self) -> Report {
        Report {
            warnings: self.warnings.clone(),
            ..Report::default()
        }
    }

    fn planning_ranges(&self, leaves: &[usize], row_groups: &[usize]) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        for &rg in row_groups {
            for &leaf in leaves.iter().filter(|l| !self.skipped.contains(l)) {
                if let Some(chunk) = self
                    .md
                    .row_groups()
                    .get(rg)
                    .and_then(|g| g.columns().get(leaf))
                    .filter(|c| c.crypto_metadata().is_none())
                {
                    out.extend(checked_range(
                        chunk.bloom_filter_offset(),
                        chunk.bloom_filter_length().map(i64::from),
                    ));
                }
            }
        }
        out
    }
}

/// The dotted path of leaf column `leaf`, for messages.
fn descr_path(md: &ParquetMetaData, leaf: usize) -> String {
    md.file_metadata()
        .schema_descr()
        .column(leaf)
        .path()
        .string()
}

/// Whether the leaf could be TRUE in a chunk whose filter is `sbbf`: `false` only when
/// every value the leaf needs is definitely absent.
pub fn leaf_may_match(
    leaf: &Predicate,
    sbbf: &Sbbf,
    physical: PhysicalType,
    type_length: i32,
) -> bool {
    let (Some(values), Some(col)) = (probe_values(leaf), leaf.column()) else {
        return true;
    };
    values_may_match(values, None, col, sbbf, physical, type_length)
}

/// Whether a chunk whose filter is `sbbf` may hold one of `values` (sorted in SQL order)
/// of `col`. Only the values within the chunk's `bounds` are probed: a join's millions of
/// keys are not all hashed for every chunk.
pub fn values_may_match(
    values: &[Value],
    bounds: Option<&ChunkStats>,
    col: &ColumnRef,
    sbbf: &Sbbf,
    physical: PhysicalType,
    type_length: i32,
) -> bool {
    let values = bounds.map_or(values, |s| within_bounds(values, s));
    values
        .iter()
        .any(|v| match encodings(v, col, physical, type_length) {
            Some(candidates) => candidates.iter().any(|bytes| sbbf.check(&bytes[..])),
            None => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn blooms_are_read_once_per_chunk_and_only_for_probes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, md, absent) = evidence_file(dir.path(), "k IN (10000, 20000)");
        let file =
            StorageFile::open(&path, std::sync::Arc::new(crate::io::IoStats::default())).unwrap();
        let read = Counter::default();
        let mut blooms = ParquetBlooms::new(&file, &md, &read);
        assert_eq!(blooms.row_group(0, &absent).unwrap(), Some(false));
        assert_eq!(blooms.row_group(0, &absent).unwrap(), Some(false));
        assert_eq!(read.get(), 1);
        let (_, _, present) = evidence_file(tempfile::tempdir().unwrap().path(), "k = 5");
        assert_eq!(blooms.row_group(0, &present).unwrap(), Some(true));
        let (_, _, range) = evidence_file(tempfile::tempdir().unwrap().path(), "k > 5");
        assert_eq!(blooms.row_group(1, &range).unwrap(), None);
        assert_eq!(read.get(), 1);
        assert_eq!(blooms.planning_ranges(&[0], &[0, 2]).len(), 2);
    }

    use crate::predicate::expr::CmpOp;
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
