//! The `aggregates` index (and the payload `page_minmax` shares): per unit (file, row group or page) of a
//! column, its null count, NaN count, exact min and max, and (aggregates only) the exact
//! sum. `pqindex.aggregate` answers from them for units where the predicate holds for
//! every row; the planner prunes with their min/max in files that have no page index.
//!
//! Payload, version 1 (little-endian):
//! ```text
//! u32 payload version = 1
//! u8  sum kind                    0 none, 1 integer (i128), 2 float (f64)
//! unit table                      (see units.rs)
//! per unit:
//!   varint nulls
//!   varint nans                   NaN values (floats), not counted in min/max/sum
//!   u8 flags                      bit 0: min and max present; bit 1: sum present
//!   [varint len, min, varint len, max]   plain-encoded, when bit 0
//!   [i128 or f64 sum]                    when bit 1 (per the sum kind)
//! ```
//! Min and max are absent when a unit has no non-null, non-NaN value, when the column has
//! no known order, or when a bound would exceed `MAX_BOUND_LEN` bytes (a truncated bound
//! is never stored: it could not be an answer). An integer sum is absent when it would
//! overflow i128.

use std::cmp::Ordering;

use parquet::schema::types::ColumnDescriptor;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::column_values::{PageValues, PlainOrder};
use crate::index::kind::{IndexBuilder, IndexKind, IndexProbe, KindInfo, Settings};
use crate::index::locator::Granularity;
use crate::index::span::{decode_spans, encode_spans, Span, SpanAssigner};
use crate::predicate::Predicate;
use crate::prune::statistics::{big_endian_i128, decode, leaf_may_match, ChunkStats};

/// The aggregates index kind: `pqindex.aggregate` answers from it, and the planner prunes
/// pages with its bounds in files without a page index.
#[derive(Debug)]
pub struct Aggregates;

static INFO: KindInfo = KindInfo {
    name: "aggregates",
    code: 5,
    class_name: "AggregateIndex",
    cli_flag: "aggregates",
    doc: "Count, null count, NaN count, exact min and max and exact sum of each of columns \
          per file, row group or page (one index per column), from which aggregate answers \
          for the units where the predicate holds on every row.",
    multi_column: true,
    granularities: &[Granularity::Page, Granularity::RowGroup, Granularity::File],
    params: &[],
};

impl IndexKind for Aggregates {
    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn used_in_planning(&self, granularity: Granularity, file_has_page_index: bool) -> bool {
        bounds_used(granularity, file_has_page_index)
    }

    fn answers(&self, _leaf: &Predicate) -> bool {
        true
    }

    fn builder(&self, settings: &Settings) -> Box<dyn IndexBuilder> {
        Box::new(AggregatesBuilder::new(settings.granularity, true))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        Ok(AggregatesIndex::decode(payload)?.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        Ok(Box::new(AggregatesIndex::decode(&block.payload()?)?))
    }
}

/// Page bounds from an embedded index serve files without a page index; elsewhere the
/// ColumnIndex says the same.
pub fn bounds_used(granularity: Granularity, file_has_page_index: bool) -> bool {
    granularity == Granularity::Page && !file_has_page_index
}

/// Bounds and null counts per unit answer any comparison, as page statistics do.
impl IndexProbe for AggregatesIndex {
    fn spans(&self) -> &[Span] {
        &self.spans
    }

    fn units(
        &mut self,
        leaf: &Predicate,
        column: &ColumnDescriptor,
        _block: &BlockReader,
    ) -> Result<Option<Vec<u32>>> {
        let Some(col) = leaf.column() else {
            return Ok(None);
        };
        let physical = column.physical_type();
        Ok(Some(
            (0..self.units.len() as u32)
                .filter(|&u| {
                    let (span, unit) = (&self.spans[u as usize], &self.units[u as usize]);
                    let bound = |b: &Option<Vec<u8>>| {
                        b.as_deref()
                            .filter(|_| col.prunable)
                            .and_then(|b| decode(b, physical, col))
                    };
                    let stats = ChunkStats {
                        min: bound(&unit.min),
                        max: bound(&unit.max),
                        exact: true,
                        null_count: Some(unit.nulls),
                        rows: span.rows,
                        all_null: unit.nulls == span.rows,
                    };
                    leaf_may_match(leaf, &stats)
                })
                .collect(),
        ))
    }
}

impl IndexBuilder for AggregatesBuilder {
    fn page(&mut self, p: &PageValues) {
        AggregatesBuilder::page(self, p);
    }

