//! The first bytes of a raw Snappy stream, decompressed without the rest.
//!
//! A lookup that uses only a dictionary's first entries ([`crate::read::decode::dictionary_prefix`])
//! needs only the start of its page. The `snap` crate decompresses whole streams only,
//! so the start is decoded here: a raw Snappy stream is its length (a varint) and then
//! literals and back-references, each written in turn, so decoding may stop as soon as
//! the wanted bytes are written. Every length and offset is checked against the input
//! and the output; a stream the wanted bytes cannot be read from is an error.
//!
//! A lookup in the middle of a chunk sorted by its key uses a dictionary's entries from
//! the middle. Snappy's compressors (the reference one that parquet-java calls, `snap`,
//! Go's) compress each 64 KiB block of their input alone, no back-reference reaching an
//! earlier block; the format does not promise it. So the elements before the wanted
//! bytes' block are passed over by their lengths, without writing them, and decoding
//! starts at the block, where a back-reference out of it shows the stream is not of that
//! kind: it is then decoded from its start. The bytes passed over are checked only as
//! elements (lengths within the input), not written: damage there that leaves a valid
//! run of elements to the block is not seen, as damage to a page never read is not.

use parquet::errors::{ParquetError, Result};

/// Fill all of `out` with the start of the stream `body` decompresses to. The stream's
/// declared length must be at least `out.len()` (the caller has checked it with
/// `page_codec::snappy_len`).
pub fn snappy_prefix(body: &[u8], out: &mut [u8]) -> Result<()> {
    let mut input = Input { body, pos: 0 };
    // The declared length: already checked, skipped here.
    while input.byte()? & 0x80 != 0 {}
    decode(&mut input, out)
}

/// The size of the blocks Snappy's compressors compress alone.
pub const BLOCK: usize = 1 << 16;

/// Fill `out[block..]` with those bytes of the stream `body` decompresses to, where
/// `block` is the start of the 64 KiB block holding byte `from`, and say where that is;
/// `out[..block]` is left as it is. `None` where the stream cannot be entered there (no
/// element starts at the block, or one in it reaches back before it): the caller
/// decodes from the start. The stream's declared length must be at least `out.len()`,
/// as for [`snappy_prefix`].
pub fn snappy_window(body: &[u8], out: &mut [u8], from: usize) -> Result<Option<usize>> {
    let block = from.min(out.len()) / BLOCK * BLOCK;
    let mut input = Input { body, pos: 0 };
    while input.byte()? & 0x80 != 0 {}
    let mut at = 0;
    while at < block {
        at += passed_over(&mut input)?;
    }
    if at != block {
        return Ok(None);
    }
    Ok(decode(&mut input, &mut out[block..]).ok().map(|()| block))
}

/// Read one element of `input` without writing it: the bytes it would write.
fn passed_over(input: &mut Input<'_>) -> Result<usize> {
    let tag = input.byte()?;
    Ok(match tag & 3 {
        0 => {
            let len = match tag >> 2 {
                n @ 0..=59 => usize::from(n) + 1,
                n => input.little_endian(usize::from(n) - 59)? + 1,
            };
            input.take(len)?;
            len
        }
        1 => {
            input.take(1)?;
            usize::from((tag >> 2) & 7) + 4
        }
        2 => {
            input.take(2)?;
            usize::from(tag >> 2) + 1
        }
        _ => {
            input.take(4)?;
            usize::from(tag >> 2) + 1
        }
    })
}

/// What each tag byte says of its element: the bytes it writes (bits 0-6; none for a
/// literal whose length follows the tag), how many bytes follow the tag (bits 7-9), and
/// for a copy with a one-byte offset, the offset's high bits (from bit 10).
const ELEMENTS: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut tag = 0;
    while tag < 256 {
        let high = (tag >> 2) as u32;
        table[tag] = match tag & 3 {
            0 if high < 60 => high + 1,
            0 => (high - 59) << 7,
            1 => ((high & 7) + 4) | (1 << 7) | (((tag >> 5) as u32) << 18),
            2 => (high + 1) | (2 << 7),
            _ => (high + 1) | (4 << 7),
        };
        tag += 1;
    }
    table
};

/// The bytes after a tag, by their number, out of the little-endian word that holds them.
const TRAILER: [u32; 5] = [0, 0xff, 0xffff, 0xff_ffff, 0xffff_ffff];

/// The room a fast step needs after its element's start, in the input and in `out`: an
/// element writes at most 64 bytes, and a step moves whole 8- or 16-byte words, past the
/// element's end by less than 16.
const ROOM: usize = 64 + 16;

