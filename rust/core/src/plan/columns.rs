//! How one file's columns make a table's: a table's files may name columns differently
//! (Delta column mapping, Iceberg field ids), lack columns added later, or store a column
//! in a narrower type than the table now declares.

use arrow_schema::SchemaRef;

/// The table's columns in one data file.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMap {
    /// The table's data columns, as the output shows them (their fields' metadata names
    /// the physical names or field ids to find them, nested fields too).
    pub logical: SchemaRef,
    /// Per table column (logical root), the file's root column holding it, or `None`
    /// when the file has no such column (its values are NULL).
    pub roots: Vec<Option<usize>>,
}

impl ColumnMap {
    /// The file's root columns holding `logical_roots`, in order, without the missing.
    pub fn file_roots(&self, logical_roots: &[usize]) -> Vec<usize> {
        let mut out: Vec<usize> = logical_roots
            .iter()
            .filter_map(|r| self.roots.get(*r).copied().flatten())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}