    fn finish(self: Box<Self>) -> Vec<u8> {
        AggregatesBuilder::finish(*self)
    }
}

pub const PAYLOAD_VERSION: u32 = 1;
/// Longest min or max stored; longer strings leave the unit without bounds.
pub const MAX_BOUND_LEN: usize = 64;

const HAS_BOUNDS: u8 = 1;
const HAS_SUM: u8 = 2;

/// The sum of a unit's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sum {
    Int(i128),
    Float(f64),
}

/// What one unit of the index knows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UnitStats {
    pub nulls: u64,
    pub nans: u64,
    /// Exact plain-encoded bounds of the non-null, non-NaN values.
    pub min: Option<Vec<u8>>,
    pub max: Option<Vec<u8>>,
    pub sum: Option<Sum>,
}

/// Compare two plain-encoded values of a column; `None` when the order is unknown.
pub fn cmp_plain(a: &[u8], b: &[u8], order: PlainOrder) -> Option<Ordering> {
    fn int<const N: usize>(v: &[u8]) -> Option<[u8; N]> {
        v.get(..N)?.try_into().ok()
    }
    Some(match order {
        PlainOrder::Bool => a.first()?.cmp(b.first()?),
        PlainOrder::I32 => i32::from_le_bytes(int(a)?).cmp(&i32::from_le_bytes(int(b)?)),
        PlainOrder::U32 => u32::from_le_bytes(int(a)?).cmp(&u32::from_le_bytes(int(b)?)),
        PlainOrder::I64 => i64::from_le_bytes(int(a)?).cmp(&i64::from_le_bytes(int(b)?)),
        PlainOrder::U64 => u64::from_le_bytes(int(a)?).cmp(&u64::from_le_bytes(int(b)?)),
        PlainOrder::Float => float_of(a)?.partial_cmp(&float_of(b)?)?,
        PlainOrder::Bytes => a.cmp(b),
        PlainOrder::BigEndianSigned => big_endian_i128(a)?.cmp(&big_endian_i128(b)?),
        PlainOrder::Unordered => return None,
    })
}

fn float_of(v: &[u8]) -> Option<f64> {
    match v.len() {
        4 => Some(f64::from(f32::from_le_bytes(v.try_into().ok()?))),
        8 => Some(f64::from_le_bytes(v.try_into().ok()?)),
        _ => None,
    }
}

/// The integer a plain-encoded value stands for, for integer sums.
fn int_of(v: &[u8], order: PlainOrder) -> Option<i128> {
    let arr = |n: usize| v.get(..n);
    Some(match order {
        PlainOrder::I32 => i128::from(i32::from_le_bytes(arr(4)?.try_into().ok()?)),
        PlainOrder::U32 => i128::from(u32::from_le_bytes(arr(4)?.try_into().ok()?)),
        PlainOrder::I64 => i128::from(i64::from_le_bytes(arr(8)?.try_into().ok()?)),
        PlainOrder::U64 => i128::from(u64::from_le_bytes(arr(8)?.try_into().ok()?)),
        PlainOrder::BigEndianSigned => big_endian_i128(v)?,
        _ => return None,
    })
}

/// A float sum with Neumaier's compensation, so long sums stay within a few ulps.
#[derive(Debug, Clone, Copy, Default)]
pub struct FloatSum {
    sum: f64,
    compensation: f64,
}

impl FloatSum {
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if t.is_finite() {
            if self.sum.abs() >= x.abs() {
                self.compensation += (self.sum - t) + x;
            } else {
                self.compensation += (x - t) + self.sum;
            }
        }
        self.sum = t;
    }

    pub fn value(&self) -> f64 {
        if self.sum.is_finite() {
            self.sum + self.compensation
        } else {
            self.sum
        }
    }
}

enum SumAcc {
    None,
    Int(Option<i128>),
    Float(FloatSum),
}

struct UnitAcc {
    nulls: u64,
    nans: u64,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
    sum: SumAcc,
}

/// Builds an aggregates (with sums) or page_minmax (without) index while a column is read.
pub struct AggregatesBuilder {
    units: SpanAssigner,
    with_sums: bool,
    acc: Vec<UnitAcc>,
    sum_kind: u8,
}

impl AggregatesBuilder {
    pub fn new(granularity: Granularity, with_sums: bool) -> Self {
        AggregatesBuilder {
            units: SpanAssigner::new(granularity),
            with_sums,
            acc: Vec::new(),
            sum_kind: 0,
        }
    }

