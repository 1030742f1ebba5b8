//! Footer and page-index fields of another Thrift type than the format's, read as other
//! readers read them.
//!
//! Writers have produced metadata the parquet crate refuses and pyarrow and DuckDB read:
//!
//! - integer lists declared as another integer width (a `list<i64>` of i16, seen from
//!   parquet-mr). In the compact protocol i16, i32 and i64 values are all zigzag varints,
//!   so such a list holds exactly the values the format means: only its header's type
//!   nibble is set to the format's.
//! - a field whose id the format gives another type (a pre-release parquet-mr wrote a list
//!   of structs as `ColumnMetaData` field 15, which the format made `bloom_filter_length`,
//!   an i32). A Thrift reader skips a field it finds with an unexpected type; so does
//!   this, by leaving it out.
//!
//! The structs on the way to each column chunk's metadata are written again field by
//! field; every value kept is copied byte for byte.

use crate::metadata::thrift::{
    Reader, T_BINARY, T_BOOL_FALSE, T_BOOL_TRUE, T_I16, T_I32, T_I64, T_LIST, T_STRUCT,
};

/// What a field holds, as far as mending needs to know.
enum Field {
    /// A value of this compact type, copied as it is.
    Plain(u8),
    /// A list of integers of this compact type.
    Integers(u8),
    Struct(&'static [(i16, Field)]),
    /// A list of structs.
    Structs(&'static [(i16, Field)]),
}

use Field::{Integers, Plain, Struct, Structs};

/// `ColumnMetaData`, every field (parquet.thrift).
const COLUMN_META_DATA: &[(i16, Field)] = &[
    (1, Plain(T_I32)),
    (2, Integers(T_I32)),
    (3, Plain(T_LIST)),
    (4, Plain(T_I32)),
    (5, Plain(T_I64)),
    (6, Plain(T_I64)),
    (7, Plain(T_I64)),
    (8, Plain(T_LIST)),
    (9, Plain(T_I64)),
    (10, Plain(T_I64)),
    (11, Plain(T_I64)),
    (12, Plain(T_STRUCT)),
    (13, Plain(T_LIST)),
    (14, Plain(T_I64)),
    (15, Plain(T_I32)),
    (16, Struct(&[(2, Integers(T_I64)), (3, Integers(T_I64))])),
    (17, Struct(&[(2, Integers(T_I32))])),
];

/// `ColumnChunk`.
const COLUMN_CHUNK: &[(i16, Field)] = &[
    (1, Plain(T_BINARY)),
    (2, Plain(T_I64)),
    (3, Struct(COLUMN_META_DATA)),
    (4, Plain(T_I64)),
    (5, Plain(T_I32)),
    (6, Plain(T_I64)),
    (7, Plain(T_I32)),
    (8, Plain(T_STRUCT)),
    (9, Plain(T_BINARY)),
];

/// `RowGroup`.
const ROW_GROUP: &[(i16, Field)] = &[
    (1, Structs(COLUMN_CHUNK)),
    (2, Plain(T_I64)),
    (3, Plain(T_I64)),
    (4, Plain(T_LIST)),
    (5, Plain(T_I64)),
    (6, Plain(T_I64)),
    (7, Plain(T_I16)),
];

/// `FileMetaData`.
const FILE_META_DATA: &[(i16, Field)] = &[
    (1, Plain(T_I32)),
    (2, Plain(T_LIST)),
    (3, Plain(T_I64)),
    (4, Structs(ROW_GROUP)),
    (5, Plain(T_LIST)),
    (6, Plain(T_BINARY)),
    (7, Plain(T_LIST)),
    (8, Plain(T_STRUCT)),
    (9, Plain(T_BINARY)),
];

/// `ColumnIndex`: `null_counts` and the two level histograms.
const COLUMN_INDEX: &[(i16, Field)] = &[
    (5, Integers(T_I64)),
    (6, Integers(T_I64)),
    (7, Integers(T_I64)),
];

/// `OffsetIndex`: `unencoded_byte_array_data_bytes`.
const OFFSET_INDEX: &[(i16, Field)] = &[(2, Integers(T_I64))];

/// What a Thrift struct is, for [`repaired`].
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    FileMetaData,
    ColumnIndex,
    OffsetIndex,
}

/// `buf` (a struct of `kind`) mended as the module says, or `None` when nothing needed it
/// (or the bytes cannot be walked: the crate then says what is wrong).
pub fn repaired(buf: &[u8], kind: Kind) -> Option<Vec<u8>> {
    let fields = match kind {
        Kind::FileMetaData => FILE_META_DATA,
        Kind::ColumnIndex => COLUMN_INDEX,
        Kind::OffsetIndex => OFFSET_INDEX,
    };
    let mut r = Reader::new(buf, "metadata");
    let mut out = Mended {
        bytes: Vec::with_capacity(buf.len()),
        changed: false,
        // A page index sits in the file among others at recorded offsets: it is only
        // mended in place (same length), never by leaving a field out.
        may_drop: matches!(kind, Kind::FileMetaData),
    };
    out.with_struct(&mut r, buf, fields).ok()?;
    out.bytes.extend_from_slice(&buf[r.pos..]);
    out.changed.then_some(out.bytes)
}

struct Mended {
    bytes: Vec<u8>,
    changed: bool,
    may_drop: bool,
}

fn same_type(want: u8, got: u8) -> bool {
    let bool_type = |t| t == T_BOOL_TRUE || t == T_BOOL_FALSE;
    want == got || (bool_type(want) && bool_type(got))
}

impl Mended {
    /// Copy the struct at `r` (up to and including its stop), mending its fields.
    fn with_struct(
        &mut self,
        r: &mut Reader,
        buf: &[u8],
        fields: &[(i16, Field)],
    ) -> Result<(), String> {
        let mut last_in = 0i16;
        let mut last_out = 0i16;
        while let Some((id, ty)) = r.field_header(&mut last_in)? {
            let field = fields.iter().find(|(f, _)| *f == id).map(|(_, f)| f);
            let want = match field {
                Some(Plain(t) | Integers(t)) => Some(if matches!(field, Some(Integers(_))) {
                    T_LIST
                } else {
                    *t
                }),
                Some(Struct(_)) => Some(T_STRUCT),
                Some(Structs(_)) => Some(T_LIST),
                None => None,
            };
            if want.is_some_and(|w| !same_type(w, ty)) {
                if !self.may_drop {
                    return Err("a field of another type".into());
                }
                // A field of a type the format does not give its id: skipped, as a
                // Thrift reader skips it.
                r.skip_value(ty, 1)?;
                self.changed = true;
                continue;
            }
            self.field_header(id, ty, &mut last_out);
            match field {
                Some(Integers(want)) => {
                    let at = self.bytes.len();
                    let start = r.pos;
                    let (elem, n) = r.list_header()?;
                    self.bytes.extend_from_slice(&buf[start..r.pos]);
                    let varints = [T_I16, T_I32, T_I64];
                    if elem != *want && varints.contains(&elem) {
                        self.bytes[at] = (self.bytes[at] & 0xF0) | want;
                        self.changed = true;
                    }
                    let values = r.pos;
                    for _ in 0..n {
                        r.skip_element(elem, 2)?;
                    }
                    self.bytes.extend_from_slice(&buf[values..r.pos]);
                }
                Some(Struct(inner)) => self.with_struct(r, buf, inner)?,
                Some(Structs(inner)) => {
                    let start = r.pos;
                    let (elem, n) = r.list_header()?;
                    self.bytes.extend_from_slice(&buf[start..r.pos]);
                    for _ in 0..n {
                        if elem == T_STRUCT {
                            self.with_struct(r, buf, inner)?;
                        } else {
                            let at = r.pos;
                            r.skip_element(elem, 2)?;
                            self.bytes.extend_from_slice(&buf[at..r.pos]);
                        }
                    }
                }
                _ => {
                    let at = r.pos;
                    r.skip_value(ty, 1)?;
                    self.bytes.extend_from_slice(&buf[at..r.pos]);
                }
            }
        }
        self.bytes.push(0);
        Ok(())
    }

