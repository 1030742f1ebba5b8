//! Helpers for the index kinds' unit tests: build a payload from pages of strings, and
//! probe it for a leaf through a real block in a file.

use std::sync::Arc;

use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type};

use crate::index::block::BlockReader;
use crate::index::column_values::{ColumnInfo, PageValues, PlainOrder};
use crate::index::container::encode_block;
use crate::index::kind::{IndexKind, Settings};
use crate::index::locator::Locator;
use crate::io::{IoStats, StorageFile};
use crate::predicate::expr::{CmpOp, ColumnRef, Predicate};
use crate::predicate::pattern::StrPattern;
use crate::predicate::Value;

/// A payload of `kind` over a string column whose pages hold `pages` (one row group).
pub fn build_payload(kind: &dyn IndexKind, settings: &Settings, pages: &[Vec<&str>]) -> Vec<u8> {
    let info = ColumnInfo {
        leaf: 0,
        physical: PhysicalType::BYTE_ARRAY,
        type_length: -1,
        order: PlainOrder::Bytes,
    };
    let rows: u64 = pages.iter().map(|p| p.len() as u64).sum();
    let mut builder = kind.builder(settings);
    let mut first_row = 0;
    for p in pages {
        let values: Vec<&[u8]> = p.iter().map(|s| s.as_bytes()).collect();
        builder.page(&PageValues {
            row_group: 0,
            first_row,
            rows: p.len() as u64,
            row_group_rows: rows,
            file_rows: rows,
            nulls: 0,
            values: &values,
            column: &info,
        });
        first_row += p.len() as u64;
    }
    builder.finish()
}

/// The descriptor of a string column `s`.
pub fn string_column() -> ColumnDescriptor {
    let tp = Type::primitive_type_builder("s", PhysicalType::BYTE_ARRAY)
        .with_logical_type(Some(LogicalType::String))
        .build()
        .expect("a valid type");
    ColumnDescriptor::new(Arc::new(tp), 1, 0, ColumnPath::new(vec!["s".into()]))
}

/// `s LIKE pattern`.
pub fn leaf_like(pattern: &str) -> Predicate {
    Predicate::Match {
        col: ColumnRef::for_test("s", arrow_schema::DataType::Utf8),
        pattern: Arc::new(StrPattern::like(pattern, None, false).expect("a pattern")),
        negated: false,
    }
}

/// `s = value`.
pub fn leaf_eq(value: &str) -> Predicate {
    Predicate::Cmp {
        col: ColumnRef::for_test("s", arrow_schema::DataType::Utf8),
        op: CmpOp::Eq,
        value: Value::Bytes(value.as_bytes().to_vec()),
    }
}

/// The units of `payload` that may hold a row satisfying `leaf`, probed the way planning
/// does: through a block written to a file and read in part.
pub fn probe_units(kind: &dyn IndexKind, payload: &[u8], leaf: &Predicate) -> Option<Vec<u32>> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("block");
    let block = encode_block(kind.info().code, payload);
    std::fs::write(&path, &block).expect("written");
    let file = StorageFile::open(path.to_str().expect("utf-8"), Arc::new(IoStats::default()))
        .expect("opened");
    let locator = Locator {
        kind: kind.info().name.into(),
        columns: vec!["s".into()],
        granularity: crate::index::locator::Granularity::Page,
        offset: 0,
        length: block.len() as u64,
        checksum: crate::index::container::block_checksum(&block).expect("a checksum"),
        version: crate::index::container::BLOCK_VERSION,
    };
    let reader = BlockReader::new(
        &file,
        &locator,
        block.len() as u64,
        kind.info().code,
        kind.info().name,
    )
    .expect("a block reader");
    let column = string_column();
    let mut probe = kind.probe(&reader).expect("opened for planning");
    probe.units(leaf, &column, &reader).expect("probed")
}
