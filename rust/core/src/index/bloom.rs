//! The `bloom` index: one split-block bloom filter per unit (file, row group or page) of a
//! column, for files whose writer wrote none, or wrote saturated ones.
//!
//! Payload version 2 (written now) is the bloom payload of bloom_payload.rs: the filters,
//! all sized for the unit with the most distinct values at the requested false-positive
//! rate, stored block-interleaved, so a probe reads 32 bytes per unit. The parameter
//! field is 0; values are hashed as Parquet's bloom filters hash them.
//!
//! Payload version 1 (read, no longer written; read whole):
//! ```text
//! u32 payload version = 1
//! unit table                       (see span.rs)
//! per unit: u64 offset, u32 length (of its bitset, from the payload start)
//! bitsets                          (Parquet SBBF bitsets: 32-byte blocks of 8 u32 words)
//! ```

use parquet::bloom_filter::Sbbf;
use parquet::schema::types::ColumnDescriptor;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::bloom_payload::{Hashes, Header, PayloadBuilder, PayloadProbe, HEAD_GUESS};
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::column_values::PageValues;
use crate::index::hash::{hash_bytes, leaf_hashes};
use crate::index::kind::{
    IndexBuilder, IndexKind, IndexProbe, KindInfo, Param, ParamType, ParamValue, Settings,
};
use crate::index::locator::Granularity;
use crate::index::span::{decode_spans, encode_spans, Span, SpanAssigner};
use crate::predicate::plain::is_probe;
use crate::predicate::Predicate;
use crate::prune::parquet_bloom::leaf_may_match;

/// The bloom index kind.
#[derive(Debug)]
pub struct Bloom;

static INFO: KindInfo = KindInfo {
    name: "bloom",
    code: 2,
    class_name: "BloomIndex",
    cli_flag: "bloom",
    doc: "Split-block bloom filters over a column per file, row group or page, sized for the \
          unit with the most distinct values at the false-positive rate fpp and stored so \
          that a lookup reads 32 bytes per unit.",
    multi_column: false,
    granularities: &[Granularity::RowGroup, Granularity::File, Granularity::Page],
    params: &[Param {
        name: "fpp",
        doc: "target false-positive rate of each filter",
        ty: ParamType::Float { min: 0.0, max: 1.0 },
        default: ParamValue::Float(0.01),
    }],
};

impl IndexKind for Bloom {
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
        Box::new(PayloadBuilder::new(
            PAYLOAD_VERSION,
            0,
            settings.granularity,
            settings.float("fpp"),
            Box::new(ValueHashes),
        ))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        match payload_version(payload)? {
            V1 => Ok(BloomIndex::decode(payload)?.spans),
            _ => Ok(Header::verify(payload, PAYLOAD_VERSION, INFO.name)?.spans),
        }
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        let head = block.payload_range(0, 4.min(block.payload_len()) as usize)?;
        match payload_version(&head)? {
            V1 => Ok(Box::new(BloomIndex::decode(&block.payload()?)?)),
            _ => Ok(Box::new(PayloadProbe::new(
                Header::read(block, PAYLOAD_VERSION, INFO.name)?,
                Box::new(ValueHashes),
            ))),
        }
    }

    fn head_len(&self) -> Option<u64> {
        Some(HEAD_GUESS)
    }
}

/// The payload's version, 1 or 2.
fn payload_version(payload: &[u8]) -> Result<u32> {
    let v = Decoder::new(payload).u32()?;
    match v {
        V1 | PAYLOAD_VERSION => Ok(v),
        other => Err(invalid(format!("bloom payload version {other}"))),
    }
}

/// Values hashed as Parquet's bloom filters hash them (their plain encoding).
struct ValueHashes;

impl Hashes for ValueHashes {
    fn of_value(&self, value: &[u8], out: &mut Vec<u64>) {
        out.push(hash_bytes(value));
    }

    fn of_leaf(
        &self,
        leaf: &Predicate,
        column: &parquet::schema::types::ColumnDescriptor,
    ) -> Option<Vec<Vec<u64>>> {
        // Each candidate encoding of each value is one alternative.
        let hashes = leaf_hashes(leaf, column.physical_type(), column.type_length())?;
        Some(hashes.into_iter().map(|h| vec![h]).collect())
    }
}

