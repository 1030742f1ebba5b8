//! A bounds-checked reader of the Thrift compact protocol, enough to pull a few fields
//! out of the small structs that precede Parquet data on disk (bloom filter headers, page
//! headers) without the parquet crate's private reader.
//!
//! Lengths come from disk, so everything is bounds-checked and nothing allocates from a
//! length read off the buffer: malformed or truncated input yields an `Err`, never a
//! panic or a large allocation. Skipping runs in time linear in the buffer length (every
//! value skipped consumes at least one byte).

/// Deepest nesting of structs and containers accepted, counting the outer struct as
/// level 1. Parquet's headers need 3 levels; the limit bounds recursion on hostile input
/// while leaving room for future fields.
const MAX_DEPTH: usize = 16;

// Compact-protocol type codes, as they appear in field headers and container headers.
pub const T_STOP: u8 = 0;
pub const T_BOOL_TRUE: u8 = 1;
pub const T_BOOL_FALSE: u8 = 2;
pub const T_I8: u8 = 3;
pub const T_I16: u8 = 4;
pub const T_I32: u8 = 5;
pub const T_I64: u8 = 6;
pub const T_DOUBLE: u8 = 7;
pub const T_BINARY: u8 = 8;
pub const T_LIST: u8 = 9;
pub const T_SET: u8 = 10;
pub const T_MAP: u8 = 11;
pub const T_STRUCT: u8 = 12;
/// A 16-byte UUID. Newer Thrift versions define it, and the parquet crate's own
/// reader skips it, so a header written by a future tool must not be rejected for it.
pub const T_UUID: u8 = 13;

