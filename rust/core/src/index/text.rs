//! What the text indexes (n-gram, token) read off a leaf: the literal pieces a string
//! pattern needs, or the values of a string equality or IN list.

use parquet::basic::Type as PhysicalType;
use parquet::schema::types::ColumnDescriptor;

use crate::predicate::expr::{CmpOp, Predicate};
use crate::predicate::pattern::Piece;
use crate::predicate::value::{Domain, Value};

/// Whether `leaf` is on a string column stored as byte arrays (what text indexes cover).
pub fn is_string(leaf: &Predicate, column: &ColumnDescriptor) -> bool {
    leaf.column().is_some_and(|c| c.domain == Domain::Utf8)
        && column.physical_type() == PhysicalType::BYTE_ARRAY
}

/// The literal pieces every row satisfying a (non-negated) string pattern contains, or
/// `None` for other leaves.
pub fn text_pieces(leaf: &Predicate) -> Option<Vec<Piece<'_>>> {
    match leaf {
        Predicate::Match {
            pattern,
            negated: false,
            col,
        } if col.domain == Domain::Utf8 => Some(pattern.pieces()),
        _ => None,
    }
}

/// The values one of which a row satisfying `leaf` equals (`=` and `IN` on strings).
pub fn string_values(leaf: &Predicate) -> Option<Vec<&[u8]>> {
    let col = leaf.column()?;
    if col.domain != Domain::Utf8 {
        return None;
    }
    fn bytes(v: &Value) -> Option<&[u8]> {
        match v {
            Value::Bytes(b) => Some(b.as_slice()),
            _ => None,
        }
    }
    match leaf {
        Predicate::Cmp {
            op: CmpOp::Eq,
            value,
            ..
        } => Some(vec![bytes(value)?]),
        Predicate::InList {
            values,
            negated: false,
            ..
        } => values.iter().map(bytes).collect(),
        _ => None,
    }
}
