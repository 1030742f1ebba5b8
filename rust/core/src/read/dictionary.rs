//! Fetching a unit's selected pages with only the dictionary pages they use.
//!
//! A column chunk's dictionary page comes before all its data pages, often megabytes
//! before the one page a lookup selects, so on an object store it is a request of its
//! own. Writers fall back to plain encoding when a dictionary grows too large (a sorted
//! key of mostly distinct values does so early), so the selected pages often do not
//! use it. Each selected page's header says whether it does; when none do, the reader is
//! given the chunk without its dictionary and never asks for it.
//!
//! The footer's page encoding statistics say which encodings the chunk's data pages use,
//! but not where: they decide only whether the dictionary is fetched along with the data
//! pages (it is needed) or after their headers were read (it may not be). A large
//! dictionary of a local file whose few selected pages use only some of its entries is
//! not fetched here at all: the chunk's reader fetches it only as far as they need
//! ([`crate::read::decode::chunk_pages`]).

use std::ops::Range;
use std::sync::Arc;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::Encoding;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataBuilder,
};

use crate::error::Result;
use crate::io::StorageFile;
use crate::metadata::dictionary_page::only_dictionary_pages;
use crate::metadata::page_header::needs_dictionary;
use crate::metadata::page_index::{dictionary_range, offset_index, page_boundaries};
use crate::plan::RowRanges;
use crate::read::decode::chunk_pages::dictionary_in_part;
use crate::read::shared_pages::SharedPages;

/// Fetch the pages of `leaves` in row group `rg` that hold `selected` rows, each
/// chunk's dictionary page only where a selected page uses it. When the read is one
/// piece of a unit, what every piece reads alike comes through `shared`. Returns the
/// leaves whose dictionary pages the read can skip.
pub(crate) fn fetch_selected_pages(
    file: &StorageFile,
    md: &ParquetMetaData,
    rg: usize,
    leaves: &[usize],
    selected: &RowRanges,
    rows: u64,
    shared: Option<&SharedPages>,
) -> Result<Vec<usize>> {
    struct Undecided {
        leaf: usize,
        dictionary: Range<u64>,
        pages: Vec<Range<u64>>,
        /// Fetched after the pages' headers, where one of them uses it.
        late: bool,
    }
    let mut ranges = Vec::new();
    // Ranges every piece of a unit reads alike: dictionary pages, and whole chunks where
    // there is no offset index to select pages by.
    let mut alike = Vec::new();
    let mut undecided = Vec::new();
    for &leaf in leaves {
        let chunk = md.row_group(rg).column(leaf);
        let Some((pages, first_selected)) = selected_pages(md, rg, leaf, selected, rows) else {
            let (start, len) = chunk.byte_range();
            alike.push(start..start + len);
            continue;
        };
        ranges.extend(pages.iter().cloned());
        if let Some(dictionary) = dictionary_range(md, rg, leaf) {
            // A large dictionary of a local file that the reader fetches only as far as
            // the few selected pages use it is not fetched here. A piece of a unit
            // fetches it whole, once for all pieces.
            let of = offset_index(md, rg, leaf).map_or(0, |o| o.page_locations().len());
            let span = dictionary.end.saturating_sub(dictionary.start);
            let in_part = !file.is_remote()
                && shared.is_none()
                && dictionary_in_part(chunk, pages.len(), of, span);
            let fetched = !in_part && fetch_with_pages(chunk, first_selected);
            if fetched {
                alike.push(dictionary.clone());
            }
            undecided.push(Undecided {
                leaf,
                dictionary,
                pages,
                late: !fetched && !in_part,
            });
        }
    }
    match shared {
        Some(shared) => shared.prefetch(file, alike)?,
        None => ranges.extend(alike),
    }
    file.prefetch(ranges)?;

    let mut late = Vec::new();
    let mut skipped = Vec::new();
    for u in undecided {
        let chunk = md.row_group(rg).column(u.leaf);
        let used = only_dictionary_pages(chunk)
            || u.pages.iter().any(|p| match file.prefetched(p.clone()) {
                // A header that cannot be read keeps the dictionary: always safe.
                Some(bytes) => needs_dictionary(&bytes).unwrap_or(true),
                None => true,
            });
        if !used {
            skipped.push(u.leaf);
        } else if u.late {
            late.push(u.dictionary);
        }
    }
    match shared {
        Some(shared) => shared.prefetch(file, late)?,
        None => file.prefetch(late)?,
    }
    Ok(skipped)
}

/// Bytes read from the start of a page to find its encoding in its header (a few dozen
/// bytes, plus the page's statistics when the writer put them there).
const HEADER_PEEK: u64 = 1024;
/// Selections of more pages than this keep the dictionary: it is a small part of the read.
const MAX_PEEKS: usize = 16;

