//! The values of one column of an existing file, page by page, as its writer stored them
//! (physical values, in their plain encoding). Index builders consume this, so an index can
//! be added to a file from any writer without re-encoding a page.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parquet::basic::Type as PhysicalType;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{AsBytes, DataType};
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};

use crate::error::{panic_message, Error, Result};
use crate::io::{IoStats, StorageFile};
use crate::metadata::schema::leaves_named;

/// One data page of the column.
pub struct PageValues<'a> {
    pub row_group: usize,
    /// First row of the page within its row group.
    pub first_row: u64,
    pub rows: u64,
    pub row_group_rows: u64,
    pub file_rows: u64,
    pub nulls: u64,
    /// The non-null values, each in its plain encoding.
    pub values: &'a [&'a [u8]],
    pub column: &'a ColumnInfo,
}

/// What the builders need to know about the column.
#[derive(Debug, Clone)]
pub struct ColumnInfo {
    pub leaf: usize,
    pub physical: PhysicalType,
    pub type_length: i32,
    /// How the plain-encoded values order.
    pub order: PlainOrder,
}

/// The order of a column's plain-encoded values, from its physical and logical type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainOrder {
    Bool,
    I32,
    U32,
    I64,
    U64,
    /// IEEE floats of 4 or 8 bytes (NaN is never compared: it is counted apart).
    Float,
    /// Unsigned bytewise (strings, binary).
    Bytes,
    /// Big-endian two's complement of up to 16 bytes (decimals in byte arrays).
    BigEndianSigned,
    /// No order this code knows (INT96, float16, intervals).
    Unordered,
}

impl PlainOrder {
    pub fn of(cd: &parquet::schema::types::ColumnDescriptor) -> PlainOrder {
        use parquet::basic::{ConvertedType, LogicalType, SortOrder};
        let unsigned = cd.sort_order() == SortOrder::UNSIGNED;
        let decimal = matches!(cd.logical_type_ref(), Some(LogicalType::Decimal { .. }))
            || cd.converted_type() == ConvertedType::DECIMAL;
        match cd.physical_type() {
            PhysicalType::BOOLEAN => PlainOrder::Bool,
            PhysicalType::INT32 if unsigned => PlainOrder::U32,
            PhysicalType::INT32 => PlainOrder::I32,
            PhysicalType::INT64 if unsigned => PlainOrder::U64,
            PhysicalType::INT64 => PlainOrder::I64,
            PhysicalType::FLOAT | PhysicalType::DOUBLE => PlainOrder::Float,
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY if decimal => {
                PlainOrder::BigEndianSigned
            }
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY
                if cd.sort_order() == SortOrder::UNSIGNED =>
            {
                PlainOrder::Bytes
            }
            _ => PlainOrder::Unordered,
        }
    }
}

/// Call `f` for each data page of `column` (a dotted leaf path) in file order. Repeated
/// columns are refused: their pages do not hold one value per row.
pub fn for_each_page(
    path: &str,
    column: &str,
    f: &mut dyn FnMut(&PageValues) -> Result<()>,
) -> Result<ColumnInfo> {
    let file = StorageFile::open(path, Arc::new(IoStats::default()))?;
    // Damage is named; a storage failure (a replaced object, say) keeps its own kind.
    let corrupt = |e: parquet::errors::ParquetError| match Error::from(e).in_file(path) {
        Error::InvalidFile { reason, .. } => {
            Error::invalid_file(path, format!("cannot read column {column}: {reason}"))
        }
        other => other,
    };
    let options = ReadOptionsBuilder::new().with_page_index().build();
    let reader = SerializedFileReader::new_with_options(file.clone(), options).map_err(corrupt)?;
    let md = reader.metadata();
    let descr = md.file_metadata().schema_descr();
    let matching = leaves_named(descr, column);
    let leaf = match matching[..] {
        [leaf] => leaf,
        [] => {
            return Err(Error::InvalidArgument(format!(
                "{path}: no column {column:?} to index"
            )))
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{path}: {column:?} names several columns (a column with dots in its name and a struct field); it cannot be indexed"
            )))
        }
    };
    let cd = descr.column(leaf);
    if cd.max_rep_level() > 0 {
        return Err(Error::unsupported(format!(
            "{path}: column {column} is repeated; indexes cover columns with one value per row"
        )));
    }
    let info = ColumnInfo {
        leaf,
        physical: cd.physical_type(),
        type_length: cd.type_length(),
        order: PlainOrder::of(&cd),
    };
    let nullable = cd.max_def_level() > 0;
    let file_rows = md.file_metadata().num_rows().max(0) as u64;
    // The column's chunks in few reads (concurrent ones on an object store), not page by
    // page; the reader then takes its pages from memory.
    if file.is_remote() {
        let chunks = md
            .row_groups()
            .iter()
            .map(|g| {
                let (start, len) = g.column(leaf).byte_range();
                start..start.saturating_add(len)
            })
            .filter(|r| r.end <= file.identity().size)
            .collect();
        file.prefetch(chunks)?;
    }
    let run = || -> Result<()> {
        for rg in 0..reader.num_row_groups() {
            let rg_reader = reader.get_row_group(rg).map_err(corrupt)?;
            let rg_rows = rg_reader.metadata().num_rows().max(0) as u64;
            let pages = page_rows(rg_reader.as_ref(), leaf, rg_rows).map_err(|e| match e {
                Error::Parquet(p) => corrupt(p),
                other => other.in_file(path),
            })?;
            let ctx = PageCtx {
                path,
                info: &info,
                float_width: match info.physical {
                    PhysicalType::FLOAT => Some(4),
                    PhysicalType::DOUBLE => Some(8),
                    _ => None,
                },
                row_group: rg,
                rg_rows,
                file_rows,
                nullable,
            };
            match rg_reader.get_column_reader(leaf).map_err(corrupt)? {
                ColumnReader::BoolColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::Int32ColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::Int64ColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::Int96ColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::FloatColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::DoubleColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::ByteArrayColumnReader(r) => read_pages(r, &pages, &ctx, f),
                ColumnReader::FixedLenByteArrayColumnReader(r) => read_pages(r, &pages, &ctx, f),
            }?;
        }
        Ok(())
    };
    // The decoders may panic on corrupt pages; that is a bad file, not a crash.
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(r) => r.map(|()| info),
        Err(panic) => Err(Error::invalid_file(
            path,
            format!(
                "corrupt data pages in column {column}: {}",
                panic_message(&*panic)
            ),
        )),
    }
}

