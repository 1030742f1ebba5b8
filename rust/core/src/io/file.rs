//! One version of one data file, local or in an object store, read by byte ranges.
//!
//! Local files use positional reads (`pread`): many threads share a descriptor without a
//! seek position. Objects are read with ranged GETs that name the ETag the plan saw. Both
//! keep the ranges fetched ahead (`prefetch`) in memory, so the footer's tail, the page
//! index, embedded indexes and the pages of a row group arrive in few requests, and every
//! later read inside them is a slice. Every request is counted, so `bytes_read` and
//! `requests` report what storage really served.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::sync::{Arc, RwLock};

use bytes::{Buf, Bytes};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, Result};
use crate::io::coalesce::{coalesce_ranges, coalesce_to};
use crate::io::object::{self, ObjectLocation};
use crate::io::pread;
use crate::io::{FileIdentity, IoStats};

#[derive(Debug, Clone)]
enum Backend {
    Local(Arc<File>),
    Object(Arc<ObjectLocation>),
}

/// An open file whose identity was fixed when it was opened.
#[derive(Debug, Clone)]
pub struct StorageFile {
    backend: Backend,
    identity: Arc<FileIdentity>,
    stats: Arc<IoStats>,
    /// Fetched ranges by start offset, disjoint and sorted.
    buffers: Arc<RwLock<Vec<(u64, Bytes)>>>,
}

/// An open file without its buffers: what a plan keeps so that reading later reads the
/// version it planned, even if the path was renamed over meanwhile (an atomic replace by
/// `add_indexes`, say). A local file keeps its descriptor; an object its identity, every
/// read of which names the planned ETag.
#[derive(Debug, Clone)]
pub struct FileHandle {
    backend: Backend,
    identity: Arc<FileIdentity>,
}

impl FileHandle {
    /// A reader of the planned version, counting into `stats`. A file replaced by rename
    /// since is still read through the handle as it was (its change time moves when it
    /// loses its name, its bytes do not); one written over in place (another size or
    /// modification time) is `FileChanged`: its old bytes are gone.
    pub fn reader(&self, stats: Arc<IoStats>) -> Result<StorageFile> {
        if let Backend::Local(file) = &self.backend {
            let md = file
                .metadata()
                .map_err(|e| Error::io(&self.identity.path, e))?;
            let now = FileIdentity::of_metadata(&self.identity.path, &md);
            let what = if now.size != self.identity.size {
                Some("size")
            } else if now.mtime_ns != self.identity.mtime_ns {
                Some("modification time")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(Error::FileChanged {
                    path: self.identity.path.clone(),
                    what: what.to_string(),
                });
            }
        }
        Ok(StorageFile {
            backend: self.backend.clone(),
            identity: self.identity.clone(),
            stats,
            buffers: Arc::new(RwLock::new(Vec::new())),
        })
    }

    pub fn identity(&self) -> &FileIdentity {
        &self.identity
    }
}

/// Local reads closer than this are merged. A local read costs a system call, not a round
/// trip: a gap larger than a memory page costs more to copy than a second call, and is
/// bytes no reader needs (the column chunks between two a query reads, say).
const LOCAL_GAP: u64 = 4 * 1024;
/// Requests scattered small reads from an object store are merged down to (see
/// `prefetch_with_scattered`), below the requests a scan keeps in flight.
const SCATTERED_REQUESTS: usize = 12;
/// Local footers mostly fit in this many bytes.
const LOCAL_FOOTER_HINT: u64 = 64 * 1024;

impl StorageFile {
    fn with_backend(backend: Backend, identity: FileIdentity, stats: Arc<IoStats>) -> Self {
        StorageFile {
            backend,
            identity: Arc::new(identity),
            stats,
            buffers: Arc::new(RwLock::new(Vec::new())),
        }
    }