/// A bounds-checked cursor over the input.
pub struct Reader<'a> {
    buf: &'a [u8],
    pub pos: usize,
    /// What is being read, to start error messages with.
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, pos: 0, what }
    }

    /// An error message that says where in the header things went wrong.
    pub fn err(&self, msg: impl std::fmt::Display) -> String {
        format!("{}: {msg} (at byte {})", self.what, self.pos)
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline(always)]
    pub fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    /// Skips `n` bytes; `n` comes from disk, so it is checked against what is left
    /// rather than trusted.
    fn skip_bytes(&mut self, n: u64) -> Result<(), String> {
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => {
                self.pos += n;
                Ok(())
            }
            _ => Err(self.err(format!(
                "truncated: {n} bytes needed, {} left",
                self.remaining()
            ))),
        }
    }

    /// An unsigned LEB128 varint of at most 10 bytes (64 bits). Overlong or
    /// overflowing encodings are malformed rather than silently truncated.
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, String> {
        // Most varints of a footer (field ids, enums, small sizes) are one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.long_varint()
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err(self.err("varint overflows 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        // Unreachable: the tenth byte either ends the varint or is rejected above.
        Err(self.err("varint longer than 10 bytes"))
    }

    /// A zigzag-encoded signed varint (Thrift i16, i32 and i64 all use this).
    pub fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A container size: a varint that must fit in an i32 (as Thrift declares sizes)
    /// and must not claim more elements than there are bytes left, since every element
    /// takes at least `min_elem_bytes` bytes. This rejects absurd sizes up front
    /// instead of looping until the input runs out.
    pub fn check_count(
        &self,
        count: u64,
        min_elem_bytes: usize,
        what: &str,
    ) -> Result<u64, String> {
        let fits = i32::try_from(count).is_ok();
        let room = (self.remaining() / min_elem_bytes) as u64;
        if !fits || count > room {
            return Err(self.err(format!(
                "{what} of {count} elements cannot fit in {} remaining bytes",
                self.remaining()
            )));
        }
        Ok(count)
    }

    /// Reads a struct field header, returning `None` at the stop marker. `last_id` is
    /// the previous field id of the same struct, which short-form headers are relative to.
    #[inline(always)]
    pub fn field_header(&mut self, last_id: &mut i16) -> Result<Option<(i16, u8)>, String> {
        let b = self.byte()?;
        let ty = b & 0x0f;
        // Like the reference implementations, a zero type nibble ends the struct.
        if ty == T_STOP {
            return Ok(None);
        }
        let delta = b >> 4;
        let id = if delta == 0 {
            let v = self.zigzag()?;
            i16::try_from(v)
                .map_err(|_| self.err(format!("field id {v} does not fit in an i16")))?
        } else {
            last_id
                .checked_add(i16::from(delta))
                .ok_or_else(|| self.err("field id overflows an i16"))?
        };
        *last_id = id;
        Ok(Some((id, ty)))
    }

    /// A list or set header: its element type and its size, which must fit in the bytes
    /// left at a byte an element (an empty list may carry any element type).
    pub fn list_header(&mut self) -> Result<(u8, u64), String> {
        let header = self.byte()?;
        let short_size = header >> 4;
        let size = if short_size == 15 {
            self.varint()?
        } else {
            u64::from(short_size)
        };
        if size == 0 {
            return Ok((header & 0x0f, 0));
        }
        let elem = element_type(header & 0x0f).map_err(|e| self.err(e))?;
        Ok((elem, self.check_count(size, 1, "list")?))
    }

    /// Skips one value of type `ty` found inside a struct at nesting level `depth`.
    /// Booleans carry no payload here: their value is the type nibble itself.
    pub fn skip_value(&mut self, ty: u8, depth: usize) -> Result<(), String> {
        match ty {
            // Most of a footer: integers, the fields of its many small structs.
            T_I16 | T_I32 | T_I64 => self.varint().map(drop),
            T_BOOL_TRUE | T_BOOL_FALSE => Ok(()),
            T_I8 => self.byte().map(drop),
            T_DOUBLE => self.skip_bytes(8),
            T_UUID => self.skip_bytes(16),
            T_BINARY => {
                let len = self.varint()?;
                self.skip_bytes(len)
            }
            T_LIST | T_SET => {
                let depth = self.enter(depth)?;
                // Some writers put element type 0 on empty lists; nothing to skip.
                let (elem, size) = self.list_header()?;
                for _ in 0..size {
                    self.skip_element(elem, depth)?;
                }
                Ok(())
            }
            T_MAP => {
                let depth = self.enter(depth)?;
                let size = self.varint()?;
                if size == 0 {
                    // An empty map has no key/value type byte.
                    return Ok(());
                }
                let kv = self.byte()?;
                let key = element_type(kv >> 4).map_err(|e| self.err(e))?;
                let val = element_type(kv & 0x0f).map_err(|e| self.err(e))?;
                let size = self.check_count(size, 2, "map")?;
                for _ in 0..size {
                    self.skip_element(key, depth)?;
                    self.skip_element(val, depth)?;
                }
                Ok(())
            }
            T_STRUCT => {
                let depth = self.enter(depth)?;
                let mut last_id = 0i16;
                while let Some((_, field_ty)) = self.field_header(&mut last_id)? {
                    self.skip_value(field_ty, depth)?;
                }
                Ok(())
            }
            _ => Err(self.err(format!("unknown field type {ty}"))),
        }
    }

    /// Skips one list, set or map element. Unlike struct fields, booleans here occupy a
    /// byte of their own (1 = true; 0 or 2 = false, since writers disagree).
    pub fn skip_element(&mut self, ty: u8, depth: usize) -> Result<(), String> {
        if ty == T_BOOL_TRUE || ty == T_BOOL_FALSE {
            return match self.byte()? {
                0..=2 => Ok(()),
                b => Err(self.err(format!("invalid boolean {b}"))),
            };
        }
        self.skip_value(ty, depth)
    }

    /// Descends one nesting level, refusing to go past [`MAX_DEPTH`].
    fn enter(&self, depth: usize) -> Result<usize, String> {
        let depth = depth + 1;
        if depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        Ok(depth)
    }
}

/// Validates a container's element type nibble; stop (0) and unknown codes are errors.
fn element_type(ty: u8) -> Result<u8, String> {
    match ty {
        T_BOOL_TRUE..=T_UUID => Ok(ty),
        _ => Err(format!("invalid container element type {ty}")),
    }
}

/// A readable name for a type code, for error messages.
pub fn type_name(ty: u8) -> &'static str {
    match ty {
        T_BOOL_TRUE | T_BOOL_FALSE => "bool",
        T_I8 => "i8",
        T_I16 => "i16",
        T_I32 => "i32",
        T_I64 => "i64",
        T_DOUBLE => "double",
        T_BINARY => "binary",
        T_LIST => "list",
        T_SET => "set",
        T_MAP => "map",
        T_STRUCT => "struct",
        T_UUID => "uuid",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{int64s, strings, write_file, Layout};

    fn reader_accepts(buf: &[u8]) -> bool {
        Reader::new(buf, "test").skip_value(T_STRUCT, 0).is_ok()
    }

    #[test]
    fn a_footer_is_skipped_whole_and_a_cut_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = strings((0..500).map(|i| Some(format!("value {i}"))));
        let path = write_file(
            dir.path(),
            "t.parquet",
            vec![("a", int64s(0..500)), ("s", text)],
            Layout {
                row_group_size: 100,
                page_rows: Some(50),
                bloom: &["a"],
            },
        );
        let bytes = std::fs::read(path).unwrap();
        let n = bytes.len();
        let len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
        let footer = &bytes[n - 8 - len..n - 8];
        let mut r = Reader::new(footer, "footer");
        r.skip_value(T_STRUCT, 0).unwrap();
        assert_eq!(r.pos, footer.len());
        assert!(!reader_accepts(&footer[..len / 2]));
    }

    #[test]
    fn nesting_stops_at_the_limit() {
        for nested in [MAX_DEPTH - 1, MAX_DEPTH] {
            // A struct whose field 1 is a struct whose field 1 is a struct ...
            let mut buf = vec![0x1C; nested];
            buf.extend(std::iter::repeat_n(0, nested + 1));
            assert_eq!(reader_accepts(&buf), nested < MAX_DEPTH);
        }
    }
}
