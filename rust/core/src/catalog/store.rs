//! The catalog on disk: `<dataset>/_pqindex/catalog-<version>.parq`, a Parquet file with one
//! row per data file (not named `.parquet`, so `**/*.parquet` globs over the dataset in
//! DuckDB or polars do not take it for data), and `<dataset>/_pqindex/CURRENT` naming the
//! current version. A new version is written beside the old ones and `CURRENT` is swung to
//! it by rename, so a reader sees one whole version or the previous one, never a
//! half-written catalog.
//!
//! Local writers of one catalog (builds and refreshes in any threads or processes) write
//! their version under an advisory lock on the `_pqindex` directory: `CURRENT` never goes
//! back to an older version, and old versions are removed only well behind it, so the
//! version `CURRENT` names always exists. Readers take no lock.

use std::fs::File;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, Int32Array, Int64Array, RecordBatch,
    StringArray, UInt64Array,
};
use arrow_buffer::Buffer;
use arrow_data::{ByteView, MAX_INLINE_VIEW_LEN};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::catalog::{CatalogColumn, CatalogEntry};
use crate::error::{panic_message, Error, Result};
use crate::io::{object, FileIdentity, IoStats};

pub const DIR: &str = "_pqindex";
pub const POINTER: &str = "CURRENT";
/// Versions kept besides the current one, for readers still reading them.
const KEEP_OLD: u64 = 2;
const FORMAT: &str = "1";

pub fn catalog_dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

fn version_name(version: u64) -> String {
    format!("catalog-{version:08}.parq")
}

fn remote(path: &Path) -> Option<String> {
    let text = path.to_string_lossy();
    object::is_remote(&text).then(|| text.into_owned())
}

/// The current version and its file, if the dataset has a catalog. A request to a store
/// is counted in `io`.
pub fn current(root: &Path, io: &IoStats) -> Result<Option<(u64, PathBuf)>> {
    let pointer = catalog_dir(root).join(POINTER);
    let text = match remote(&pointer) {
        Some(url) => match got(&url, object::locate(&url)?.get_whole()?, io) {
            Some(b) => String::from_utf8_lossy(&b).into_owned(),
            None => return Ok(None),
        },
        None => match std::fs::read_to_string(&pointer) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&pointer.to_string_lossy(), e)),
        },
    };
    let name = text.trim();
    let version = name
        .strip_prefix("catalog-")
        .and_then(|n| n.strip_suffix(".parq"))
        .filter(|n| n.len() == 8 && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| {
            Error::Source(format!(
                "{}: names {name:?}, not a catalog version",
                pointer.display()
            ))
        })?;
    Ok(Some((version, catalog_dir(root).join(name))))
}

/// Write `entries` as version `version` and make it current; returns the version's file and
/// its size.
pub fn write(
    root: &Path,
    version: u64,
    columns: &[CatalogColumn],
    entries: &[CatalogEntry],
) -> Result<(PathBuf, u64)> {
    if let Some(url) = remote(root) {
        return write_remote(&url, version, columns, entries);
    }
    let target = write_local(root, version, columns, entries)?;
    let size = std::fs::metadata(&target).map_or(0, |m| m.len());
    Ok((target, size))
}

/// On an object store: the version is written locally, uploaded, and then `CURRENT` is
/// replaced in one put, so readers see the previous version until it is whole.
fn write_remote(
    root: &str,
    version: u64,
    columns: &[CatalogColumn],
    entries: &[CatalogEntry],
) -> Result<(PathBuf, u64)> {
    let scratch = object::scratch_dir()?;
    let local = write_local(scratch.path(), version, columns, entries)?;
    let size = std::fs::metadata(&local).map_or(0, |m| m.len());
    let dir = format!("{}/{DIR}", root.trim_end_matches('/'));
    let name = version_name(version);
    object::locate(&format!("{dir}/{name}"))?.upload(&local)?;
    let pointer = catalog_dir(scratch.path()).join(POINTER);
    object::locate(&format!("{dir}/{POINTER}"))?.upload(&pointer)?;
    for old in version.saturating_sub(KEEP_OLD + 16)..version.saturating_sub(KEEP_OLD) {
        let _ = object::locate(&format!("{dir}/{}", version_name(old))).and_then(|o| o.delete());
    }
    Ok((PathBuf::from(format!("{dir}/{name}")), size))
}

