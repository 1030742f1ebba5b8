//! Adding, replacing and dropping embedded indexes in an existing Parquet file, crash-safe.
//!
//! Index blocks live after every Parquet structure (column chunks, page indexes, bloom
//! filters) and before the footer. Changing them rewrites that tail: the Parquet bytes are
//! copied unchanged into a temporary file beside the original, the kept and new blocks are
//! appended, then the original footer with updated `pqindex.index.*` entries. The temporary
//! file replaces the original by an atomic rename, and only if the original did not change
//! meanwhile, so the path always holds either the old file or the new one. A cancelled
//! rewrite (Ctrl-C) stops before the rename and removes its temporary file.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::index::container::{block_checksum, encode_block, BLOCK_VERSION};
use crate::index::journal::rewrite_tail;
use crate::index::kind::KindInfo;
use crate::index::locator::{locators, Granularity, Locator, KEY_PREFIX};
use crate::index::registry;
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::footer_splice::with_key_values;
use crate::metadata::{footer_start, read_footer};

/// How a file's index area is changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RewriteMode {
    /// Copy the Parquet bytes into a new file beside the old one and rename it over: every
    /// reader sees the old file or the new one.
    #[default]
    Copy,
    /// Rewrite only the tail of the file, under a journal (journal.rs): for files too
    /// large to copy; other readers may see a broken tail while it is rewritten.
    InPlace,
}

/// An index to embed.
#[derive(Debug, Clone)]
pub struct NewIndex {
    pub kind: &'static KindInfo,
    pub columns: Vec<String>,
    pub granularity: Granularity,
    pub payload: Vec<u8>,
}

