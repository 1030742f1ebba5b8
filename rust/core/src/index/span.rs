//! The units an index describes: the whole file, each row group, or each page of the
//! indexed column. Every index payload starts with its unit table, so page-granular
//! indexes carry their own row ranges and serve files written without an OffsetIndex.

use crate::error::Result;
use crate::index::codec::{invalid, Decoder, Encoder};
use crate::index::locator::Granularity;

/// `row_group` value of the single unit of a file-granular index.
pub const WHOLE_FILE: u32 = u32::MAX;
/// Bytes of one encoded unit.
pub const SPAN_LEN: usize = 4 + 8 + 8;

/// The rows one unit covers: `rows` rows from `first_row` of row group `row_group`
/// (`WHOLE_FILE`: the whole file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub row_group: u32,
    pub first_row: u64,
    pub rows: u64,
}

/// Assigns pages to units while a column is read, page by page, in file order.
pub struct SpanAssigner {
    granularity: Granularity,
    pub spans: Vec<Span>,
}

impl SpanAssigner {
    pub fn new(granularity: Granularity) -> Self {
        SpanAssigner {
            granularity,
            spans: Vec::new(),
        }
    }

    /// The unit of a page, creating it if the page starts one; `rg_rows` and `file_rows`
    /// size the row-group and file units.
    pub fn unit_of(
        &mut self,
        row_group: usize,
        first_row: u64,
        rows: u64,
        rg_rows: u64,
        file_rows: u64,
    ) -> usize {
        let rg = row_group as u32;
        let fresh = match self.granularity {
            Granularity::File => (self.spans.is_empty()).then_some(Span {
                row_group: WHOLE_FILE,
                first_row: 0,
                rows: file_rows,
            }),
            Granularity::RowGroup => (self.spans.last().map(|s| s.row_group) != Some(rg))
                .then_some(Span {
                    row_group: rg,
                    first_row: 0,
                    rows: rg_rows,
                }),
            Granularity::Page => Some(Span {
                row_group: rg,
                first_row,
                rows,
            }),
        };
        if let Some(span) = fresh {
            self.spans.push(span);
        }
        self.spans.len() - 1
    }
}

pub fn encode_spans(spans: &[Span], e: &mut Encoder) {
    e.u32(spans.len() as u32);
    for s in spans {
        e.u32(s.row_group);
        e.u64(s.first_row);
        e.u64(s.rows);
    }
}

/// The unit table, checked for shape: spans of one row group do not overlap and a file
/// unit stands alone.
pub fn decode_spans(d: &mut Decoder) -> Result<Vec<Span>> {
    let n = d.count(SPAN_LEN)?;
    let mut spans = Vec::with_capacity(n);
    for _ in 0..n {
        let span = Span {
            row_group: d.u32()?,
            first_row: d.u64()?,
            rows: d.u64()?,
        };
        if span.first_row.checked_add(span.rows).is_none() {
            return Err(invalid("unit row range overflows"));
        }
        if let Some(prev) = spans.last() {
            let prev: &Span = prev;
            let ordered = span.row_group != WHOLE_FILE
                && prev.row_group != WHOLE_FILE
                && (span.row_group > prev.row_group
                    || (span.row_group == prev.row_group
                        && span.first_row >= prev.first_row + prev.rows));
            if !ordered {
                return Err(invalid("unit table is not in file order"));
            }
        }
        spans.push(span);
    }
    Ok(spans)
}

/// `Ok` when `spans` describe the file `md` describes (see `spans_fit`); an index whose
/// units do not must be ignored.
pub fn check_spans(spans: &[Span], md: &parquet::file::metadata::ParquetMetaData) -> Result<()> {
    let rg_rows: Vec<u64> = md
        .row_groups()
        .iter()
        .map(|r| r.num_rows().max(0) as u64)
        .collect();
    if spans_fit(spans, &rg_rows, md.file_metadata().num_rows().max(0) as u64) {
        Ok(())
    } else {
        Err(invalid("its units do not match the file's row groups"))
    }
}

/// Whether `spans` describe this file: a file unit covering every row, or units that tile
/// every row group exactly. An index that does not (from another file, or damaged) must not
/// be used: a row it fails to cover would be pruned.
pub fn spans_fit(spans: &[Span], rg_rows: &[u64], file_rows: u64) -> bool {
    if let [only] = spans {
        if only.row_group == WHOLE_FILE {
            return only.first_row == 0 && only.rows == file_rows;
        }
    }
    let mut next = vec![0u64; rg_rows.len()];
    for s in spans {
        let Some(n) = next.get_mut(s.row_group as usize) else {
            return false;
        };
        if s.first_row != *n {
            return false;
        }
        *n += s.rows;
    }
    next.iter().zip(rg_rows).all(|(n, r)| n == r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_map_to_units_by_granularity() {
        let pages = [(0, 0, 10), (0, 10, 5), (1, 0, 7)];
        let run = |g| {
            let mut a = SpanAssigner::new(g);
            let ids: Vec<usize> = pages
                .iter()
                .map(|&(rg, first, rows)| a.unit_of(rg, first, rows, 15, 22))
                .collect();
            (ids, a.spans)
        };
        assert_eq!(run(Granularity::File).0, vec![0, 0, 0]);
        assert_eq!(run(Granularity::RowGroup).0, vec![0, 0, 1]);
        let (ids, spans) = run(Granularity::Page);
        assert_eq!(ids, vec![0, 1, 2]);
        let mut e = Encoder::default();
        encode_spans(&spans, &mut e);
        assert_eq!(decode_spans(&mut Decoder::new(&e.bytes)).unwrap(), spans);
        // Out of order is refused.
        let mut e = Encoder::default();
        encode_spans(&[spans[2], spans[0]], &mut e);
        assert!(decode_spans(&mut Decoder::new(&e.bytes)).is_err());
    }

    #[test]
    fn spans_must_tile_the_row_groups() {
        let span = |row_group, first_row, rows| Span {
            row_group,
            first_row,
            rows,
        };
        assert!(spans_fit(&[span(WHOLE_FILE, 0, 30)], &[10, 20], 30));
        assert!(!spans_fit(&[span(WHOLE_FILE, 0, 29)], &[10, 20], 30));
        assert!(spans_fit(&[span(0, 0, 10), span(1, 0, 20)], &[10, 20], 30));
        assert!(spans_fit(
            &[span(0, 0, 4), span(0, 4, 6), span(1, 0, 20)],
            &[10, 20],
            30
        ));
        // A gap, a missing row group, a row group the file lacks.
        assert!(!spans_fit(
            &[span(0, 0, 4), span(0, 5, 5), span(1, 0, 20)],
            &[10, 20],
            30
        ));
        assert!(!spans_fit(&[span(0, 0, 10)], &[10, 20], 30));
        assert!(!spans_fit(
            &[span(0, 0, 10), span(1, 0, 20), span(2, 0, 1)],
            &[10, 20],
            30
        ));
    }
}
