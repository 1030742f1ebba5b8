//! Helpers shared by unit tests.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

/// The first column of every batch, an Int64 key, in stream order.
pub fn keys(batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>) -> Vec<i64> {
    batches
        .flat_map(|b| {
            b.unwrap()
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect()
}
