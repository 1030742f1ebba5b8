//! Building embedded indexes over an existing file and adding them to it: each indexed
//! column is read once, page by page, feeding every index defined on it.

use crate::append::{rewrite_indexes, AppendReport, NewIndex};
use crate::error::{Error, Result};
use crate::index::aggregates::AggregatesBuilder;
use crate::index::bloom::BloomBuilder;
use crate::index::column_values::{for_each_page, PageValues};
use crate::index::container::IndexKind;
use crate::index::distinct::DistinctBuilder;
use crate::index::hll::HllBuilder;
use crate::index::locator::{Granularity, Locator};
use crate::io::FileIdentity;

/// The definition of one index: what a user asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSpec {
    pub kind: IndexKind,
    pub column: String,
    pub granularity: Granularity,
    /// Target false-positive rate of bloom filters.
    pub fpp: f64,
}

impl IndexSpec {
    pub fn check(&self) -> Result<()> {
        match self.kind {
            IndexKind::Distinct
            | IndexKind::Sketch
            | IndexKind::Aggregates
            | IndexKind::PageMinMax => Ok(()),
            IndexKind::Bloom if self.fpp > 0.0 && self.fpp < 1.0 => Ok(()),
            IndexKind::Bloom => Err(Error::InvalidArgument(format!(
                "bloom fpp must be between 0 and 1 exclusive, got {}",
                self.fpp
            ))),
        }
    }

    /// The granularity the built index will have (sketches are per column chunk at most).
    pub fn stored_granularity(&self) -> Granularity {
        match (self.kind, self.granularity) {
            (IndexKind::Sketch, Granularity::Page) => Granularity::RowGroup,
            // Page bounds are what old writers lack; coarser ones are in the footer.
            (IndexKind::PageMinMax, _) => Granularity::Page,
            (_, g) => g,
        }
    }

    /// What identifies the index in a file: adding another with the same one replaces it.
    pub fn identity(&self) -> (IndexKind, &str, Granularity) {
        (self.kind, &self.column, self.stored_granularity())
    }
}

enum Builder {
    Bloom(BloomBuilder),
    Distinct(DistinctBuilder),
    Hll(HllBuilder),
    Aggregates(AggregatesBuilder),
}

impl Builder {
    fn new(spec: &IndexSpec) -> Builder {
        match spec.kind {
            IndexKind::Bloom => Builder::Bloom(BloomBuilder::new(spec.granularity, spec.fpp)),
            IndexKind::Sketch => Builder::Hll(HllBuilder::new(spec.granularity)),
            IndexKind::Aggregates => {
                Builder::Aggregates(AggregatesBuilder::new(spec.granularity, true))
            }
            IndexKind::PageMinMax => {
                Builder::Aggregates(AggregatesBuilder::new(Granularity::Page, false))
            }
            IndexKind::Distinct => Builder::Distinct(DistinctBuilder::new(spec.granularity)),
        }
    }

    fn page(&mut self, p: &PageValues) {
        match self {
            Builder::Bloom(b) => b.page(p),
            Builder::Distinct(b) => b.page(p),
            Builder::Hll(b) => b.page(p),
            Builder::Aggregates(b) => b.page(p),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Builder::Bloom(b) => b.finish(),
            Builder::Distinct(b) => b.finish(),
            Builder::Hll(b) => b.finish(),
            Builder::Aggregates(b) => b.finish(),
        }
    }
}