/// Leaves among `leaves`, whose pages are read later, whose dictionary page no page
/// holding `selected` rows uses, found from the first bytes of those pages. Only chunks
/// whose encoding statistics leave it open, and selections of a few pages, are looked at;
/// a header that cannot be read keeps the dictionary.
pub(crate) fn unused_dictionaries(
    file: &StorageFile,
    md: &ParquetMetaData,
    rg: usize,
    leaves: &[usize],
    selected: &RowRanges,
    rows: u64,
) -> Result<Vec<usize>> {
    let mut open = Vec::new();
    for &leaf in leaves {
        let chunk = md.row_group(rg).column(leaf);
        let Some((pages, first_selected)) = selected_pages(md, rg, leaf, selected, rows) else {
            continue;
        };
        if pages.len() > MAX_PEEKS
            || dictionary_range(md, rg, leaf).is_none()
            || chunk.page_encoding_stats_mask().is_none()
            || fetch_with_pages(chunk, first_selected)
        {
            continue;
        }
        let heads: Vec<Range<u64>> = pages
            .iter()
            .map(|p| p.start..p.end.min(p.start + HEADER_PEEK))
            .collect();
        open.push((leaf, heads));
    }
    let heads = open.iter().flat_map(|(_, h)| h.iter().cloned()).collect();
    file.prefetch_with_scattered(Vec::new(), heads)?;
    Ok(open
        .into_iter()
        .filter(|(_, heads)| {
            heads.iter().all(|h| {
                file.prefetched(h.clone())
                    .is_some_and(|b| needs_dictionary(&b) == Ok(false))
            })
        })
        .map(|(leaf, _)| leaf)
        .collect())
}

/// Byte ranges of the pages of `leaf` holding `selected` rows, and whether the chunk's
/// first data page is among them; `None` where there is no offset index.
pub(crate) fn selected_pages(
    md: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    selected: &RowRanges,
    rows: u64,
) -> Option<(Vec<Range<u64>>, bool)> {
    let oi = offset_index(md, rg, leaf)?;
    let locs = oi.page_locations();
    if locs.is_empty() {
        return None;
    }
    let bounds = page_boundaries(oi, rows);
    let mut out = Vec::new();
    let mut first_selected = false;
    for (i, loc) in locs.iter().enumerate() {
        if selected.overlaps(&(bounds[i]..bounds[i + 1].max(bounds[i]))) {
            let s = loc.offset.max(0) as u64;
            out.push(s..s + loc.compressed_page_size.max(0) as u64);
            first_selected |= i == 0;
        }
    }
    Some((out, first_selected))
}

/// Whether to fetch the dictionary page with the data pages rather than wait for their
/// headers. Without encoding statistics it is fetched: a second round trip costs more
/// than the bytes. With them, it waits when some data pages are plain and the first data
/// page (dictionary encoded, if any is) is not selected.
fn fetch_with_pages(chunk: &ColumnChunkMetaData, first_page_selected: bool) -> bool {
    let Some(mask) = chunk.page_encoding_stats_mask() else {
        return true;
    };
    let dictionary =
        mask.is_set(Encoding::PLAIN_DICTIONARY) || mask.is_set(Encoding::RLE_DICTIONARY);
    dictionary && (first_page_selected || only_dictionary_pages(chunk))
}

/// Reader metadata holding only row group `rg`, in which the chunks of `leaves` have no
/// dictionary page (they start at their first data page), for a read that decodes only
/// plain pages of those chunks. The reader then reads row group 0 of it, in the types of
/// `reader` (the file's reader metadata).
pub(crate) fn without_dictionaries(
    reader: &ArrowReaderMetadata,
    rg: usize,
    leaves: &[usize],
) -> Result<ArrowReaderMetadata> {
    let md = reader.metadata();
    let row_group = md.row_group(rg);
    let mut columns = Vec::with_capacity(row_group.num_columns());
    for (leaf, chunk) in row_group.columns().iter().enumerate() {
        let dictionary = leaves
            .contains(&leaf)
            .then(|| dictionary_range(md, rg, leaf))
            .flatten();
        match dictionary {
            Some(dictionary) => {
                let (_, len) = chunk.byte_range();
                let skipped = dictionary.end - dictionary.start;
                columns.push(
                    chunk
                        .clone()
                        .into_builder()
                        .set_dictionary_page_offset(None)
                        .set_data_page_offset(dictionary.end as i64)
                        .set_total_compressed_size(len.saturating_sub(skipped) as i64)
                        .build()?,
                );
            }
            None => columns.push(chunk.clone()),
        }
    }
    let row_group = row_group
        .clone()
        .into_builder()
        .set_column_metadata(columns)
        .build()?;
    let one = ParquetMetaDataBuilder::new(md.file_metadata().clone())
        .set_row_groups(vec![row_group])
        .set_column_index(md.column_index().map(|ci| vec![ci[rg].clone()]))
        .set_offset_index(md.offset_index().map(|oi| vec![oi[rg].clone()]))
        .build();
    let options = ArrowReaderOptions::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .with_schema(reader.schema().clone());
    Ok(ArrowReaderMetadata::try_new(Arc::new(one), options)?)
}
