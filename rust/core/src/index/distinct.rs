//! The `distinct` index: the set of a column's distinct values per unit (file, row group or
//! page), with postings (value → units that hold it) when there is more than one unit, so
//! an equality or IN lookup on an unsorted column selects exactly the pages holding the
//! value.
//!
//! Values are stored as fingerprints of their XxHash64 (see hash.rs), hash-bucketed so a
//! lookup reads the header and one bucket, never the whole index:
//!
//! ```text
//! u32 payload version = 1
//! u32 bucket bits k (0..=20)          2^k buckets, chosen by the hash's top k bits
//! u32 flags                           bit 0: entries carry postings
//! u64 distinct values (entries)
//! unit table                          (see units.rs)
//! 2^k × (u64 offset, u32 length, u32 crc32c)   each bucket, from the payload start
//! u32 crc32c of the payload bytes before it
//! buckets: entries sorted by fingerprint
//!   u32 fingerprint                   the 32 hash bits after the top k
//!   [varint n, n varint unit deltas]  postings, ascending unit ids, first one absolute
//! ```
//! A lookup is wrong only in the safe direction: two values sharing their top k + 32 hash
//! bits look the same, which selects a unit that does not hold the value (probability about
//! entries / 2^(k+32) per probe).

use std::collections::HashMap;

use bytes::Bytes;
use parquet::schema::types::ColumnDescriptor;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::column_values::PageValues;
use crate::index::hash::{hash_bytes, leaf_hashes};
use crate::index::kind::{IndexBuilder, IndexKind, IndexProbe, KindInfo, Settings};
use crate::index::locator::Granularity;
use crate::index::span::{decode_spans, encode_spans, Span, SpanAssigner, SPAN_LEN};
use crate::predicate::plain::is_probe;
use crate::predicate::Predicate;

/// The distinct index kind.
#[derive(Debug)]
pub struct Distinct;

static INFO: KindInfo = KindInfo {
    name: "distinct",
    code: 1,
    class_name: "DistinctIndex",
    cli_flag: "distinct",
    doc: "The distinct values of a column per file, row group or page, with postings \
          (value -> row groups or pages), so an equality or IN lookup on an unsorted column \
          reads only the pages that hold the value. A lookup fetches a small header and one \
          hash bucket.",
    multi_column: false,
    granularities: &[Granularity::Page, Granularity::RowGroup, Granularity::File],
    params: &[],
};

impl IndexKind for Distinct {
    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn used_in_planning(&self, _granularity: Granularity, _file_has_page_index: bool) -> bool {
        true
    }

    fn answers(&self, leaf: &Predicate) -> bool {
        is_probe(leaf)
    }

    fn builder(&self, settings: &Settings) -> Box<dyn IndexBuilder> {
        Box::new(DistinctBuilder::new(settings.granularity))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        Ok(check_all(payload)?.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        Ok(Box::new(DistinctProbe {
            header: read_header(block)?,
            buckets: HashMap::new(),
        }))
    }

    fn head_len(&self) -> Option<u64> {
        Some(HEADER_GUESS)
    }
}

/// First read of a distinct index: usually the whole header and directory.
const HEADER_GUESS: u64 = 32 * 1024;

/// The header and directory, read without the buckets.
fn read_header(block: &BlockReader) -> Result<DistinctHeader> {
    let payload_len = block.payload_len();
    let first = payload_len.min(HEADER_GUESS) as usize;
    let mut bytes = block.payload_range(0, first)?;
    let needed =
        DistinctHeader::needed_len(&bytes)?.ok_or_else(|| invalid("distinct header truncated"))?;
    if needed as u64 > payload_len {
        return Err(invalid("distinct header longer than its payload"));
    }
    if needed > bytes.len() {
        bytes = block.payload_range(0, needed)?;
    }
    DistinctHeader::decode(&bytes[..needed], payload_len)
}

/// A distinct index opened for planning: its header, and the buckets fetched so far.
struct DistinctProbe {
    header: DistinctHeader,
    buckets: HashMap<usize, Bytes>,
}

impl IndexProbe for DistinctProbe {
    fn spans(&self) -> &[Span] {
        &self.header.spans
    }

