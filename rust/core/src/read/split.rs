//! Splitting the last units of a scan so that its threads finish together.
//!
//! A unit is a row group, read by one thread. Seven equal row groups on two threads take
//! the time of four; cutting the seventh in two makes it three and a half. A page that
//! straddles a cut is read and decoded by both pieces, so each cut goes, near its even
//! share, to the page start where the straddling pages cost the fewest bytes (where the
//! columns' pages start together, none). The predicate's columns count first: both
//! pieces read their every selected page, while a projected column's page is read only
//! where a row matched in it. The chunks' dictionary pages are fetched once for all
//! pieces ([`SharedPages`]).

use std::sync::Arc;

use crate::read::shared_pages::SharedPages;

use crate::metadata::page_index::{offset_index, page_boundaries};
use crate::plan::{needed_leaves, RowRanges, ScanUnit};

/// Fewest selected rows worth a piece of its own: a few batches of decoding.
pub const MIN_PIECE_ROWS: u64 = 1 << 17;

/// A part of a unit, read on its own. `completes` is set on one piece per unit, to
/// count units read once.
pub struct Piece {
    pub unit: ScanUnit,
    pub completes: bool,
    /// Threads the piece may read with: more than one when there are fewer pieces than
    /// threads.
    pub threads: usize,
    /// What the pieces of one unit fetch for all of them; `None` for a whole unit.
    pub shared: Option<Arc<SharedPages>>,
}

/// The units as pieces for `threads` threads: with `r = units % threads`, each of the
/// last `r` units is cut in up to `threads` pieces of at least [`MIN_PIECE_ROWS`].
/// Fewer pieces than threads share the threads out.
pub fn balance(units: Vec<ScanUnit>, threads: usize, roots: &[usize]) -> Vec<Piece> {
    let r = if threads > 1 {
        units.len() % threads
    } else {
        0
    };
    let first_split = units.len() - r;
    let mut out = Vec::with_capacity(units.len() + r * threads);
    for (i, unit) in units.into_iter().enumerate() {
        let rows = unit.ranges.row_count();
        let pieces = (rows / MIN_PIECE_ROWS).min(threads as u64) as usize;
        if i < first_split || pieces < 2 {
            out.push(Piece {
                unit,
                completes: true,
                threads: 1,
                shared: None,
            });
            continue;
        }
        let md = unit.file.reader_metadata.metadata();
        // Both pieces read every selected page of a predicate's column; of another
        // column only the pages where rows matched (all of them when nothing filters).
        let predicate_leaves = needed_leaves(md, &[], unit.file.predicate.as_ref());
        let columns: Vec<ColumnPages> = unit
            .file
            .needed_leaves(roots)
            .into_iter()
            .filter_map(|leaf| {
                let oi = offset_index(md, unit.row_group, leaf)?;
                let certain = predicate_leaves.is_empty() || predicate_leaves.contains(&leaf);
                Some(ColumnPages {
                    starts: page_boundaries(oi, unit.row_group_rows),
                    sizes: oi
                        .page_locations()
                        .iter()
                        .map(|p| p.compressed_page_size.max(0) as u64)
                        .collect(),
                    certain,
                })
            })
            .collect();
        let parts = cut(&unit.ranges, pieces, &columns);
        let last = parts.len() - 1;
        let shared = (parts.len() > 1).then(|| Arc::new(SharedPages::default()));
        out.extend(parts.into_iter().enumerate().map(|(k, ranges)| Piece {
            unit: ScanUnit {
                file: unit.file.clone(),
                row_group: unit.row_group,
                ranges,
                row_group_rows: unit.row_group_rows,
                conjunct_rows: unit.conjunct_rows.clone(),
                dictionary_probes: unit.dictionary_probes.clone(),
            },
            completes: k == last,
            threads: 1,
            shared: shared.clone(),
        }));
    }
    if !out.is_empty() && out.len() < threads {
        let spare = threads / out.len();
        out.iter_mut().for_each(|p| p.threads = spare);
    }
    out
}