/// Fill all of `out` with what the elements of `input` write, from its position on;
/// every back-reference must stay within `out`.
///
/// While both sides have [`ROOM`] left, an element is read with one table lookup and
/// moved in whole words, which may write past its end bytes the next elements write
/// again: `copy_from_slice` of a few bytes is a call, a word is two instructions. The
/// last elements are written exactly.
fn decode(input: &mut Input<'_>, out: &mut [u8]) -> Result<()> {
    let body = input.body;
    let mut pos = input.pos;
    let mut written = 0;
    let end = out.len();
    while written + ROOM <= end && pos + ROOM <= body.len() {
        let tag = body[pos];
        let entry = ELEMENTS[usize::from(tag)];
        let len = (entry & 0x7f) as usize;
        let trailing = ((entry >> 7) & 7) as usize;
        let word = u32::from_le_bytes([body[pos + 1], body[pos + 2], body[pos + 3], body[pos + 4]]);
        let trailer = (word & TRAILER[trailing]) as usize;
        if tag & 3 == 0 {
            if trailing != 0 {
                // A long literal: its length less one follows the tag.
                let len = trailer + 1;
                if len > end - written {
                    break;
                }
                let from = pos + 1 + trailing;
                let bytes = body
                    .get(from..from.saturating_add(len))
                    .ok_or_else(|| corrupt("the stream ends inside an element"))?;
                out[written..written + len].copy_from_slice(bytes);
                pos = from + len;
                written += len;
                continue;
            }
            let from = pos + 1;
            if len <= 16 {
                out[written..written + 16].copy_from_slice(&body[from..from + 16]);
            } else {
                out[written..written + 64].copy_from_slice(&body[from..from + 64]);
            }
            pos = from + len;
            written += len;
            continue;
        }
        let offset = (entry >> 10) as usize + trailer;
        if offset == 0 || offset > written {
            return Err(corrupt(format!(
                "a copy from {offset} bytes back at byte {written}"
            )));
        }
        let from = written - offset;
        if offset >= 16 {
            out.copy_within(from..from + 16, written);
            let mut i = 16;
            while i < len {
                out.copy_within(from + i..from + i + 16, written + i);
                i += 16;
            }
        } else if offset >= 8 {
            out.copy_within(from..from + 8, written);
            let mut i = 8;
            while i < len {
                out.copy_within(from + i..from + i + 8, written + i);
                i += 8;
            }
        } else {
            // A run repeating fewer than 8 bytes: its first bytes one by one, then 8 at a
            // time from a whole number of repeats back.
            let back = offset * 8usize.div_ceil(offset);
            let first = len.min(back);
            for i in 0..first {
                out[written + i] = out[from + i];
            }
            let mut at = written + first;
            while at < written + len {
                out.copy_within(at - back..at - back + 8, at);
                at += 8;
            }
        }
        pos += 1 + trailing;
        written += len;
    }
    input.pos = pos;
    exactly(input, out, written)
}

/// Fill `out[written..]` from the elements of `input`, each written exactly.
fn exactly(input: &mut Input<'_>, out: &mut [u8], mut written: usize) -> Result<()> {
    while written < out.len() {
        let tag = input.byte()?;
        let want = out.len() - written;
        match tag & 3 {
            0 => {
                let len = match tag >> 2 {
                    n @ 0..=59 => usize::from(n) + 1,
                    n => input.little_endian(usize::from(n) - 59)? + 1,
                };
                let bytes = input.take(len)?;
                let n = len.min(want);
                out[written..written + n].copy_from_slice(&bytes[..n]);
                written += n;
            }
            kind => {
                let (len, offset) = match kind {
                    1 => (
                        usize::from((tag >> 2) & 7) + 4,
                        (usize::from(tag >> 5) << 8) | usize::from(input.byte()?),
                    ),
                    2 => (usize::from(tag >> 2) + 1, input.little_endian(2)?),
                    _ => (usize::from(tag >> 2) + 1, input.little_endian(4)?),
                };
                if offset == 0 || offset > written {
                    return Err(corrupt(format!(
                        "a copy from {offset} bytes back at byte {written}"
                    )));
                }
                let n = len.min(want);
                let from = written - offset;
                if offset >= n {
                    out.copy_within(from..from + n, written);
                } else {
                    // The copy overlaps what it writes: a repeated run, byte by byte.
                    for i in 0..n {
                        out[written + i] = out[from + i];
                    }
                }
                written += n;
            }
        }
    }
    Ok(())
}