    fn distinct_values(&self) -> Option<u64> {
        Some(self.header.distinct_values)
    }

    fn wanted(&self, leaf: &Predicate, column: &ColumnDescriptor) -> Vec<std::ops::Range<u64>> {
        let Some(hashes) = leaf_hashes(leaf, column.physical_type(), column.type_length()) else {
            return Vec::new();
        };
        self.header
            .by_bucket(&hashes)
            .into_iter()
            .filter(|(b, _)| !self.buckets.contains_key(b))
            .map(|(b, _)| {
                let (off, len, _) = self.header.directory[b];
                off..off + u64::from(len)
            })
            .collect()
    }

    fn units(
        &mut self,
        leaf: &Predicate,
        column: &ColumnDescriptor,
        block: &BlockReader,
    ) -> Result<Option<Vec<u32>>> {
        let Some(hashes) = leaf_hashes(leaf, column.physical_type(), column.type_length()) else {
            return Ok(None);
        };
        let mut units = Vec::new();
        for (b, fps) in self.header.by_bucket(&hashes) {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.buckets.entry(b) {
                let (off, len, _) = self.header.directory[b];
                slot.insert(block.payload_range(off, len as usize)?);
            }
            units.extend(self.header.lookup(b, &fps, &self.buckets[&b])?);
        }
        units.sort_unstable();
        units.dedup();
        Ok(Some(units))
    }
}

impl IndexBuilder for DistinctBuilder {
    fn page(&mut self, p: &PageValues) {
        DistinctBuilder::page(self, p);
    }

    fn finish(self: Box<Self>) -> Vec<u8> {
        DistinctBuilder::finish(*self)
    }
}

pub const PAYLOAD_VERSION: u32 = 1;
const MAX_BUCKET_BITS: u32 = 20;
const FLAG_POSTINGS: u32 = 1;
/// Bytes of the fixed header before the unit table.
pub const FIXED_HEADER: usize = 4 + 4 + 4 + 8;
const DIRECTORY_ENTRY: usize = 8 + 4 + 4;

/// Builds a distinct index while a column is read.
pub struct DistinctBuilder {
    units: SpanAssigner,
    postings: bool,
    /// (hash, unit) pairs, deduplicated per page.
    pairs: Vec<(u64, u32)>,
    page_hashes: Vec<u64>,
}

impl DistinctBuilder {
    pub fn new(granularity: Granularity) -> Self {
        DistinctBuilder {
            units: SpanAssigner::new(granularity),
            postings: granularity != Granularity::File,
            pairs: Vec::new(),
            page_hashes: Vec::new(),
        }
    }

