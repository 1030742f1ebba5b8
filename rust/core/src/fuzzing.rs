//! Entry points for the fuzz targets in `fuzz/` and the corpus replay test: one thin
//! function per parser of bytes pqindex reads from storage or is given by a caller, each
//! driving that parser the way pqindex does (a file is written to a scratch directory and
//! opened, planned and scanned through the public paths). Not a stable API.
//!
//! What counts as a bug is decided by [`check`]: a panic that escapes, or one raised in
//! pqindex's own code even if a `catch_unwind` further up turned it into an error. A panic
//! inside arrow-rs or parquet that the scan catches and reports as a damaged file is fine.
//! Aborts, hangs and huge allocations are caught by the fuzzer itself (`scripts/fuzz.sh`).

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::DataType;
use parquet::file::metadata::ColumnChunkMetaData;

use crate::catalog::Catalog;
use crate::error::{panic_message, Error, Result};
use crate::index::container::{block_checksum, decode_block, encode_block, BLOCK_VERSION};
use crate::index::locator::{Granularity, Locator, KEY_PREFIX};
use crate::index::registry;
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::MetadataCache;
use crate::query::aggregate::{aggregate, AggregateOptions};
use crate::query::scan::{Scan, ScanOptions};

/// "Now" for every scan: 2024-06-01, so runs are repeatable.
const NOW_NS: i128 = 1_717_200_000_000_000_000;

/// Predicates over the columns every seed file has (`scripts/fuzz_seeds.py` writes them):
/// lookups for the lookup indexes and blooms, ranges for page indexes and bounds, a
/// substring for the text indexes, and each type's literals.
pub const PREDICATES: &[&str] = &[
    "id = 42",
    "id IN (7, 150, 299) OR name = 'n12'",
    "tag = 'green' AND score > 0.5",
    "name LIKE '%12%'",
    "id BETWEEN 100 AND 140",
    "day >= DATE '2024-03-01' OR amount < 10",
    "ts < TIMESTAMP '2024-01-02 00:00:00' OR flag IS NULL",
];

/// Columns of the fixture an index target indexes, chosen by the input's first byte.
const INDEX_COLUMNS: &[&str] = &["id", "name", "score", "day", "tag", "amount"];

/// The name a fixture file is given in scratch directories and in seeds (units, catalogs).
pub const FIXTURE_NAME: &str = "data.parquet";

static OWN_PANICS: AtomicU64 = AtomicU64::new(0);
static OTHER_PANICS: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Whether a panic at `file` was raised in this crate's sources.
fn is_own(file: &str) -> bool {
    let here = file!();
    let src = here.strip_suffix("fuzzing.rs").unwrap_or(here);
    file.starts_with(src)
}

/// Replace the panic hook (the fuzzer's aborts on any panic, even one that is caught) by
/// one that counts panics, telling pqindex's own from its dependencies'.
fn install_hook() {
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if info.location().is_some_and(|l| is_own(l.file())) {
                OWN_PANICS.fetch_add(1, Ordering::SeqCst);
                eprintln!("pqindex panicked: {info}");
            } else {
                OTHER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
        }));
    });
}

/// Panics in dependencies that pqindex caught and reported as errors, so far.
pub fn caught_dependency_panics() -> u64 {
    OTHER_PANICS.load(Ordering::SeqCst)
}

/// Run one input through `f`: `Err` (a bug) when a panic escapes it, or when pqindex's own
/// code panicked during it, caught or not. Inputs run one at a time, so a count belongs
/// to the input that caused it.
pub fn check<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    install_hook();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = OWN_PANICS.load(Ordering::SeqCst);
    let out = catch_unwind(AssertUnwindSafe(f));
    let own = OWN_PANICS.load(Ordering::SeqCst) - before;
    match out {
        Err(p) => Err(format!("uncaught panic: {}", panic_message(&*p))),
        Ok(_) if own > 0 => Err(format!("{own} panic(s) in pqindex's own code")),
        Ok(v) => Ok(v),
    }
}

/// A scratch directory, in memory where the system has one, removed when dropped.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Result<Self> {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("pqindex-fuzz-")
            .tempdir_in(&base)
            .map_err(|e| Error::io(&base.to_string_lossy(), e))?;
        Ok(Scratch(dir))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    /// Write `bytes` as `name` (parent directories made) and return its path.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<String> {
        let path = self.path(name);
        let shown = path.to_string_lossy().into_owned();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(&shown, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| Error::io(&shown, e))?;
        Ok(shown)
    }
}