    pub fn page(&mut self, p: &PageValues) {
        let order = p.column.order;
        let unit = self.units.unit_of(
            p.row_group,
            p.first_row,
            p.rows,
            p.row_group_rows,
            p.file_rows,
        );
        if unit == self.acc.len() {
            self.sum_kind = match order {
                _ if !self.with_sums => 0,
                PlainOrder::I32
                | PlainOrder::U32
                | PlainOrder::I64
                | PlainOrder::U64
                | PlainOrder::BigEndianSigned => 1,
                PlainOrder::Float => 2,
                _ => 0,
            };
            self.acc.push(UnitAcc {
                nulls: 0,
                nans: 0,
                min: None,
                max: None,
                sum: match self.sum_kind {
                    1 => SumAcc::Int(Some(0)),
                    2 => SumAcc::Float(FloatSum::default()),
                    _ => SumAcc::None,
                },
            });
        }
        let a = &mut self.acc[unit];
        a.nulls += p.nulls;
        for v in p.values {
            if order == PlainOrder::Float && float_of(v).is_some_and(f64::is_nan) {
                a.nans += 1;
                continue;
            }
            if order != PlainOrder::Unordered {
                if a.min
                    .as_deref()
                    .is_none_or(|m| cmp_plain(v, m, order) == Some(Ordering::Less))
                {
                    a.min = Some(v.to_vec());
                }
                if a.max
                    .as_deref()
                    .is_none_or(|m| cmp_plain(v, m, order) == Some(Ordering::Greater))
                {
                    a.max = Some(v.to_vec());
                }
            }
            match &mut a.sum {
                SumAcc::Int(s) => {
                    *s = match (*s, int_of(v, order)) {
                        (Some(s), Some(x)) => s.checked_add(x),
                        _ => None,
                    }
                }
                SumAcc::Float(s) => s.add(float_of(v).unwrap_or(f64::NAN)),
                SumAcc::None => {}
            }
        }
    }

    pub fn finish(self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(PAYLOAD_VERSION);
        e.u8(self.sum_kind);
        encode_spans(&self.units.spans, &mut e);
        for a in &self.acc {
            e.varint(a.nulls);
            e.varint(a.nans);
            let bounds = match (&a.min, &a.max) {
                (Some(min), Some(max))
                    if min.len() <= MAX_BOUND_LEN && max.len() <= MAX_BOUND_LEN =>
                {
                    Some((min, max))
                }
                _ => None,
            };
            let sum = match a.sum {
                SumAcc::Int(Some(s)) => Some(s.to_le_bytes().to_vec()),
                SumAcc::Float(s) => Some(s.value().to_le_bytes().to_vec()),
                _ => None,
            };
            e.u8(u8::from(bounds.is_some()) * HAS_BOUNDS + u8::from(sum.is_some()) * HAS_SUM);
            if let Some((min, max)) = bounds {
                for b in [min, max] {
                    e.varint(b.len() as u64);
                    e.bytes.extend_from_slice(b);
                }
            }
            if let Some(s) = sum {
                e.bytes.extend_from_slice(&s);
            }
        }
        e.bytes
    }
}

/// A decoded aggregates or page_minmax index.
#[derive(Debug, Clone)]
pub struct AggregatesIndex {
    pub spans: Vec<Span>,
    pub units: Vec<UnitStats>,
}