    /// Open `path` as it is now. A local file's identity comes from the open descriptor
    /// (not a second `stat` of the path, which could name another file by then); an
    /// object's from one HEAD request.
    pub fn open(path: &str, stats: Arc<IoStats>) -> Result<Self> {
        if object::is_remote(path) {
            let loc = object::locate(path)?;
            let identity = loc.head()?;
            stats.record(0);
            return Ok(Self::with_backend(
                Backend::Object(Arc::new(loc)),
                identity,
                stats,
            ));
        }
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let md = file.metadata().map_err(|e| Error::io(path, e))?;
        if md.is_dir() {
            return Err(Error::invalid_file(
                path,
                "is a directory, not a Parquet file",
            ));
        }
        Ok(Self::with_backend(
            Backend::Local(Arc::new(file)),
            FileIdentity::of_metadata(path, &md),
            stats,
        ))
    }

    /// Open the version of `path` a listing or a plan saw. A local file is opened and
    /// checked against it; an object is not asked at all: every read names the expected
    /// ETag, so a replaced object fails its first read with `FileChanged`.
    pub fn open_expecting(
        path: &str,
        expected: &FileIdentity,
        stats: Arc<IoStats>,
    ) -> Result<Self> {
        if object::is_remote(path) {
            let loc = object::locate(path)?;
            return Ok(Self::with_backend(
                Backend::Object(Arc::new(loc)),
                expected.clone(),
                stats,
            ));
        }
        let file = Self::open(path, stats)?;
        if let Some(what) = file.identity.difference(expected) {
            return Err(Error::FileChanged {
                path: path.to_string(),
                what: what.to_string(),
            });
        }
        Ok(file)
    }

    /// Open a file a listing found. A local file is opened as it is now (planning records
    /// what it read); an object as the listing saw it, which costs no request.
    pub fn open_listed(path: &str, listed: &FileIdentity, stats: Arc<IoStats>) -> Result<Self> {
        if object::is_remote(path) {
            Self::open_expecting(path, listed, stats)
        } else {
            Self::open(path, stats)
        }
    }

    pub fn identity(&self) -> &Arc<FileIdentity> {
        &self.identity
    }

    /// A handle on this version of the file, for reading it again later.
    pub fn handle(&self) -> FileHandle {
        FileHandle {
            backend: self.backend.clone(),
            identity: self.identity.clone(),
        }
    }

