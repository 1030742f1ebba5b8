//! The footer and page index as Arrow tables, for people who want to look inside a file:
//! one row per row group, per column chunk, and per page.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::statistics::Statistics;

use crate::error::Result;

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )?)
}

/// One row per row group.
pub fn row_groups(md: &ParquetMetaData) -> Result<RecordBatch> {
    let (mut idx, mut rows, mut size, mut compressed, mut offset) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
    );
    for (i, rg) in md.row_groups().iter().enumerate() {
        idx.append_value(i as i64);
        rows.append_value(rg.num_rows());
        size.append_value(rg.total_byte_size());
        compressed.append_value(rg.compressed_size());
        offset.append_option(rg.file_offset());
    }
    batch(vec![
        ("row_group", Arc::new(idx.finish())),
        ("num_rows", Arc::new(rows.finish())),
        ("total_byte_size", Arc::new(size.finish())),
        ("compressed_size", Arc::new(compressed.finish())),
        ("file_offset", Arc::new(offset.finish())),
    ])
}

fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// A statistic as text, in the physical type's natural rendering.
fn stat_text(s: &Statistics, min: bool) -> Option<String> {
    macro_rules! pick {
        ($v:expr) => {
            if min {
                $v.min_opt()
            } else {
                $v.max_opt()
            }
        };
    }
    match s {
        Statistics::Boolean(v) => pick!(v).map(|x| x.to_string()),
        Statistics::Int32(v) => pick!(v).map(|x| x.to_string()),
        Statistics::Int64(v) => pick!(v).map(|x| x.to_string()),
        Statistics::Int96(v) => pick!(v).map(|x| format!("{x:?}")),
        Statistics::Float(v) => pick!(v).map(|x| x.to_string()),
        Statistics::Double(v) => pick!(v).map(|x| x.to_string()),
        Statistics::ByteArray(v) => pick!(v).map(|x| text(x.data())),
        Statistics::FixedLenByteArray(v) => pick!(v).map(|x| text(x.data())),
    }
}

/// One row per column chunk.
pub fn columns(md: &ParquetMetaData) -> Result<RecordBatch> {
    let mut rg_b = Int64Builder::new();
    let mut col_b = StringBuilder::new();
    let mut phys_b = StringBuilder::new();
    let mut logical_b = StringBuilder::new();
    let mut comp_b = StringBuilder::new();
    let mut enc_b = StringBuilder::new();
    let mut values_b = Int64Builder::new();
    let mut csize_b = Int64Builder::new();
    let mut usize_b = Int64Builder::new();
    let mut nulls_b = Int64Builder::new();
    let mut min_b = StringBuilder::new();
    let mut max_b = StringBuilder::new();
    let mut min_exact_b = BooleanBuilder::new();
    let mut max_exact_b = BooleanBuilder::new();
    let mut bloom_b = BooleanBuilder::new();
    let mut bloom_len_b = Int64Builder::new();
    let mut pidx_b = BooleanBuilder::new();
    for (r, rg) in md.row_groups().iter().enumerate() {
        for c in rg.columns() {
            rg_b.append_value(r as i64);
            col_b.append_value(c.column_path().string());
            phys_b.append_value(c.column_type().to_string());
            logical_b.append_option(c.column_descr().logical_type_ref().map(logical_type_name));
            comp_b.append_value(c.compression().to_string());
            let encs: Vec<String> = c.encodings().map(|e| e.to_string()).collect();
            enc_b.append_value(encs.join(","));
            values_b.append_value(c.num_values());
            csize_b.append_value(c.compressed_size());
            usize_b.append_value(c.uncompressed_size());
            let st = c.statistics();
            nulls_b.append_option(st.and_then(|s| s.null_count_opt()).map(|n| n as i64));
            min_b.append_option(st.and_then(|s| stat_text(s, true)));
            max_b.append_option(st.and_then(|s| stat_text(s, false)));
            min_exact_b.append_option(st.map(|s| s.min_is_exact()));
            max_exact_b.append_option(st.map(|s| s.max_is_exact()));
            bloom_b.append_value(c.bloom_filter_offset().is_some());
            bloom_len_b.append_option(c.bloom_filter_length().map(i64::from));
            pidx_b.append_value(
                c.column_index_offset().is_some() && c.offset_index_offset().is_some(),
            );
        }
    }
    batch(vec![
        ("row_group", Arc::new(rg_b.finish())),
        ("column", Arc::new(col_b.finish())),
        ("physical_type", Arc::new(phys_b.finish())),
        ("logical_type", Arc::new(logical_b.finish())),
        ("compression", Arc::new(comp_b.finish())),
        ("encodings", Arc::new(enc_b.finish())),
        ("num_values", Arc::new(values_b.finish())),
        ("compressed_size", Arc::new(csize_b.finish())),
        ("uncompressed_size", Arc::new(usize_b.finish())),
        ("null_count", Arc::new(nulls_b.finish())),
        ("min", Arc::new(min_b.finish())),
        ("max", Arc::new(max_b.finish())),
        ("min_is_exact", Arc::new(min_exact_b.finish())),
        ("max_is_exact", Arc::new(max_exact_b.finish())),
        ("has_bloom_filter", Arc::new(bloom_b.finish())),
        ("bloom_filter_length", Arc::new(bloom_len_b.finish())),
        ("has_page_index", Arc::new(pidx_b.finish())),
    ])
}