/// What a rewrite did.
#[derive(Debug, Default)]
pub struct AppendReport {
    /// The locators now in the file.
    pub indexes: Vec<Locator>,
    /// Existing entries that were damaged and dropped, with why.
    pub dropped_damaged: Vec<String>,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl AppendReport {
    /// The report with messages about the working copy `local` naming `path` instead.
    pub fn named(mut self, local: &str, path: &str) -> Self {
        for m in &mut self.dropped_damaged {
            *m = m.replace(local, path);
        }
        self
    }
}

/// The indexes a file's footer declares (damaged entries are skipped).
pub fn list_indexes(path: &str) -> Result<Vec<Locator>> {
    let file = StorageFile::open(path, Arc::new(IoStats::default()))?;
    let md = read_footer(&file)?;
    Ok(locators(md.file_metadata().key_value_metadata())
        .into_iter()
        .filter_map(|(_, l)| l.ok())
        .collect())
}

/// `path` with every symbolic link resolved (unchanged when it is none).
fn resolve_symlinks(path: &str) -> Result<String> {
    let is_link = std::fs::symlink_metadata(path)
        .map_err(|e| Error::io(path, e))?
        .file_type()
        .is_symlink();
    if !is_link {
        return Ok(path.to_string());
    }
    let target = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    Ok(target.to_string_lossy().into_owned())
}

/// Rewrite `path` with `add` embedded (replacing indexes of the same identity) and without
/// the existing indexes for which `drop` is true. With `expected`, the file must still have
/// that identity (the one the new indexes were built from).
#[cfg(test)]
pub fn rewrite_indexes(
    path: &str,
    add: Vec<NewIndex>,
    drop: &dyn Fn(&Locator) -> bool,
    expected: Option<&FileIdentity>,
) -> Result<AppendReport> {
    let never = AtomicBool::new(false);
    rewrite_indexes_with(path, add, drop, expected, RewriteMode::Copy, &never)
}

/// Bytes copied between two looks at the cancel flag.
const COPY_CHUNK: u64 = 16 << 20;

fn cancelled(cancel: &AtomicBool) -> Result<()> {
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    Ok(())
}

/// `rewrite_indexes`, by copy or in place, until `cancel` is set. The caller holds the
/// file's writer lock (writer_lock.rs) if it wants concurrent writers to serialise.
pub fn rewrite_indexes_with(
    path: &str,
    add: Vec<NewIndex>,
    drop: &dyn Fn(&Locator) -> bool,
    expected: Option<&FileIdentity>,
    mode: RewriteMode,
    cancel: &AtomicBool,
) -> Result<AppendReport> {
    // A symlink stays a symlink: the file it points to is rewritten beside itself.
    let resolved = resolve_symlinks(path)?;
    let path = resolved.as_str();
    let file = StorageFile::open(path, Arc::new(IoStats::default()))?;
    let before = file.identity().as_ref().clone();
    if let Some(what) = expected.and_then(|e| e.difference(&before)) {
        return Err(Error::FileChanged {
            path: path.into(),
            what: format!("its {what} changed while its indexes were built"),
        });
    }
    let md = read_footer(&file)?;
    let fmd = md.file_metadata();
    let body_end = footer_start(&file)?;
    // The footer is rewritten from its own bytes with only the index entries changed, so
    // every field its writer wrote survives (see metadata::footer_splice).
    let footer = file.read_range(body_end, (before.size - 8 - body_end) as usize)?;
    let parquet_end = parquet_end(&md).min(body_end);

    let mut report = AppendReport {
        bytes_before: before.size,
        ..Default::default()
    };
    // Existing blocks to keep, read and checked now; damaged entries are dropped.
    let replaced = |l: &Locator| {
        add.iter()
            .any(|n| (n.kind.name, n.columns.as_slice(), n.granularity) == l.identity())
    };
    let mut blocks: Vec<(Locator, Vec<u8>)> = Vec::new();
    let mut index_start = body_end;
    for (key, parsed) in locators(fmd.key_value_metadata()) {
        // Only a block that checks out marks where the index area starts: a damaged entry
        // must not make Parquet bytes look like index bytes.
        match parsed.and_then(|l| read_block(&file, &l, body_end).map(|b| (l, b))) {
            Ok((l, bytes)) => {
                index_start = index_start.min(l.offset);
                if !replaced(&l) && !drop(&l) {
                    blocks.push((l, bytes));
                }
            }
            Err(e) => report.dropped_damaged.push(format!("{key}: {e}")),
        }
    }
    // Everything before the first index block is Parquet and is copied as it is.
    let copy_end = index_start.max(parquet_end);
    for n in add {
        let block = encode_block(n.kind.code, &n.payload);
        let l = Locator {
            kind: n.kind.name.into(),
            columns: n.columns,
            granularity: n.granularity,
            offset: 0,
            length: block.len() as u64,
            checksum: block_checksum(&block).expect("a block has a checksum"),
            version: BLOCK_VERSION,
        };
        blocks.push((l, block));
    }

    // The new tail: the blocks, then the footer with their locators.
    let mut tail: Vec<u8> = Vec::new();
    let mut kv: Vec<(String, Option<String>)> = fmd
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter(|e| !e.key.starts_with(KEY_PREFIX))
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    for (i, (mut l, bytes)) in blocks.into_iter().enumerate() {
        l.offset = copy_end + tail.len() as u64;
        tail.extend_from_slice(&bytes);
        kv.push((format!("{KEY_PREFIX}{i}"), Some(l.to_json())));
        report.indexes.push(l);
    }
    let footer = with_key_values(&footer, &kv)
        .map_err(|e| Error::invalid_file(path, format!("footer unreadable: {e}")))?;
    let length = u32::try_from(footer.len())
        .map_err(|_| Error::invalid_file(path, "footer longer than 4 GiB"))?;
    tail.extend_from_slice(&footer);
    tail.extend_from_slice(&length.to_le_bytes());
    tail.extend_from_slice(b"PAR1");

    let target = Path::new(path);
    cancelled(cancel)?;
    if mode == RewriteMode::InPlace {
        remove_checksum_sidecar(target)?;
        report.bytes_after = rewrite_tail(target, copy_end, &tail, &before)?;
        return Ok(report);
    }
    let tmp = crate::io::file::temp_path(target);
    let result = (|| -> Result<u64> {
        let out = File::create(&tmp).map_err(|e| Error::io(path, e))?;
        let mut out = BufWriter::new(out);
        let mut src = File::open(path).map_err(|e| Error::io(path, e))?;
        src.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(path, e))?;
        // In chunks (each still a `copy_file_range`), looking at the cancel flag between.
        let mut copied = 0u64;
        while copied < copy_end {
            cancelled(cancel)?;
            let chunk = COPY_CHUNK.min(copy_end - copied);
            let n = std::io::copy(&mut (&mut src).take(chunk), &mut out)
                .map_err(|e| Error::io(path, e))?;
            if n == 0 {
                break;
            }
            copied += n;
        }
        if copied != copy_end {
            return Err(Error::FileChanged {
                path: path.into(),
                what: "it became shorter while indexes were added".into(),
            });
        }
        out.write_all(&tail).map_err(|e| Error::io(path, e))?;
        let out = out
            .into_inner()
            .map_err(|e| Error::io(path, e.into_error()))?;
        // The new file takes the old one's permissions (a private file stays private).
        if let Ok(meta) = std::fs::metadata(path) {
            out.set_permissions(meta.permissions())
                .map_err(|e| Error::io(path, e))?;
        }
        out.sync_all().map_err(|e| Error::io(path, e))?;
        // The last point a cancel is honoured: after the rename the change is made.
        cancelled(cancel)?;
        let now = FileIdentity::stat(path)?;
        if let Some(what) = before.difference(&now) {
            return Err(Error::FileChanged {
                path: path.into(),
                what: format!("its {what} changed while indexes were added"),
            });
        }
        remove_checksum_sidecar(target)?;
        std::fs::rename(&tmp, target).map_err(|e| Error::io(path, e))?;
        if let Some(dir) = target.parent().and_then(|d| File::open(d).ok()) {
            let _ = dir.sync_all();
        }
        Ok(FileIdentity::stat(path)?.size)
    })();
    match result {
        Ok(size) => {
            report.bytes_after = size;
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Hadoop's local file system (what Spark writes through on `file:` paths) keeps a CRC of
/// each file in a hidden `.<name>.crc` beside it and refuses to read a file that no longer
/// matches it. A file whose tail is rewritten loses that sidecar, before the rename, so a
/// crash in between leaves the old file readable without it; Hadoop then reads it unchecked.
fn remove_checksum_sidecar(target: &Path) -> Result<()> {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Ok(());
    };
    let crc = dir.join(format!(".{}.crc", name.to_string_lossy()));
    match std::fs::remove_file(&crc) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io(&crc.to_string_lossy(), e))
        }
        _ => Ok(()),
    }
}

