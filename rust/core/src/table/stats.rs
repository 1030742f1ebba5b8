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
