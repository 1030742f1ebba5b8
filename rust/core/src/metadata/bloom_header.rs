//! Reads the Thrift compact-protocol `BloomFilterHeader` that precedes a Parquet
//! split-block bloom filter, to learn the bitset length before fetching it.
//!
//! A column chunk's metadata gives the bloom filter's offset but often not its length
//! (`bloom_filter_length` is optional and many writers omit it), so a reader fetches a
//! small prefix, parses the header to learn `numBytes`, and then fetches exactly the
//! bitset. The parquet crate can parse the header, but keeps that reader private, so
//! this module carries a minimal one of its own.
//!
//! Malformed, truncated or hostile input yields an `Err` (see [`crate::metadata::thrift`]).
//!
//! The header, from `parquet.thrift`:
//!
//! ```thrift
//! struct BloomFilterHeader {
//!   1: required i32 numBytes;
//!   2: required BloomFilterAlgorithm algorithm;     // union of empty structs
//!   3: required BloomFilterHash hash;               // union of empty structs
//!   4: required BloomFilterCompression compression; // union of empty structs
//! }
//! ```
//!
//! Only `numBytes` is decoded. Everything else, including fields a future format
//! version may add, is skipped with a generic compact-protocol skipper; validating the
//! algorithm, hash and compression is left to whoever decodes the bitset (for example
//! `parquet::bloom_filter::Sbbf::from_bytes`).

use crate::metadata::thrift::{type_name, Reader, T_I32};

/// The parts of a bloom filter header a reader needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomHeader {
    /// Bytes the Thrift header occupies; the bitset starts right after it.
    pub header_len: usize,
    /// Length of the bitset that follows the header, in bytes.
    pub num_bytes: u32,
}

/// Field id of `numBytes` in `BloomFilterHeader`.
const NUM_BYTES_FIELD: i16 = 1;

