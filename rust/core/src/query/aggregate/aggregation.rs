//! An aggregation's result: the one row, the scan that read it, and what answered each
//! column (an aggregates index, the rows read, a table's metadata).

use std::fmt::Write as _;

use arrow_array::RecordBatch;

use crate::query::scan::Scan;

/// The one-row result and how it was obtained.
pub struct Aggregation {
    pub batch: RecordBatch,
    /// The scan that planned the work; its metrics count every byte read.
    pub scan: Scan,
    /// Per aggregated column: rows answered by its index and rows read.
    pub columns: Vec<ColumnReport>,
    pub indexes_read: u64,
    pub warnings: Vec<String>,
    /// Set when `count(*)` was answered from a table's metadata, no file opened.
    pub from_metadata: Option<MetadataCount>,
}

#[derive(Debug, Clone, Default)]
pub struct ColumnReport {
    /// The column, or `*` for `count(*)` alone.
    pub name: String,
    pub rows_from_index: u64,
    pub units_from_index: u64,
    pub rows_to_read: u64,
}

impl Aggregation {
    pub fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut m = self.scan.metrics();
        let sum = |f: fn(&ColumnReport) -> u64| self.columns.iter().map(f).sum::<u64>();
        m.push(("rows_from_index", sum(|c| c.rows_from_index)));
        m.push(("units_from_index", sum(|c| c.units_from_index)));
        m.push(("rows_to_read", sum(|c| c.rows_to_read)));
        m.push(("aggregate_indexes_read", self.indexes_read));
        let counted = self.from_metadata.unwrap_or_default();
        m.push(("rows_from_metadata", counted.rows));
        m
    }

    pub fn explain(&self) -> String {
        let mut s = self.scan.explain();
        let _ = writeln!(s, "aggregates");
        if let Some(c) = &self.from_metadata {
            let _ = writeln!(
                s,
                "  *: {} rows from the record counts of {} files in the table's metadata, {} deleted rows left out",
                c.rows, c.files, c.deleted
            );
        }
        for c in &self.columns {
            let _ = writeln!(
                s,
                "  {}: {} rows answered by {} units of its aggregates index, {} rows read",
                c.name, c.rows_from_index, c.units_from_index, c.rows_to_read
            );
        }
        for w in &self.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
        s
    }
}

/// The rows a metadata count stands for, and what it was made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetadataCount {
    pub rows: u64,
    pub files: u64,
    pub deleted: u64,
}