    pub fn page(&mut self, p: &PageValues) {
        let unit = self.units.unit_of(
            p.row_group,
            p.first_row,
            p.rows,
            p.row_group_rows,
            p.file_rows,
        ) as u32;
        self.page_hashes.clear();
        self.page_hashes
            .extend(p.values.iter().map(|v| hash_bytes(v)));
        self.page_hashes.sort_unstable();
        self.page_hashes.dedup();
        self.pairs
            .extend(self.page_hashes.iter().map(|h| (*h, unit)));
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.pairs.sort_unstable();
        self.pairs.dedup();
        // Group by hash, then size buckets so the directory and one bucket cost about the
        // same to fetch.
        let mut entries: Vec<(u64, Vec<u32>)> = Vec::new();
        for (h, u) in self.pairs.drain(..) {
            match entries.last_mut() {
                Some((last, units)) if *last == h => units.push(u),
                _ => entries.push((h, vec![u])),
            }
        }
        let est: usize = entries
            .iter()
            .map(|(_, u)| 4 + if self.postings { 1 + 2 * u.len() } else { 0 })
            .sum();
        let k = bucket_bits(est);
        let key = |h: u64| -> (u32, u32) { split(h, k) };

        let nb = 1usize << k;
        let mut buckets: Vec<Encoder> = (0..nb).map(|_| Encoder::default()).collect();
        let mut i = 0;
        while i < entries.len() {
            let (b, fp) = key(entries[i].0);
            let mut units: Vec<u32> = entries[i].1.clone();
            let mut j = i + 1;
            while j < entries.len() && key(entries[j].0) == (b, fp) {
                units.extend_from_slice(&entries[j].1);
                j += 1;
            }
            let e = &mut buckets[b as usize];
            e.u32(fp);
            if self.postings {
                units.sort_unstable();
                units.dedup();
                e.varint(units.len() as u64);
                let mut prev = 0u32;
                for u in units {
                    e.varint(u64::from(u - prev));
                    prev = u;
                }
            }
            i = j;
        }

        let mut e = Encoder::default();
        e.u32(PAYLOAD_VERSION);
        e.u32(k);
        e.u32(if self.postings { FLAG_POSTINGS } else { 0 });
        e.u64(entries.len() as u64);
        encode_spans(&self.units.spans, &mut e);
        let mut offset = (e.len() + nb * DIRECTORY_ENTRY + 4) as u64;
        for b in &buckets {
            e.u64(offset);
            e.u32(b.len() as u32);
            e.u32(crc32c::crc32c(&b.bytes));
            offset += b.len() as u64;
        }
        let crc = crc32c::crc32c(&e.bytes);
        e.u32(crc);
        for b in buckets {
            e.bytes.extend_from_slice(&b.bytes);
        }
        e.bytes
    }
}

/// Bucket bits for about `bytes` of entries: the directory (16 bytes a bucket) and one
/// bucket come out near the same size.
fn bucket_bits(bytes: usize) -> u32 {
    let buckets = ((bytes as f64) / DIRECTORY_ENTRY as f64).sqrt().max(1.0);
    (buckets.log2().round() as u32).min(MAX_BUCKET_BITS)
}

/// (bucket, fingerprint) of a hash under `k` bucket bits.
fn split(h: u64, k: u32) -> (u32, u32) {
    let bucket = if k == 0 { 0 } else { (h >> (64 - k)) as u32 };
    let fp = ((h << k) >> 32) as u32;
    (bucket, fp)
}

/// The header of a distinct index: enough to find any value's bucket.
#[derive(Debug)]
pub struct DistinctHeader {
    pub bucket_bits: u32,
    pub postings: bool,
    /// Distinct values in the whole file.
    pub distinct_values: u64,
    pub spans: Vec<Span>,
    /// (offset from the payload start, length, crc32c) of each bucket.
    pub directory: Vec<(u64, u32, u32)>,
}

impl DistinctHeader {
    /// How many payload bytes the header takes, from its first bytes; `None` if `prefix`
    /// is too short to say.
    pub fn needed_len(prefix: &[u8]) -> Result<Option<usize>> {
        if prefix.len() < FIXED_HEADER + 4 {
            return Ok(None);
        }
        let mut d = Decoder::new(prefix);
        d.u32()?;
        let k = d.u32()?;
        if k > MAX_BUCKET_BITS {
            return Err(invalid(format!("distinct index with {k} bucket bits")));
        }
        d.take(12)?;
        let units = d.u32()? as usize;
        Ok(Some(
            FIXED_HEADER + 4 + units * SPAN_LEN + (DIRECTORY_ENTRY << k) + 4,
        ))
    }

