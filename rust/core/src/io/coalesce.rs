//! Fetch many small byte ranges as few reads: ranges closer than a gap are merged, read
//! once, and served to the page reader as zero-copy slices.

use std::ops::Range;

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::Result;
use crate::io::local::{LocalFile, PositionalRead};

/// Merge `ranges` whose gaps are at most `max_gap` bytes; the result is sorted and disjoint.
pub fn coalesce_ranges(mut ranges: Vec<Range<u64>>, max_gap: u64) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(max_gap) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

/// A file with some ranges already in memory. Reads inside a prefetched range are slices of
/// it; anything else goes to the file (and is counted there).
#[derive(Clone)]
pub struct PrefetchedFile {
    file: LocalFile,
    buffers: Vec<(u64, Bytes)>,
}

impl PrefetchedFile {
    pub fn new(file: LocalFile) -> Self {
        PrefetchedFile {
            file,
            buffers: Vec::new(),
        }
    }

    /// Fetch `ranges`, merged across gaps of at most `max_gap` bytes.
    pub fn prefetch(&mut self, ranges: Vec<Range<u64>>, max_gap: u64) -> Result<()> {
        for r in coalesce_ranges(ranges, max_gap) {
            if self.find(r.start, (r.end - r.start) as usize).is_some() {
                continue;
            }
            let bytes = self.file.read_range(r.start, (r.end - r.start) as usize)?;
            self.buffers.push((r.start, bytes));
        }
        self.buffers.sort_by_key(|(start, _)| *start);
        Ok(())
    }

    fn find(&self, start: u64, length: usize) -> Option<Bytes> {
        let idx = self.buffers.partition_point(|(s, _)| *s <= start);
        let (buf_start, buf) = self.buffers.get(idx.checked_sub(1)?)?;
        let offset = (start - buf_start) as usize;
        let end = offset.checked_add(length)?;
        (end <= buf.len()).then(|| buf.slice(offset..end))
    }
}

impl Length for PrefetchedFile {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

/// A `Read` from a prefetched buffer when the position is inside one, else from the file.
pub enum PrefetchedRead {
    Memory(bytes::buf::Reader<Bytes>),
    File(PositionalRead),
}

impl std::io::Read for PrefetchedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            PrefetchedRead::Memory(r) => r.read(buf),
            PrefetchedRead::File(r) => r.read(buf),
        }
    }
}

impl ChunkReader for PrefetchedFile {
    type T = PrefetchedRead;

    /// Readers stream page headers a few bytes at a time (files without an OffsetIndex):
    /// serving them from memory avoids a system call per header field.
    fn get_read(&self, start: u64) -> parquet::errors::Result<PrefetchedRead> {
        let idx = self.buffers.partition_point(|(s, _)| *s <= start);
        if let Some((buf_start, buf)) = idx.checked_sub(1).and_then(|i| self.buffers.get(i)) {
            let offset = (start - buf_start) as usize;
            if offset < buf.len() {
                use bytes::Buf;
                return Ok(PrefetchedRead::Memory(buf.slice(offset..).reader()));
            }
        }
        Ok(PrefetchedRead::File(self.file.get_read(start)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self.find(start, length) {
            Some(b) => Ok(b),
            None => self
                .file
                .read_range(start, length)
                .map_err(ParquetError::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_across_small_gaps_only() {
        let got = coalesce_ranges(vec![10..20, 0..5, 22..30, 100..110, 5..6], 2);
        assert_eq!(got, vec![0..6, 10..30, 100..110]);
    }

    #[test]
    fn drops_empty_and_merges_overlaps() {
        assert_eq!(coalesce_ranges(vec![5..5, 0..10, 3..4], 0), vec![0..10]);
        assert!(coalesce_ranges(vec![], 10).is_empty());
    }
}
