//! A table's per-file statistics as evidence: files whose recorded bounds and null counts
//! rule a predicate out are never opened.

use std::collections::HashMap;
use std::sync::Arc;

use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;

use crate::error::Result;
use crate::io::FileIdentity;
use crate::predicate::Predicate;
use crate::prune::evidence::{Evidence, Source};
use crate::prune::planner::{DescribedFile, FileCatalog};
use crate::prune::statistics::{leaf_may_match, ChunkStats};
use crate::table::{TableFile, TableSnapshot};

/// The files of one snapshot, by path.
pub struct TableStats {
    files: HashMap<String, usize>,
    snapshot: Arc<TableSnapshot>,
}

impl TableStats {
    pub fn new(snapshot: Arc<TableSnapshot>) -> Self {
        let files = snapshot
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        TableStats { files, snapshot }
    }
}

struct FileStats<'a> {
    file: &'a TableFile,
}

impl Evidence for FileStats<'_> {
    fn source(&self) -> Source {
        Source::TableStats
    }

    fn file(&mut self, leaf: &Predicate) -> Result<Option<bool>> {
        let Some(col) = leaf.column() else {
            return Ok(None);
        };
        let Some(s) = self.file.stats.iter().find(|s| s.path == col.path) else {
            return Ok(None);
        };
        let stats = ChunkStats {
            min: s.min.clone().filter(|_| col.prunable),
            max: s.max.clone().filter(|_| col.prunable),
            exact: false,
            null_count: s.null_count,
            rows: self.file.records.unwrap_or(0),
            all_null: false,
        };
        Ok(Some(leaf_may_match(leaf, &stats)))
    }
}

impl DescribedFile for FileStats<'_> {
    fn footer(&self) -> Option<Result<ParquetMetaData>> {
        None
    }
}

impl FileCatalog for TableStats {
    fn describe<'a>(
        &'a self,
        path: &str,
        _identity: &FileIdentity,
        _schema: &'a SchemaDescriptor,
    ) -> Option<Box<dyn DescribedFile + 'a>> {
        let i = *self.files.get(path)?;
        Some(Box::new(FileStats {
            file: &self.snapshot.files[i],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::Value;
    use crate::query::binding::Binding;
    use crate::table::{ColumnStats, TableFormat};
    use arrow_schema::{DataType, Field, Schema};

    /// Two files: `k` in 0..=99 with no NULLs, and `k` in 100..=199 with 5 NULLs of 50
    /// rows; a third file records nothing.
    fn snapshot() -> (Arc<TableSnapshot>, Binding) {
        let schema = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
        let file = |path: &str, stats: Option<(i64, i64, u64)>| TableFile {
            path: path.into(),
            size: 100,
            modified_ms: 0,
            records: Some(50),
            partition_values: Vec::new(),
            stats: stats
                .map(|(min, max, nulls)| {
                    vec![ColumnStats {
                        path: vec!["k".into()],
                        min: Some(Value::Int(min.into())),
                        max: Some(Value::Int(max.into())),
                        null_count: Some(nulls),
                    }]
                })
                .unwrap_or_default(),
            deleted: None,
            identity_columns: Vec::new(),
        };
        let snapshot = TableSnapshot {
            format: TableFormat::Delta,
            root: "t".into(),
            version: 0,
            schema: Arc::new(schema.clone()),
            partitions: Vec::new(),
            files: Arc::new(vec![
                file("a", Some((0, 99, 0))),
                file("b", Some((100, 199, 5))),
                file("c", None),
            ]),
            index_files: Vec::new(),
        };
        (
            Arc::new(snapshot),
            Binding::of_table(&schema, Vec::new()).unwrap(),
        )
    }

    fn answers(text: &str) -> Vec<Option<bool>> {
        let (snapshot, binding) = snapshot();
        let stats = TableStats::new(snapshot.clone());
        let pred = binding.bind_where(Some(text), 0).unwrap().unwrap();
        let descr = binding.bind_schema().parquet;
        snapshot
            .files
            .iter()
            .map(|f| {
                let mut d = stats
                    .describe(&f.path, &f.identity(), descr)
                    .expect("every file of the snapshot is described");
                assert!(d.footer().is_none(), "a table's log holds no footer");
                d.file(&pred).unwrap()
            })
            .collect()
    }

    #[test]
    fn recorded_bounds_and_null_counts_rule_files_out() {
        assert_eq!(answers("k = 150"), [Some(false), Some(true), None]);
        assert_eq!(answers("k < 100"), [Some(true), Some(false), None]);
        assert_eq!(answers("k IS NULL"), [Some(false), Some(true), None]);
        assert_eq!(answers("k IS NOT NULL"), [Some(true), Some(true), None]);
    }

    #[test]
    fn files_outside_the_snapshot_are_not_described() {
        let (snapshot, binding) = snapshot();
        let identity = snapshot.files[0].identity();
        let stats = TableStats::new(snapshot);
        assert!(stats
            .describe("elsewhere", &identity, binding.bind_schema().parquet)
            .is_none());
    }
}