/// A name for a temporary file in `dir` no other writer (thread or process) uses.
fn temp_name(dir: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// Holds the catalog directory's writer lock (flock on the directory) until dropped;
/// nothing where the file system cannot lock (writers then go as they did unlocked).
struct DirLock {
    _dir: Option<File>,
}

fn lock_dir(dir: &Path) -> DirLock {
    let Ok(d) = File::open(dir) else {
        return DirLock { _dir: None };
    };
    loop {
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(d.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return DirLock { _dir: Some(d) };
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return DirLock { _dir: None };
        }
    }
}

fn write_local(
    root: &Path,
    version: u64,
    columns: &[CatalogColumn],
    entries: &[CatalogEntry],
) -> Result<PathBuf> {
    let dir = catalog_dir(root);
    let shown = dir.to_string_lossy().into_owned();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&shown, e))?;
    let batch = to_batch(columns, entries)?;
    let name = version_name(version);
    let target = dir.join(&name);
    let tmp = temp_name(&dir, &name);
    let columns_json = serde_json::to_string(columns).expect("columns serialise");
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![
            KeyValue::new("pqindex.catalog.format".into(), FORMAT.to_string()),
            KeyValue::new("pqindex.catalog.version".into(), version.to_string()),
            KeyValue::new("pqindex.catalog.columns".into(), columns_json),
        ]))
        .build();
    let _lock = lock_dir(&dir);
    // A writer that planned an older version than another has since made current writes
    // its file but leaves `CURRENT` at the newer one.
    let current = current(root, &IoStats::default())
        .ok()
        .flatten()
        .map_or(0, |(v, _)| v);
    let write_file = || -> Result<()> {
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp.to_string_lossy(), e))?;
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props))?;
        writer.write(&batch)?;
        let file = writer.into_inner()?;
        file.sync_all()
            .map_err(|e| Error::io(&tmp.to_string_lossy(), e))?;
        std::fs::rename(&tmp, &target).map_err(|e| Error::io(&target.to_string_lossy(), e))?;
        if current > version {
            return Ok(());
        }
        // The pointer swings last: until then readers see the previous version whole.
        let ptmp = temp_name(&dir, POINTER);
        let mut p = File::create(&ptmp).map_err(|e| Error::io(&ptmp.to_string_lossy(), e))?;
        p.write_all(name.as_bytes())
            .and_then(|()| p.sync_all())
            .and_then(|()| std::fs::rename(&ptmp, dir.join(POINTER)))
            .map_err(|e| {
                let _ = std::fs::remove_file(&ptmp);
                Error::io(&ptmp.to_string_lossy(), e)
            })?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    if let Err(e) = write_file() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let newest = version.max(current);
    for old in newest.saturating_sub(KEEP_OLD + 16)..newest.saturating_sub(KEEP_OLD) {
        let _ = std::fs::remove_file(dir.join(version_name(old)));
    }
    Ok(target)
}

