//! The scan's output stream: units are read on a pool of threads, and their batches reach
//! the consumer in plan order.
//!
//! Each unit has its own channel, so a worker reading a later unit never waits for the
//! consumer to reach it while memory allows. The read-ahead budget ([`read_ahead`], or the
//! scan's own) keeps memory bounded instead: a worker starts a unit only within a window
//! of units ahead of the consumer, and counts against the budget what the unit will hold
//! while it is read (its fetched pages and a decoded batch, estimated from the footer)
//! and every batch it sends until the consumer takes it. A unit ahead of the consumer
//! waits for room; the unit the consumer is reading starts at once and may always send
//! a batch when the consumer has taken its last one, so the stream always moves, and
//! memory stays within the budget plus what the consumer's own unit holds.
//!
//! The last units are first cut in pieces ([`crate::read::split`]) so the threads finish
//! together; below, a unit is such a piece.

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use crate::error::{panic_message, Error};
use crate::io::IoStats;
use crate::plan::{Metrics, OutputShape, ScanUnit};
use crate::read::split::{balance, Piece};
use crate::read::{memory_estimate, read_unit};
use crate::threads;

/// The read-ahead of a stream whose scan names none, until [`set_read_ahead`] changes it.
/// With the consumer's own unit, the batch it holds and what each thread's allocator
/// keeps, a `SELECT *` of TPC-H lineitem in row groups of a million rows stays within
/// 512 MiB on up to 8 threads (`docs/reliability-memory.md`).
pub const DEFAULT_READ_AHEAD: usize = 256 << 20;

/// Not set yet: the first read takes `PQINDEX_READ_AHEAD` or the default.
const UNSET: usize = usize::MAX;

static READ_AHEAD: AtomicUsize = AtomicUsize::new(UNSET);

/// The read-ahead budget, in bytes, of streams whose scan names none: the last
/// [`set_read_ahead`], else the environment's `PQINDEX_READ_AHEAD` (how Spark's Python
/// workers, which no driver code reaches, are given one), else [`DEFAULT_READ_AHEAD`].
pub fn read_ahead() -> usize {
    match READ_AHEAD.load(Ordering::Relaxed) {
        UNSET => {
            let from_env = std::env::var("PQINDEX_READ_AHEAD")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|v| *v != UNSET)
                .unwrap_or(DEFAULT_READ_AHEAD);
            match READ_AHEAD.compare_exchange(UNSET, from_env, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => from_env,
                Err(set) => set,
            }
        }
        set => set,
    }
}

/// Set the read-ahead budget of streams started from now on whose scan names none.
pub fn set_read_ahead(bytes: usize) {
    READ_AHEAD.store(bytes.min(UNSET - 1), Ordering::Relaxed);
}

/// A decoded batch with the bytes it counts against the read-ahead budget.
struct Buffered {
    batch: RecordBatch,
    bytes: usize,
}

/// What a worker sends down a unit's channel. A unit ends with `End` or an error: a
/// channel that closes without either lost its worker, and the stream says so rather
/// than leave the unit's rows out.
enum Message {
    Batch(Buffered),
    Failed(Error),
    End,
}

/// The sending end of one unit's channel, taken by the worker that reads the unit.
type UnitSender = Mutex<Option<Sender<Message>>>;

/// Scan results as an Arrow record batch reader.
pub struct ScanStream {
    schema: SchemaRef,
    /// Rows still to return under a LIMIT; `None` for all of them.
    remaining: Option<u64>,
    /// Each unit's channel, with the path of its file.
    receivers: VecDeque<(Receiver<Message>, String)>,
    shared: Arc<StreamShared>,
    started: Option<Box<dyn FnOnce() + Send>>,
    /// Batches computed whole before the first is returned (a top-k read), and what
    /// computes them, run when the stream is first read.
    ready: VecDeque<RecordBatch>,
    deferred: Option<Deferred>,
}

/// A stream's batches computed on its first read.
pub(crate) type Deferred = Box<dyn FnOnce() -> crate::error::Result<Vec<RecordBatch>> + Send>;

struct Progress {
    /// Index of the unit the consumer is reading.
    consumer: usize,
    /// Bytes counted against the budget: the estimates of units being read, and batches
    /// sent and not yet received.
    held: usize,
    /// Per unit, bytes of its batches sent and not yet received.
    waiting: HashMap<usize, usize>,
    /// Per unit being read, the bytes its read holds (counted in `held`).
    reading: HashMap<usize, usize>,
}

