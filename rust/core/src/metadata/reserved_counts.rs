//! What the parquet crate does not bound when it decodes a footer or an offset index
//! (it is handed every footer and page index only after these checks).
//!
//! The crate bounds every list it decodes element by element: a list may not claim more
//! elements than there are bytes left. Three counts it reserves memory for before it
//! reads what they count escape that: the children of a schema element (a plain integer:
//! five bytes claiming two billion children had it ask for 16 GiB), the row groups of a
//! file and the page locations of an offset index (lists it reserves for itself: about a
//! hundred bytes a row group, 24 a page location). Each must fit in what is left at
//! the least size its elements take on the wire. It also builds the schema's tree by
//! recursion, a level a group: a schema nested a hundred thousand deep overflowed the
//! stack, so nesting is bounded too. Strings are slices of the input, skipped fields stop
//! at a depth of 64, and a panic is caught (`footer::guarded`).

use crate::metadata::thrift::{Reader, T_I32, T_LIST, T_STRUCT};

/// The least bytes a `RowGroup` takes: its `columns` field and list header, one
/// `ColumnChunk` (`file_offset` and a stop), `num_rows`, `total_byte_size`, and a stop.
const MIN_ROW_GROUP_BYTES: usize = 10;
/// The least bytes a `PageLocation` takes: three required integers and a stop.
const MIN_PAGE_LOCATION_BYTES: usize = 7;
/// Deepest schema accepted, counting the root as level 1: far beyond any real nesting,
/// and a few hundred kilobytes of stack for the recursions that walk it.
pub const MAX_SCHEMA_DEPTH: usize = 256;

/// Check the `FileMetaData` struct at the start of `buf`: each
/// schema element's `num_children` within the schema's elements, the schema's depth, and
/// the row groups within the bytes left.
pub fn footer_counts(buf: &[u8]) -> Result<(), String> {
    let mut r = Reader::new(buf, "footer");
    let mut last = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last)? {
        match (id, ty) {
            (2, T_LIST) => {
                let (elem, elements) = r.list_header()?;
                // Children still to come of each group enclosing the next element.
                let mut open: Vec<u64> = Vec::new();
                for _ in 0..elements {
                    if elem != T_STRUCT {
                        r.skip_element(elem, 2)?;
                        continue;
                    }
                    if let Some(left) = open.last_mut() {
                        *left = left.saturating_sub(1);
                    }
                    let children = schema_element(&mut r, elements)?;
                    if children > 0 {
                        open.push(children);
                        if open.len() > MAX_SCHEMA_DEPTH {
                            return Err(r.err(format!(
                                "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
                            )));
                        }
                    }
                    while open.last() == Some(&0) {
                        open.pop();
                    }
                }
            }
            (4, T_LIST) => {
                let (_, groups) = r.list_header()?;
                return r
                    .check_count(groups, MIN_ROW_GROUP_BYTES, "row groups")
                    .map(drop);
            }
            _ => r.skip_value(ty, 1)?,
        }
    }
    Ok(())
}

/// Check the `OffsetIndex` struct at the start of `buf`: its page locations within the
/// bytes left.
pub fn offset_index_counts(buf: &[u8]) -> Result<(), String> {
    let mut r = Reader::new(buf, "offset index");
    let mut last = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last)? {
        if (id, ty) == (1, T_LIST) {
            let (_, pages) = r.list_header()?;
            return r
                .check_count(pages, MIN_PAGE_LOCATION_BYTES, "page locations")
                .map(drop);
        }
        r.skip_value(ty, 1)?;
    }
    Ok(())
}