impl IndexProbe for BloomIndex {
    fn spans(&self) -> &[Span] {
        &self.spans
    }

    fn units(
        &mut self,
        leaf: &Predicate,
        column: &ColumnDescriptor,
        _block: &BlockReader,
    ) -> Result<Option<Vec<u32>>> {
        if !is_probe(leaf) {
            return Ok(None);
        }
        let (physical, type_length) = (column.physical_type(), column.type_length());
        Ok(Some(
            (0..self.filters.len() as u32)
                .filter(|&u| leaf_may_match(leaf, &self.filters[u as usize], physical, type_length))
                .collect(),
        ))
    }
}

/// The payload version written now.
pub const PAYLOAD_VERSION: u32 = 2;
/// The first payload version: one bitset per unit, read whole.
const V1: u32 = 1;
/// The largest bitset the Parquet format allows.
const MAX_BITSET: u32 = 128 * 1024 * 1024;

/// Builds a version-1 payload: one filter per unit, each sized for its own values. The
/// catalog keeps a file's filter this way (it reads it whole).
pub struct BloomBuilder {
    units: SpanAssigner,
    granularity: Granularity,
    fpp: f64,
    filters: Vec<Sbbf>,
}

impl BloomBuilder {
    pub fn new(granularity: Granularity, fpp: f64) -> Self {
        BloomBuilder {
            units: SpanAssigner::new(granularity),
            granularity,
            fpp,
            filters: Vec::new(),
        }
    }

    pub fn page(&mut self, p: &PageValues) {
        let unit = self.units.unit_of(
            p.row_group,
            p.first_row,
            p.rows,
            p.row_group_rows,
            p.file_rows,
        );
        if unit == self.filters.len() {
            // Sized for every row being distinct, then folded once the values are known.
            let ndv = match self.granularity {
                Granularity::File => p.file_rows,
                Granularity::RowGroup => p.row_group_rows,
                Granularity::Page => p.rows,
            };
            let filter = Sbbf::new_with_ndv_fpp(ndv.max(1), self.fpp)
                .unwrap_or_else(|_| Sbbf::new_with_num_of_bytes(MAX_BITSET as usize));
            self.filters.push(filter);
        }
        let filter = &mut self.filters[unit];
        for v in p.values {
            filter.insert(*v);
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        let mut bitsets = Vec::with_capacity(self.filters.len());
        for f in &mut self.filters {
            f.fold_to_target_fpp(self.fpp);
            let mut bits = Vec::new();
            f.write_bitset(&mut bits).expect("writing to memory");
            bitsets.push(bits);
        }
        let mut e = Encoder::default();
        e.u32(V1);
        encode_spans(&self.units.spans, &mut e);
        let mut offset = (e.len() + bitsets.len() * 12) as u64;
        for b in &bitsets {
            e.u64(offset);
            e.u32(b.len() as u32);
            offset += b.len() as u64;
        }
        for b in bitsets {
            e.bytes.extend_from_slice(&b);
        }
        e.bytes
    }
}

/// A decoded bloom index.
pub struct BloomIndex {
    pub spans: Vec<Span>,
    pub filters: Vec<Sbbf>,
}

impl BloomIndex {
    pub fn decode(payload: &[u8]) -> Result<BloomIndex> {
        let mut d = Decoder::new(payload);
        d.version(V1, "bloom")?;
        let spans = decode_spans(&mut d)?;
        let mut filters = Vec::with_capacity(spans.len());
        let mut locations = Vec::with_capacity(spans.len());
        for _ in &spans {
            locations.push((d.u64()?, d.u32()?));
        }
        for (offset, length) in locations {
            if length == 0 || length % 32 != 0 || length > MAX_BITSET {
                return Err(invalid(format!("bloom bitset of {length} bytes")));
            }
            let end = offset.checked_add(u64::from(length));
            if end.is_none_or(|e| e > payload.len() as u64) {
                return Err(invalid("bloom bitset outside its payload"));
            }
            filters.push(Sbbf::new(
                &payload[offset as usize..(offset + u64::from(length)) as usize],
            ));
        }
        Ok(BloomIndex { spans, filters })
    }
}