impl Progress {
    /// Bytes held for units ahead of the consumer: the consumer's own read is not read
    /// ahead, and may start whatever its size.
    fn ahead(&self) -> usize {
        let own = self.reading.get(&self.consumer).copied().unwrap_or(0);
        self.held.saturating_sub(own)
    }
}

struct StreamShared {
    progress: Mutex<Progress>,
    /// The read-ahead budget, in bytes.
    budget: usize,
    /// The consumer keeps every batch (`to_arrow`): a batch sent ahead of it is the
    /// result's own memory, not read-ahead, so only the units' reads count.
    keep_all: bool,
    moved: Condvar,
    cancel: AtomicBool,
}

impl StreamShared {
    fn new(budget: usize, keep_all: bool) -> Self {
        StreamShared {
            keep_all,
            progress: Mutex::new(Progress {
                consumer: 0,
                held: 0,
                waiting: HashMap::new(),
                reading: HashMap::new(),
            }),
            budget,
            moved: Condvar::new(),
            cancel: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn stop(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _guard = self.lock();
        self.moved.notify_all();
    }

    /// Wait until unit `unit` may start: within `window` units of the consumer, and, for a
    /// unit ahead of it, with room for the `bytes` it will hold while read beside what
    /// other units ahead hold. Counts them.
    fn start_unit(&self, unit: usize, window: usize, bytes: usize) {
        let mut p = self.lock();
        while !self.cancelled()
            && (unit >= p.consumer + window
                || (unit != p.consumer && p.ahead() + bytes > self.budget))
        {
            p = self.moved.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        p.held += bytes;
        p.reading.insert(unit, bytes);
    }

    /// Wait until a batch of `bytes` of unit `unit` may be sent, and count it: like a
    /// unit's start, against what is held beside the consumer's own read (counting that
    /// too would stop a unit ahead at its first batch whenever the consumer's row group
    /// is large, and read the two one after the other). The consumer's unit sends without
    /// room when the consumer has taken all it sent.
    fn reserve(&self, unit: usize, bytes: usize) {
        if self.keep_all {
            return;
        }
        let mut p = self.lock();
        while !self.cancelled() && p.ahead() + bytes > self.budget {
            let drained = p.waiting.get(&unit).is_none_or(|w| *w == 0);
            if unit == p.consumer && drained {
                break;
            }
            p = self.moved.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        p.held += bytes;
        *p.waiting.entry(unit).or_default() += bytes;
    }

    /// The consumer took a batch of `bytes`.
    fn received(&self, bytes: usize) {
        if self.keep_all {
            return;
        }
        let mut p = self.lock();
        p.held = p.held.saturating_sub(bytes);
        let consumer = p.consumer;
        if let Some(w) = p.waiting.get_mut(&consumer) {
            *w = w.saturating_sub(bytes);
        }
        self.moved.notify_all();
    }

    /// Unit `unit`'s read ended: what it held while read is free.
    fn release(&self, unit: usize) {
        let mut p = self.lock();
        let bytes = p.reading.remove(&unit).unwrap_or(0);
        p.held = p.held.saturating_sub(bytes);
        self.moved.notify_all();
    }

    fn advance(&self) {
        let mut p = self.lock();
        let done = p.consumer;
        p.waiting.remove(&done);
        p.consumer += 1;
        self.moved.notify_all();
    }
}

/// What a unit holds while read, released when its worker is done with it (whether it
/// finished, failed or panicked).
struct Held<'a> {
    shared: &'a StreamShared,
    unit: usize,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.shared.release(self.unit);
    }
}

impl ScanStream {
    pub(crate) fn start(
        units: Vec<ScanUnit>,
        shape: OutputShape,
        io: Arc<IoStats>,
        read: Arc<Metrics>,
        threads: usize,
        budget: usize,
        keep_all: bool,
    ) -> Self {
        let pieces = balance(units, threads, &shape.roots());
        Self::start_pieces(pieces, shape, io, read, threads, budget, keep_all, None)
    }

    /// The stream of a LIMIT read: `units` (the pieces [`crate::query::limit`] cut) read
    /// one after the other, each with `threads` threads, until `limit` rows are out.
    pub(crate) fn start_limited(
        units: Vec<ScanUnit>,
        shape: OutputShape,
        io: Arc<IoStats>,
        read: Arc<Metrics>,
        threads: usize,
        budget: usize,
        limit: u64,
    ) -> Self {
        let pieces = units
            .into_iter()
            .map(|unit| Piece {
                unit,
                completes: true,
                threads,
                shared: None,
            })
            .collect();
        Self::start_pieces(pieces, shape, io, read, 1, budget, false, Some(limit))
    }

    #[allow(clippy::too_many_arguments)]
    fn start_pieces(
        units: Vec<Piece>,
        shape: OutputShape,
        io: Arc<IoStats>,
        read: Arc<Metrics>,
        threads: usize,
        budget: usize,
        keep_all: bool,
        limit: Option<u64>,
    ) -> Self {
        let n = units.len();
        let (senders, receivers): (Vec<Sender<Message>>, VecDeque<_>) = units
            .iter()
            .map(|piece| {
                let (tx, rx) = channel();
                (tx, (rx, piece.unit.file.path.clone()))
            })
            .unzip();
        let shared = Arc::new(StreamShared::new(budget, keep_all));
        let schema = shape.schema.clone();
        let worker_shared = shared.clone();
        let started = move || {
            let units = Arc::new(units);
            let senders: Arc<Vec<UnitSender>> =
                Arc::new(senders.into_iter().map(|s| Mutex::new(Some(s))).collect());
            let next = Arc::new(AtomicUsize::new(0));
            let window = threads * 2 + 2;
            for _ in 0..threads.min(n).max(1) {
                let (units, senders, next, shared, shape, io, read) = (
                    units.clone(),
                    senders.clone(),
                    next.clone(),
                    worker_shared.clone(),
                    shape.clone(),
                    io.clone(),
                    read.clone(),
                );
                // A worker that cannot start drops its channels' senders, and the
                // consumer reports the units as lost.
                let _ = threads::spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= units.len() {
                        return;
                    }
                    let held = Held {
                        shared: &shared,
                        unit: i,
                    };
                    shared.start_unit(i, window, memory_estimate(&units[i].unit, &shape));
                    if shared.cancelled() {
                        return;
                    }
                    let Some(tx) = senders[i].lock().ok().and_then(|mut s| s.take()) else {
                        continue;
                    };
                    let read_piece = || send_unit(&units[i], i, &shape, &io, &read, &shared, &tx);
                    let sent = catch_unwind(AssertUnwindSafe(read_piece)).unwrap_or_else(|panic| {
                        tx.send(Message::Failed(decoder_panic(&units[i], &*panic)))
                            .is_ok()
                    });
                    drop(held);
                    if !sent {
                        shared.stop();
                        return;
                    }
                });
            }
        };
        ScanStream {
            schema,
            remaining: limit,
            receivers,
            shared,
            started: Some(Box::new(started)),
            ready: VecDeque::new(),
            deferred: None,
        }
    }