    pub fn path(&self) -> &str {
        &self.identity.path
    }

    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }

    pub fn is_remote(&self) -> bool {
        matches!(self.backend, Backend::Object(_))
    }

    /// Ranges closer than this are worth one request.
    pub fn coalesce_gap(&self) -> u64 {
        match &self.backend {
            Backend::Local(_) => LOCAL_GAP,
            Backend::Object(o) => o.store.settings.coalesce_gap,
        }
    }

    /// How much of the end of the file to fetch when looking for the footer.
    pub fn footer_hint(&self) -> u64 {
        match &self.backend {
            Backend::Local(_) => LOCAL_FOOTER_HINT,
            Backend::Object(o) => o.store.settings.footer_hint,
        }
    }

    fn check_bounds(&self, start: u64, length: u64) -> Result<()> {
        match start.checked_add(length) {
            Some(end) if end <= self.identity.size => Ok(()),
            _ => Err(Error::invalid_file(
                self.path(),
                format!(
                    "a read of {length} bytes at offset {start} goes past the end of the file ({} bytes)",
                    self.identity.size
                ),
            )),
        }
    }

    fn buffered(&self, start: u64, length: usize) -> Option<Bytes> {
        let end = start.checked_add(length as u64)?;
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        let idx = buffers.partition_point(|(s, _)| *s <= start);
        buffers[..idx]
            .iter()
            .rev()
            .find(|(s, b)| end <= s + b.len() as u64)
            .map(|(s, b)| b.slice((start - s) as usize..(end - s) as usize))
    }

    /// Whether `range` was fetched already.
    pub fn is_buffered(&self, range: Range<u64>) -> bool {
        self.prefetched(range).is_some()
    }

    /// The bytes of `range` if they were fetched already; never a request.
    pub fn prefetched(&self, range: Range<u64>) -> Option<Bytes> {
        self.buffered(range.start, range.end.checked_sub(range.start)? as usize)
    }

    /// The bytes from `start` to the end of the longest fetched range holding it, if any.
    pub fn buffered_from(&self, start: u64) -> Option<Bytes> {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        let idx = buffers.partition_point(|(s, _)| *s <= start);
        buffers[..idx]
            .iter()
            .filter(|(s, b)| start < s + b.len() as u64)
            .max_by_key(|(s, b)| s + b.len() as u64)
            .map(|(s, b)| b.slice((start - s) as usize..))
    }

    /// Read exactly `length` bytes at `start`, from memory when prefetched. Offsets and
    /// lengths come from metadata that may be damaged or hostile: ranges past the end of
    /// the file are refused before anything is allocated.
    pub fn read_range(&self, start: u64, length: usize) -> Result<Bytes> {
        self.check_bounds(start, length as u64)?;
        if let Some(b) = self.buffered(start, length) {
            return Ok(b);
        }
        let range = start..start + length as u64;
        if length as u64 <= STITCH_MAX {
            // Parts already held (a page's header, read to learn its encoding) are not
            // read again: only the rest is, and the whole is put together, not kept.
            let stitch = self.missing(range.clone());
            if stitch.holds_any() {
                let mut whole = Vec::with_capacity(length);
                for part in &stitch.parts {
                    match part {
                        Part::Held(bytes) => whole.extend_from_slice(bytes),
                        Part::Fetch(r) => whole.extend_from_slice(&self.fetch(r.clone())?),
                    }
                }
                return Ok(Bytes::from(whole));
            }
        }
        self.fetch(range)
    }

    /// One request for `range`, not kept.
    fn fetch(&self, range: Range<u64>) -> Result<Bytes> {
        let length = (range.end - range.start) as usize;
        let bytes = match &self.backend {
            Backend::Local(file) => {
                let buf = pread::read_exact_at(file, range.start, length)
                    .map_err(|e| Error::io(self.path(), e))?;
                Bytes::from(buf)
            }
            Backend::Object(o) => {
                o.get_range(self.identity.etag.as_deref(), range.clone(), &self.stats)?
            }
        };
        self.stats.record_read(self.path(), range);
        Ok(bytes)
    }

    /// Fetch `ranges` (merged across the store's gap) and keep them, so later reads inside
    /// them cost nothing. Object requests run concurrently.
    pub fn prefetch(&self, ranges: Vec<Range<u64>>) -> Result<()> {
        self.prefetch_with_scattered(ranges, Vec::new())
    }

    /// [`Self::prefetch`] of `ranges` and, in the same batch, of `scattered`: small reads
    /// spread through large blocks (an index's header, buckets or bloom rows, page headers),
    /// which merging across the store's gap would turn into reads of most of the block. They
    /// are read exactly from a local file; from an object store merged across the smallest
    /// gaps only down to `SCATTERED_REQUESTS`, so that they stay one round trip.
    pub fn prefetch_with_scattered(
        &self,
        ranges: Vec<Range<u64>>,
        scattered: Vec<Range<u64>>,
    ) -> Result<()> {
        let requests = match &self.backend {
            Backend::Local(_) => usize::MAX,
            Backend::Object(_) => SCATTERED_REQUESTS,
        };
        let mut merged = coalesce_ranges(ranges, self.coalesce_gap());
        merged.extend(coalesce_to(scattered, requests, self.coalesce_gap()));
        let mut todo = Vec::new();
        let mut stitches = Vec::new();
        for r in coalesce_ranges(merged, 0) {
            self.check_bounds(r.start, r.end - r.start)?;
            if self.buffered(r.start, (r.end - r.start) as usize).is_none() {
                if r.end - r.start > STITCH_MAX {
                    todo.push(r);
                    continue;
                }
                let stitch = self.missing(r);
                todo.extend(stitch.fetched().cloned());
                if stitch.holds_any() {
                    stitches.push(stitch);
                }
            }
        }
        let mut fetched = self.fetch_ranges(todo)?;
        // A range read in part is kept whole, in one piece, as readers ask for it; its
        // fetched parts are not kept beside it.
        for stitch in stitches {
            let length = (stitch.range.end - stitch.range.start) as usize;
            let mut whole = Vec::with_capacity(length);
            for part in &stitch.parts {
                match part {
                    Part::Held(bytes) => whole.extend_from_slice(bytes),
                    Part::Fetch(r) => {
                        if let Some(i) = fetched.iter().position(|(start, _)| *start == r.start) {
                            whole.extend_from_slice(&fetched.swap_remove(i).1);
                        }
                    }
                }
            }
            // Kept only whole: a piece missing would shift every byte after it.
            if whole.len() == length {
                fetched.push((stitch.range.start, Bytes::from(whole)));
            }
        }
        self.keep(fetched);
        Ok(())
    }

    /// What of `range` is held and what is still to read, in order. From a local file
    /// every held piece is used (a dictionary page read ahead of its chunk, say); from an
    /// object store only those at its start and its end (a page index reaching into the
    /// footer's tail read), since a hole between two would be a request of its own.
    fn missing(&self, range: Range<u64>) -> Stitch {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        let mut parts = Vec::new();
        let mut at = range.start;
        while at < range.end {
            let held = buffers
                .iter()
                .filter(|(s, b)| *s <= at && at < s + b.len() as u64)
                .max_by_key(|(s, b)| s + b.len() as u64);
            match held {
                Some((s, b)) => {
                    let end = (s + b.len() as u64).min(range.end);
                    parts.push(Part::Held(b.slice((at - s) as usize..(end - s) as usize)));
                    at = end;
                }
                None => {
                    let next = buffers
                        .iter()
                        .map(|(s, _)| *s)
                        .filter(|s| at < *s && *s < range.end)
                        .min()
                        .unwrap_or(range.end);
                    parts.push(Part::Fetch(at..next));
                    at = next;
                }
            }
        }
        drop(buffers);
        if self.is_remote() {
            parts = with_one_hole(parts);
        }
        Stitch { range, parts }
    }

    /// Fetch `todo`: each range's start and bytes.
    fn fetch_ranges(&self, mut todo: Vec<Range<u64>>) -> Result<Vec<(u64, Bytes)>> {
        if todo.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Local(_) => todo
                .into_iter()
                .map(|r| Ok((r.start, self.fetch(r)?)))
                .collect(),
            Backend::Object(o) => {
                let etag = self.identity.etag.as_deref();
                let mut got = o.take_cached(etag, &mut todo);
                let fetched = o.get_ranges(etag, &todo, &self.stats)?;
                for r in &todo {
                    self.stats.record_read(self.path(), r.clone());
                }
                o.remember(etag, &todo, &fetched);
                got.extend(todo.iter().map(|r| r.start).zip(fetched));
                Ok(got)
            }
        }
    }

    /// Keep fetched ranges (they may overlap: both hold the same version's bytes). A
    /// range already held whole is not kept twice, so a file read again and again (its
    /// footer, by a long-lived handle) holds its bytes once.
    pub fn keep(&self, fetched: impl IntoIterator<Item = (u64, Bytes)>) {
        let mut buffers = self.buffers.write().unwrap_or_else(|e| e.into_inner());
        let before = buffers.len();
        for (start, bytes) in fetched {
            let end = start + bytes.len() as u64;
            let held = buffers[..before]
                .iter()
                .any(|(s, b)| *s <= start && s + b.len() as u64 >= end);
            if !held {
                buffers.push((start, bytes));
            }
        }
        if buffers.len() > before {
            buffers.sort_by_key(|(s, _)| *s);
        }
    }
}

