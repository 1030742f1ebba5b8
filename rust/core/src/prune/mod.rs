//! Pruning, coarse to fine: row groups by statistics and bloom filters, pages by the
//! ColumnIndex; the plan that results; and the row-range algebra they share.

pub mod bloom;
pub mod bloom_header;
pub mod certain;
pub mod fetch;
pub mod page;
pub mod plan;
pub mod row_ranges;
pub mod stats;
