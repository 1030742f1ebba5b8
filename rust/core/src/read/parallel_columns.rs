//! Reading a small selection of one row group with its columns shared out among threads.
//!
//! A point lookup reads one page of each column and, often, the column's dictionary
//! page: its time goes to decompressing them, one column after the other, while the
//! scan's other threads have no unit to read. When a scan has fewer units than threads,
//! a unit's spare threads take part instead. The predicate columns are read first, on
//! the unit's own thread, then that thread reads a share of the other columns for the
//! matching rows; each spare thread reads another share, of about equal compressed size.
//! The shares' rows are put side by side. Only selections of a few pages are read this
//! way: each share holds its rows in memory until all are done.
//!
//! When the predicate reads a single page of each of its columns, the rows will most
//! likely match (the page's statistics, and bloom filters, let the value through). A
//! spare thread whose columns also have a single selected page each, each decompressed
//! whole however few of its rows are read (a codec other than Snappy and Zstandard, or
//! no offset index), then reads them while the predicate is being evaluated, and drops
//! the rows that do not match after: this costs little more than waiting and, unless no
//! row matches, reads no page the matching rows would not. Other spare threads wait for
//! the matching rows: of a Snappy or Zstandard page, only the start up to the last of
//! them is decompressed ([`crate::read::decode::page_prefix`]), often a small part.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, Schema};
use arrow_select::concat::concat_batches;
use arrow_select::filter::filter_record_batch;
use parquet::arrow::arrow_reader::{RowSelection, RowSelectionPolicy};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;

use crate::error::{panic_message, Result};
use crate::metadata::page_index::{dictionary_range, offset_index, page_boundaries};
use crate::metadata::schema::leaves_by_root;
use crate::plan::Metrics;
use crate::plan::RowRanges;
use crate::read::batches::Batches;
use crate::read::byte_ranges;
use crate::read::decode::chunk_pages;
use crate::read::decode::dictionary_prefix::{cuttable, in_part, MAX_PAGES};
use crate::read::dictionary::selected_pages;
use crate::read::predicate_first::{mismatch, predicate_pass, slices, Matched, Unit};
use crate::threads;

/// Most selected rows (before the predicate) a unit may have to be read this way.
pub const MAX_ROWS: u64 = 1 << 17;

/// How a unit's columns are shared out.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Shares {
    /// Roots the unit's own thread reads after the predicate pass; may be empty.
    pub own: Vec<usize>,
    /// What each spare thread reads.
    pub spare: Vec<Share>,
}

/// A spare thread's roots (never none), and whether it starts before the predicate pass
/// ends.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Share {
    pub roots: Vec<usize>,
    pub early: bool,
}

/// Where a unit is and what it selects.
pub(super) struct Selected<'a> {
    pub md: &'a ParquetMetaData,
    pub row_group: usize,
    pub ranges: &'a RowRanges,
    pub rows: u64,
}