/// The longest range a prefetch completes from bytes already held instead of reading it
/// whole: metadata (a page index, bloom filters) and a few pages. A longer one is read
/// whole, since its copy would cost more than the bytes it saves.
const STITCH_MAX: u64 = 8 << 20;

/// A range to hold whole: the pieces of it already held and those still to read.
struct Stitch {
    range: Range<u64>,
    parts: Vec<Part>,
}

enum Part {
    Held(Bytes),
    Fetch(Range<u64>),
}

impl Stitch {
    fn fetched(&self) -> impl Iterator<Item = &Range<u64>> {
        self.parts.iter().filter_map(|p| match p {
            Part::Fetch(r) => Some(r),
            Part::Held(_) => None,
        })
    }

    fn holds_any(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Held(_)))
    }
}

/// `parts` with everything from the first piece to read to the last one read as one.
fn with_one_hole(parts: Vec<Part>) -> Vec<Part> {
    let is_fetch = |p: &Part| matches!(p, Part::Fetch(_));
    let (Some(first), Some(last)) = (
        parts.iter().position(is_fetch),
        parts.iter().rposition(is_fetch),
    ) else {
        return parts;
    };
    let span = |p: &Part| match p {
        Part::Fetch(r) => r.clone(),
        Part::Held(_) => 0..0,
    };
    let hole = span(&parts[first]).start..span(&parts[last]).end;
    let mut parts = parts;
    let tail = parts.split_off(last + 1);
    parts.truncate(first);
    parts.push(Part::Fetch(hole));
    parts.extend(tail);
    parts
}

