//! `count(*)` of a whole table snapshot from its metadata: every data file's record count
//! less the rows its deletes remove, with no file opened. Delta's `numRecords` and
//! Iceberg's `record_count` are what the tables' own engines count from.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{Field, Schema};

use super::aggregation::{Aggregation, MetadataCount};
use super::select::{Call, Func};
use crate::error::Result;
use crate::io::IoStats;
use crate::metadata::MetadataCache;
use crate::query::scan::{Scan, ScanOptions, ScanSource};
use crate::table::{TableFile, TableSnapshot};

/// `calls` over `snapshot` answered from its metadata, when every call is `count(*)`, no
/// predicate narrows the rows and every file records its row count; `None` otherwise.
pub(super) fn counted(
    snapshot: &TableSnapshot,
    io: Arc<IoStats>,
    calls: &[Call],
    opts: &ScanOptions,
    cache: &MetadataCache,
    cancel: &AtomicBool,
) -> Result<Option<Aggregation>> {
    if opts.predicate.is_some() || calls.iter().any(|c| c.func != Func::CountStar) {
        return Ok(None);
    }
    let Some(count) = count(&snapshot.files) else {
        return Ok(None);
    };
    let arrays: Vec<ArrayRef> = calls
        .iter()
        .map(|_| Arc::new(Int64Array::from(vec![count.rows as i64])) as ArrayRef)
        .collect();
    let fields: Vec<Field> = calls
        .iter()
        .map(|c| Field::new(&c.name, arrow_schema::DataType::Int64, true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
    // A scan of none of the files, so that the answer's metrics and explain say what the
    // table is and that nothing was read.
    let none = TableSnapshot {
        format: snapshot.format,
        root: snapshot.root.clone(),
        version: snapshot.version,
        schema: snapshot.schema.clone(),
        partitions: snapshot.partitions.clone(),
        files: Arc::new(Vec::new()),
        index_files: Vec::new(),
    };
    let scan = Scan::plan_source(
        &[],
        ScanSource::Table(Arc::new(none), io),
        opts,
        cache,
        cancel,
    )?;
    Ok(Some(Aggregation {
        batch,
        scan,
        columns: Vec::new(),
        indexes_read: 0,
        warnings: Vec::new(),
        from_metadata: Some(count),
    }))
}

/// The live rows of `files` by their recorded counts, if every file has one.
fn count(files: &[TableFile]) -> Option<MetadataCount> {
    let mut out = MetadataCount::default();
    for f in files {
        let records = f.records?;
        let deleted = f.deleted.as_deref().map_or(0, |d| deleted_rows(d, records));
        out.rows += records - deleted;
        out.files += 1;
        out.deleted += deleted;
    }
    Some(out)
}

/// The distinct positions of `positions` below `records`: a file's deleted rows.
fn deleted_rows(positions: &[u64], records: u64) -> u64 {
    if positions.windows(2).all(|w| w[0] < w[1]) {
        return positions.iter().filter(|&&p| p < records).count() as u64;
    }
    let mut sorted = positions.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.iter().filter(|&&p| p < records).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(records: Option<u64>, deleted: Option<Vec<u64>>) -> TableFile {
        TableFile {
            path: "f.parquet".into(),
            size: 1,
            modified_ms: 0,
            records,
            partition_values: Vec::new(),
            stats: Vec::new(),
            deleted: deleted.map(Arc::new),
            identity_columns: Vec::new(),
        }
    }

    #[test]
    fn live_rows_are_records_less_distinct_deleted_positions() {
        let files = [
            file(Some(10), None),
            file(Some(5), Some(vec![0, 4])),
            // Out of order, repeated, and one past the file's rows: counted once, or not.
            file(Some(8), Some(vec![7, 1, 1, 9])),
        ];
        let want = MetadataCount {
            rows: 10 + 3 + 6,
            files: 3,
            deleted: 4,
        };
        assert_eq!(count(&files), Some(want));
    }

    #[test]
    fn a_file_without_a_record_count_counts_nothing() {
        assert_eq!(count(&[file(Some(3), None), file(None, None)]), None);
        assert_eq!(count(&[]), Some(MetadataCount::default()));
    }
}