impl AggregatesIndex {
    pub fn decode(payload: &[u8]) -> Result<AggregatesIndex> {
        let mut d = Decoder::new(payload);
        d.version(PAYLOAD_VERSION, "aggregates")?;
        let sum_kind = d.u8()?;
        if sum_kind > 2 {
            return Err(invalid(format!("aggregates sum kind {sum_kind}")));
        }
        let spans = decode_spans(&mut d)?;
        let mut units = Vec::with_capacity(spans.len());
        for span in &spans {
            let nulls = d.varint()?;
            let nans = d.varint()?;
            if nulls.checked_add(nans).is_none_or(|n| n > span.rows) {
                return Err(invalid("a unit counts more nulls and NaNs than rows"));
            }
            let flags = d.u8()?;
            if flags & !(HAS_BOUNDS | HAS_SUM) != 0 {
                return Err(invalid(format!("aggregates unit flags {flags:#x}")));
            }
            let (mut min, mut max) = (None, None);
            if flags & HAS_BOUNDS != 0 {
                for slot in [&mut min, &mut max] {
                    let len = d.varint()? as usize;
                    if len > MAX_BOUND_LEN {
                        return Err(invalid("aggregates bound longer than allowed"));
                    }
                    *slot = Some(d.take(len)?.to_vec());
                }
            }
            let sum = if flags & HAS_SUM != 0 {
                Some(match sum_kind {
                    1 => Sum::Int(i128::from_le_bytes(
                        d.take(16)?.try_into().expect("16 bytes"),
                    )),
                    2 => Sum::Float(f64::from_le_bytes(d.take(8)?.try_into().expect("8 bytes"))),
                    _ => return Err(invalid("a sum in an index without sums")),
                })
            } else {
                None
            };
            units.push(UnitStats {
                nulls,
                nans,
                min,
                max,
                sum,
            });
        }
        if d.remaining() != 0 {
            return Err(invalid("trailing bytes after the aggregates units"));
        }
        Ok(AggregatesIndex { spans, units })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::column_values::ColumnInfo;

    fn info(order: PlainOrder) -> ColumnInfo {
        ColumnInfo {
            leaf: 0,
            physical: parquet::basic::Type::INT64,
            type_length: -1,
            order,
        }
    }

    fn page<'a>(
        first: u64,
        rows: u64,
        values: &'a [&'a [u8]],
        column: &'a ColumnInfo,
    ) -> PageValues<'a> {
        PageValues {
            row_group: 0,
            first_row: first,
            rows,
            row_group_rows: 10,
            file_rows: 10,
            nulls: rows - values.len() as u64,
            values,
            column,
        }
    }

    #[test]
    fn units_hold_exact_counts_bounds_and_sums() {
        let c = info(PlainOrder::I64);
        let v: Vec<[u8; 8]> = [5i64, -3, i64::MAX, i64::MAX]
            .iter()
            .map(|x| x.to_le_bytes())
            .collect();
        let vals: Vec<&[u8]> = v.iter().map(|b| b.as_slice()).collect();
        let mut b = AggregatesBuilder::new(Granularity::Page, true);
        b.page(&page(0, 6, &vals, &c));
        b.page(&page(6, 4, &[], &c));
        let idx = AggregatesIndex::decode(&b.finish()).unwrap();
        assert_eq!(idx.spans.len(), 2);
        let u = &idx.units[0];
        assert_eq!((u.nulls, u.nans), (2, 0));
        assert_eq!(u.min.as_deref(), Some(&(-3i64).to_le_bytes()[..]));
        assert_eq!(u.max.as_deref(), Some(&i64::MAX.to_le_bytes()[..]));
        // Wider than i64: no overflow.
        assert_eq!(u.sum, Some(Sum::Int(2 + 2 * i128::from(i64::MAX))));
        let empty = &idx.units[1];
        assert_eq!((empty.nulls, empty.min.clone()), (4, None));
        assert_eq!(empty.sum, Some(Sum::Int(0)));
    }

    #[test]
    fn floats_count_nans_apart_and_long_strings_keep_no_bounds() {
        let c = info(PlainOrder::Float);
        let v: Vec<[u8; 8]> = [1.5f64, f64::NAN, -2.0]
            .iter()
            .map(|x| x.to_le_bytes())
            .collect();
        let vals: Vec<&[u8]> = v.iter().map(|b| b.as_slice()).collect();
        let mut b = AggregatesBuilder::new(Granularity::File, true);
        b.page(&page(0, 10, &vals, &c));
        let u = &AggregatesIndex::decode(&b.finish()).unwrap().units[0];
        assert_eq!(u.nans, 1);
        assert_eq!(u.sum, Some(Sum::Float(-0.5)));
        assert_eq!(u.max.as_deref(), Some(&1.5f64.to_le_bytes()[..]));

        let c = info(PlainOrder::Bytes);
        let long = vec![b'x'; MAX_BOUND_LEN + 1];
        let vals: Vec<&[u8]> = vec![b"a", &long];
        let mut b = AggregatesBuilder::new(Granularity::File, false);
        b.page(&page(0, 10, &vals, &c));
        let u = &AggregatesIndex::decode(&b.finish()).unwrap().units[0];
        assert_eq!((u.min.clone(), u.sum), (None, None));
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let c = info(PlainOrder::I64);
        let v = 7i64.to_le_bytes();
        let vals: Vec<&[u8]> = vec![&v];
        let mut b = AggregatesBuilder::new(Granularity::Page, true);
        b.page(&page(0, 10, &vals, &c));
        let good = b.finish();
        for cut in 0..good.len() {
            assert!(AggregatesIndex::decode(&good[..cut]).is_err(), "{cut}");
        }
        let mut bad = good.clone();
        bad[0] = 9;
        assert!(AggregatesIndex::decode(&bad).is_err());
    }
}