/// The pages of one column a unit reads, in its row group: the row each starts at (then
/// the row group's end), and its compressed size.
struct ColumnPages {
    starts: Vec<u64>,
    sizes: Vec<u64>,
    /// Whether every selected page is read (a predicate's column, or any column of a
    /// scan without one), rather than only those where rows matched.
    certain: bool,
}

impl ColumnPages {
    /// The bytes of the page that a cut before `row` splits (0 where a page starts).
    fn straddled(&self, row: u64) -> u64 {
        let i = self.starts.partition_point(|s| *s <= row);
        match i.checked_sub(1) {
            Some(page) if self.starts[page] != row => self.sizes.get(page).copied().unwrap_or(0),
            _ => 0,
        }
    }
}

/// `ranges` in `pieces` parts of about equal row counts. Each cut moves to a page start
/// of `columns` between the neighbouring cuts: the one within an eighth of a part's
/// span that splits the fewest bytes of the pages certainly read, then of the others
/// (the nearest of those), else the nearest. Parts that come out empty are dropped.
fn cut(ranges: &RowRanges, pieces: usize, columns: &[ColumnPages]) -> Vec<RowRanges> {
    let total = ranges.row_count();
    let first = ranges.ranges().first().map_or(0, |r| r.start);
    let slack = (ranges.end() - first) / (pieces as u64 * 8);
    let mut starts: Vec<u64> = columns.iter().flat_map(|c| c.starts.clone()).collect();
    starts.sort_unstable();
    starts.dedup();
    // (bytes of the certain pages a cut at `row` splits, bytes of the others)
    let straddled = |row: u64| {
        columns
            .iter()
            .fold((0, 0), |(certain, other), c| match c.certain {
                true => (certain + c.straddled(row), other),
                false => (certain, other + c.straddled(row)),
            })
    };
    let mut cuts: Vec<u64> = Vec::with_capacity(pieces + 1);
    cuts.push(0);
    for k in 1..pieces {
        let row = row_at(ranges, total * k as u64 / pieces as u64);
        let prev = *cuts.last().unwrap_or(&0);
        let between = || {
            starts
                .iter()
                .copied()
                .filter(|b| *b > prev.max(first) && *b < ranges.end())
        };
        let snapped = between()
            .filter(|b| b.abs_diff(row) <= slack)
            .min_by_key(|b| (straddled(*b), b.abs_diff(row)))
            .or_else(|| between().min_by_key(|b| b.abs_diff(row)))
            .unwrap_or(row);
        cuts.push(snapped.max(prev));
    }
    cuts.push(u64::MAX);
    cuts.windows(2)
        .map(|w| ranges.intersect(&RowRanges::from_ranges(std::iter::once(w[0]..w[1]))))
        .filter(|r| !r.is_empty())
        .collect()
}