impl Length for StorageFile {
    fn len(&self) -> u64 {
        self.identity.size
    }
}

impl ChunkReader for StorageFile {
    type T = SequentialRead;

    /// Readers stream page headers a few bytes at a time (files without an OffsetIndex):
    /// inside a prefetched range they read memory; elsewhere each refill is one request.
    fn get_read(&self, start: u64) -> parquet::errors::Result<SequentialRead> {
        Ok(SequentialRead {
            file: self.clone(),
            pos: start,
            buf: self.buffered_from(start).unwrap_or_default(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read_range(start, length).map_err(ParquetError::from)
    }
}

/// A `Read` at a position of its own, served from prefetched bytes when it can be.
pub struct SequentialRead {
    file: StorageFile,
    pos: u64,
    buf: Bytes,
}

/// Bytes one refill of a sequential read fetches: readers stream page headers a few bytes
/// at a time, and each refill is a system call or a request.
const LOCAL_REFILL: u64 = 64 * 1024;
const OBJECT_REFILL: u64 = 256 * 1024;

impl Read for SequentialRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            let remaining = self.file.identity.size.saturating_sub(self.pos);
            if remaining == 0 || out.is_empty() {
                return Ok(0);
            }
            let refill = match &self.file.backend {
                Backend::Local(_) => LOCAL_REFILL,
                Backend::Object(_) => OBJECT_REFILL,
            };
            let want = remaining.min((out.len() as u64).max(refill));
            self.buf = self
                .file
                .fetch(self.pos..self.pos + want)
                .map_err(std::io::Error::other)?;
        }
        let n = out.len().min(self.buf.len());
        self.buf.copy_to_slice(&mut out[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

/// A hidden name beside `target`, so readers of the directory never see a partial file;
/// unique per call, so two threads writing one target never share a temporary file.
pub(crate) fn temp_path(target: &std::path::Path) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out.parquet".into());
    target.with_file_name(format!(".{name}.{}-{n}.pqindex-tmp", std::process::id()))
}

impl FileIdentity {
    /// The identity of `path` now: a `stat`, or a HEAD request for an object.
    pub fn stat(path: &str) -> Result<Self> {
        if object::is_remote(path) {
            return object::locate(path)?.head();
        }
        let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(Self::of_metadata(path, &md))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_again_are_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let file = StorageFile::open(path.to_str().unwrap(), Arc::new(IoStats::default())).unwrap();
        let held = || file.buffers.read().unwrap().len();
        for _ in 0..3 {
            let tail = file.read_range(1024, 3072).unwrap();
            file.keep([(1024, tail)]);
        }
        assert_eq!(held(), 1);
        // A range inside a kept one adds nothing; one reaching past it is kept.
        file.keep([(2048, Bytes::from(vec![7u8; 1024]))]);
        assert_eq!(held(), 1);
        file.keep([(0, Bytes::from(vec![7u8; 2048]))]);
        assert_eq!(held(), 2);
        assert_eq!(file.prefetched(0..4096), None);
        assert!(file.prefetched(1500..4000).is_some());
    }

    /// A local file of 10,000 numbered bytes, its bytes, and the stats of its reads (the
    /// directory lives as long as the file is used).
    fn numbered_file() -> (tempfile::TempDir, Vec<u8>, Arc<IoStats>, StorageFile) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let stats = Arc::new(IoStats::default());
        let file = StorageFile::open(path.to_str().unwrap(), stats.clone()).unwrap();
        (dir, data, stats, file)
    }

    #[test]
    fn a_range_held_in_part_fetches_only_the_rest_and_is_kept_whole() {
        let (_dir, data, stats, file) = numbered_file();
        // A footer's tail read, then a page index reaching into it.
        file.keep([(9_000, file.read_range(9_000, 1_000).unwrap())]);
        file.prefetch(std::iter::once(6_000..9_500).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 1_000 + 3_000);
        assert_eq!(file.prefetched(6_000..9_500).unwrap(), &data[6_000..9_500]);
        // Held at its start: only the end is read.
        file.prefetch(std::iter::once(8_000..10_000).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 4_000);
        file.prefetch(std::iter::once(5_000..9_800).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 5_000);
        assert_eq!(file.prefetched(5_000..9_800).unwrap(), &data[5_000..9_800]);
        // Held at both ends, with a gap between.
        file.keep([(1_000, file.read_range(1_000, 500).unwrap())]);
        file.prefetch(std::iter::once(1_200..5_100).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 5_500 + 3_500);
        assert_eq!(file.prefetched(1_200..5_100).unwrap(), &data[1_200..5_100]);
    }

    #[test]
    fn a_piece_held_inside_a_local_range_is_not_read_again() {
        let (_dir, data, stats, file) = numbered_file();
        // A dictionary page read ahead, then the chunks around it in one range.
        file.prefetch(std::iter::once(2_000..2_500).collect())
            .unwrap();
        file.prefetch(std::iter::once(6_000..6_100).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 600);
        file.prefetch(std::iter::once(1_000..8_000).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 7_000);
        assert_eq!(file.prefetched(1_000..8_000).unwrap(), &data[1_000..8_000]);
    }

    #[test]
    fn a_read_past_a_held_header_reads_only_the_rest() {
        let (_dir, data, stats, file) = numbered_file();
        // A page's first bytes, read to learn its encoding, then the whole page.
        file.prefetch_with_scattered(Vec::new(), std::iter::once(3_000..3_100).collect())
            .unwrap();
        assert_eq!(stats.bytes(), 100);
        assert_eq!(file.read_range(3_000, 2_000).unwrap(), &data[3_000..5_000]);
        assert_eq!(stats.bytes(), 2_000);
        // The whole is not kept: read again, it is read again (but not its header).
        assert_eq!(file.read_range(3_050, 1_000).unwrap(), &data[3_050..4_050]);
        assert_eq!(stats.bytes(), 2_950);
        // Nothing held at its start: one read of it all.
        assert_eq!(file.read_range(6_000, 500).unwrap(), &data[6_000..6_500]);
        assert_eq!(stats.bytes(), 3_450);
    }

    #[test]
    fn an_object_range_has_one_hole_between_its_held_ends() {
        let parts = vec![
            Part::Held(Bytes::from_static(b"ab")),
            Part::Fetch(2..5),
            Part::Held(Bytes::from_static(b"cd")),
            Part::Fetch(7..9),
            Part::Held(Bytes::from_static(b"e")),
        ];
        let shape: Vec<_> = with_one_hole(parts)
            .iter()
            .map(|p| match p {
                Part::Held(b) => format!("held {}", b.len()),
                Part::Fetch(r) => format!("fetch {r:?}"),
            })
            .collect();
        assert_eq!(shape, ["held 2", "fetch 2..9", "held 1"]);
    }
}
