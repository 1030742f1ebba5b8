//! Scan units: one row group of one planned file and the rows of it that may match. A
//! unit is what one reader thread (or one Spark task's share) reads on its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::error::{Error, Result};
use crate::io::{FileHandle, FileIdentity, IoStats, StorageFile};
use crate::metadata::schema::{has_int96, hinted_schema, leaves_of};
use crate::plan::row_ranges::RowRanges;
use crate::predicate::{Predicate, Value};

/// The leaf columns a unit of a file reads: those of its output's root columns `roots`
/// (the file's own), and those its predicate reads; sorted, without duplicates.
pub fn needed_leaves(
    md: &ParquetMetaData,
    roots: &[usize],
    pred: Option<&Predicate>,
) -> Vec<usize> {
    let mut needed: Vec<usize> = leaves_of(md.file_metadata().schema_descr(), roots);
    if let Some(p) = pred {
        needed.extend(p.columns().iter().filter_map(|c| c.leaf));
    }
    needed.sort_unstable();
    needed.dedup();
    needed
}

/// A file the scan will read, with what the reader needs to open it safely.
#[derive(Debug)]
pub struct PlannedFile {
    pub path: String,
    pub identity: FileIdentity,
    pub reader_metadata: ArrowReaderMetadata,
    /// The scan's predicate with this file's partition values folded in.
    pub predicate: Option<Predicate>,
    pub partition_values: Vec<Option<Value>>,
    /// The version planning opened, kept so that reading reads it even if the path was
    /// replaced since; `None` when the scan holds too many files open already.
    pub handle: Option<FileHandle>,
    /// How the file's columns make the scan's, for a table's files; `None` when the
    /// file has the scan's schema itself.
    pub columns: Option<std::sync::Arc<crate::plan::ColumnMap>>,
}

impl PlannedFile {
    /// A planned file whose footer (with its page index, when loaded) is `md`.
    pub fn new(
        identity: FileIdentity,
        md: Arc<ParquetMetaData>,
        predicate: Option<Predicate>,
        partition_values: Vec<Option<Value>>,
    ) -> Result<PlannedFile> {
        // The reader skips unselected pages without reading them only when it has the
        // OffsetIndex; without one it must not look for it.
        let policy = if md.offset_index().is_some() {
            PageIndexPolicy::Optional
        } else {
            PageIndexPolicy::Skip
        };
        let options = ArrowReaderOptions::new().with_page_index_policy(policy);
        let with_schema = |md: Arc<ParquetMetaData>| -> Result<ArrowReaderMetadata> {
            let schema = hinted_schema(&md, &identity.path)?;
            ArrowReaderMetadata::try_new(md, options.clone().with_schema(Arc::new(schema)))
                .map_err(|e| Error::from(e).in_file(&identity.path))
        };
        // INT96 timestamps are read in the unit the scan's schema gives them, and a hint
        // the reader cannot take (arrow-ipc panics on some) gives way to the Parquet types.
        let reader_metadata = if has_int96(md.file_metadata().schema_descr()) {
            with_schema(md)?
        } else {
            let plain = || ArrowReaderMetadata::try_new(md.clone(), options.clone());
            match catch_unwind(AssertUnwindSafe(plain)) {
                Ok(Ok(m)) => m,
                _ => with_schema(md)?,
            }
        };
        Ok(PlannedFile {
            path: identity.path.clone(),
            identity,
            reader_metadata,
            predicate,
            partition_values,
            handle: None,
            columns: None,
        })
    }

    /// A reader of the planned version: through the kept handle, or by opening the path
    /// again and checking it is still the file planned (`FileChanged` if not).
    pub fn open(&self, stats: Arc<IoStats>) -> Result<StorageFile> {
        match &self.handle {
            Some(h) => h.reader(stats),
            None => StorageFile::open_expecting(&self.path, &self.identity, stats),
        }
    }
}

impl PlannedFile {
    /// The file's root columns the output's `roots` (root columns of the scan's schema)
    /// read.
    pub fn file_roots(&self, roots: &[usize]) -> Vec<usize> {
        match &self.columns {
            Some(map) => map.file_roots(roots),
            None => roots.to_vec(),
        }
    }

    /// The leaf columns a unit of this file reads for the output's `roots` (root
    /// columns of the scan's schema) and the predicate.
    pub fn needed_leaves(&self, roots: &[usize]) -> Vec<usize> {
        needed_leaves(
            self.reader_metadata.metadata(),
            &self.file_roots(roots),
            self.predicate.as_ref(),
        )
    }
}

/// One row group of one file and the rows of it that may match.
#[derive(Debug, Clone)]
pub struct ScanUnit {
    pub file: Arc<PlannedFile>,
    pub row_group: usize,
    pub ranges: RowRanges,
    pub row_group_rows: u64,
    /// Per conjunct of the file's predicate, how many of `ranges` its pages may hold, so
    /// the reader filters with the most selective first; empty when not known.
    pub conjunct_rows: Vec<u64>,
    /// Leaf columns whose dictionary pages the reader asks, before any data page, whether
    /// the unit can match at all (planning chose those expected to pay).
    pub dictionary_probes: Vec<usize>,
}