/// Rows per data page, from the OffsetIndex when present, else from the page headers;
/// they must add up to the row group's rows.
fn page_rows(rg: &dyn RowGroupReader, leaf: usize, rg_rows: u64) -> Result<Vec<u64>> {
    let mut pages = Vec::new();
    let mut reader = rg.get_column_page_reader(leaf)?;
    while let Some(meta) = reader.peek_next_page()? {
        if !meta.is_dict {
            let rows = meta.num_rows.or(meta.num_levels).unwrap_or(0) as u64;
            pages.push(rows);
        }
        reader.skip_next_page()?;
    }
    let total: u64 = pages.iter().sum();
    if total != rg_rows {
        return Err(Error::InvalidArgument(format!(
            "the pages of column {leaf} hold {total} rows, its row group {rg_rows}"
        )));
    }
    Ok(pages)
}

/// One float's bytes with -0.0 as 0.0 and every NaN as the canonical NaN, so equal SQL
/// values hash alike (probes try both zeros and never probe NaN, so this loses nothing).
fn canonical_float(bytes: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    match bytes.len() {
        4 => {
            let f = f32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            let f = if f.is_nan() { f32::NAN } else { f + 0.0 };
            out[..4].copy_from_slice(&f.to_le_bytes());
        }
        _ => {
            let f = f64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            let f = if f.is_nan() { f64::NAN } else { f + 0.0 };
            out.copy_from_slice(&f.to_le_bytes());
        }
    }
    out
}

struct PageCtx<'a> {
    path: &'a str,
    info: &'a ColumnInfo,
    /// 4 or 8 for FLOAT and DOUBLE columns, whose values are canonicalised.
    float_width: Option<usize>,
    row_group: usize,
    rg_rows: u64,
    file_rows: u64,
    nullable: bool,
}

fn read_pages<T: DataType>(
    mut reader: ColumnReaderImpl<T>,
    pages: &[u64],
    ctx: &PageCtx,
    f: &mut dyn FnMut(&PageValues) -> Result<()>,
) -> Result<()>
where
    T::T: AsBytes,
{
    let mut values: Vec<T::T> = Vec::new();
    let mut defs: Vec<i16> = Vec::new();
    let mut first_row = 0u64;
    for &rows in pages {
        values.clear();
        defs.clear();
        let mut got = 0u64;
        while got < rows {
            let want = (rows - got) as usize;
            let (records, _, _) = reader
                .read_records(want, ctx.nullable.then_some(&mut defs), None, &mut values)
                .map_err(|e| Error::invalid_file(ctx.path, format!("corrupt page: {e}")))?;
            if records == 0 {
                return Err(Error::invalid_file(
                    ctx.path,
                    "a column chunk ended before its pages' rows",
                ));
            }
            got += records as u64;
        }
        let canonical: Vec<[u8; 8]>;
        let slices: Vec<&[u8]> = match ctx.float_width {
            Some(width) => {
                canonical = values
                    .iter()
                    .map(|v| canonical_float(v.as_bytes()))
                    .collect();
                canonical.iter().map(|b| &b[..width]).collect()
            }
            None => values.iter().map(|v| v.as_bytes()).collect(),
        };
        f(&PageValues {
            row_group: ctx.row_group,
            first_row,
            rows,
            row_group_rows: ctx.rg_rows,
            file_rows: ctx.file_rows,
            nulls: rows.saturating_sub(values.len() as u64),
            values: &slices,
            column: ctx.info,
        })?;
        first_row += rows;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_and_nans_are_canonical() {
        let f64_of = |b: [u8; 8]| f64::from_le_bytes(b);
        assert_eq!(
            canonical_float(&(-0.0f64).to_le_bytes()),
            0.0f64.to_le_bytes()
        );
        let nan = f64::from_bits(0x7ff8_0000_0000_0001);
        assert_eq!(canonical_float(&nan.to_le_bytes()), f64::NAN.to_le_bytes());
        assert_eq!(f64_of(canonical_float(&2.5f64.to_le_bytes())), 2.5);
        assert_eq!(
            canonical_float(&(-0.0f32).to_le_bytes())[..4],
            0.0f32.to_le_bytes()
        );
    }
}
