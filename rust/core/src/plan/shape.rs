//! What a scan's output looks like: its schema and where each column comes from.

use arrow_schema::SchemaRef;

/// What the output looks like, shared by every unit of a scan.
#[derive(Debug, Clone)]
pub struct OutputShape {
    pub schema: SchemaRef,
    /// Per output column: a root column of the file, or a partition column.
    pub columns: Vec<OutputColumn>,
    pub batch_size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputColumn {
    Root(usize),
    Partition(usize),
}

impl OutputShape {
    /// The file's root columns the output reads, sorted, each once.
    pub fn roots(&self) -> Vec<usize> {
        let mut r: Vec<usize> = self
            .columns
            .iter()
            .filter_map(|c| match c {
                OutputColumn::Root(i) => Some(*i),
                OutputColumn::Partition(_) => None,
            })
            .collect();
        r.sort_unstable();
        r.dedup();
        r
    }
}