    /// A stream whose batches `compute` makes, all of them, when it is first read.
    pub(crate) fn deferred(schema: SchemaRef, compute: Deferred) -> Self {
        ScanStream {
            schema,
            remaining: None,
            receivers: VecDeque::new(),
            shared: Arc::new(StreamShared::new(0, true)),
            started: None,
            ready: VecDeque::new(),
            deferred: Some(compute),
        }
    }
}

/// The error sent in place of a piece's rows when its decoder panicked (damaged pages can
/// make it do so).
fn decoder_panic(piece: &Piece, panic: &(dyn std::any::Any + Send)) -> Error {
    let reason = format!(
        "corrupt pages in row group {}: {}",
        piece.unit.row_group,
        panic_message(panic)
    );
    Error::invalid_file(&piece.unit.file.path, reason)
}

/// Read piece `i` into its channel; false when the consumer has gone.
fn send_unit(
    piece: &Piece,
    i: usize,
    shape: &OutputShape,
    io: &Arc<IoStats>,
    read: &Arc<Metrics>,
    shared: &StreamShared,
    tx: &Sender<Message>,
) -> bool {
    let batches = match read_unit(
        &piece.unit,
        piece.threads,
        shape,
        io,
        read,
        piece.shared.as_ref(),
    ) {
        Ok(b) => b,
        Err(e) => return tx.send(Message::Failed(e)).is_ok(),
    };
    for b in batches {
        if shared.cancelled() {
            return false;
        }
        let message = match b {
            Ok(batch) => {
                let bytes = batch.get_array_memory_size();
                shared.reserve(i, bytes);
                Message::Batch(Buffered { batch, bytes })
            }
            Err(e) => return tx.send(Message::Failed(e)).is_ok(),
        };
        if tx.send(message).is_err() {
            return false;
        }
    }
    if piece.completes {
        read.units_read.add(1);
    }
    tx.send(Message::End).is_ok()
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(start) = self.started.take() {
            start();
        }
        if let Some(compute) = self.deferred.take() {
            match compute() {
                Ok(batches) => self.ready = batches.into(),
                Err(e) => return Some(Err(ArrowError::from(e))),
            }
        }
        if let Some(batch) = self.ready.pop_front() {
            return Some(Ok(batch));
        }
        loop {
            if self.remaining == Some(0) {
                // The LIMIT's rows are out: nothing more is read.
                self.receivers.clear();
                self.shared.stop();
                return None;
            }
            let (rx, path) = self.receivers.front()?;
            let failed = match rx.recv() {
                Ok(Message::Batch(b)) => {
                    self.shared.received(b.bytes);
                    if b.batch.num_rows() > 0 {
                        let batch = match &mut self.remaining {
                            Some(left) => {
                                let take = (*left).min(b.batch.num_rows() as u64);
                                *left -= take;
                                b.batch.slice(0, take as usize)
                            }
                            None => b.batch,
                        };
                        return Some(Ok(batch));
                    }
                    continue;
                }
                Ok(Message::End) => {
                    self.receivers.pop_front();
                    self.shared.advance();
                    continue;
                }
                Ok(Message::Failed(e)) => e,
                Err(_) => Error::Io {
                    path: path.clone(),
                    source: std::io::Error::other("the thread reading it stopped early"),
                },
            };
            self.receivers.clear();
            self.shared.stop();
            return Some(Err(ArrowError::from(failed)));
        }
    }
}