fn page_text(ci: &ColumnIndexMetaData, page: usize, min: bool) -> Option<String> {
    macro_rules! pick {
        ($x:expr) => {
            if min {
                $x.min_value(page)
            } else {
                $x.max_value(page)
            }
        };
    }
    match ci {
        ColumnIndexMetaData::BOOLEAN(x) => pick!(x).map(|v| v.to_string()),
        ColumnIndexMetaData::INT32(x) => pick!(x).map(|v| v.to_string()),
        ColumnIndexMetaData::INT64(x) => pick!(x).map(|v| v.to_string()),
        ColumnIndexMetaData::FLOAT(x) => pick!(x).map(|v| v.to_string()),
        ColumnIndexMetaData::DOUBLE(x) => pick!(x).map(|v| v.to_string()),
        ColumnIndexMetaData::BYTE_ARRAY(x) | ColumnIndexMetaData::FIXED_LEN_BYTE_ARRAY(x) => {
            pick!(x).map(text)
        }
        _ => None,
    }
}

/// A logical type as the Parquet specification writes it: `DECIMAL(15,2)`,
/// `TIMESTAMP(MICROS,true)`, `INT(16,false)`.
pub fn logical_type_name(l: &LogicalType) -> String {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::MILLIS => "MILLIS",
        TimeUnit::MICROS => "MICROS",
        TimeUnit::NANOS => "NANOS",
    };
    match l {
        LogicalType::String => "STRING".into(),
        LogicalType::Map => "MAP".into(),
        LogicalType::List => "LIST".into(),
        LogicalType::Enum => "ENUM".into(),
        LogicalType::Decimal(d) => format!("DECIMAL({},{})", d.precision, d.scale),
        LogicalType::Date => "DATE".into(),
        LogicalType::Time(t) => format!("TIME({},{})", unit(&t.unit), t.is_adjusted_to_u_t_c),
        LogicalType::Timestamp(t) => {
            format!("TIMESTAMP({},{})", unit(&t.unit), t.is_adjusted_to_u_t_c)
        }
        LogicalType::Integer(i) => format!("INT({},{})", i.bit_width, i.is_signed),
        LogicalType::Unknown => "UNKNOWN".into(),
        LogicalType::Json => "JSON".into(),
        LogicalType::Bson => "BSON".into(),
        LogicalType::Uuid => "UUID".into(),
        LogicalType::Float16 => "FLOAT16".into(),
        LogicalType::Variant(_) => "VARIANT".into(),
        LogicalType::Geometry(_) => "GEOMETRY".into(),
        LogicalType::Geography(_) => "GEOGRAPHY".into(),
        other => format!("{other:?}"),
    }
}

/// One row per data page, from the page index (empty when the file has none).
pub fn pages(md: &ParquetMetaData) -> Result<RecordBatch> {
    let mut rg_b = Int64Builder::new();
    let mut col_b = StringBuilder::new();
    let mut page_b = Int64Builder::new();
    let mut first_b = Int64Builder::new();
    let mut count_b = Int64Builder::new();
    let mut off_b = Int64Builder::new();
    let mut size_b = Int64Builder::new();
    let mut min_b = StringBuilder::new();
    let mut max_b = StringBuilder::new();
    let mut nulls_b = Int64Builder::new();
    let mut null_page_b = BooleanBuilder::new();
    if let Some(oi) = md.offset_index() {
        for (r, cols) in oi.iter().enumerate() {
            let rows = md.row_group(r).num_rows();
            for (c, o) in cols.iter().enumerate() {
                let ci = md
                    .column_index()
                    .and_then(|ci| ci.get(r))
                    .and_then(|x| x.get(c));
                let locs = o.page_locations();
                for (p, loc) in locs.iter().enumerate() {
                    let next = locs.get(p + 1).map_or(rows, |n| n.first_row_index);
                    rg_b.append_value(r as i64);
                    col_b.append_value(md.row_group(r).column(c).column_path().string());
                    page_b.append_value(p as i64);
                    first_b.append_value(loc.first_row_index);
                    count_b.append_value(next - loc.first_row_index);
                    off_b.append_value(loc.offset);
                    size_b.append_value(i64::from(loc.compressed_page_size));
                    let known = ci.filter(|ci| !matches!(ci, ColumnIndexMetaData::NONE));
                    min_b.append_option(known.and_then(|ci| page_text(ci, p, true)));
                    max_b.append_option(known.and_then(|ci| page_text(ci, p, false)));
                    nulls_b.append_option(known.and_then(|ci| ci.null_count(p)));
                    null_page_b.append_option(known.map(|ci| ci.is_null_page(p)));
                }
            }
        }
    }
    batch(vec![
        ("row_group", Arc::new(rg_b.finish())),
        ("column", Arc::new(col_b.finish())),
        ("page", Arc::new(page_b.finish())),
        ("first_row", Arc::new(first_b.finish())),
        ("row_count", Arc::new(count_b.finish())),
        ("offset", Arc::new(off_b.finish())),
        ("compressed_size", Arc::new(size_b.finish())),
        ("min", Arc::new(min_b.finish())),
        ("max", Arc::new(max_b.finish())),
        ("null_count", Arc::new(nulls_b.finish())),
        ("null_page", Arc::new(null_page_b.finish())),
    ])
}