    /// Decode and check the header from the payload's first bytes (at least
    /// `needed_len`); `payload_len` bounds the bucket locations.
    pub fn decode(bytes: &[u8], payload_len: u64) -> Result<DistinctHeader> {
        let mut d = Decoder::new(bytes);
        d.version(PAYLOAD_VERSION, "distinct")?;
        let k = d.u32()?;
        if k > MAX_BUCKET_BITS {
            return Err(invalid(format!("distinct index with {k} bucket bits")));
        }
        let flags = d.u32()?;
        let distinct_values = d.u64()?;
        let spans = decode_spans(&mut d)?;
        let nb = 1usize << k;
        if nb.saturating_mul(DIRECTORY_ENTRY) > d.remaining() {
            return Err(invalid("distinct directory truncated"));
        }
        let mut directory = Vec::with_capacity(nb);
        for _ in 0..nb {
            directory.push((d.u64()?, d.u32()?, d.u32()?));
        }
        let header_len = d.position();
        let crc = d.u32()?;
        if crc32c::crc32c(&bytes[..header_len]) != crc {
            return Err(invalid("distinct header checksum mismatch"));
        }
        let header_len = header_len + 4;
        for &(off, len, _) in &directory {
            let end = off.checked_add(u64::from(len));
            if off < header_len as u64 || end.is_none_or(|e| e > payload_len) {
                return Err(invalid("distinct bucket outside its payload"));
            }
        }
        Ok(DistinctHeader {
            bucket_bits: k,
            postings: flags & FLAG_POSTINGS != 0,
            distinct_values,
            spans,
            directory,
        })
    }