/// One `SchemaElement` of a schema of `elements` elements, and its children (none for a
/// leaf): a group has fewer children than the schema has elements.
fn schema_element(r: &mut Reader, elements: u64) -> Result<u64, String> {
    let mut last = 0i16;
    let mut children = 0;
    while let Some((id, ty)) = r.field_header(&mut last)? {
        if (id, ty) == (5, T_I32) {
            let claimed = r.zigzag()?;
            children = match u64::try_from(claimed) {
                Ok(c) if c < elements => c,
                _ => {
                    return Err(r.err(format!(
                    "a schema element claims {claimed} children in a schema of {elements} elements"
                )))
                }
            };
        } else {
            r.skip_value(ty, 3)?;
        }
    }
    Ok(children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::page_index::offset_index_ranges;
    use crate::testing::{int64s, write_file, Layout};

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn list(elem: u8, n: u64, out: &mut Vec<u8>) {
        if n < 15 {
            out.push(((n as u8) << 4) | elem);
        } else {
            out.push(0xF0 | elem);
            varint(n, out);
        }
    }

    /// A FileMetaData: version, a schema of a root with `children` children and one
    /// INT64 leaf, num_rows, then a row-group list declaring `groups` groups, each an
    /// empty struct.
    fn footer(children: i64, groups: u64) -> Vec<u8> {
        let mut f = vec![0x15, 0x02]; // 1: version = 1
        f.push(0x19); // 2: schema, a list
        list(T_STRUCT, 2, &mut f);
        f.extend([0x48, 1, b'r', 0x15]); // root: 4 name "r", 5 num_children
        varint(((children << 1) ^ (children >> 63)) as u64, &mut f);
        f.push(0);
        f.extend([0x15, 0x04, 0x25, 0x00, 0x18, 1, b'x', 0]); // leaf: type, repetition, name
        f.extend([0x16, 0x02]); // 3: num_rows = 1
        f.push(0x19); // 4: row_groups
        list(T_STRUCT, groups, &mut f);
        f.extend(std::iter::repeat_n(0u8, groups as usize));
        f.push(0);
        f
    }

    #[test]
    fn a_footer_and_offset_index_as_writers_write_them_fit() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(
            dir.path(),
            "t.parquet",
            vec![("k", int64s(0..10_000)), ("v", int64s(0..10_000))],
            Layout {
                row_group_size: 3_000,
                page_rows: Some(500),
                ..Default::default()
            },
        );
        let bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        let len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
        footer_counts(&bytes[n - 8 - len..n - 8]).unwrap();
        let md = crate::metadata::read_metadata(
            &path,
            false,
            &crate::metadata::MetadataCache::new(1 << 20),
        )
        .unwrap()
        .metadata;
        let ranges = offset_index_ranges(&md);
        assert_eq!(ranges.len(), 8);
        for r in ranges {
            offset_index_counts(&bytes[r.start as usize..r.end as usize]).unwrap();
        }
        assert_eq!(footer_counts(&footer(1, 0)), Ok(()));
    }

    #[test]
    fn a_group_claiming_more_children_than_the_schema_holds_is_refused() {
        for children in [2, i64::from(i32::MAX), -1] {
            let e = footer_counts(&footer(children, 1)).unwrap_err();
            assert!(e.contains(&format!("claims {children} children")), "{e}");
        }
    }

    /// A FileMetaData whose schema is a chain of `depth` groups (the root first) ending
    /// in one leaf.
    fn chain(depth: usize) -> Vec<u8> {
        let mut f = vec![0x29]; // 2: schema
        list(T_STRUCT, depth as u64 + 1, &mut f);
        for _ in 0..depth {
            f.extend([0x48, 1, b'g', 0x15, 0x02, 0]); // name "g", num_children 1
        }
        f.extend([0x15, 0x04, 0x25, 0x00, 0x18, 1, b'x', 0]);
        f.push(0);
        f
    }

    #[test]
    fn a_schema_nested_deeper_than_the_limit_is_refused() {
        assert_eq!(footer_counts(&chain(MAX_SCHEMA_DEPTH)), Ok(()));
        let e = footer_counts(&chain(MAX_SCHEMA_DEPTH + 1)).unwrap_err();
        assert!(e.contains("nests deeper than 256"), "{e}");
        // Wide is not deep: a root of a thousand leaves.
        let mut wide = vec![0x29];
        list(T_STRUCT, 1_001, &mut wide);
        wide.extend([0x48, 1, b'r', 0x15]);
        varint(2_000, &mut wide);
        wide.push(0);
        for _ in 0..1_000 {
            wide.extend([0x15, 0x04, 0x25, 0x00, 0x18, 1, b'x', 0]);
        }
        wide.push(0);
        assert_eq!(footer_counts(&wide), Ok(()));
    }

    #[test]
    fn more_row_groups_than_the_bytes_left_can_hold_are_refused() {
        // Ten empty structs fit the walk's byte an element, not a row group's ten bytes.
        let e = footer_counts(&footer(1, 10)).unwrap_err();
        assert!(e.contains("row groups of 10 elements cannot fit"), "{e}");
        let mut fine = footer(1, 0);
        fine.extend([0; 20]);
        assert_eq!(footer_counts(&fine), Ok(()));
    }

    #[test]
    fn more_page_locations_than_the_bytes_left_can_hold_are_refused() {
        let mut index = vec![0x19];
        list(T_STRUCT, 1_000, &mut index);
        index.extend([0; 1_001]);
        let e = offset_index_counts(&index).unwrap_err();
        assert!(
            e.contains("page locations of 1000 elements cannot fit"),
            "{e}"
        );
        let mut fine = vec![0x19];
        list(T_STRUCT, 2, &mut fine);
        // offset, compressed_page_size, first_row_index, stop: twice.
        fine.extend([
            0x16, 8, 0x15, 2, 0x16, 0, 0, 0x16, 10, 0x15, 2, 0x16, 2, 0, 0,
        ]);
        assert_eq!(offset_index_counts(&fine), Ok(()));
    }
}
