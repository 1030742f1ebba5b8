//! The key tuples of a semi join on several columns: rows in arrow's row format, in a hash
//! set, tested against a batch's key columns.

use std::collections::HashSet;

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{ArrowError, DataType};

use crate::error::{Error, Result};

/// The key tuples of a semi join on several columns, in arrow's row format.
#[derive(Debug)]
pub struct KeyTuples {
    converter: RowConverter,
    set: HashSet<Box<[u8]>, foldhash::fast::RandomState>,
}

impl PartialEq for KeyTuples {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl KeyTuples {
    /// The tuples of the rows of `values` (one array per key column, of the columns'
    /// `types`) that hold no NULL.
    pub fn new(types: &[DataType], values: &[ArrayRef]) -> Result<KeyTuples> {
        let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())
            .map_err(Error::from)?;
        let rows = converter.convert_columns(values).map_err(Error::from)?;
        let mut nulls: Option<NullBuffer> = None;
        for v in values {
            nulls = NullBuffer::union(nulls.as_ref(), v.logical_nulls().as_ref());
        }
        let set = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| nulls.as_ref().is_none_or(|n| n.is_valid(*i)))
            .map(|(_, r)| Box::<[u8]>::from(r.as_ref()))
            .collect();
        Ok(KeyTuples { converter, set })
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Whether each row of `columns` (in key order, of the key columns' types) is a key;
    /// NULL where any of its values is NULL.
    pub fn contains(
        &self,
        columns: &[ArrayRef],
    ) -> std::result::Result<arrow_array::BooleanArray, ArrowError> {
        let rows = self.converter.convert_columns(columns)?;
        let hits: BooleanBuffer = rows.iter().map(|r| self.set.contains(r.as_ref())).collect();
        let mut nulls: Option<NullBuffer> = None;
        for c in columns {
            nulls = NullBuffer::union(nulls.as_ref(), c.logical_nulls().as_ref());
        }
        Ok(BooleanArray::new(hits, nulls))
    }
}