/// Build the indexes `specs` define over the file at `path`, with the identity of the file
/// they describe.
pub fn build_indexes(path: &str, specs: &[IndexSpec]) -> Result<(FileIdentity, Vec<NewIndex>)> {
    for s in specs {
        s.check()?;
    }
    // A file holds one index per identity: of definitions sharing one, the last wins.
    let specs: Vec<&IndexSpec> = specs
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !specs[i + 1..]
                .iter()
                .any(|later| later.identity() == s.identity())
        })
        .map(|(_, s)| s)
        .collect();
    let identity = FileIdentity::stat(path)?;
    let mut columns: Vec<&str> = specs.iter().map(|s| s.column.as_str()).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut out = Vec::new();
    for column in columns {
        let defs: Vec<&IndexSpec> = specs
            .iter()
            .copied()
            .filter(|s| s.column == column)
            .collect();
        let mut builders: Vec<Builder> = defs.iter().map(|s| Builder::new(s)).collect();
        for_each_page(path, column, &mut |p| {
            for b in &mut builders {
                b.page(p);
            }
            Ok(())
        })?;
        for (spec, b) in defs.into_iter().zip(builders) {
            out.push(NewIndex {
                kind: spec.kind,
                columns: vec![spec.column.clone()],
                granularity: spec.stored_granularity(),
                payload: b.finish(),
            });
        }
    }
    Ok((identity, out))
}

/// Build `specs` over `path` and embed them, replacing indexes of the same identity. The
/// file must not change between the build and the rewrite.
pub fn add_indexes(path: &str, specs: &[IndexSpec]) -> Result<AppendReport> {
    if crate::io::object::is_remote(path) {
        let obj = crate::io::object::locate(path)?;
        return obj.rewrite(|local| add_indexes(local, specs).map(|r| r.named(local, path)));
    }
    let (identity, new) = build_indexes(path, specs)?;
    rewrite_indexes(path, new, &|_| false, Some(&identity))
}