impl Selected<'_> {
    /// Bytes of the selected pages (and dictionaries) of `leaves`.
    fn bytes(&self, leaves: &[usize]) -> u64 {
        byte_ranges(self.md, self.row_group, leaves, self.ranges, self.rows)
            .iter()
            .map(|r| r.end - r.start)
            .sum()
    }

    /// Bytes the predicate pass of `leaves` decompresses: their selected pages, and their
    /// dictionaries but for what a read of a few pages leaves out of them.
    fn pass_bytes(&self, leaves: &[usize]) -> u64 {
        leaves
            .iter()
            .map(|leaf| {
                self.bytes(&[*leaf])
                    .saturating_sub(self.dictionary_left_out(*leaf))
            })
            .sum()
    }

    /// Of `leaf`'s dictionary page, the bytes a read of a few pages is expected to leave
    /// out (`crate::read::decode::dictionary_prefix`): on a column whose pages are in order, the pages
    /// up to the last selected one use about their share of it, the rest is left out.
    /// Elsewhere nothing is expected.
    fn dictionary_left_out(&self, leaf: usize) -> u64 {
        let (md, rg) = (self.md, self.row_group);
        let chunk = md.row_group(rg).column(leaf);
        let in_order = md
            .column_index()
            .and_then(|c| c.get(rg))
            .and_then(|c| c.get(leaf))
            .is_some_and(|c| c.is_sorted());
        let (Some(dictionary), Some(oi)) =
            (dictionary_range(md, rg, leaf), offset_index(md, rg, leaf))
        else {
            return 0;
        };
        if !in_order || !cuttable(chunk) {
            return 0;
        }
        let bounds = page_boundaries(oi, self.rows);
        let pages = oi.page_locations().len();
        let mut selected = (0..pages).filter(|&i| {
            self.ranges
                .overlaps(&(bounds[i]..bounds[i + 1].max(bounds[i])))
        });
        let (Some(first), last) = (selected.next(), selected.next_back()) else {
            return 0;
        };
        let last = last.unwrap_or(first);
        let span = last + 1 - first;
        if span > MAX_PAGES || span >= pages {
            return 0;
        }
        let len = dictionary.end - dictionary.start;
        len - len * (last as u64 + 1) / pages as u64
    }

    /// Whether any of `leaves` may have only the start of its pages decompressed, for the
    /// matching rows alone (`crate::read::decode::page_prefix`): a share holding one is better read
    /// after the predicate pass than before it, from the whole pages.
    fn read_in_part(&self, leaves: &[usize]) -> bool {
        leaves.iter().any(|leaf| {
            in_part(self.md.row_group(self.row_group).column(*leaf))
                && offset_index(self.md, self.row_group, *leaf).is_some()
        })
    }

    /// Whether each of `leaves` has one selected page at most.
    fn one_page_each(&self, leaves: &[usize]) -> bool {
        leaves.iter().all(|leaf| {
            selected_pages(self.md, self.row_group, *leaf, self.ranges, self.rows)
                .is_some_and(|(pages, _)| pages.len() <= 1)
        })
    }
}

/// Share `roots` (the output roots the predicate pass does not give) among `threads`:
/// the largest first, each to the share with the fewest bytes to read so far, counting
/// the predicate pass's bytes to the unit's own thread when spare threads may start
/// early. Shares hold their roots in schema order.
pub(super) fn shares(
    at: &Selected<'_>,
    predicate_leaves: &[usize],
    roots: &[usize],
    threads: usize,
) -> Shares {
    let leaves = leaves_by_root(at.md.file_metadata().schema_descr());
    let leaves_of = |roots: &[usize]| -> Vec<usize> {
        roots
            .iter()
            .flat_map(|r| leaves[*r].iter().copied())
            .collect()
    };
    let early = at.one_page_each(predicate_leaves);
    let mut sized: Vec<(u64, usize)> = roots
        .iter()
        .map(|root| (at.bytes(&leaves[*root]), *root))
        .collect();
    sized.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let split = |pass_bytes: u64| {
        let mut groups = assign(&sized, threads, pass_bytes);
        let own = groups.remove(0);
        let spare: Vec<Share> = groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|roots| {
                let leaves = leaves_of(&roots);
                Share {
                    early: early
                        && at.one_page_each(&leaves)
                        && (predicate_leaves.is_empty() || !at.read_in_part(&leaves)),
                    roots,
                }
            })
            .collect();
        (own, spare)
    };
    let (mut own, mut spare) = split(if early {
        at.pass_bytes(predicate_leaves)
    } else {
        0
    });
    // Spare threads that all wait start with the unit's own thread: no pass to count.
    if early && !spare.iter().any(|s| s.early) {
        (own, spare) = split(0);
    }
    spare.sort_unstable_by(|a, b| a.roots.cmp(&b.roots));
    Shares { own, spare }
}

