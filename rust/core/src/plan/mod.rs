//! The plan's vocabulary, types only: row ranges, the per-file access plan, scan units,
//! the output shape, and the metrics planning and reading report. Every layer above
//! (pruning, reading, querying) speaks in these; this module depends on none of them.

pub mod access;
pub mod columns;
pub mod metrics;
pub mod row_ranges;
pub mod shape;
pub mod unit;

pub use access::AccessPlan;
pub use columns::ColumnMap;
pub use metrics::{Counter, Metrics};
pub use row_ranges::RowRanges;
pub use shape::{Decoding, OutputColumn, OutputShape};
pub use unit::{needed_leaves, PlannedFile, ScanUnit};
