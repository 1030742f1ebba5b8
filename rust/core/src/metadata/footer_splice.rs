//! Changing a footer's key/value entries and nothing else.
//!
//! A footer re-encoded through a Parquet library keeps only the fields that library knows:
//! arrow-rs drops `ColumnMetaData.encoding_stats` (which parquet-mr's dictionary filtering
//! reads), the deprecated `Statistics.min/max`, and fields newer writers add. Instead, the
//! original Thrift bytes of `FileMetaData` are kept field by field, and only field 5
//! (`key_value_metadata`) is written anew. Every other field's bytes are copied as they
//! were; only the header of the field after an inserted or removed field 5 changes, since
//! compact-protocol headers encode the distance from the previous field id.

use crate::metadata::thrift::{Reader, T_BINARY, T_LIST, T_STRUCT};

/// `FileMetaData.key_value_metadata`.
const KEY_VALUE_FIELD: i16 = 5;

/// One field of the top-level struct: its id, type nibble and value bytes.
struct Field<'a> {
    id: i16,
    ty: u8,
    value: &'a [u8],
}

/// The fields of the Thrift compact struct that is the whole of `footer`.
fn fields(footer: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut r = Reader::new(footer, "footer");
    let mut last = 0i16;
    let mut out = Vec::new();
    while let Some((id, ty)) = r.field_header(&mut last)? {
        let start = r.pos;
        r.skip_value(ty, 1)?;
        out.push(Field {
            id,
            ty,
            value: &footer[start..r.pos],
        });
    }
    if r.pos != footer.len() {
        return Err(r.err("bytes after the end of the footer's struct"));
    }
    Ok(out)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_header(out: &mut Vec<u8>, prev: i16, id: i16, ty: u8) {
    match id.checked_sub(prev) {
        Some(delta @ 1..=15) => out.push(((delta as u8) << 4) | ty),
        _ => {
            out.push(ty);
            let id = i64::from(id);
            varint(out, ((id << 1) ^ (id >> 63)) as u64);
        }
    }
}

fn binary(out: &mut Vec<u8>, bytes: &[u8]) {
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The value of a `list<KeyValue>`.
fn key_values(entries: &[(String, Option<String>)]) -> Vec<u8> {
    let mut out = Vec::new();
    if entries.len() < 15 {
        out.push(((entries.len() as u8) << 4) | T_STRUCT);
    } else {
        out.push(0xF0 | T_STRUCT);
        varint(&mut out, entries.len() as u64);
    }
    for (key, value) in entries {
        field_header(&mut out, 0, 1, T_BINARY);
        binary(&mut out, key.as_bytes());
        if let Some(v) = value {
            field_header(&mut out, 1, 2, T_BINARY);
            binary(&mut out, v.as_bytes());
        }
        out.push(0);
    }
    out
}

/// `footer` (the Thrift bytes of a `FileMetaData`) with its key/value entries replaced by
/// `entries`, every other field kept byte for byte; no entries removes the field.
pub fn with_key_values(
    footer: &[u8],
    entries: &[(String, Option<String>)],
) -> Result<Vec<u8>, String> {
    let fields = fields(footer)?;
    let new_value = (!entries.is_empty()).then(|| key_values(entries));
    let mut out = Vec::with_capacity(footer.len() + new_value.as_ref().map_or(0, Vec::len));
    let mut prev = 0i16;
    let mut placed = false;
    let emit = |out: &mut Vec<u8>, prev: &mut i16, id: i16, ty: u8, value: &[u8]| {
        field_header(out, *prev, id, ty);
        out.extend_from_slice(value);
        *prev = id;
    };
    for f in &fields {
        if !placed && f.id >= KEY_VALUE_FIELD {
            if let Some(v) = &new_value {
                emit(&mut out, &mut prev, KEY_VALUE_FIELD, T_LIST, v);
            }
            placed = true;
        }
        if f.id != KEY_VALUE_FIELD {
            emit(&mut out, &mut prev, f.id, f.ty, f.value);
        }
    }
    if !placed {
        if let Some(v) = &new_value {
            emit(&mut out, &mut prev, KEY_VALUE_FIELD, T_LIST, v);
        }
    }
    out.push(0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use parquet::file::metadata::ParquetMetaDataReader;

    use crate::testing::{int64s, strings, write_file, Layout};

    fn footer_of(path: &str) -> Vec<u8> {
        let bytes = std::fs::read(path).unwrap();
        let len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
        bytes[bytes.len() - 8 - len as usize..bytes.len() - 8].to_vec()
    }

    fn kv(md: &parquet::file::metadata::ParquetMetaData) -> Vec<(String, Option<String>)> {
        md.file_metadata()
            .key_value_metadata()
            .into_iter()
            .flatten()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect()
    }

    #[test]
    fn only_the_key_values_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "f.parquet",
            vec![
                ("k", int64s(0..100)),
                ("s", strings((0..100).map(|i| Some(format!("v{i}"))))),
            ],
            Layout::default(),
        );
        let footer = footer_of(&path);
        let original = ParquetMetaDataReader::decode_metadata(&footer).unwrap();
        let mut entries = kv(&original);
        // Many entries: the list's long header form.
        for i in 0..20 {
            entries.push((format!("pqindex.index.{i}"), Some(format!("{{\"n\":{i}}}"))));
        }
        entries.push(("no.value".into(), None));
        let spliced = with_key_values(&footer, &entries).unwrap();
        let md = ParquetMetaDataReader::decode_metadata(&spliced).unwrap();
        assert_eq!(kv(&md), entries);
        assert_eq!(md.row_groups(), original.row_groups());
        assert_eq!(
            md.file_metadata().schema_descr_ptr(),
            Arc::clone(&original.file_metadata().schema_descr_ptr())
        );
        // Putting the original entries back gives the original bytes.
        assert_eq!(with_key_values(&spliced, &kv(&original)).unwrap(), footer);
        // No entries at all: the field goes, and comes back.
        let bare = with_key_values(&footer, &[]).unwrap();
        assert!(ParquetMetaDataReader::decode_metadata(&bare)
            .unwrap()
            .file_metadata()
            .key_value_metadata()
            .is_none());
        assert_eq!(with_key_values(&bare, &kv(&original)).unwrap(), footer);
    }

    #[test]
    fn damaged_footers_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "f.parquet",
            vec![("k", int64s(0..10))],
            Layout::default(),
        );
        let footer = footer_of(&path);
        for n in 0..footer.len() {
            assert!(with_key_values(&footer[..n], &[]).is_err(), "cut at {n}");
        }
        let mut trailing = footer.clone();
        trailing.push(0);
        assert!(with_key_values(&trailing, &[]).is_err());
    }
}