fn read_block(file: &StorageFile, l: &Locator, body_end: u64) -> Result<Vec<u8>> {
    // Checks magic, version, length and checksum before keeping the bytes.
    registry::open_block(file, l, body_end)?.1.payload()?;
    Ok(file.read_range(l.offset, l.length as usize)?.to_vec())
}

/// The end of the last byte the Parquet metadata points at: column chunks, page indexes and
/// bloom filters. Index blocks are only ever written after it.
fn parquet_end(md: &parquet::file::metadata::ParquetMetaData) -> u64 {
    let mut end = 4u64;
    let mut extend = |offset: Option<i64>, len: Option<i64>| {
        if let (Some(o), Some(l)) = (offset, len) {
            end = end.max((o.max(0) as u64).saturating_add(l.max(0) as u64));
        }
    };
    for rg in md.row_groups() {
        for c in rg.columns() {
            let (start, len) = c.byte_range();
            extend(Some(start as i64), Some(len as i64));
            extend(
                c.column_index_offset(),
                c.column_index_length().map(i64::from),
            );
            extend(
                c.offset_index_offset(),
                c.offset_index_length().map(i64::from),
            );
            extend(
                c.bloom_filter_offset(),
                c.bloom_filter_length().map(i64::from),
            );
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{self, int64s, keys, strings, Layout};

    fn write_file(dir: &Path) -> String {
        testing::write_file(
            dir,
            "t.parquet",
            vec![
                ("k", int64s(0..5000)),
                ("s", strings((0..5000).map(|i| Some(format!("s{i}"))))),
            ],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                bloom: &["s"],
            },
        )
    }

    fn scan(path: &str, predicate: &str) -> (Vec<i64>, Vec<(&'static str, u64)>) {
        let s = testing::plan(path, predicate);
        (keys(s.stream()), s.metrics())
    }

    fn metric(m: &[(&'static str, u64)], key: &str) -> u64 {
        m.iter().find(|(k, _)| *k == key).unwrap().1
    }

    fn index(kind: &str, column: &str, payload: &[u8]) -> NewIndex {
        NewIndex {
            kind: registry::by_name(kind).unwrap().info(),
            columns: vec![column.into()],
            granularity: Granularity::RowGroup,
            payload: payload.to_vec(),
        }
    }

    #[test]
    fn indexes_are_added_replaced_and_dropped_without_touching_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let queries = ["k BETWEEN 1234 AND 1240", "s = 's4321'"];
        let before: Vec<_> = queries.iter().map(|q| scan(&path, q)).collect();

        let r = rewrite_indexes(
            &path,
            vec![
                index("distinct", "k", b"first"),
                index("bloom", "s", &[9u8; 1000]),
            ],
            &|_| false,
            None,
        )
        .unwrap();
        assert_eq!(r.indexes.len(), 2);
        assert!(r.bytes_after > r.bytes_before + 1000);
        let listed = list_indexes(&path).unwrap();
        assert_eq!(listed, r.indexes);
        let file = StorageFile::open(&path, Arc::new(IoStats::default())).unwrap();
        let body_end = footer_start(&file).unwrap();
        assert_eq!(
            registry::open_block(&file, &listed[0], body_end)
                .and_then(|(_, b)| b.payload())
                .unwrap(),
            b"first"
        );

        // The data, statistics, page index and blooms still serve every query the same way.
        for (q, (rows, m)) in queries.iter().zip(&before) {
            let (rows2, m2) = scan(&path, q);
            assert_eq!(&rows2, rows, "{q}");
            for key in [
                "pages_pruned",
                "row_groups_pruned_by_stats",
                "row_groups_pruned_by_bloom",
            ] {
                assert_eq!(metric(&m2, key), metric(m, key), "{q}: {key}");
            }
        }

        // Same identity replaces; the file does not grow by the old block.
        let r2 = rewrite_indexes(
            &path,
            vec![index("distinct", "k", b"second")],
            &|_| false,
            None,
        )
        .unwrap();
        assert_eq!(r2.indexes.len(), 2);
        // One payload byte more, and locator offsets with other digits; not the old block.
        assert!(
            r2.bytes_after < r.bytes_after + 8,
            "{} vs {}",
            r2.bytes_after,
            r.bytes_after
        );
        let file = StorageFile::open(&path, Arc::new(IoStats::default())).unwrap();
        let body_end = footer_start(&file).unwrap();
        let distinct = list_indexes(&path)
            .unwrap()
            .into_iter()
            .find(|l| l.kind == "distinct");
        assert_eq!(
            registry::open_block(&file, &distinct.unwrap(), body_end)
                .and_then(|(_, b)| b.payload())
                .unwrap(),
            b"second"
        );

        // Dropping everything leaves no index bytes behind (the footer is re-encoded, which
        // may differ from the original writer's by a few bytes), and is stable.
        let r3 = rewrite_indexes(&path, vec![], &|_| true, None).unwrap();
        assert!(r3.indexes.is_empty());
        assert!(
            r3.bytes_after < r.bytes_before + 64,
            "{} vs {}",
            r3.bytes_after,
            r.bytes_before
        );
        let r4 = rewrite_indexes(&path, vec![], &|_| true, None).unwrap();
        assert_eq!(r4.bytes_after, r3.bytes_after);
        assert_eq!(scan(&path, queries[1]).0, before[1].0);
    }

    #[test]
    fn a_cancelled_rewrite_leaves_the_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let before = std::fs::read(&path).unwrap();
        for mode in [RewriteMode::Copy, RewriteMode::InPlace] {
            let add = vec![index("bloom", "s", b"b")];
            let r =
                rewrite_indexes_with(&path, add, &|_| false, None, mode, &AtomicBool::new(true));
            assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
            assert_eq!(std::fs::read(&path).unwrap(), before);
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(names.len(), 1, "{names:?}");
        }
    }

    #[test]
    fn damaged_blocks_are_reported_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let r =
            rewrite_indexes(&path, vec![index("hll", "k", &[1u8; 64])], &|_| false, None).unwrap();
        // Flip a byte inside the block's payload.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[r.indexes[0].offset as usize + 20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let file = StorageFile::open(&path, Arc::new(IoStats::default())).unwrap();
        let body_end = footer_start(&file).unwrap();
        assert!(matches!(
            registry::open_block(&file, &r.indexes[0], body_end).and_then(|(_, b)| b.payload()),
            Err(Error::InvalidIndex(_))
        ));
        let r2 = rewrite_indexes(&path, vec![index("bloom", "s", b"b")], &|_| false, None).unwrap();
        assert_eq!(r2.dropped_damaged.len(), 1, "{:?}", r2.dropped_damaged);
        assert_eq!(r2.indexes.len(), 1);
        assert_eq!(scan(&path, "k = 7").0, vec![7]);
    }

    #[test]
    fn a_symlink_stays_a_link_to_the_rewritten_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let link = dir.path().join("link.parquet");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let link = link.to_string_lossy().into_owned();
        let r = rewrite_indexes(&link, vec![index("bloom", "s", b"b")], &|_| false, None).unwrap();
        assert_eq!(r.indexes.len(), 1);
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(list_indexes(&path).unwrap().len(), 1);
        assert_eq!(list_indexes(&link).unwrap().len(), 1);
    }
}