/// `sized` roots (largest first) in `threads` groups, each to the group with the fewest
/// bytes so far; the first group starts with `first_load` bytes. Groups in schema order.
fn assign(sized: &[(u64, usize)], threads: usize, first_load: u64) -> Vec<Vec<usize>> {
    let mut load = vec![0u64; threads.max(1)];
    load[0] = first_load;
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); load.len()];
    for (bytes, root) in sized {
        let lightest = (0..load.len()).min_by_key(|g| (load[*g], *g)).unwrap_or(0);
        load[lightest] += bytes;
        groups[lightest].push(*root);
    }
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups
}

/// Evaluate the predicate and read the other columns' matching rows, in `shares`.
pub(super) fn read<F: ChunkReader + Clone + Send + 'static>(
    unit: Unit<'_, F>,
    reused: &[usize],
    shares: Shares,
    metrics: &Metrics,
) -> Result<Batches> {
    let Shares { own, spare } = shares;
    let (matched, own_part, spare_parts) = threads::scope(|s| {
        let unit = &unit;
        let spawn = |share: &Share, selection: Option<RowSelection>| {
            let roots = share.roots.clone();
            s.spawn(move || read_rows(unit, &roots, selection.as_ref()))
        };
        let early: Vec<_> = spare
            .iter()
            .filter(|share| share.early)
            .map(|share| spawn(share, unit.selection.clone()))
            .collect();
        let matched = match predicate_pass(unit, reused) {
            Ok(m) => m,
            Err(e) => {
                early.into_iter().for_each(|h| drop(h.join()));
                return Err(e);
            }
        };
        let matching = matched.kept.num_rows() > 0;
        let selection = matching.then(|| matched.selection(unit.selection.as_ref()));
        let waiting: Vec<_> = spare
            .iter()
            .filter(|share| !share.early && matching)
            .map(|share| spawn(share, selection.clone()))
            .collect();
        let own_part =
            (!own.is_empty() && matching).then(|| read_rows(unit, &own, selection.as_ref()));
        let early: Vec<_> = early.into_iter().map(joined).collect();
        let waiting: Vec<_> = waiting.into_iter().map(joined).collect();
        Ok((matched, own_part, (early, waiting)))
    })?;
    let Matched {
        kept,
        mask,
        integer_chunks,
        ..
    } = matched;
    metrics.integer_chunks_decoded.add(integer_chunks);
    let rows = kept.num_rows();
    if rows == 0 {
        let schema = kept.schema();
        return Ok((schema, Box::new(slices(kept, unit.batch_size))));
    }

    let (early, waiting) = spare_parts;
    let mut parts = Vec::with_capacity(early.len() + waiting.len() + 2);
    for part in early {
        // An early share holds every selected row; the mask keeps the matching ones.
        let part = part?;
        if part.num_rows() != mask.len() {
            return Err(mismatch(mask.len(), part.num_rows()).into());
        }
        parts.push(filter_record_batch(&part, &mask)?);
    }
    for part in waiting {
        parts.push(part?);
    }
    parts.extend(own_part.transpose()?);
    parts.push(kept);
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for part in &parts {
        if part.num_rows() != rows {
            return Err(mismatch(rows, part.num_rows()).into());
        }
        fields.extend(part.schema().fields().iter().cloned());
        columns.extend(part.columns().iter().cloned());
    }
    let schema = Arc::new(Schema::new(fields));
    let joined = RecordBatch::try_new(schema.clone(), columns)?;
    Ok((schema, Box::new(slices(joined, unit.batch_size))))
}

/// A spare thread's result; its panic (damaged pages can make a decoder panic) as an
/// error.
fn joined(handle: threads::ScopedJoinHandle<'_, Result<RecordBatch>>) -> Result<RecordBatch> {
    handle.join().unwrap_or_else(|panic| {
        Err(ArrowError::ParquetError(format!("corrupt pages: {}", panic_message(&*panic))).into())
    })
}

