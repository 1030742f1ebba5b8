//! The payload shared by the kinds that keep a bloom set of hashes per unit (the `bloom`
//! index of values, the `ngram` and `token` indexes of text): a header, the unit table and
//! a block-interleaved bloom set (bloom_set.rs). A kind says only which hashes a value
//! adds ([`Hashes::of_value`]) and which hashes a row satisfying a leaf must hold
//! ([`Hashes::of_leaf`]).
//!
//! ```text
//! u32 payload version
//! u32 parameter                     the kind's (n of n-grams, the tokenizer)
//! unit table                        (see span.rs)
//! u32 blocks per filter, u32 units  (the bloom set's header)
//! u32 crc32c of the bytes above
//! bloom set rows                    (see bloom_set.rs), each with its own crc32c
//! ```
//! Planning reads the header (one small read, with the page index), then for each hash a
//! leaf needs the one row its block lies in: 32 bytes per unit.

use std::ops::Range;

use parquet::schema::types::ColumnDescriptor;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::bloom_set::{BloomSet, BloomSetBuilder, BloomSetProbe};
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::column_values::PageValues;
use crate::index::kind::{IndexBuilder, IndexProbe};
use crate::index::locator::Granularity;
use crate::index::span::{decode_spans, encode_spans, Span, SpanAssigner, SPAN_LEN};
use crate::predicate::Predicate;

/// What a kind hashes.
pub trait Hashes: Send + Sync {
    /// Append the hashes one plain-encoded value adds to its unit.
    fn of_value(&self, value: &[u8], out: &mut Vec<u64>);

    /// Groups of hashes such that a row satisfying `leaf` holds every hash of at least one
    /// group; `None` when the index cannot answer for the leaf.
    fn of_leaf(&self, leaf: &Predicate, column: &ColumnDescriptor) -> Option<Vec<Vec<u64>>>;
}

/// Bytes of the header before the unit table.
const FIXED: usize = 8;
/// First read of a header: usually all of it.
pub const HEAD_GUESS: u64 = 32 * 1024;

/// Builds a payload while a column is read.
pub struct PayloadBuilder {
    version: u32,
    param: u32,
    fpp: f64,
    hashes: Box<dyn Hashes>,
    units: SpanAssigner,
    set: BloomSetBuilder,
    scratch: Vec<u64>,
}

impl PayloadBuilder {
    pub fn new(
        version: u32,
        param: u32,
        granularity: Granularity,
        fpp: f64,
        hashes: Box<dyn Hashes>,
    ) -> Self {
        PayloadBuilder {
            version,
            param,
            fpp,
            hashes,
            units: SpanAssigner::new(granularity),
            set: BloomSetBuilder::default(),
            scratch: Vec::new(),
        }
    }
}

impl IndexBuilder for PayloadBuilder {
    fn page(&mut self, p: &PageValues) {
        let unit = self.units.unit_of(
            p.row_group,
            p.first_row,
            p.rows,
            p.row_group_rows,
            p.file_rows,
        );
        self.scratch.clear();
        for v in p.values {
            self.hashes.of_value(v, &mut self.scratch);
        }
        self.set.add(unit, self.scratch.drain(..));
    }

    fn finish(self: Box<Self>) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(self.version);
        e.u32(self.param);
        encode_spans(&self.units.spans, &mut e);
        let built = self.set.finish(self.units.spans.len(), self.fpp);
        built.write_header(&mut e);
        e.u32(crc32c::crc32c(&e.bytes));
        built.write_rows(&mut e);
        e.bytes
    }
}

/// A payload's header: its parameter, units and where the bloom set's rows are.
pub struct Header {
    pub param: u32,
    pub spans: Vec<Span>,
    pub set: BloomSet,
}

impl Header {
    /// Bytes of the header in `head` (the payload's first bytes), if `head` holds enough
    /// to tell.
    fn needed_len(head: &[u8]) -> Option<usize> {
        let units = u32::from_le_bytes(head.get(FIXED..FIXED + 4)?.try_into().ok()?) as usize;
        FIXED
            .checked_add(4)?
            .checked_add(units.checked_mul(SPAN_LEN)?)?
            .checked_add(8 + 4)
    }

    /// The header at the start of `bytes` (at least `needed_len`), of a payload of
    /// `payload_len` bytes written with `version`.
    fn decode(bytes: &[u8], payload_len: u64, version: u32, kind: &str) -> Result<Header> {
        let mut d = Decoder::new(bytes);
        d.version(version, kind)?;
        let param = d.u32()?;
        let spans = decode_spans(&mut d)?;
        let set = BloomSet::decode(&mut d, spans.len())?;
        let covered = d.position();
        let crc = d.u32()?;
        if crc32c::crc32c(&bytes[..covered]) != crc {
            return Err(invalid(format!("{kind} index header checksum mismatch")));
        }
        let set = set.at(d.position() as u64, payload_len)?;
        Ok(Header { param, spans, set })
    }

    /// Read the header of the block's payload: one read when it fits the first guess.
    pub fn read(block: &BlockReader, version: u32, kind: &str) -> Result<Header> {
        let payload_len = block.payload_len();
        let mut head = block.payload_range(0, payload_len.min(HEAD_GUESS) as usize)?;
        let needed = Header::needed_len(&head)
            .ok_or_else(|| invalid(format!("{kind} index header truncated")))?;
        if needed as u64 > payload_len {
            return Err(invalid(format!(
                "{kind} index header longer than its payload"
            )));
        }
        if needed > head.len() {
            head = block.payload_range(0, needed)?;
        }
        Header::decode(&head[..needed], payload_len, version, kind)
    }

    /// The header of a whole payload, with every row checked.
    pub fn verify(payload: &[u8], version: u32, kind: &str) -> Result<Header> {
        let needed = Header::needed_len(payload)
            .filter(|n| *n <= payload.len())
            .ok_or_else(|| invalid(format!("{kind} index header truncated")))?;
        let header = Header::decode(&payload[..needed], payload.len() as u64, version, kind)?;
        header.set.verify(payload)?;
        Ok(header)
    }
}

/// A payload opened for planning.
pub struct PayloadProbe {
    spans: Vec<Span>,
    hashes: Box<dyn Hashes>,
    rows: BloomSetProbe,
}

impl PayloadProbe {
    pub fn new(header: Header, hashes: Box<dyn Hashes>) -> Self {
        PayloadProbe {
            spans: header.spans,
            hashes,
            rows: BloomSetProbe::new(header.set),
        }
    }
}

impl IndexProbe for PayloadProbe {
    fn spans(&self) -> &[Span] {
        &self.spans
    }

    fn wanted(&self, leaf: &Predicate, column: &ColumnDescriptor) -> Vec<Range<u64>> {
        match self.hashes.of_leaf(leaf, column) {
            Some(groups) => self.rows.wanted(groups.into_iter().flatten()),
            None => Vec::new(),
        }
    }

    fn units(
        &mut self,
        leaf: &Predicate,
        column: &ColumnDescriptor,
        block: &BlockReader,
    ) -> Result<Option<Vec<u32>>> {
        match self.hashes.of_leaf(leaf, column) {
            Some(groups) => Ok(Some(self.rows.units(&groups, block)?)),
            None => Ok(None),
        }
    }
}
