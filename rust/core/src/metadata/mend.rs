//! Footers with the known mistakes of old writers, mended as the readers of the ecosystem
//! mend them (pyarrow, DuckDB, parquet-mr itself), so files other readers read are not
//! refused. Each mend changes only what the mistake put wrong and cannot change a row:
//!
//! - A `dictionary_page_offset` of 0 (parquet-mr wrote it for chunks without a dictionary,
//!   and for some with one, whose `data_page_offset` then starts at the dictionary page):
//!   byte 0 holds the file's magic, never a page, so it means "none". Without it the chunk
//!   starts at its data page offset, and a dictionary page found there is read as one.
//! - A chunk whose `total_compressed_size` leaves out its dictionary page's header
//!   (parquet-mr 1.2.8 and earlier, PARQUET-816 / IMPALA-694): the header is read and its
//!   length added, within the file (pyarrow pads such chunks by up to 100 bytes).

use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};

use crate::error::Result;
use crate::io::StorageFile;
use crate::metadata::page_header::{page_sizes, DICTIONARY_PAGE};

/// Bytes of a page header read to parse it (headers of old writers carry no statistics
/// beyond a few values).
const HEADER_READ: u64 = 1 << 10;

/// Whether a footer's writer is parquet-mr before 1.2.9 (or gives no version).
fn before_parquet_816_fix(md: &ParquetMetaData) -> bool {
    let Some(created_by) = md.file_metadata().created_by() else {
        return false;
    };
    let Some(rest) = created_by.strip_prefix("parquet-mr") else {
        return false;
    };
    let version = rest
        .trim_start()
        .strip_prefix("version")
        .unwrap_or(rest)
        .trim();
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let v = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    v < (1, 2, 9)
}

/// `md` with the mistakes above mended; `md` itself when it has none.
pub fn mended(file: &StorageFile, md: ParquetMetaData) -> Result<ParquetMetaData> {
    let old_mr = before_parquet_816_fix(&md);
    let zero_offsets = md
        .row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .any(|c| c.dictionary_page_offset() == Some(0));
    if !old_mr && !zero_offsets {
        return Ok(md);
    }
    let size = file.identity().size;
    let mut groups = Vec::with_capacity(md.num_row_groups());
    for group in md.row_groups() {
        let mut columns = Vec::with_capacity(group.num_columns());
        for chunk in group.columns() {
            let mut c = chunk.clone();
            if c.dictionary_page_offset() == Some(0) {
                c = c.into_builder().set_dictionary_page_offset(None).build()?;
            }
            if old_mr {
                if let Some(len) = walked_length(file, &c, size)? {
                    c = c.into_builder().set_total_compressed_size(len).build()?;
                }
            }
            columns.push(c);
        }
        groups.push(rebuilt(group, columns)?);
    }
    Ok(md.into_builder().set_row_groups(groups).build())
}

fn rebuilt(
    group: &RowGroupMetaData,
    columns: Vec<ColumnChunkMetaData>,
) -> Result<RowGroupMetaData> {
    Ok(group
        .clone()
        .into_builder()
        .set_column_metadata(columns)
        .build()?)
}

/// The size `chunk` has once its dictionary page's header is counted in, when its first
/// page is a dictionary page (the header parquet-mr left out, whether or not it recorded
/// the page's offset), within the file.
fn walked_length(
    file: &StorageFile,
    chunk: &ColumnChunkMetaData,
    size: u64,
) -> Result<Option<i64>> {
    let (start, declared) = chunk.byte_range();
    if start >= size {
        return Ok(None);
    }
    let head = file.read_range(start, HEADER_READ.min(size - start) as usize)?;
    let Ok(page) = page_sizes(&head) else {
        return Ok(None);
    };
    if page.page_type != DICTIONARY_PAGE {
        return Ok(None);
    }
    let room = size.saturating_sub(start.saturating_add(declared));
    let padded = declared.saturating_add((page.header_len as u64).min(room));
    Ok(i64::try_from(padded).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::metadata::{FileMetaData, ParquetMetaData};
    use parquet::schema::types::{SchemaDescriptor, Type};
    use std::sync::Arc;

    fn footer(created_by: Option<&str>) -> ParquetMetaData {
        let schema = Type::group_type_builder("schema").build().unwrap();
        let descr = Arc::new(SchemaDescriptor::new(Arc::new(schema)));
        let file = FileMetaData::new(1, 0, created_by.map(str::to_string), None, descr, None);
        ParquetMetaData::new(file, Vec::new())
    }

    #[test]
    fn parquet_mr_before_1_2_9_is_told_apart() {
        for (by, old) in [
            (Some("parquet-mr"), true),
            (Some("parquet-mr version 1.2.8"), true),
            (Some("parquet-mr version 1.2.9 (build abc)"), false),
            (
                Some("parquet-mr version 1.12.0-201812210311360288-a86293f"),
                false,
            ),
            (Some("parquet-cpp-arrow version 14.0.0"), false),
            (None, false),
        ] {
            assert_eq!(before_parquet_816_fix(&footer(by)), old, "{by:?}");
        }
    }
}