    /// A compact field header for field `id` of type `ty` after field `last`.
    fn field_header(&mut self, id: i16, ty: u8, last: &mut i16) {
        let delta = i32::from(id) - i32::from(*last);
        if (1..=15).contains(&delta) {
            self.bytes.push(((delta as u8) << 4) | ty);
        } else {
            self.bytes.push(ty);
            let mut z = ((i32::from(id) << 1) ^ (i32::from(id) >> 31)) as u32;
            while z >= 0x80 {
                self.bytes.push((z as u8) | 0x80);
                z >>= 7;
            }
            self.bytes.push(z as u8);
        }
        *last = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ColumnIndex { 1: null_pages [false], 2: min [b"a"], 3: max [b"b"], 4: boundary 0,
    /// 5: null_counts [3] }` with null_counts declared as `elem`.
    fn column_index(elem: u8) -> Vec<u8> {
        let mut b = vec![0x19, 0x12, 0x02]; // 1: list<bool> of 1: false
        b.extend([0x19, 0x18, 1, b'a']); // 2: list<binary> of 1
        b.extend([0x19, 0x18, 1, b'b']); // 3: list<binary> of 1
        b.extend([0x15, 0x00]); // 4: i32 0
        b.extend([0x19, 0x10 | elem, 6]); // 5: list of 1 varint: 3
        b.push(0);
        b
    }

    #[test]
    fn an_integer_list_of_another_width_gets_the_format_type() {
        let written = column_index(T_I16);
        let fixed = repaired(&written, Kind::ColumnIndex).expect("repaired");
        assert_eq!(fixed, column_index(T_I64));
        assert_eq!(repaired(&column_index(T_I64), Kind::ColumnIndex), None);
        // A list of bytes (i8 values are not varints) is not changed.
        assert_eq!(repaired(&column_index(3), Kind::ColumnIndex), None);
        // Truncated bytes are left for the crate to refuse.
        assert_eq!(
            repaired(&written[..written.len() - 3], Kind::ColumnIndex),
            None
        );
    }

    /// A footer whose one column chunk's metadata ends with `extra` (field bytes after
    /// `data_page_offset`, 9).
    fn footer(extra: &[u8]) -> Vec<u8> {
        let mut f = vec![0x15, 0x02]; // 1: version 1
        f.extend([0x39, 0x1c]); // 4 (delta 3): row_groups, a list of 1 struct
        f.extend([0x19, 0x1c]); // RowGroup 1: columns, a list of 1 struct
        f.extend([0x26, 0x08]); // ColumnChunk 2: file_offset 4
        f.push(0x1c); // 3: meta_data, a struct
        f.extend([0x15, 0x04]); // 1: type INT64
        f.extend([0x46, 0x0a]); // 5 (delta 4): num_values 5
        f.extend([0x26, 0x50]); // 7: total_compressed_size 40
        f.extend([0x26, 0x08]); // 9: data_page_offset 4
        f.extend_from_slice(extra);
        f.push(0); // end meta_data
        f.push(0); // end ColumnChunk
        f.extend([0x16, 0x0a, 0x16, 0x50]); // RowGroup 2, 3
        f.push(0); // end RowGroup
        f.push(0); // end FileMetaData
        f
    }

    #[test]
    fn a_field_of_another_type_than_the_format_gives_its_id_is_left_out() {
        // Field 15 (bloom_filter_length, an i32) written as a list of one struct {1: 7}.
        let mut odd = vec![0x69]; // 15 (delta 6), a list
        odd.extend([0x1c, 0x15, 0x0e, 0x00]); // of 1 struct { 1: i32 7 }
        let fixed = repaired(&footer(&odd), Kind::FileMetaData).expect("mended");
        assert_eq!(fixed, footer(&[]));
        // The right type for the id is kept as it is.
        let right = [0x65, 0x0e]; // 15: i32 7
        assert_eq!(repaired(&footer(&right), Kind::FileMetaData), None);
    }
}