/// Remove the indexes for which `drop` is true.
pub fn drop_indexes(path: &str, drop: &dyn Fn(&Locator) -> bool) -> Result<AppendReport> {
    if crate::io::object::is_remote(path) {
        let obj = crate::io::object::locate(path)?;
        return obj.rewrite(|local| drop_indexes(local, drop).map(|r| r.named(local, path)));
    }
    rewrite_indexes(path, Vec::new(), drop, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, RecordBatchIterator, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use crate::append::list_indexes;
    use crate::metadata::MetadataCache;
    use crate::scan::{Scan, ScanOptions};
    use crate::testing::keys;

    /// 20,000 rows; `u` is unsorted (a permutation), `s` nullable strings.
    fn write_file(dir: &Path) -> String {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("u", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let n = 20_000i64;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..n)),
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % n))),
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 3 != 0).then(|| format!("s{}", (i * 31) % 5000))),
                )),
            ],
        )
        .unwrap();
        let path = dir.join("t.parquet").to_string_lossy().into_owned();
        let opts = crate::write::WriteOptions {
            row_group_size: 5000,
            page_row_limit: Some(500),
            ..Default::default()
        };
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        crate::write::write(Box::new(reader), &path, &opts).unwrap();
        path
    }

    fn scan(path: &str, predicate: &str) -> (Vec<i64>, Scan) {
        let opts = ScanOptions {
            predicate: Some(predicate.into()),
            columns: Some(vec!["k".into()]),
            ..Default::default()
        };
        let cache = MetadataCache::new(1 << 24);
        let s = Scan::plan(&[path.to_string()], &opts, &cache, &AtomicBool::new(false)).unwrap();
        let mut rows = keys(s.stream());
        rows.sort_unstable();
        (rows, s)
    }

    fn metric(s: &Scan, key: &str) -> u64 {
        s.metrics().iter().find(|(k, _)| *k == key).unwrap().1
    }

    fn spec(kind: IndexKind, column: &str, granularity: Granularity) -> IndexSpec {
        IndexSpec {
            kind,
            column: column.into(),
            granularity,
            fpp: 0.01,
        }
    }

    #[test]
    fn indexes_prune_unsorted_columns_and_keep_every_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let queries = [
            "u = 12345",
            "u IN (1, 2, 19999)",
            "u = 12345 OR k = 3",
            "u = 12345 AND k > 100",
            "s = 's17'",
            "s IN ('s17', 'nope')",
            "s = 'absent'",
            "u = -1",
            "s IS NULL AND u = 5",
            "NOT (u = 5)",
        ];
        let before: Vec<(Vec<i64>, u64)> = queries
            .iter()
            .map(|q| {
                let (rows, s) = scan(&path, q);
                (rows, metric(&s, "rows_selected"))
            })
            .collect();
        for granularity in [Granularity::File, Granularity::RowGroup, Granularity::Page] {
            let specs = [
                spec(IndexKind::Distinct, "u", granularity),
                spec(IndexKind::Bloom, "s", granularity),
            ];
            add_indexes(&path, &specs).unwrap();
            for (q, (rows, selected)) in queries.iter().zip(&before) {
                let (got, s) = scan(&path, q);
                assert_eq!(&got, rows, "{q} at {granularity:?}");
                assert!(metric(&s, "rows_selected") <= *selected, "{q}");
                assert_eq!(metric(&s, "indexes_skipped"), 0, "{q}");
            }
            // A needle on the unsorted column selects only what the granularity allows.
            let (_, s) = scan(&path, "u = 12345");
            let expected = match granularity {
                Granularity::File => 20_000,
                Granularity::RowGroup => 5_000,
                Granularity::Page => 500,
            };
            assert_eq!(metric(&s, "rows_selected"), expected, "{granularity:?}");
            // Within the statistics' bounds but absent: only the index can tell.
            let (rows, s) = scan(&path, "s = 's17x'");
            assert!(rows.is_empty());
            assert_eq!(metric(&s, "files_pruned_by_index"), 1, "{granularity:?}");
        }
        // Granularities coexist; re-adding one replaces it.
        let listed = list_indexes(&path).unwrap();
        assert_eq!(listed.len(), 6);
        add_indexes(&path, &[spec(IndexKind::Distinct, "u", Granularity::Page)]).unwrap();
        assert_eq!(list_indexes(&path).unwrap().len(), 6);
    }

    #[test]
    fn damaged_indexes_are_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let r = add_indexes(
            &path,
            &[
                spec(IndexKind::Distinct, "u", Granularity::Page),
                spec(IndexKind::Bloom, "u", Granularity::Page),
            ],
        )
        .unwrap();
        let (expected, _) = scan(&path, "u = 12345 OR u = 7");
        let mut bytes = std::fs::read(&path).unwrap();
        for l in &r.indexes {
            // A byte inside each block's payload, past the distinct header.
            let at = l.offset as usize + l.length as usize - 30;
            bytes[at] ^= 0x55;
        }
        std::fs::write(&path, &bytes).unwrap();
        let (rows, s) = scan(&path, "u = 12345 OR u = 7");
        assert_eq!(rows, expected);
        assert_eq!(rows.len(), 2);
        assert!(metric(&s, "indexes_skipped") >= 1, "{:?}", s.warnings);
        assert!(!s.warnings.is_empty());
    }

    #[test]
    fn an_index_from_another_file_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let specs = [spec(IndexKind::Distinct, "u", Granularity::Page)];
        let (_, built) = build_indexes(&path, &specs).unwrap();
        // Rewrite the file with other row groups, then embed the stale index.
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("u", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..30_000)),
                Arc::new(Int64Array::from_iter_values(0..30_000)),
                Arc::new(StringArray::from_iter_values(
                    (0..30_000).map(|i| format!("{i}")),
                )),
            ],
        )
        .unwrap();
        let opts = crate::write::WriteOptions {
            row_group_size: 7000,
            page_row_limit: Some(700),
            ..Default::default()
        };
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        crate::write::write(Box::new(reader), &path, &opts).unwrap();
        rewrite_indexes(&path, built, &|_| false, None).unwrap();
        let (rows, s) = scan(&path, "u = 25000");
        assert_eq!(rows, vec![25000]);
        assert_eq!(metric(&s, "indexes_skipped"), 1);
    }
}
