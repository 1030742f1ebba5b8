//! Structure-aware mutations of Parquet files, for the `scan_file` target: besides the
//! fuzzer's own byte-level edits, the damage real files suffer and hostile files carry.
//! Truncation, bit flips near the footer, a block of the file copied over another, and a
//! length field enlarged: the footer length, a page header's compressed size, a bloom
//! filter header's size, an index locator's length or offset. Splicing two files (the
//! body of one under the footer of another) is the crossover.
//!
//! Everything is decided by the seed libFuzzer passes, so a mutation can be replayed.

use std::panic::{catch_unwind, AssertUnwindSafe};

use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u32) -> Self {
        Rng(u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Values a hostile writer puts in a length field.
fn larger(rng: &mut Rng, old: u64, file_len: usize) -> u64 {
    let choices = [
        old + 1,
        old * 2 + 1,
        old + file_len as u64,
        1 << 20,
        1 << 30,
        (1 << 31) - 1,
        u32::MAX as u64,
        1 << 40,
    ];
    choices[rng.below(choices.len())]
}

/// The footer of `data`, parsed with its page index, if it parses.
fn metadata(data: &[u8]) -> Option<ParquetMetaData> {
    let bytes = bytes::Bytes::copy_from_slice(data);
    catch_unwind(AssertUnwindSafe(|| {
        ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&bytes)
            .ok()
    }))
    .ok()
    .flatten()
}

/// Read an unsigned LEB128 varint at `pos`: its value and length.
fn varint(data: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *data.get(pos + i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn encode_varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Replace the varint at `pos` (of `len` bytes) with `value`.
fn put_varint(data: &mut Vec<u8>, pos: usize, len: usize, value: u64) {
    data.splice(pos..pos + len, encode_varint(value));
}

/// The position and length of the value of the `nth` (1-based) leading i32 field of a
/// Thrift compact struct at `pos`, when the struct starts with fields 1, 2, 3... in order
/// (a page header: type, uncompressed size, compressed size; a bloom header: numBytes).
fn leading_i32(data: &[u8], pos: usize, nth: usize) -> Option<(usize, usize)> {
    let mut at = pos;
    for i in 1..=nth {
        if *data.get(at)? != 0x15 {
            return None;
        }
        let (_, len) = varint(data, at + 1)?;
        if i == nth {
            return Some((at + 1, len));
        }
        at += 1 + len;
    }
    None
}

/// Where pages and bloom filters start, by the footer.
fn offsets(md: &ParquetMetaData) -> (Vec<usize>, Vec<usize>) {
    let mut pages = Vec::new();
    let mut blooms = Vec::new();
    for rg in md.row_groups() {
        for c in rg.columns() {
            pages.extend(c.dictionary_page_offset().map(|o| o as usize));
            pages.push(c.data_page_offset() as usize);
            blooms.extend(c.bloom_filter_offset().map(|o| o as usize));
        }
    }
    if let Some(oi) = md.offset_index() {
        for rg in oi {
            for col in rg {
                pages.extend(col.page_locations().iter().map(|p| p.offset as usize));
            }
        }
    }
    (pages, blooms)
}

/// The footer's bounds in `data`: (start, length), when its length field fits the file.
fn footer_bounds(data: &[u8]) -> Option<(usize, usize)> {
    let n = data.len();
    let len = u32::from_le_bytes(data.get(n.checked_sub(8)?..n - 4)?.try_into().ok()?) as usize;
    Some(((n - 8).checked_sub(len)?, len))
}

/// Change one number of one index locator in the footer (its length or offset).
fn enlarge_locator(data: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let Some(md) = metadata(data) else {
        return false;
    };
    let Some((start, len)) = footer_bounds(data) else {
        return false;
    };
    let mut kv: Vec<(String, Option<String>)> = md
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    let locs: Vec<usize> = (0..kv.len())
        .filter(|i| kv[*i].0.starts_with("pqindex.index."))
        .collect();
    if locs.is_empty() {
        return false;
    }
    let i = locs[rng.below(locs.len())];
    let Some(Ok(mut json)) = kv[i]
        .1
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    else {
        return false;
    };
    let field = ["length", "offset", "length", "checksum"][rng.below(4)];
    let old = json.get(field).and_then(|v| v.as_u64()).unwrap_or(0);
    json[field] = serde_json::Value::from(larger(rng, old, data.len()));
    kv[i].1 = Some(json.to_string());
    let Some(footer) = pqindex_core::fuzzing::splice_key_values(&data[start..start + len], &kv)
    else {
        return false;
    };
    data.truncate(start);
    data.extend_from_slice(&footer);
    data.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    data.extend_from_slice(b"PAR1");
    true
}

/// One structure-aware mutation of `data`; false when the chosen one does not apply.
fn structured(data: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let n = data.len();
    if n < 12 {
        return false;
    }
    match rng.below(8) {
        // Truncate anywhere, or just before the footer.
        0 => {
            let cut = match footer_bounds(data) {
                Some((start, _)) if rng.below(2) == 0 => start.saturating_sub(rng.below(64)),
                _ => rng.below(n),
            };
            data.truncate(cut);
            true
        }
        // Flip a bit in the footer or close before it, where the structure is.
        1 => {
            let region = n.min(4096);
            let at = n - 1 - rng.below(region);
            data[at] ^= 1 << rng.below(8);
            true
        }
        // Copy one block of the file over another.
        2 => {
            let len = 1 + rng.below(256.min(n / 2));
            let (from, to) = (rng.below(n - len), rng.below(n - len));
            let piece = data[from..from + len].to_vec();
            data[to..to + len].copy_from_slice(&piece);
            true
        }
        // Enlarge the footer length.
        3 => {
            let old = u32::from_le_bytes(data[n - 8..n - 4].try_into().expect("4 bytes"));
            let new = larger(rng, u64::from(old), n).min(u32::MAX as u64) as u32;
            data[n - 8..n - 4].copy_from_slice(&new.to_le_bytes());
            true
        }
        // Enlarge a page header's compressed (or uncompressed) size.
        4 | 5 => {
            let Some(md) = metadata(data) else {
                return false;
            };
            let (pages, blooms) = offsets(&md);
            let (targets, field) = if rng.below(3) == 0 && !blooms.is_empty() {
                (blooms, 1)
            } else {
                (pages, 2 + rng.below(2))
            };
            if targets.is_empty() {
                return false;
            }
            let at = targets[rng.below(targets.len())];
            let Some((pos, len)) = leading_i32(data, at, field) else {
                return false;
            };
            let old = varint(data, pos).map_or(0, |(v, _)| v >> 1);
            let new = larger(rng, old, n).min(i32::MAX as u64) as i64;
            let new = if rng.below(8) == 0 { -new } else { new };
            put_varint(data, pos, len, zigzag(new));
            true
        }
        // Enlarge an embedded index's locator.
        6 => enlarge_locator(data, rng),
        // Cut a range out of the middle (pages vanish, offsets point past their data).
        _ => {
            let from = rng.below(n);
            let len = 1 + rng.below((n - from).min(1024));
            data.drain(from..from + len);
            true
        }
    }
}

/// The `scan_file` target's mutator: a structured mutation half the time, libFuzzer's own
/// otherwise (or when the structured one does not apply). Returns the new size.
pub fn mutate(
    data: &mut [u8],
    size: usize,
    max_size: usize,
    seed: u32,
    fallback: impl FnOnce(&mut [u8], usize, usize) -> usize,
) -> usize {
    let mut rng = Rng::new(seed);
    if rng.below(2) == 0 {
        let mut v = data[..size].to_vec();
        if structured(&mut v, &mut rng) && v.len() <= max_size {
            data[..v.len()].copy_from_slice(&v);
            return v.len();
        }
    }
    fallback(data, size, max_size)
}

/// The crossover: the start of `a` followed by the end of `b`, cut so that now and then
/// `b`'s footer lands under `a`'s body (seeds share a schema, so offsets look plausible).
pub fn splice(a: &[u8], b: &[u8], out: &mut [u8], seed: u32) -> usize {
    let mut rng = Rng::new(seed);
    let tail = match footer_bounds(b) {
        Some((start, _)) if rng.below(2) == 0 => b.len() - start,
        _ => rng.below(b.len() + 1),
    };
    let head = rng
        .below(a.len() + 1)
        .min(out.len().saturating_sub(tail.min(out.len())));
    let tail = tail.min(out.len() - head);
    out[..head].copy_from_slice(&a[..head]);
    out[head..head + tail].copy_from_slice(&b[b.len() - tail..]);
    head + tail
}