/// The `selection` rows (all when `None`) of `roots`, in one batch.
fn read_rows<F: ChunkReader + Clone + 'static>(
    unit: &Unit<'_, F>,
    roots: &[usize],
    selection: Option<&RowSelection>,
) -> Result<RecordBatch> {
    let descr = unit.metadata.metadata().file_metadata().schema_descr_ptr();
    let reader = chunk_pages::reader(
        unit.file.clone(),
        &unit.metadata,
        unit.row_group,
        ProjectionMask::roots(&descr, roots.iter().copied()),
        unit.batch_size,
        selection.cloned(),
        RowSelectionPolicy::default(),
    )?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = reader.collect::<Result<Vec<_>, ArrowError>>()?;
    Ok(concat_batches(&schema, &batches)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatchIterator};
    use arrow_schema::{DataType, Field};
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};

    use super::*;
    use crate::plan::row_ranges::RowRanges;

    /// Six columns of 10,000 rows in one page each; column `c` takes values below
    /// `8^c`, so each compresses to more bytes than the one before.
    fn six_columns(dir: &std::path::Path) -> ParquetMetaData {
        six_columns_in_pages(dir, 20_000, "uncompressed")
    }

    fn six_columns_in_pages(
        dir: &std::path::Path,
        page_rows: usize,
        codec: &str,
    ) -> ParquetMetaData {
        let rows = 10_000i64;
        let fields: Vec<Field> = (0..6)
            .map(|c| Field::new(format!("c{c}"), DataType::Int64, false))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let columns: Vec<ArrayRef> = (0..6u32)
            .map(|c| {
                let m = 8i64.pow(c);
                Arc::new(Int64Array::from_iter_values(
                    (0..rows).map(|i| (i * 7_919 + i * i) % m),
                )) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let path = dir.join(format!("six-{page_rows}-{codec}.parquet"));
        let path = path.to_string_lossy().into_owned();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        let opts = crate::write::WriteOptions {
            page_row_limit: Some(page_rows),
            compression: codec.into(),
            ..Default::default()
        };
        crate::write::write(Box::new(reader), &path, &opts).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&file)
            .unwrap()
    }

    #[test]
    fn shares_balance_bytes_and_hold_every_root_once() {
        let dir = tempfile::tempdir().unwrap();
        let md = six_columns(dir.path());
        let rows = md.row_group(0).num_rows() as u64;
        let all = RowRanges::full(rows);
        let at = Selected {
            md: &md,
            row_group: 0,
            ranges: &all,
            rows,
        };
        let size = |group: &[usize]| {
            at.bytes(&crate::metadata::schema::leaves_of(
                md.file_metadata().schema_descr(),
                group,
            ))
        };

        let roots: Vec<usize> = (0..6).collect();
        let s = shares(&at, &[], &roots, 2);
        assert_eq!(s.spare.len(), 1);
        assert!(s.spare[0].early, "no predicate page to wait for");
        let mut seen = [s.own.clone(), s.spare[0].roots.clone()].concat();
        seen.sort_unstable();
        assert_eq!(seen, roots);
        assert!([&s.own, &s.spare[0].roots]
            .iter()
            .all(|g| g.windows(2).all(|w| w[0] < w[1])));
        // Largest first, each to the lighter share: they differ by at most one column.
        let largest = roots.iter().map(|r| size(&[*r])).max().unwrap();
        let (a, b) = (size(&s.own), size(&s.spare[0].roots));
        assert!(a.abs_diff(b) <= largest, "{a} {b}");

        // The predicate pass counts to its thread's share.
        let s = shares(&at, &[3], &[0, 1, 2, 4, 5], 2);
        assert!(s.spare[0].early, "one page per column");
        let (a, b) = (size(&[3]) + size(&s.own), size(&s.spare[0].roots));
        assert!(a.abs_diff(b) <= size(&[5]), "{a} {b}");
        assert!(size(&s.own) < size(&s.spare[0].roots));
        // A pass larger than the rest leaves its thread nothing else.
        assert!(size(&[5]) > size(&[0, 1, 2, 3, 4]));
        let s = shares(&at, &[5], &[0, 1, 2, 3, 4], 2);
        assert!(s.own.is_empty());
        assert_eq!(s.spare[0].roots, vec![0, 1, 2, 3, 4]);

        let one = shares(&at, &[5], &roots[..1], 4);
        assert_eq!((one.own.len(), one.spare.len()), (0, 1));
        let alone = shares(&at, &[5], &roots, 1);
        assert_eq!((alone.own, alone.spare.len()), (roots.clone(), 0));
        assert!(shares(&at, &[5], &[], 2).spare.is_empty());
    }

    #[test]
    fn a_pass_over_the_first_pages_of_a_sorted_key_counts_little_of_its_dictionary() {
        let n = 60_000i64;
        let batch = RecordBatch::try_from_iter([
            (
                "sorted",
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "random",
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 7_919 % n))),
            ),
        ])
        .unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .set_dictionary_page_size_limit(1 << 20)
            .set_data_page_row_count_limit(1000)
            .set_write_batch_size(1000)
            .build();
        let mut out = Vec::new();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let md = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes::Bytes::from(out))
            .unwrap();
        let rows = n as u64;
        let at = |ranges: &RowRanges, leaf: usize| {
            let at = Selected {
                md: &md,
                row_group: 0,
                ranges,
                rows,
            };
            (at.pass_bytes(&[leaf]), at.bytes(&[leaf]))
        };
        let dictionary = |leaf| {
            let r = dictionary_range(&md, 0, leaf).unwrap();
            r.end - r.start
        };
        let first = RowRanges::from_ranges(std::iter::once(0..1000));
        let (pass, whole) = at(&first, 0);
        assert!(dictionary(0) > 100_000);
        assert_eq!(whole - pass, dictionary(0) - dictionary(0) / 60);
        // Keys out of order, or every page: the whole dictionary.
        let (pass, whole) = at(&first, 1);
        assert_eq!(pass, whole);
        let all = RowRanges::full(rows);
        let (pass, whole) = at(&all, 0);
        assert_eq!(pass, whole);
    }

    #[test]
    fn spare_threads_wait_when_the_predicate_reads_several_pages() {
        let dir = tempfile::tempdir().unwrap();
        let md = six_columns(dir.path());
        let many = six_columns_in_pages(dir.path(), 1_000, "uncompressed");
        let rows = md.row_group(0).num_rows() as u64;
        let early = |md: &ParquetMetaData, ranges: &RowRanges| {
            let at = Selected {
                md,
                row_group: 0,
                ranges,
                rows,
            };
            let s = shares(&at, &[0], &[1, 2, 3], 3);
            assert_eq!(s.spare.len(), 2);
            s.spare.iter().map(|s| s.early).collect::<Vec<_>>()
        };
        let all = RowRanges::full(rows);
        assert_eq!(selected_pages(&md, 0, 0, &all, rows).unwrap().0.len(), 1);
        assert_eq!(early(&md, &all), [true, true]);
        assert_eq!(early(&many, &all), [false, false]);
        let one_page = RowRanges::from_ranges(std::iter::once(1_000..2_000));
        assert_eq!(early(&many, &one_page), [true, true]);
        let two_pages = RowRanges::from_ranges(std::iter::once(1_500..2_500));
        assert_eq!(early(&many, &two_pages), [false, false]);
        // Pages of which only the start up to the matching rows may be decompressed:
        // the matching rows are waited for.
        for codec in ["snappy", "zstd"] {
            let md = six_columns_in_pages(dir.path(), 1_000, codec);
            assert_eq!(early(&md, &one_page), [false, false], "{codec}");
        }
    }
}