/// The row that has `n` selected rows before it.
fn row_at(ranges: &RowRanges, mut n: u64) -> u64 {
    for r in ranges.ranges() {
        let len = r.end - r.start;
        if n < len {
            return r.start + n;
        }
        n -= len;
    }
    ranges.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(r: &RowRanges) -> Vec<(u64, u64)> {
        r.ranges().iter().map(|r| (r.start, r.end)).collect()
    }

    /// A column of `rows`-row pages of `bytes` each, over 1M rows.
    fn pages(rows: u64, bytes: u64) -> ColumnPages {
        let mut starts: Vec<u64> = (0..1_000_000u64.div_ceil(rows)).map(|p| p * rows).collect();
        let sizes = vec![bytes; starts.len()];
        starts.push(1_000_000);
        ColumnPages {
            starts,
            sizes,
            certain: true,
        }
    }

    #[test]
    fn cuts_fall_on_page_starts_and_keep_every_row() {
        let all = RowRanges::full(1_000_000);
        let bounds = [pages(20_000, 100)];
        let parts = cut(&all, 2, &bounds);
        assert_eq!(parts.len(), 2);
        assert_eq!(spans(&parts[0]), [(0, 500_000)]);
        assert_eq!(spans(&parts[1]), [(500_000, 1_000_000)]);

        let parts = cut(&all, 3, &bounds);
        assert_eq!(spans(&parts[0]), [(0, 340_000)]);
        assert_eq!(spans(&parts[1]), [(340_000, 660_000)]);
        assert_eq!(spans(&parts[2]), [(660_000, 1_000_000)]);
    }

    #[test]
    fn cuts_split_the_selected_rows_not_the_row_group() {
        let sel = RowRanges::from_ranges([0..10, 500_000..700_000, 900_000..900_010]);
        let parts = cut(&sel, 2, &[]);
        assert_eq!(parts.len(), 2);
        assert_eq!(spans(&parts[0]), [(0, 10), (500_000, 600_000)]);
        assert_eq!(spans(&parts[1]), [(600_000, 700_000), (900_000, 900_010)]);
        let joined = parts[0].union(&parts[1]);
        assert_eq!(joined, sel);
    }

    #[test]
    fn a_cut_with_no_page_start_nearby_stays_where_it_is() {
        let sel = RowRanges::from_ranges(std::iter::once(100..300));
        // The only page start lies outside the selection: parts stay non-empty.
        let few = ColumnPages {
            starts: vec![0, 1_000, 1_000_000],
            sizes: vec![10, 10],
            certain: true,
        };
        let parts = cut(&sel, 2, &[few]);
        assert_eq!(parts.len(), 2);
        assert_eq!(spans(&parts[0]), [(100, 200)]);
        assert_eq!(spans(&parts[1]), [(200, 300)]);
    }

    #[test]
    fn a_cut_goes_where_the_straddling_pages_cost_least() {
        let all = RowRanges::full(1_000_000);
        // Small pages every 20,000 rows; large ones every 30,000 rows, whose starts meet
        // the small ones' every 60,000 rows (480,000 and 540,000 near the middle).
        let columns = [pages(20_000, 100), pages(30_000, 10_000)];
        let parts = cut(&all, 2, &columns);
        assert_eq!(spans(&parts[0]), [(0, 480_000)]);
        assert_eq!(spans(&parts[1]), [(480_000, 1_000_000)]);
        // Every start near the middle splits a large page: the nearest it is.
        let columns = [pages(20_000, 100), pages(300_000, 10_000)];
        assert_eq!(
            columns.iter().map(|c| c.straddled(500_000)).sum::<u64>(),
            10_000
        );
        let parts = cut(&all, 2, &columns);
        assert_eq!(spans(&parts[0]), [(0, 500_000)]);
        assert_eq!(spans(&parts[1]), [(500_000, 1_000_000)]);
    }

    #[test]
    fn a_cut_spares_the_pages_every_piece_reads() {
        let all = RowRanges::full(1_000_000);
        let column = |start: u64, bytes: u64, certain: bool| ColumnPages {
            starts: vec![0, start, 1_000_000],
            sizes: vec![bytes, bytes],
            certain,
        };
        // A cut at 500,000 splits a 1,000-byte page, one at 490,000 a 50,000-byte one.
        let both_read = [column(490_000, 1_000, true), column(500_000, 50_000, true)];
        let parts = cut(&all, 2, &both_read);
        assert_eq!(spans(&parts[0]), [(0, 500_000)]);
        // When the large page is read only where a row matched, the predicate's page is
        // the one both pieces would certainly read twice.
        let filtered = [column(490_000, 1_000, true), column(500_000, 50_000, false)];
        let parts = cut(&all, 2, &filtered);
        assert_eq!(spans(&parts[0]), [(0, 490_000)]);
        assert_eq!(spans(&parts[1]), [(490_000, 1_000_000)]);
    }
}