/// Parse a header at the start of `buf`. Errors (a String message) when the buffer is
/// truncated, the thrift is malformed, nesting is deeper than 16, field 1 (numBytes, i32) is
/// missing or negative, or a field type is not one the header can contain.
///
/// `buf` may extend past the header (typically into the bitset); only the header is
/// read, and [`BloomHeader::header_len`] says where it ended.
pub fn parse_bloom_header(buf: &[u8]) -> Result<BloomHeader, String> {
    let mut r = Reader::new(buf, "bloom filter header");
    let mut num_bytes = None;
    let mut last_id = 0i16;
    while let Some((id, ty)) = r.field_header(&mut last_id)? {
        if id == NUM_BYTES_FIELD {
            if ty != T_I32 {
                return Err(r.err(format!(
                    "numBytes (field 1) has type {} ({ty}), expected i32",
                    type_name(ty)
                )));
            }
            let v = r.zigzag()?;
            let v = i32::try_from(v)
                .map_err(|_| r.err(format!("numBytes {v} does not fit in an i32")))?;
            let v = u32::try_from(v).map_err(|_| r.err(format!("numBytes {v} is negative")))?;
            // A repeated field replaces the earlier value, as in any Thrift reader.
            num_bytes = Some(v);
        } else {
            r.skip_value(ty, 1)?;
        }
    }
    let num_bytes = num_bytes
        .ok_or_else(|| "bloom filter header: numBytes (field 1) is missing".to_string())?;
    Ok(BloomHeader {
        header_len: r.pos,
        num_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::bloom_filter::Sbbf;
    use proptest::prelude::*;

    /// Header + bitset as the parquet crate writes them.
    fn written(sbbf: &Sbbf) -> Vec<u8> {
        let mut buf = Vec::new();
        sbbf.write(&mut buf).expect("writing to a Vec cannot fail");
        buf
    }

    fn sample() -> Vec<u8> {
        written(&Sbbf::new_with_ndv_fpp(1000, 0.01).expect("valid fpp"))
    }

    fn header_len_of(buf: &[u8]) -> usize {
        parse_bloom_header(buf).expect("valid header").header_len
    }

    /// Zigzag varint encoding, for hand-built headers.
    fn zz(v: i64) -> Vec<u8> {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// `{1: numBytes, 2: {1: {}}, 3: {1: {}}, 4: {1: {}}}` with `extra` field bytes
    /// inserted before the final stop.
    fn handmade(num_bytes: i64, extra: &[u8]) -> Vec<u8> {
        let mut h = vec![0x15];
        h.extend(zz(num_bytes));
        for _ in 0..3 {
            h.extend([0x1c, 0x1c, 0x00, 0x00]);
        }
        h.extend_from_slice(extra);
        h.push(0x00);
        h
    }

    #[test]
    fn real_headers_from_parquet() {
        let filters = [
            Sbbf::new_with_ndv_fpp(1000, 0.01).expect("valid fpp"),
            Sbbf::new_with_ndv_fpp(1, 0.5).expect("valid fpp"),
            Sbbf::new_with_ndv_fpp(1_000_000, 0.001).expect("valid fpp"),
            Sbbf::new_with_num_of_bytes(32),
            Sbbf::new_with_num_of_bytes(1 << 20),
        ];
        for mut f in filters {
            f.insert("needle");
            let buf = written(&f);
            let h = parse_bloom_header(&buf).expect("valid header");
            assert_eq!(h.header_len + h.num_bytes as usize, buf.len());
            let end = h.header_len + h.num_bytes as usize;
            let back = Sbbf::from_bytes(&buf[..end]).expect("parquet accepts it");
            assert!(back.check("needle"));
            assert_eq!(back.num_blocks() * 32, h.num_bytes as usize);
        }
    }

    #[test]
    fn trailing_bytes_are_not_read() {
        // Callers hand over a speculative prefix that runs into the bitset and beyond.
        let buf = sample();
        let h = parse_bloom_header(&buf).expect("valid header");
        let mut longer = buf.clone();
        longer.extend([0xff; 64]);
        assert_eq!(parse_bloom_header(&longer), Ok(h));
        assert_eq!(parse_bloom_header(&buf[..h.header_len]), Ok(h));
    }

    #[test]
    fn every_truncation_errors() {
        let buf = sample();
        let len = header_len_of(&buf);
        for k in 0..len {
            assert!(
                parse_bloom_header(&buf[..k]).is_err(),
                "prefix of {k} bytes"
            );
        }
    }

    #[test]
    fn handmade_matches_parquet() {
        let buf = sample();
        let len = header_len_of(&buf);
        let h = handmade(buf.len() as i64 - len as i64, &[]);
        assert_eq!(
            parse_bloom_header(&h),
            Ok(BloomHeader {
                header_len: h.len(),
                num_bytes: (buf.len() - len) as u32
            })
        );
    }

    #[test]
    fn unknown_binary_field_is_skipped() {
        let buf = sample();
        let len = header_len_of(&buf);
        // Replace the final stop with field 5 (delta 1 from 4), binary "abc", then stop.
        let mut h = buf[..len - 1].to_vec();
        h.extend([0x18, 3, b'a', b'b', b'c', 0x00]);
        let new_len = h.len();
        h.extend_from_slice(&buf[len..]);
        let parsed = parse_bloom_header(&h).expect("unknown field skipped");
        assert_eq!(parsed.header_len, new_len);
        assert_eq!(parsed.header_len + parsed.num_bytes as usize, h.len());
        // The parquet crate agrees on the layout.
        assert!(Sbbf::from_bytes(&h).is_ok());
    }

    #[test]
    fn unknown_fields_of_every_type_are_skipped() {
        let mut extra = Vec::new();
        extra.extend([0x11, 0x12]); // 5: bool true, 6: bool false
        extra.extend([0x13, 0x7f]); // 7: i8
        extra.extend([0x14, 0x02]); // 8: i16
        extra.extend([0x15, 0x80, 0x01]); // 9: i32 (two-byte varint)
        extra.push(0x16); // 10: i64
        extra.extend(zz(i64::MIN)); // ten-byte varint
        extra.push(0x17); // 11: double
        extra.extend(1.5f64.to_le_bytes());
        extra.extend([0x19, 0x31, 1, 0, 2]); // 12: list<bool> of 3
        extra.extend([0x1a, 0xf5, 16]); // 13: set<i32>, long-form size 16
        extra.extend([2; 16]);
        extra.extend([0x1b, 2, 0x13, 1, 1, 0, 0]); // 14: map<bool, i8> of 2
        extra.extend([0x1b, 0]); // 15: empty map, no type byte
        extra.push(0x0c); // explicit field id 300: struct
        extra.extend(zz(300));
        extra.extend([0x19, 0x00, 0x1c, 0x00, 0x00]); //   { 1: empty list, 2: {} }
        extra.push(0x0d); // explicit field id -1: uuid
        extra.extend(zz(-1));
        extra.extend([0xab; 16]);
        extra.extend([0x19, 0x1b, 1, 0x33, 9, 9]); // 0: list<map<i8,i8>> of 1 entry
        let h = handmade(64, &extra);
        assert_eq!(
            parse_bloom_header(&h),
            Ok(BloomHeader {
                header_len: h.len(),
                num_bytes: 64
            })
        );
    }

    #[test]
    fn num_bytes_may_come_last_or_by_explicit_id() {
        // Fields out of order, numBytes with a long-form field id.
        let mut h = vec![0x2c, 0x1c, 0x00, 0x00, 0x05];
        h.extend(zz(1));
        h.extend(zz(4096));
        h.push(0x00);
        assert_eq!(
            parse_bloom_header(&h),
            Ok(BloomHeader {
                header_len: h.len(),
                num_bytes: 4096
            })
        );
    }

    #[test]
    fn negative_num_bytes_errors() {
        let e = parse_bloom_header(&handmade(-32, &[])).expect_err("negative");
        assert!(e.contains("negative"), "{e}");
    }

    #[test]
    fn num_bytes_out_of_i32_range_errors() {
        assert!(parse_bloom_header(&handmade(i64::from(i32::MAX) + 1, &[])).is_err());
        assert!(parse_bloom_header(&handmade(i64::from(i32::MAX), &[])).is_ok());
    }

    #[test]
    fn missing_num_bytes_errors() {
        let e = parse_bloom_header(&[0x2c, 0x1c, 0x00, 0x00, 0x00]).expect_err("missing");
        assert!(e.contains("missing"), "{e}");
        assert!(parse_bloom_header(&[0x00]).is_err());
        assert!(parse_bloom_header(&[]).is_err());
    }

    #[test]
    fn num_bytes_of_wrong_type_errors() {
        // Field 1 as an i64.
        let e = parse_bloom_header(&[0x16, 0x40, 0x00]).expect_err("wrong type");
        assert!(e.contains("expected i32"), "{e}");
    }

    #[test]
    fn unknown_type_errors() {
        for ty in [14u8, 15] {
            let h = handmade(32, &[0x10 | ty, 0, 0, 0, 0]);
            assert!(parse_bloom_header(&h).is_err(), "type {ty}");
        }
        // Stop is not a valid element type for a non-empty list.
        assert!(parse_bloom_header(&handmade(32, &[0x19, 0x10, 0])).is_err());
        // Invalid bool element.
        assert!(parse_bloom_header(&handmade(32, &[0x19, 0x11, 7])).is_err());
    }

    /// A header whose field 5 is `levels` nested structs.
    fn nested(levels: usize) -> Vec<u8> {
        let mut extra = vec![0x1c];
        extra.extend(std::iter::repeat_n(0x1c, levels - 1));
        extra.extend(std::iter::repeat_n(0x00, levels));
        handmade(32, &extra)
    }

    #[test]
    fn nesting_limit() {
        // The header struct is level 1, so 15 nested structs reach level 16.
        assert!(parse_bloom_header(&nested(15)).is_ok());
        let e = parse_bloom_header(&nested(16)).expect_err("too deep");
        assert!(e.contains("nesting"), "{e}");
        // Deep lists count too, and hostile depth does not overflow the stack.
        let mut extra = vec![0x19];
        extra.extend(std::iter::repeat_n(0x19, 10_000));
        assert!(parse_bloom_header(&handmade(32, &extra)).is_err());
    }

    #[test]
    fn huge_lengths_error_without_allocating() {
        // Binary claiming ~2^63 bytes, list claiming 2^31 - 1 elements, map claiming more.
        let mut bin = vec![0x18];
        bin.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert!(parse_bloom_header(&handmade(32, &bin)).is_err());
        assert!(
            parse_bloom_header(&handmade(32, &[0x19, 0xf3, 0xff, 0xff, 0xff, 0xff, 0x07])).is_err()
        );
        assert!(
            parse_bloom_header(&handmade(32, &[0x1b, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x33])).is_err()
        );
    }

    #[test]
    fn overlong_varint_errors() {
        let mut h = vec![0x15];
        h.extend([0x80; 10]);
        h.push(0x00);
        assert!(parse_bloom_header(&h).is_err());
        // Ten bytes whose last carries more than the 64th bit.
        let mut h = vec![0x16];
        h.extend([0xff; 9]);
        h.extend([0x02, 0x15, 0x40, 0x00]);
        assert!(parse_bloom_header(&h).is_err());
    }

    #[test]
    fn field_id_overflow_errors() {
        // Explicit id 32767, then a short-form delta pushes past i16::MAX.
        let mut h = vec![0x05];
        h.extend(zz(i64::from(i16::MAX)));
        h.extend([0x40, 0x11, 0x00]);
        assert!(parse_bloom_header(&h).is_err());
        // Explicit id outside i16.
        let mut h = vec![0x05];
        h.extend(zz(40_000));
        h.extend([0x40, 0x00]);
        assert!(parse_bloom_header(&h).is_err());
    }

    proptest! {
        #[test]
        fn prop_random_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(h) = parse_bloom_header(&buf) {
                prop_assert!(h.header_len <= buf.len());
                prop_assert!(h.num_bytes <= i32::MAX as u32);
            }
        }

        /// Random corruption of a real header: never a panic, and whenever the parquet
        /// crate accepts the result, this parser reads the same layout.
        ///
        /// The bytes that carry the wire types of fields 1-4 and of the union members
        /// are left alone: the parquet crate decodes a known field id by its declared
        /// type without checking the wire type, so it accepts, say, field 2 marked as a
        /// bool and then reads a struct there, where a standard Thrift reader (this one)
        /// takes the bool and reads the next byte as a field header.
        #[test]
        fn prop_corrupted_headers(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        ) {
            const TYPED: [usize; 7] = [0, 3, 4, 7, 8, 11, 12];
            let orig = sample();
            let len = header_len_of(&orig);
            prop_assert_eq!(&orig[..len], &handmade(2048, &[])[..]);
            let mut buf = orig.clone();
            for (i, b) in edits {
                let i = i.index(len);
                if !TYPED.contains(&i) {
                    buf[i] = b;
                }
            }
            let ours = parse_bloom_header(&buf);
            if let Ok(h) = ours {
                prop_assert!(h.header_len <= buf.len());
            }
            if Sbbf::from_bytes(&buf).is_ok() {
                let h = ours.map_err(|e| TestCaseError::fail(format!("parquet accepted, we did not: {e}")))?;
                prop_assert_eq!(h.header_len + h.num_bytes as usize, buf.len());
            }
        }

        /// The same without the restriction: any corruption of any header byte
        /// never panics and never reports a header longer than the buffer.
        #[test]
        fn prop_any_corruption_never_panics(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut buf = sample();
            let len = header_len_of(&buf);
            for (i, b) in edits {
                buf[i.index(len)] = b;
            }
            let buf = &buf[..cut.index(buf.len() + 1)];
            if let Ok(h) = parse_bloom_header(buf) {
                prop_assert!(h.header_len <= buf.len());
            }
        }
    }
}
