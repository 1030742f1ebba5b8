//! String and binary views that hold far more bytes than their rows use, copied out.
//!
//! A view points into a buffer the reader decoded: a plain page or a dictionary, whole.
//! After a selective read a batch's few rows would keep every such page alive, a needle's
//! row a page of comments, so a view column holding more than twice the bytes its values
//! take is compacted ([`arrow_array::StringViewArray::gc`]). Columns of values no longer than a view's
//! 12 inline bytes, and those whose buffers their rows fill, are left as they are.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

/// Buffers held under this many bytes are never worth copying out.
const SMALL: usize = 64 * 1024;

/// `batch` with its wasteful view columns compacted.
pub(super) fn compacted(batch: RecordBatch) -> RecordBatch {
    let wasteful = |c: &ArrayRef| match c.data_type() {
        DataType::Utf8View => {
            let a = c.as_string_view();
            wastes(a.views(), a.data_buffers())
        }
        DataType::BinaryView => {
            let a = c.as_binary_view();
            wastes(a.views(), a.data_buffers())
        }
        _ => false,
    };
    if !batch.columns().iter().any(wasteful) {
        return batch;
    }
    let (schema, columns, rows) = batch.into_parts();
    let columns = columns
        .into_iter()
        .map(|c| match (wasteful(&c), c.data_type()) {
            (true, DataType::Utf8View) => Arc::new(c.as_string_view().gc()) as ArrayRef,
            (true, DataType::BinaryView) => Arc::new(c.as_binary_view().gc()) as ArrayRef,
            _ => c,
        })
        .collect();
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .expect("the same columns, compacted")
}

/// Whether `buffers` hold more than twice the bytes `views` point at (and are not small).
fn wastes(views: &[u128], buffers: &[Buffer]) -> bool {
    let held: usize = buffers.iter().map(Buffer::len).sum();
    if held < SMALL {
        return false;
    }
    let used: usize = views
        .iter()
        .map(|v| match *v as u32 {
            len if len > 12 => len as usize,
            _ => 0,
        })
        .sum();
    held > used.saturating_mul(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringViewArray};
    use arrow_schema::{Field, Schema};

    fn batch(strings: StringViewArray) -> RecordBatch {
        let n = strings.len() as i64;
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Utf8View, true),
        ]);
        let ids = Arc::new(Int64Array::from_iter_values(0..n));
        RecordBatch::try_new(Arc::new(schema), vec![ids, Arc::new(strings)]).unwrap()
    }

    fn held(batch: &RecordBatch) -> usize {
        let s = batch.column(1).as_string_view();
        s.data_buffers().iter().map(Buffer::len).sum()
    }

    #[test]
    fn a_few_rows_of_a_large_buffer_are_copied_out() {
        let values: Vec<String> = (0..10_000)
            .map(|i| format!("a long value {i:020}"))
            .collect();
        let whole = StringViewArray::from_iter_values(&values);
        // Two rows of 10,000 keep the whole buffer until compacted.
        let few = batch(whole.slice(5_000, 2));
        assert!(held(&few) > 300_000);
        let out = compacted(few.clone());
        assert!(held(&out) < 1_000);
        assert_eq!(out.column(1).as_ref(), few.column(1).as_ref());
        assert_eq!(out.column(0).as_ref(), few.column(0).as_ref());
        // Every row of it: left as it is.
        let all = batch(whole.clone());
        assert_eq!(held(&compacted(all.clone())), held(&all));
    }

    #[test]
    fn short_values_and_small_buffers_are_left_alone() {
        let short = StringViewArray::from_iter_values((0..10_000).map(|i| format!("{i}")));
        let b = batch(short.slice(0, 3));
        assert_eq!(held(&compacted(b.clone())), 0);
        let small = StringViewArray::from_iter_values((0..100).map(|i| format!("value {i:030}")));
        let b = batch(small.slice(0, 1));
        assert_eq!(held(&compacted(b.clone())), held(&b));
    }
}