struct Input<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.body.len())
            .ok_or_else(|| corrupt("the stream ends inside an element"))?;
        let bytes = &self.body[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn little_endian(&mut self, n: usize) -> Result<usize> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0usize, |v, b| (v << 8) | usize::from(*b)))
    }
}

fn corrupt(why: impl std::fmt::Display) -> ParquetError {
    ParquetError::General(format!("corrupt Snappy page: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compressed(data: &[u8]) -> Vec<u8> {
        snap::raw::Encoder::new().compress_vec(data).unwrap()
    }

    /// Data with runs, repeats near and far, and noise: every kind of element.
    fn mixed(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 4 {
                0 => out.extend(std::iter::repeat_n((x >> 8) as u8, (x >> 16) as usize % 40)),
                1 if out.len() > 70_000 => {
                    let from = out.len() - 70_000 + (x >> 20) as usize % 1000;
                    let run: Vec<u8> = out[from..from + 30].to_vec();
                    out.extend(run);
                }
                2 => out.extend_from_slice(&(x % 100_000).to_le_bytes()),
                _ => out.extend((0..(x >> 12) as usize % 90).map(|i| (x >> (i % 50)) as u8)),
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn every_prefix_is_the_start_of_the_whole() {
        let data = mixed(300_000, 7);
        let body = compressed(&data);
        for n in [
            0,
            1,
            5,
            60,
            61,
            4096,
            65_535,
            65_536,
            65_537,
            200_001,
            data.len(),
        ] {
            let mut out = vec![0xaa; n];
            snappy_prefix(&body, &mut out).unwrap();
            assert_eq!(out, data[..n], "prefix of {n}");
        }
    }

    #[test]
    fn damaged_streams_are_errors() {
        let data = mixed(100_000, 3);
        let body = compressed(&data);
        // Cut short, the wanted bytes not all there.
        let err = snappy_prefix(&body[..body.len() / 2], &mut vec![0; data.len()]).unwrap_err();
        assert!(err.to_string().contains("corrupt Snappy page"), "{err}");
        // A copy from before the start: length 1, then a 1-byte-offset copy 9 back.
        let hostile = [20, 0, b'x', 0b0000_0001, 9];
        let err = snappy_prefix(&hostile, &mut [0; 10]).unwrap_err();
        assert!(err.to_string().contains("copy from 9 bytes back"), "{err}");
        // A copy from 0 bytes back, and a literal longer than the stream.
        assert!(snappy_prefix(&[20, 0, b'x', 0b0000_0001, 0], &mut [0; 10]).is_err());
        assert!(snappy_prefix(&[20, 0xfc, 0xff, 0xff, 0xff, 0x7f], &mut [0; 10]).is_err());
    }

    #[test]
    fn a_window_is_decoded_from_its_block_or_refused() {
        let data = mixed(300_000, 11);
        let body = compressed(&data);
        for (from, to) in [
            (0, 10),
            (65_535, 65_540),
            (65_536, 65_600),
            (70_000, 140_000),
            (200_000, 200_008),
            (299_990, 300_000),
        ] {
            let mut out = vec![0xaa; to];
            let block = snappy_window(&body, &mut out, from).unwrap();
            assert_eq!(block, Some(from / BLOCK * BLOCK), "{from}");
            let block = from / BLOCK * BLOCK;
            assert_eq!(out[block..], data[block..to], "{from}..{to}");
            assert!(out[..block].iter().all(|b| *b == 0xaa), "left as it was");
        }
        // A stream whose second block copies from the first: refused, and decoded whole
        // from the start all the same. Its elements: a 64 KiB run (a literal, then
        // copies of one byte back), then a copy 65,536 back.
        let mut hostile = vec![0x80, 0x80, 0x08]; // 131,072 bytes declared
        hostile.extend([0, b'z']); // literal "z"
        for _ in 0..1023 {
            hostile.extend([(63 << 2) | 2, 1, 0]); // copy 64 from 1 back
        }
        hostile.extend([(62 << 2) | 2, 1, 0]); // copy 63 from 1 back: 65,536 written
        for _ in 0..1024 {
            hostile.extend([(63 << 2) | 3, 0, 0, 1, 0]); // copy 64 from 65,536 back
        }
        let mut whole = vec![0; 1 << 17];
        assert_eq!(
            snap::raw::Decoder::new()
                .decompress(&hostile, &mut whole)
                .unwrap(),
            1 << 17
        );
        let mut out = vec![0; 1 << 17];
        assert_eq!(snappy_window(&hostile, &mut out, 70_000).unwrap(), None);
        assert_eq!(snappy_window(&hostile, &mut out, 1_000).unwrap(), Some(0));
        snappy_prefix(&hostile, &mut out).unwrap();
        assert_eq!(out, whole);
        // A stream cut short before the block is an error, as from the start.
        assert!(snappy_window(&body[..body.len() / 3], &mut vec![0; 300_000], 250_000).is_err());
    }

    /// A stream of `elements` elements chosen by `seed`: literals short and long, and
    /// copies of each kind, from every distance (runs of 1 to 7 bytes among them).
    fn elements(elements: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut stream = Vec::new();
        let mut written = 0usize;
        for _ in 0..elements {
            let kind = if written == 0 { 0 } else { next(5) };
            match kind {
                0 | 1 => {
                    let len = if kind == 0 {
                        1 + next(60)
                    } else {
                        61 + next(400)
                    } as usize;
                    if len <= 60 {
                        stream.push(((len - 1) as u8) << 2);
                    } else {
                        stream.push(61 << 2);
                        stream.extend_from_slice(&((len - 1) as u16).to_le_bytes());
                    }
                    stream.extend((0..len).map(|_| next(256) as u8));
                    written += len;
                }
                2 => {
                    let len = 4 + next(8) as usize;
                    let offset = 1 + next(written.min(2047) as u64) as usize;
                    stream.push((((offset >> 8) as u8) << 5) | (((len - 4) as u8) << 2) | 1);
                    stream.push(offset as u8);
                    written += len;
                }
                _ => {
                    let len = 1 + next(64) as usize;
                    let far = written.min(if kind == 3 { 65_535 } else { 1 << 20 });
                    let near = if next(2) == 0 { far.min(20) } else { far };
                    let offset = 1 + next(near as u64) as usize;
                    if kind == 3 {
                        stream.push((((len - 1) as u8) << 2) | 2);
                        stream.extend_from_slice(&(offset as u16).to_le_bytes());
                    } else {
                        stream.push((((len - 1) as u8) << 2) | 3);
                        stream.extend_from_slice(&(offset as u32).to_le_bytes());
                    }
                    written += len;
                }
            }
        }
        let mut header = Vec::new();
        let mut n = written;
        while n >= 0x80 {
            header.push((n as u8) | 0x80);
            n >>= 7;
        }
        header.push(n as u8);
        header.extend(stream);
        header
    }

    #[test]
    fn every_kind_of_element_decodes_as_snap_decodes_it() {
        for seed in 1..200 {
            let body = elements(2_000, seed);
            let whole = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
            for cut in [whole.len(), whole.len() - 1, whole.len() / 2, 100, 0] {
                let mut out = vec![0xaa; cut];
                snappy_prefix(&body, &mut out).unwrap();
                assert_eq!(out, whole[..cut], "seed {seed}, {cut} bytes");
            }
        }
    }

    proptest! {
        #[test]
        fn windows_match_snap(seed in any::<u64>(), n in 0usize..300_000, a in 0usize..300_000, b in 0usize..300_000) {
            let data = mixed(n, seed);
            let body = compressed(&data);
            let (from, to) = (a.min(b).min(n), a.max(b).min(n));
            let mut out = vec![0; to];
            let block = from / BLOCK * BLOCK;
            prop_assert_eq!(snappy_window(&body, &mut out, from).unwrap(), Some(block));
            prop_assert_eq!(&out[block..], &data[block..to]);
        }

        #[test]
        fn prefixes_match_snap(seed in any::<u64>(), n in 0usize..20_000, cut in 0usize..20_000) {
            let data = mixed(n, seed);
            let body = compressed(&data);
            let cut = cut.min(n);
            let mut out = vec![0; cut];
            snappy_prefix(&body, &mut out).unwrap();
            prop_assert_eq!(&out[..], &data[..cut]);
        }

        #[test]
        fn any_bytes_are_an_error_or_what_snap_writes(
            body in proptest::collection::vec(any::<u8>(), 0..2_000),
            n in 0usize..4_000,
        ) {
            let mut out = vec![0; n];
            let ours = snappy_prefix(&body, &mut out);
            let mut whole = vec![0; 1 << 16];
            if let (Ok(()), Ok(len)) = (&ours, snap::raw::Decoder::new().decompress(&body, &mut whole)) {
                if len >= n {
                    prop_assert_eq!(&out[..], &whole[..n]);
                }
            }
        }
    }
}