/// Catalog rows for `entries`: the catalog file's schema.
pub fn to_batch(columns: &[CatalogColumn], entries: &[CatalogEntry]) -> Result<RecordBatch> {
    let mut fields = FileIdentity::arrow_fields();
    fields.extend([
        Field::new("num_rows", DataType::Int64, false),
        Field::new("num_row_groups", DataType::Int32, false),
        Field::new("footer", DataType::Binary, false),
    ]);
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            entries.iter().map(|e| e.path.as_str()),
        )),
        Arc::new(UInt64Array::from_iter_values(
            entries.iter().map(|e| e.size),
        )),
        Arc::new(Int64Array::from_iter_values(
            entries.iter().map(|e| e.mtime_ns),
        )),
        Arc::new(UInt64Array::from_iter_values(entries.iter().map(|e| e.ino))),
        Arc::new(Int64Array::from_iter_values(
            entries.iter().map(|e| e.ctime_ns),
        )),
        Arc::new(StringArray::from_iter(
            entries.iter().map(|e| e.etag.as_deref()),
        )),
        Arc::new(Int64Array::from_iter_values(
            entries.iter().map(|e| e.num_rows),
        )),
        Arc::new(Int32Array::from_iter_values(
            entries.iter().map(|e| e.num_row_groups),
        )),
        Arc::new(BinaryArray::from_iter_values(
            entries.iter().map(|e| e.footer.as_ref()),
        )),
    ];
    for (i, c) in columns.iter().enumerate() {
        let col = |f: fn(&crate::catalog::ColumnSummary) -> Option<String>| -> ArrayRef {
            Arc::new(StringArray::from_iter(
                entries.iter().map(|e| e.columns.get(i).and_then(f)),
            ))
        };
        fields.push(Field::new(format!("min.{}", c.name), DataType::Utf8, true));
        arrays.push(col(|s| s.min.clone()));
        fields.push(Field::new(format!("max.{}", c.name), DataType::Utf8, true));
        arrays.push(col(|s| s.max.clone()));
        fields.push(Field::new(
            format!("null_count.{}", c.name),
            DataType::UInt64,
            true,
        ));
        arrays.push(Arc::new(UInt64Array::from_iter(
            entries
                .iter()
                .map(|e| e.columns.get(i).and_then(|s| s.null_count)),
        )));
        let lo: Vec<Option<&[u8]>> = entries
            .iter()
            .map(|e| e.columns.get(i).and_then(|s| s.lo.as_deref()))
            .collect();
        let hi: Vec<Option<&[u8]>> = entries
            .iter()
            .map(|e| e.columns.get(i).and_then(|s| s.hi.as_deref()))
            .collect();
        for (prefix, values) in [("lo", lo), ("hi", hi)] {
            fields.push(Field::new(
                format!("{prefix}.{}", c.name),
                DataType::Binary,
                true,
            ));
            arrays.push(Arc::new(BinaryArray::from(values)));
        }
        fields.push(Field::new(
            format!("bloom.{}", c.name),
            DataType::Binary,
            true,
        ));
        arrays.push(Arc::new(BinaryArray::from_iter(
            entries
                .iter()
                .map(|e| e.columns.get(i).and_then(|s| s.bloom.as_deref())),
        )));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// Count a whole-object GET in `io`.
fn got(url: &str, bytes: Option<Bytes>, io: &IoStats) -> Option<Bytes> {
    io.record_read(url, 0..bytes.as_ref().map_or(0, |b| b.len() as u64));
    bytes
}

/// Read the catalog file at `path`: its columns and entries. A request to a store is
/// counted in `io`.
pub fn read(path: &Path, io: &IoStats) -> Result<(Vec<CatalogColumn>, Vec<CatalogEntry>)> {
    let shown = path.to_string_lossy().into_owned();
    let bad = |why: String| Error::Source(format!("{shown}: not a pqindex catalog: {why}"));
    let bytes = match remote(path) {
        Some(url) => got(&url, object::locate(&url)?.get_whole()?, io)
            .ok_or_else(|| Error::NotFound { path: url.clone() })?,
        None => Bytes::from(std::fs::read(path).map_err(|e| Error::io(&shown, e))?),
    };
    // arrow-ipc and the page decoders panic on some damaged input (an Arrow schema hint,
    // pages): the catalog is then damaged, not pqindex.
    catch_unwind(AssertUnwindSafe(|| decode(bytes, &shown)))
        .unwrap_or_else(|panic| Err(bad(format!("corrupt file: {}", panic_message(&*panic)))))
}

/// The columns and entries of a catalog file's bytes.
fn decode(bytes: Bytes, shown: &str) -> Result<(Vec<CatalogColumn>, Vec<CatalogEntry>)> {
    let bad = |why: String| Error::Source(format!("{shown}: not a pqindex catalog: {why}"));
    let in_file = |e: parquet::errors::ParquetError| Error::from(e).in_file(shown);
    let plain = ArrowReaderMetadata::load(&bytes, ArrowReaderOptions::new()).map_err(in_file)?;
    // Footers read as views into the file's own bytes, which the entries then share: a
    // catalog's footers are most of it, and a copy of them is memory the process has to
    // fault in before its first plan.
    let fields: Vec<Field> = plain
        .schema()
        .fields()
        .iter()
        .map(|f| match (f.name().as_str(), f.data_type()) {
            ("footer", DataType::Binary) => f.as_ref().clone().with_data_type(DataType::BinaryView),
            _ => f.as_ref().clone(),
        })
        .collect();
    let hinted = Arc::new(Schema::new_with_metadata(
        fields,
        plain.schema().metadata().clone(),
    ));
    let metadata = ArrowReaderMetadata::try_new(
        plain.metadata().clone(),
        ArrowReaderOptions::new().with_schema(hinted),
    )
    .map_err(in_file)?;
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes, metadata);
    let kv = builder.metadata().file_metadata().key_value_metadata();
    let value = |key: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == key))
            .and_then(|e| e.value.clone())
    };
    if value("pqindex.catalog.format").as_deref() != Some(FORMAT) {
        return Err(bad("unknown or missing format".into()));
    }
    let columns: Vec<CatalogColumn> = value("pqindex.catalog.columns")
        .and_then(|j| serde_json::from_str(&j).ok())
        .ok_or_else(|| bad("no column list".into()))?;
    let reader = builder.build().map_err(in_file)?;
    let mut entries = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::from(e).in_file(shown))?;
        entries.extend(entries_from_batch(&batch, &columns).map_err(|e| bad(e.to_string()))?);
    }
    Ok((columns, entries))
}