    /// The buckets of `hashes`, each with the sorted, distinct fingerprints asked of it.
    pub fn by_bucket(&self, hashes: &[u64]) -> Vec<(usize, Vec<u32>)> {
        let mut pairs: Vec<(u32, u32)> =
            hashes.iter().map(|&h| split(h, self.bucket_bits)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
        for (b, fp) in pairs {
            match out.last_mut() {
                Some((last, fps)) if *last == b as usize => fps.push(fp),
                _ => out.push((b as usize, vec![fp])),
            }
        }
        out
    }

    /// The units holding a value with one of the fingerprints `fps` (sorted) of bucket
    /// `b`, from the bucket's bytes (checked against the directory's checksum). One walk
    /// of the bucket answers for every fingerprint: a join's keys ask hundreds of one.
    pub fn lookup(&self, b: usize, fps: &[u32], bucket: &[u8]) -> Result<Vec<u32>> {
        let (_, _, crc) = self.directory[b];
        if crc32c::crc32c(bucket) != crc {
            return Err(invalid("distinct bucket checksum mismatch"));
        }
        let Some(&last) = fps.last() else {
            return Ok(Vec::new());
        };
        let units = self.spans.len() as u64;
        let mut wanted = fps.iter().copied().peekable();
        let mut found = Vec::new();
        let mut d = Decoder::new(bucket);
        while d.remaining() > 0 {
            let f = d.u32()?;
            if f > last {
                break;
            }
            while wanted.next_if(|&w| w < f).is_some() {}
            let hit = wanted.next_if_eq(&f).is_some();
            if self.postings {
                let n = d.varint()?;
                if n > units {
                    return Err(invalid("distinct postings longer than the unit table"));
                }
                let mut u = 0u64;
                for i in 0..n {
                    let delta = d.varint()?;
                    u = if i == 0 {
                        delta
                    } else {
                        u.saturating_add(delta)
                    };
                    if u >= units {
                        return Err(invalid("distinct posting names no unit"));
                    }
                    if hit {
                        found.push(u as u32);
                    }
                }
            } else if hit && !self.spans.is_empty() {
                found.push(0);
            }
        }
        Ok(found)
    }
}

/// Every unit's set, fully decoded: for verification and tests.
pub fn check_all(payload: &[u8]) -> Result<DistinctHeader> {
    let h = DistinctHeader::decode(payload, payload.len() as u64)?;
    for &(off, len, crc) in &h.directory {
        let bytes = &payload[off as usize..(off + u64::from(len)) as usize];
        if crc32c::crc32c(bytes) != crc {
            return Err(invalid("distinct bucket checksum mismatch"));
        }
    }
    Ok(h)
}

/// Unit ids per hash, for unit tests of builders.
#[cfg(test)]
pub fn lookup_in(payload: &[u8], hash: u64) -> Vec<u32> {
    let h = DistinctHeader::decode(payload, payload.len() as u64).unwrap();
    let (b, fp) = split(hash, h.bucket_bits);
    let (off, len, _) = h.directory[b as usize];
    h.lookup(
        b as usize,
        &[fp],
        &payload[off as usize..(off + u64::from(len)) as usize],
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::column_values::{ColumnInfo, PlainOrder};

    fn page<'a>(rg: usize, first: u64, rows: u64, values: &'a [&'a [u8]]) -> PageValues<'a> {
        PageValues {
            row_group: rg,
            first_row: first,
            rows,
            row_group_rows: 20,
            file_rows: 40,
            nulls: rows.saturating_sub(values.len() as u64),
            values,
            column: &BYTES,
        }
    }

    const BYTES: ColumnInfo = ColumnInfo {
        leaf: 0,
        physical: parquet::basic::Type::BYTE_ARRAY,
        type_length: -1,
        order: PlainOrder::Bytes,
    };

    #[test]
    fn postings_name_the_pages_holding_a_value() {
        let mut b = DistinctBuilder::new(Granularity::Page);
        let many: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let many: Vec<&[u8]> = many.iter().map(|v| v.as_slice()).collect();
        b.page(&page(0, 0, 10, &[b"a", b"b", b"a"]));
        b.page(&page(0, 10, 10, &[b"c"]));
        b.page(&page(1, 0, 20, &many));
        b.page(&page(1, 20, 20, &[b"a"]));
        let payload = b.finish();
        assert_eq!(lookup_in(&payload, hash_bytes(b"a")), vec![0, 3]);
        assert_eq!(lookup_in(&payload, hash_bytes(b"c")), vec![1]);
        assert_eq!(
            lookup_in(&payload, hash_bytes(&77u32.to_le_bytes())),
            vec![2]
        );
        assert!(lookup_in(&payload, hash_bytes(b"zzz")).is_empty());
        let h = check_all(&payload).unwrap();
        assert!(h.bucket_bits > 0, "5000 values get several buckets");
    }

    #[test]
    fn one_walk_of_a_bucket_answers_for_every_value_asked_of_it() {
        let mut b = DistinctBuilder::new(Granularity::Page);
        let values: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        for (i, chunk) in values.chunks(100).enumerate() {
            let chunk: Vec<&[u8]> = chunk.iter().map(|v| v.as_slice()).collect();
            b.page(&page(i / 25, (i % 25) as u64 * 100, 100, &chunk));
        }
        let payload = b.finish();
        let h = DistinctHeader::decode(&payload, payload.len() as u64).unwrap();
        // Every fifth value, with values the index does not hold between them.
        let asked: Vec<u64> = (0..5000u32)
            .step_by(5)
            .map(|i| hash_bytes(&i.to_le_bytes()))
            .chain((9000..9500u32).map(|i| hash_bytes(&i.to_le_bytes())))
            .collect();
        let groups = h.by_bucket(&asked);
        assert!(groups.len() > 1 && groups.iter().any(|(_, fps)| fps.len() > 1));
        let mut together = Vec::new();
        for (bucket, fps) in &groups {
            assert!(fps.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
            let (off, len, _) = h.directory[*bucket];
            let bytes = &payload[off as usize..(off + u64::from(len)) as usize];
            together.extend(h.lookup(*bucket, fps, bytes).unwrap());
        }
        together.sort_unstable();
        together.dedup();
        let mut one_by_one: Vec<u32> = asked.iter().flat_map(|&x| lookup_in(&payload, x)).collect();
        one_by_one.sort_unstable();
        one_by_one.dedup();
        // Value i sits in page i / 100: every page holds one asked.
        assert_eq!(together, (0..50).collect::<Vec<u32>>());
        assert_eq!(together, one_by_one);
    }

    #[test]
    fn damage_is_caught_by_the_section_checksums() {
        let mut b = DistinctBuilder::new(Granularity::RowGroup);
        b.page(&page(0, 0, 20, &[b"x", b"y"]));
        let payload = b.finish();
        for i in 0..payload.len() {
            let mut bad = payload.clone();
            bad[i] ^= 0x10;
            assert!(check_all(&bad).is_err(), "flip at {i}");
        }
        for n in 0..payload.len() {
            let _ = DistinctHeader::decode(&payload[..n], n as u64);
            let _ = DistinctHeader::needed_len(&payload[..n]);
        }
    }
}