impl RecordBatchReader for ScanStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    use crate::metadata::MetadataCache;
    use crate::query::scan::{Scan, ScanOptions};
    use crate::testing::{self, int64s, keys, Layout};

    use super::*;

    /// Keys 0..8,000 in row groups of `group` rows, read back in 100-row batches.
    fn plan(dir: &std::path::Path, group: usize, threads: usize) -> Scan {
        plan_rows(dir, 8_000, group, threads)
    }

    fn plan_rows(dir: &std::path::Path, rows: i64, group: usize, threads: usize) -> Scan {
        let layout = Layout {
            row_group_size: group,
            ..Default::default()
        };
        let path = testing::write_file(dir, "k.parquet", vec![("k", int64s(0..rows))], layout);
        let opts = ScanOptions {
            batch_size: 100,
            threads,
            ..Default::default()
        };
        let cache = MetadataCache::new(1 << 20);
        Scan::plan(&[path], &opts, &cache, &AtomicBool::new(false)).unwrap()
    }

    fn rows_read(scan: &Scan) -> u64 {
        scan.metrics.rows_matched.get()
    }

    #[test]
    fn workers_read_ahead_of_a_busy_consumer() {
        let dir = tempfile::tempdir().unwrap();
        let scan = plan(dir.path(), 2_000, 2);
        let mut stream = scan.stream();
        let first = stream.next().unwrap().unwrap();
        // The consumer holds on to the first unit; the other worker reads the second
        // unit whole rather than stopping a few batches into it, and both go on.
        assert!(eventually(|| rows_read(&scan) == 8_000));

        // In order, every row once.
        let keys = keys(std::iter::once(Ok(first)).chain(stream));
        assert!(keys.iter().copied().eq(0..8_000));
    }

    #[test]
    fn units_ahead_wait_for_room() {
        let dir = tempfile::tempdir().unwrap();
        let scan = plan(dir.path(), 2_000, 2);
        // No room: no unit ahead of the consumer starts, and the consumer's own unit
        // decodes one batch past the one the consumer has not taken yet.
        let units = scan.units.clone();
        let mut stream = ScanStream::start(
            units,
            scan.shape.clone(),
            scan.io.clone(),
            scan.metrics.clone(),
            2,
            0,
            false,
        );
        let first = stream.next().unwrap().unwrap();
        assert!(eventually(|| rows_read(&scan) == 3 * 100));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(rows_read(&scan), 3 * 100);
        // As the consumer moves on, so do the workers, a batch at a time.
        assert_eq!(
            keys(std::iter::once(Ok(first)).chain(stream)),
            (0..8_000).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_consumer_that_keeps_every_batch_is_sent_batches_past_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let scan = plan(dir.path(), 2_000, 2);
        // Room for one unit's read ahead and none for its batches: not kept, the unit
        // ahead stops at its first batch; kept, its batches go and the units follow one
        // after another.
        let reads: usize = scan
            .units
            .iter()
            .map(|u| crate::read::memory_estimate(u, &scan.shape))
            .max()
            .unwrap();
        for keep_all in [false, true] {
            scan.metrics.rows_matched.set(0);
            let mut stream = ScanStream::start(
                scan.units.clone(),
                scan.shape.clone(),
                scan.io.clone(),
                scan.metrics.clone(),
                2,
                reads,
                keep_all,
            );
            let first = stream.next().unwrap().unwrap();
            if keep_all {
                assert!(eventually(|| rows_read(&scan) == 8_000));
            } else {
                std::thread::sleep(Duration::from_millis(100));
                assert!(rows_read(&scan) < 8_000);
            }
            assert_eq!(
                keys(std::iter::once(Ok(first)).chain(stream)),
                (0..8_000).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_lone_row_group_is_read_by_every_thread() {
        let dir = tempfile::tempdir().unwrap();
        let scan = plan_rows(dir.path(), 300_000, 300_000, 2);
        let pieces = crate::read::split::balance(scan.units.clone(), 2, &[0]);
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces.iter().filter(|p| p.completes).count(), 1);
        // The pieces give back the row group once, in order, and count as one unit.
        assert!(keys(scan.stream()).into_iter().eq(0..300_000));
        assert_eq!(scan.metrics.units_read.get(), 1);
        assert_eq!(scan.metrics.rows_scanned.get(), 300_000);
    }

    #[test]
    fn the_pieces_of_a_row_group_fetch_its_dictionary_pages_once() {
        let dir = tempfile::tempdir().unwrap();
        let rows = 300_000;
        let words = |k: i64| Some(format!("{:016x}", (k % 2_000).wrapping_mul(0x9E37_79B9)));
        let path = testing::write_file(
            dir.path(),
            "d.parquet",
            vec![
                ("k", int64s(0..rows)),
                ("s", testing::strings((0..rows).map(words))),
            ],
            Layout {
                row_group_size: rows as usize,
                page_rows: Some(10_000),
                ..Default::default()
            },
        );
        let read = |threads: usize, predicate: Option<&str>| {
            let opts = ScanOptions {
                threads,
                predicate: predicate.map(Into::into),
                ..Default::default()
            };
            let cache = MetadataCache::new(1 << 24);
            let scan = Scan::plan(
                std::slice::from_ref(&path),
                &opts,
                &cache,
                &AtomicBool::new(false),
            )
            .unwrap();
            let before = scan.io.bytes();
            let got = keys(scan.stream());
            assert!(got.into_iter().eq(0..rows));
            scan.io.bytes() - before
        };
        // With no condition no page index is loaded: the pieces read whole chunks, once.
        assert_eq!(read(2, None), read(1, None));
        // With one, each piece reads its pages, and `s`'s dictionary page (read after the
        // filter) once; only a page straddling the cut is read twice.
        let md = crate::metadata::read_metadata(&path, true, &MetadataCache::new(1 << 20))
            .unwrap()
            .metadata;
        let range = crate::metadata::page_index::dictionary_range(&md, 0, 1).unwrap();
        let dictionary = range.end - range.start;
        assert!(dictionary > 5_000, "{dictionary}");
        let (alone, pieces) = (read(1, Some("k >= 0")), read(2, Some("k >= 0")));
        assert!(pieces < alone + dictionary / 2, "{pieces} against {alone}");
    }

    /// A stream over hand-fed channels, one per unit, with no workers.
    fn fed_stream(units: usize) -> (ScanStream, Vec<Sender<Message>>) {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let (senders, receivers) = (0..units)
            .map(|u| {
                let (tx, rx) = channel();
                (tx, (rx, format!("unit-{u}.parquet")))
            })
            .unzip();
        let shared = Arc::new(StreamShared::new(DEFAULT_READ_AHEAD, false));
        let stream = ScanStream {
            schema,
            remaining: None,
            receivers,
            shared,
            started: None,
            ready: VecDeque::new(),
            deferred: None,
        };
        (stream, senders)
    }

    fn batch(keys: std::ops::Range<i64>) -> Message {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let column = Arc::new(Int64Array::from_iter_values(keys));
        let batch = RecordBatch::try_new(schema, vec![column]).unwrap();
        Message::Batch(Buffered { batch, bytes: 0 })
    }

    #[test]
    fn a_unit_whose_worker_vanished_is_an_error_not_an_end() {
        let (mut stream, senders) = fed_stream(2);
        let mut senders = senders.into_iter();
        let (first, second) = (senders.next().unwrap(), senders.next().unwrap());
        first.send(batch(0..10)).unwrap();
        first.send(Message::End).unwrap();
        // The second unit's worker sends one batch and is gone without its End.
        second.send(batch(10..20)).unwrap();
        drop((first, second));
        assert_eq!(stream.next().unwrap().unwrap().num_rows(), 10);
        assert_eq!(stream.next().unwrap().unwrap().num_rows(), 10);
        let err = stream.next().unwrap().unwrap_err().to_string();
        assert!(
            err.contains("unit-1.parquet") && err.contains("stopped early"),
            "{err}"
        );
        assert!(stream.next().is_none());
    }

    #[test]
    fn a_failed_unit_ends_the_stream_with_its_error() {
        let (mut stream, senders) = fed_stream(2);
        senders[0]
            .send(Message::Failed(Error::invalid_file(
                "a.parquet",
                "bad page",
            )))
            .unwrap();
        senders[1].send(batch(0..5)).unwrap();
        let err = stream.next().unwrap().unwrap_err().to_string();
        assert!(err.contains("bad page"), "{err}");
        assert!(stream.next().is_none());
    }

    /// Poll `done` for up to 20 seconds.
    #[test]
    fn the_consumers_own_read_leaves_the_budget_to_units_ahead() {
        // The consumer's unit holds more than the whole budget; one unit ahead that fits
        // still starts beside it (else two large row groups are read one at a time), and a
        // second waits until the first is done.
        let shared = Arc::new(StreamShared::new(100, false));
        shared.start_unit(0, 8, 150);
        let started = Arc::new(AtomicUsize::new(0));
        let (s, n) = (shared.clone(), started.clone());
        let first = std::thread::spawn(move || {
            s.start_unit(1, 8, 80);
            n.fetch_add(1, Ordering::SeqCst);
        });
        assert!(eventually(|| started.load(Ordering::SeqCst) == 1));
        first.join().unwrap();
        let (s, n) = (shared.clone(), started.clone());
        let second = std::thread::spawn(move || {
            s.start_unit(2, 8, 80);
            n.fetch_add(1, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(started.load(Ordering::SeqCst), 1);
        shared.release(1);
        assert!(eventually(|| started.load(Ordering::SeqCst) == 2));
        second.join().unwrap();
    }

    #[test]
    fn a_unit_ahead_sends_batches_beside_a_large_consumer_read() {
        // The consumer's read (150) holds more than the budget (100); unit 1 (80) sends a
        // batch of 10 at once, and one of 30 only once the first is taken.
        let shared = Arc::new(StreamShared::new(100, false));
        shared.start_unit(0, 8, 150);
        shared.start_unit(1, 8, 80);
        let sent = Arc::new(AtomicUsize::new(0));
        let (s, n) = (shared.clone(), sent.clone());
        let sender = std::thread::spawn(move || {
            s.reserve(1, 10);
            n.fetch_add(1, Ordering::SeqCst);
            s.reserve(1, 30);
            n.fetch_add(1, Ordering::SeqCst);
        });
        assert!(eventually(|| sent.load(Ordering::SeqCst) == 1));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(sent.load(Ordering::SeqCst), 1);
        shared.release(0);
        shared.lock().consumer = 1;
        shared.received(10);
        assert!(eventually(|| sent.load(Ordering::SeqCst) == 2));
        sender.join().unwrap();
    }

    fn eventually(done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        done()
    }

    #[test]
    fn dropping_the_stream_stops_the_workers() {
        let dir = tempfile::tempdir().unwrap();
        let scan = plan(dir.path(), 200, 1);
        let mut stream = scan.stream();
        assert!(stream.next().is_some());
        // One worker reads at most 4 units from the one the consumer is on, then waits.
        assert!(eventually(|| rows_read(&scan) == 4 * 200));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(rows_read(&scan), 4 * 200);
        // Dropped, the stream lets its waiting worker go (it held the metrics).
        assert!(Arc::strong_count(&scan.metrics) > 1);
        drop(stream);
        assert!(eventually(|| Arc::strong_count(&scan.metrics) == 1));
        assert_eq!(rows_read(&scan), 4 * 200);
    }
}