fn opts(predicate: Option<&str>) -> ScanOptions {
    ScanOptions {
        predicate: predicate.map(Into::into),
        batch_size: 1024,
        threads: 1,
        now_ns: Some(NOW_NS),
        ..ScanOptions::default()
    }
}

/// Drain a planned scan; the rows it gave.
fn drain(scan: &Scan) -> Result<u64> {
    let mut rows = 0;
    for batch in scan.stream() {
        rows += batch.map_err(Error::from)?.num_rows() as u64;
    }
    Ok(rows)
}

/// Plan and read `paths` with `predicate`, as `pqindex.scan(...).to_arrow()` does.
fn scan(paths: &[String], predicate: Option<&str>) -> Result<u64> {
    let cache = MetadataCache::new(64 << 20);
    let cancel = AtomicBool::new(false);
    drain(&Scan::plan(paths, &opts(predicate), &cache, &cancel)?)
}

/// Scan `paths` with every predicate that names one of `columns` (all when empty), and
/// with none; the first error, after trying them all.
fn scan_each(paths: &[String], columns: &[&str]) -> Result<()> {
    let mut first = scan(paths, None).err();
    for p in PREDICATES {
        if columns.is_empty() || columns.iter().any(|c| p.contains(c)) {
            if let Err(e) = scan(paths, Some(p)) {
                first.get_or_insert(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// The footer and page index of a file as `pqindex.read_metadata` and the metadata tables
/// read them, the embedded indexes `list_indexes` and `verify` read, and every column
/// chunk's Parquet bloom filter as planning reads it.
pub fn footer(file: &[u8]) -> Result<()> {
    let dir = Scratch::new()?;
    let path = dir.write(FIXTURE_NAME, file)?;
    let cache = MetadataCache::new(64 << 20);
    let f = StorageFile::open(&path, Arc::new(IoStats::default()))?;
    let (md, _) = cache.get(&f, false)?;
    crate::metadata::tables::row_groups(&md)?;
    crate::metadata::tables::columns(&md)?;
    for rg in md.row_groups() {
        for chunk in rg.columns() {
            if let Ok(Some(sbbf)) = crate::metadata::bloom_filter::read_bloom(&f, chunk) {
                sbbf.check(&42i64);
            }
        }
    }
    let _ = crate::index::rewrite::list_indexes(&path);
    let _ = crate::index::verify::verify(&path);
    let (md, _) = cache.get(&f, true)?;
    crate::metadata::tables::pages(&md)?;
    Ok(())
}

/// A data page header, as the reader asks whether a page needs its dictionary.
pub fn page_header(bytes: &[u8]) -> Result<()> {
    crate::metadata::page_header::needs_dictionary(bytes)
        .map(|_| ())
        .map_err(|e| Error::invalid_file("page header", e))
}

/// A Snappy stream's start, as a page read from its start decodes it: the first two bytes
/// are how many bytes are wanted (and where a window starts), the rest the stream. Where
/// `snap` decodes the whole stream to at least that many bytes, pqindex's start and
/// window must be those bytes (or the window refused, where the stream reaches back
/// across a block); a difference panics.
pub fn snappy_start(bytes: &[u8]) -> Result<()> {
    use crate::read::decode::snappy_prefix::{snappy_prefix, snappy_window, BLOCK};
    let [a, b, body @ ..] = bytes else {
        return Ok(());
    };
    let want = usize::from(u16::from_le_bytes([*a, *b])) * 8;
    let mut whole = vec![0; 1 << 20];
    let snap = snap::raw::Decoder::new()
        .decompress(body, &mut whole)
        .ok()
        .filter(|len| *len >= want);
    let mut out = vec![0; want];
    let start = snappy_prefix(body, &mut out);
    let mut window = vec![0; want];
    let from = want / 2;
    let entered = snappy_window(body, &mut window, from);
    if snap.is_some() {
        // A difference from snap is a bug: it panics.
        assert!(
            start.is_ok() && out[..] == whole[..want],
            "the start differs from snap's"
        );
        match entered {
            Ok(Some(block)) => assert!(
                block == from / BLOCK * BLOCK && window[block..] == whole[block..want],
                "the window differs from snap's"
            ),
            Ok(None) => {}
            Err(e) => panic!("the window of a stream snap decodes: {e}"),
        }
    }
    Ok(())
}

/// A Parquet bloom filter (header and bitset) at the start of a file, read as planning
/// reads a column chunk's, with its length declared in the footer and without.
pub fn bloom(bytes: &[u8]) -> Result<()> {
    let _ = crate::metadata::bloom_header::parse_bloom_header(bytes);
    let dir = Scratch::new()?;
    let path = dir.write("bloom", bytes)?;
    let f = StorageFile::open(&path, Arc::new(IoStats::default()))?;
    let schema = parquet::schema::parser::parse_message_type("message m { required int64 id; }")?;
    let descr = parquet::schema::types::SchemaDescriptor::new(Arc::new(schema));
    let mut first = None;
    for length in [None, i32::try_from(bytes.len()).ok()] {
        let chunk = ColumnChunkMetaData::builder(descr.column(0))
            .set_bloom_filter_offset(Some(0))
            .set_bloom_filter_length(length)
            .build()?;
        match crate::metadata::bloom_filter::read_bloom(&f, &chunk) {
            Ok(Some(sbbf)) => {
                sbbf.check(&42i64);
            }
            Ok(None) => {}
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// `fixture`'s Parquet part, and its footer's key/value entries other than indexes.
struct Split<'a> {
    body: &'a [u8],
    footer: &'a [u8],
    kv: Vec<(String, Option<String>)>,
}

fn split(fixture: &[u8]) -> Result<Split<'_>> {
    let bad = |why: &str| Error::invalid_file("fixture", why.to_string());
    let n = fixture.len();
    if n < 12 {
        return Err(bad("too small"));
    }
    let len = u32::from_le_bytes(fixture[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    let start = (n - 8)
        .checked_sub(len)
        .ok_or_else(|| bad("footer length"))?;
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::copy_from_slice(fixture))?;
    let kv = md
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter(|e| !e.key.starts_with(KEY_PREFIX))
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    Ok(Split {
        body: &fixture[..start],
        footer: &fixture[start..n - 8],
        kv,
    })
}

/// `fixture` with `blocks` appended after its Parquet bytes and `locators` (JSON text,
/// whose offsets are relative to the first block) in its footer, as `add_indexes` lays
/// out a file.
fn with_indexes(fixture: &[u8], blocks: &[u8], locators: &[String]) -> Result<Vec<u8>> {
    let s = split(fixture)?;
    let mut kv = s.kv;
    for (i, l) in locators.iter().enumerate() {
        kv.push((format!("{KEY_PREFIX}{i}"), Some(l.clone())));
    }
    let footer = crate::metadata::footer_splice::with_key_values(s.footer, &kv)
        .map_err(|e| Error::invalid_file("fixture", e))?;
    let mut out = s.body.to_vec();
    out.extend_from_slice(blocks);
    out.extend_from_slice(&footer);
    out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    out.extend_from_slice(b"PAR1");
    Ok(out)
}

/// The locator of `block` placed right after `fixture`'s Parquet bytes.
fn locator_for(
    fixture: &[u8],
    block: &[u8],
    kind: &str,
    column: &str,
    g: Granularity,
) -> Result<Locator> {
    Ok(Locator {
        kind: kind.to_string(),
        columns: vec![column.to_string()],
        granularity: g,
        offset: split(fixture)?.body.len() as u64,
        length: block.len() as u64,
        checksum: block_checksum(block).unwrap_or(0),
        version: BLOCK_VERSION,
    })
}

/// Read a file with embedded indexes every way pqindex reads them: planning scans,
/// `verify`, aggregates from `aggregates` indexes and `approx_distinct` from sketches.
fn use_indexes(file: &[u8], column: &str) -> Result<()> {
    let dir = Scratch::new()?;
    let path = dir.write(FIXTURE_NAME, file)?;
    let paths = [path.clone()];
    let mut first = scan_each(&paths, &[column]).err();
    if let Err(e) = crate::index::verify::verify(&path) {
        first.get_or_insert(e);
    }
    let agg = AggregateOptions {
        select: format!("count(*), count({column}), min({column}), max({column})"),
        predicate: None,
        threads: 1,
        now_ns: Some(NOW_NS),
        ..Default::default()
    };
    let cancel = AtomicBool::new(false);
    if let Err(e) = aggregate(&paths, &agg, &MetadataCache::new(64 << 20), &cancel) {
        first.get_or_insert(e);
    }
    let cache = MetadataCache::new(64 << 20);
    if let Err(e) = crate::index::approx_distinct::approx_distinct(&paths, column, &cache) {
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), Err)
}

/// The payload of one index kind (`kind`, a registry name). The first byte picks the
/// column of `fixture` it indexes and its granularity; the rest is the payload, put in a
/// well-formed block (right checksum) so the kind's own decoder is what is fuzzed.
pub fn index(kind: &str, data: &[u8], fixture: &[u8]) -> Result<()> {
    let Some((&pick, payload)) = data.split_first() else {
        return Ok(());
    };
    let k = registry::by_name(kind)
        .ok_or_else(|| Error::InvalidArgument(format!("no index kind {kind}")))?;
    let column = INDEX_COLUMNS[usize::from(pick) % INDEX_COLUMNS.len()];
    let g = Granularity::ALL[usize::from(pick) / INDEX_COLUMNS.len() % 3];
    let block = encode_block(k.info().code, payload);
    let l = locator_for(fixture, &block, kind, column, g)?;
    let _ = k.verify(payload);
    use_indexes(&with_indexes(fixture, &block, &[l.to_json()])?, column)
}

/// The first byte of the input tells [`index`]'s column and granularity for `column` at
/// `granularity`: for seeds.
pub fn index_pick(column: &str, granularity: Granularity) -> Option<u8> {
    let c = INDEX_COLUMNS.iter().position(|n| *n == column)?;
    let g = Granularity::ALL.iter().position(|x| *x == granularity)?;
    u8::try_from(g * INDEX_COLUMNS.len() + c).ok()
}

/// A whole index block (magic, version, kind, length, payload, checksum) as the container
/// decodes it, for every kind; then placed in `fixture` under a locator that agrees with
/// its length and stored checksum and read as planning reads it.
pub fn container(block: &[u8], fixture: &[u8]) -> Result<()> {
    for k in registry::kinds() {
        let _ = decode_block(block, k.info().code, k.info().name);
    }
    let code = block
        .get(6..8)
        .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let kind = registry::kinds()
        .iter()
        .find(|k| k.info().code == code)
        .map_or("distinct", |k| k.info().name);
    let column = INDEX_COLUMNS[usize::from(code) % INDEX_COLUMNS.len()];
    let l = locator_for(fixture, block, kind, column, Granularity::RowGroup)?;
    use_indexes(&with_indexes(fixture, block, &[l.to_json()])?, column)
}

/// The footer's index locators, `pqindex.index.<n>` → JSON: the input replaces the first
/// locator of `indexed` (a fixture with an index of every kind), the others stay.
pub fn locator(json: &[u8], indexed: &[u8]) -> Result<()> {
    let Ok(text) = std::str::from_utf8(json) else {
        return Ok(());
    };
    let _ = Locator::from_json(text);
    let s = split(indexed)?;
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::copy_from_slice(indexed))?;
    let mut kv = s.kv.clone();
    let mut replaced = false;
    for e in md
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
    {
        if e.key.starts_with(KEY_PREFIX) {
            let value = if replaced {
                e.value.clone()
            } else {
                Some(text.to_string())
            };
            replaced = true;
            kv.push((e.key.clone(), value));
        }
    }
    let footer = crate::metadata::footer_splice::with_key_values(s.footer, &kv)
        .map_err(|e| Error::invalid_file("fixture", e))?;
    let mut file = indexed[..indexed.len() - 8 - s.footer.len()].to_vec();
    file.extend_from_slice(&footer);
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    let column = Locator::from_json(text)
        .ok()
        .and_then(|l| l.columns.first().cloned())
        .filter(|c| INDEX_COLUMNS.contains(&c.as_str()))
        .unwrap_or_else(|| "id".to_string());
    use_indexes(&file, &column)
}

/// The units blob that crosses to Spark executors (an Arrow IPC stream of `Scan.units()`
/// rows), read as `read_units` reads it. Paths are confined to a scratch directory: a unit
/// naming [`FIXTURE_NAME`] gets `fixture`'s copy there, with that copy's identity (so the
/// read goes past the identity check), and any other path names a missing file.
pub fn units(blob: &[u8], fixture: &[u8]) -> Result<()> {
    // Decoding the IPC stream is the caller's part (pyarrow, in an executor); a message
    // that declares more bytes than the blob holds would make the decoder allocate them.
    if !ipc_lengths_fit(blob) {
        return Ok(());
    }
    let decoded = catch_unwind(|| -> Result<Vec<RecordBatch>> {
        let reader = arrow_ipc::reader::StreamReader::try_new(Cursor::new(blob), None)?;
        Ok(reader.collect::<std::result::Result<_, _>>()?)
    });
    let Ok(Ok(batches)) = decoded else {
        return Ok(());
    };
    let dir = Scratch::new()?;
    let path = dir.write(FIXTURE_NAME, fixture)?;
    let missing = dir.path("missing.parquet").to_string_lossy().into_owned();
    let id = FileIdentity::stat(&path)?;
    let batches = batches
        .iter()
        .map(|b| confine(b, &path, &missing, &id))
        .collect::<Result<Vec<_>>>()?;
    let mut first = None;
    for p in [None, Some(PREDICATES[1])] {
        let cache = MetadataCache::new(64 << 20);
        let cancel = AtomicBool::new(false);
        if let Err(e) =
            Scan::from_units(&batches, &opts(p), &cache, &cancel).and_then(|s| drain(&s))
        {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Whether every message of the IPC stream `blob` fits in it: its framing (continuation,
/// metadata length) and the body length its metadata declares.
fn ipc_lengths_fit(blob: &[u8]) -> bool {
    let mut at = 0usize;
    while at < blob.len() {
        let word = |i: usize| -> Option<u32> {
            blob.get(i..i + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let Some(mut len) = word(at) else {
            return false;
        };
        at += 4;
        if len == 0xFFFF_FFFF {
            let Some(l) = word(at) else {
                return false;
            };
            len = l;
            at += 4;
        }
        if len == 0 {
            return true; // end of stream
        }
        let Some(meta) = blob.get(at..at.saturating_add(len as usize)) else {
            return false;
        };
        let Ok(message) = arrow_ipc::root_as_message(meta) else {
            return false;
        };
        at += len as usize;
        let Ok(body) = usize::try_from(message.bodyLength()) else {
            return false;
        };
        if body > blob.len() - at {
            return false;
        }
        at += body;
    }
    true
}

/// `batch` with its `path` column pointing into the scratch directory, and the identity
/// columns of rows naming the fixture set to its copy's.
fn confine(
    batch: &RecordBatch,
    fixture: &str,
    missing: &str,
    id: &FileIdentity,
) -> Result<RecordBatch> {
    let Some(i) = batch.schema().index_of("path").ok() else {
        return Ok(batch.clone());
    };
    let Some(paths) = batch.column(i).as_any().downcast_ref::<StringArray>() else {
        return Ok(batch.clone());
    };
    let is_fixture: Vec<bool> = paths
        .iter()
        .map(|p| p.is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == FIXTURE_NAME)))
        .collect();
    let confined: StringArray = paths
        .iter()
        .zip(&is_fixture)
        .map(|(p, f)| p.map(|_| if *f { fixture } else { missing }))
        .collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[i] = Arc::new(confined);
    let fields = batch.schema();
    for (name, value) in [
        ("size", id.size as i128),
        ("mtime_ns", id.mtime_ns as i128),
        ("ino", id.ino as i128),
        ("ctime_ns", id.ctime_ns as i128),
    ] {
        let Ok(c) = fields.index_of(name) else {
            continue;
        };
        let col = &columns[c];
        let set = |r: usize| is_fixture[r] && col.is_valid(r);
        columns[c] = match col.data_type() {
            DataType::UInt64 => {
                let a = col.as_any().downcast_ref::<UInt64Array>().expect("u64");
                Arc::new(
                    (0..a.len())
                        .map(|r| {
                            a.is_valid(r)
                                .then(|| if set(r) { value as u64 } else { a.value(r) })
                        })
                        .collect::<UInt64Array>(),
                )
            }
            DataType::Int64 => {
                let a = col.as_any().downcast_ref::<Int64Array>().expect("i64");
                Arc::new(
                    (0..a.len())
                        .map(|r| {
                            a.is_valid(r)
                                .then(|| if set(r) { value as i64 } else { a.value(r) })
                        })
                        .collect::<Int64Array>(),
                )
            }
            _ => continue,
        };
    }
    Ok(RecordBatch::try_new(fields, columns)?)
}

/// A catalog version file (`_pqindex/catalog-<n>.parq`), read as `Catalog.open` reads it,
/// each entry's footer parsed; then its entries, with the one naming [`FIXTURE_NAME`] made
/// to describe `fixture`'s copy, planned with as scans of the dataset plan with it.
pub fn catalog(bytes: &[u8], fixture: &[u8]) -> Result<()> {
    let dir = Scratch::new()?;
    dir.write("a/_pqindex/catalog-00000001.parq", bytes)?;
    dir.write("a/_pqindex/CURRENT", b"catalog-00000001.parq")?;
    let root = dir.path("a").to_string_lossy().into_owned();
    let Some(c) = Catalog::open(&root)? else {
        return Ok(());
    };
    for e in c.entries.values() {
        let _ = e.metadata();
    }
    let data = dir.write(&format!("b/{FIXTURE_NAME}"), fixture)?;
    let id = FileIdentity::stat(&data)?;
    let entries = c
        .entries
        .values()
        .map(|e| {
            let mut e = e.as_ref().clone();
            if e.path == FIXTURE_NAME {
                (e.size, e.mtime_ns, e.ino, e.ctime_ns) =
                    (id.size, id.mtime_ns, id.ino, id.ctime_ns);
                e.etag = None;
            }
            e
        })
        .collect();
    let root = dir.path("b").to_string_lossy().into_owned();
    Catalog::write_entries(&root, &c.columns, entries)?;
    Catalog::forget_loaded();
    let out = scan_each(&[root], &[]);
    Catalog::forget_loaded();
    out
}

/// A predicate as `pqindex.scan(where=...)` takes it: parsed, bound to `fixture`'s schema
/// and, when it binds, used to scan it; and a select list as `pqindex.aggregate` takes it.
pub fn predicate(text: &[u8], fixture: &[u8]) -> Result<()> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Ok(());
    };
    let _ = crate::query::aggregate::select::parse_select(text);
    let dir = Scratch::new()?;
    let path = dir.write(FIXTURE_NAME, fixture)?;
    scan(&[path], Some(text)).map(|_| ())
}

/// A whole file, damaged in any way, scanned with each predicate and aggregated, as a
/// user would read a file some other program wrote.
pub fn scan_file(file: &[u8]) -> Result<()> {
    let dir = Scratch::new()?;
    let path = dir.write(FIXTURE_NAME, file)?;
    let paths = [path];
    let mut first = scan_each(&paths, &[]).err();
    let agg = AggregateOptions {
        select: "count(*), min(id), max(name), sum(score)".into(),
        predicate: Some(PREDICATES[4].into()),
        threads: 1,
        now_ns: Some(NOW_NS),
        ..Default::default()
    };
    let cancel = AtomicBool::new(false);
    if let Err(e) = aggregate(&paths, &agg, &MetadataCache::new(64 << 20), &cancel) {
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), Err)
}

/// `footer` (Thrift `FileMetaData` bytes) with its key/value entries replaced, for the
/// structure-aware mutator.
pub fn splice_key_values(footer: &[u8], entries: &[(String, Option<String>)]) -> Option<Vec<u8>> {
    crate::metadata::footer_splice::with_key_values(footer, entries).ok()
}

/// Every fuzz target, by name: what `fuzz/fuzz_targets/<name>.rs` runs and what the corpus
/// replay test runs on `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/`.
pub const TARGETS: &[&str] = &[
    "footer",
    "page_header",
    "snappy_start",
    "bloom",
    "container",
    "locator",
    "index_distinct",
    "index_bloom",
    "index_hll",
    "index_minmax",
    "index_aggregates",
    "index_ngram",
    "index_token",
    "catalog",
    "units",
    "predicate",
    "scan_file",
];

/// Run target `name` on `data`; `fixture` is `fuzz/fixtures/data.parquet` and `indexed`
/// `fuzz/fixtures/indexed.parquet`. `None` for an unknown name.
pub fn run_target(name: &str, data: &[u8], fixture: &[u8], indexed: &[u8]) -> Option<Result<()>> {
    Some(match name {
        "footer" => footer(data),
        "page_header" => page_header(data),
        "snappy_start" => snappy_start(data),
        "bloom" => bloom(data),
        "container" => container(data, fixture),
        "locator" => locator(data, indexed),
        "index_distinct" => index("distinct", data, fixture),
        "index_bloom" => index("bloom", data, fixture),
        "index_hll" => index("hll", data, fixture),
        "index_minmax" => index("page_minmax", data, fixture),
        "index_aggregates" => index("aggregates", data, fixture),
        "index_ngram" => index("ngram", data, fixture),
        "index_token" => index("token", data, fixture),
        "catalog" => catalog(data, fixture),
        "units" => units(data, fixture),
        "predicate" => predicate(data, fixture),
        "scan_file" => scan_file(data),
        _ => return None,
    })
}
