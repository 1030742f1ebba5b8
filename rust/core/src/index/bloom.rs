//! The `bloom` index: one Parquet split-block bloom filter per unit (file, row group or
//! page) of a column, for files whose writer wrote none, or wrote saturated ones.
//!
//! Payload, version 1 (little-endian):
//! ```text
//! u32 payload version = 1
//! unit table                       (see units.rs)
//! per unit: u64 offset, u32 length (of its bitset, from the payload start)
//! bitsets                          (Parquet SBBF bitsets: 32-byte blocks of 8 u32 words)
//! ```
//! Each filter is sized for the values its unit holds and folded down to the requested
//! false-positive rate, so it neither saturates nor wastes space.

use parquet::bloom_filter::Sbbf;
use parquet::schema::types::ColumnDescriptor;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::column_values::PageValues;
use crate::index::kind::{
    IndexBuilder, IndexKind, IndexProbe, KindInfo, Param, ParamType, ParamValue, Settings,
};
use crate::index::locator::Granularity;
use crate::index::span::{decode_spans, encode_spans, Span, SpanAssigner};
use crate::predicate::Predicate;
use crate::prune::parquet_bloom::{is_probe, leaf_may_match};

/// The bloom index kind.
#[derive(Debug)]
pub struct Bloom;

static INFO: KindInfo = KindInfo {
    name: "bloom",
    code: 2,
    class_name: "BloomIndex",
    cli_flag: "bloom",
    doc: "Split-block bloom filters over a column per file, row group or page, each sized \
          for the values it holds and folded to the false-positive rate fpp.",
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
        Box::new(BloomBuilder::new(
            settings.granularity,
            settings.float("fpp"),
        ))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        Ok(BloomIndex::decode(payload)?.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        Ok(Box::new(BloomIndex::decode(&block.payload()?)?))
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

impl IndexBuilder for BloomBuilder {
    fn page(&mut self, p: &PageValues) {
        BloomBuilder::page(self, p);
    }

    fn finish(self: Box<Self>) -> Vec<u8> {
        BloomBuilder::finish(*self)
    }
}

pub const PAYLOAD_VERSION: u32 = 1;
/// The largest bitset the Parquet format allows.
const MAX_BITSET: u32 = 128 * 1024 * 1024;

/// Builds a bloom index while a column is read.
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
        e.u32(PAYLOAD_VERSION);
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
        d.version(PAYLOAD_VERSION, "bloom")?;
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