/// A catalog's footer column: binary, or views into the catalog file's bytes, which
/// entries share rather than copy.
enum Footers<'a> {
    Binary(&'a BinaryArray),
    Views(&'a BinaryViewArray),
}

impl<'a> Footers<'a> {
    fn of(column: &'a ArrayRef) -> Option<Self> {
        match column.data_type() {
            DataType::Binary => Some(Self::Binary(column.as_binary::<i32>())),
            DataType::BinaryView => Some(Self::Views(column.as_binary_view())),
            _ => None,
        }
    }

    /// Row `r`'s footer; a view of at least 13 bytes shares the buffer it points into.
    fn value(&self, r: usize) -> Bytes {
        match self {
            Self::Binary(a) => Bytes::copy_from_slice(a.value(r)),
            Self::Views(a) => {
                let view = ByteView::from(a.views()[r]);
                if view.length <= MAX_INLINE_VIEW_LEN {
                    return Bytes::copy_from_slice(a.value(r));
                }
                let block = &a.data_buffers()[view.buffer_index as usize];
                Bytes::from_owner(Shared(
                    block.slice_with_length(view.offset as usize, view.length as usize),
                ))
            }
        }
    }
}

/// An Arrow buffer as the owner of `Bytes`.
struct Shared(Buffer);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// Catalog rows back into entries (the catalog file's rows, or rows computed elsewhere,
/// e.g. by Spark executors, in the same shape).
pub fn entries_from_batch(
    batch: &RecordBatch,
    columns: &[CatalogColumn],
) -> Result<Vec<CatalogEntry>> {
    let bad = |why: String| Error::InvalidArgument(format!("not catalog rows: {why}"));
    let mut entries = Vec::new();
    let get = |name: &str| {
        batch
            .column_by_name(name)
            .cloned()
            .ok_or_else(|| bad(format!("no column {name}")))
    };
    let path_col = get("path")?;
    let paths = path_col
        .as_string_opt::<i32>()
        .ok_or_else(|| bad("path".into()))?;
    let size = get("size")?;
    let mtime = get("mtime_ns")?;
    let ino = get("ino")?;
    let ctime = get("ctime_ns")?;
    let etags = FileIdentity::etags(batch).map_err(|e| bad(e.to_string()))?;
    let rows = get("num_rows")?;
    let rgs = get("num_row_groups")?;
    let footer = get("footer")?;
    let (Some(size), Some(mtime), Some(ino), Some(ctime), Some(rows), Some(rgs), Some(footer)) = (
        size.as_primitive_opt::<UInt64Type>(),
        mtime.as_primitive_opt::<Int64Type>(),
        ino.as_primitive_opt::<UInt64Type>(),
        ctime.as_primitive_opt::<Int64Type>(),
        rows.as_primitive_opt::<Int64Type>(),
        rgs.as_primitive_opt::<Int32Type>(),
        Footers::of(&footer),
    ) else {
        return Err(bad("a column has the wrong type".into()));
    };
    let mut blooms = Vec::new();
    let mut mins = Vec::new();
    let mut maxs = Vec::new();
    let mut nulls = Vec::new();
    let mut los = Vec::new();
    let mut his = Vec::new();
    for c in columns {
        los.push(get(&format!("lo.{}", c.name))?);
        his.push(get(&format!("hi.{}", c.name))?);
        blooms.push(get(&format!("bloom.{}", c.name))?);
        mins.push(get(&format!("min.{}", c.name))?);
        maxs.push(get(&format!("max.{}", c.name))?);
        nulls.push(get(&format!("null_count.{}", c.name))?);
    }
    for (r, etag) in etags.into_iter().enumerate() {
        let summaries = (0..columns.len())
            .map(|i| {
                let bin = |a: &ArrayRef| {
                    a.as_binary_opt::<i32>()
                        .filter(|b| b.is_valid(r))
                        .map(|b| b.value(r).to_vec())
                };
                let text = |a: &ArrayRef| {
                    a.as_string_opt::<i32>()
                        .filter(|s| s.is_valid(r))
                        .map(|s| s.value(r).to_string())
                };
                crate::catalog::ColumnSummary {
                    min: text(&mins[i]),
                    max: text(&maxs[i]),
                    null_count: nulls[i]
                        .as_primitive_opt::<UInt64Type>()
                        .filter(|a| a.is_valid(r))
                        .map(|a| a.value(r)),
                    lo: bin(&los[i]),
                    hi: bin(&his[i]),
                    bloom: bin(&blooms[i]),
                    decoded: Default::default(),
                }
            })
            .collect();
        entries.push(CatalogEntry {
            path: paths.value(r).to_string(),
            size: size.value(r),
            mtime_ns: mtime.value(r),
            ino: ino.value(r),
            ctime_ns: ctime.value(r),
            etag,
            num_rows: rows.value(r),
            num_row_groups: rgs.value(r),
            footer: footer.value(r),
            columns: summaries,
            unusable: Default::default(),
        });
    }
    Ok(entries)
}
