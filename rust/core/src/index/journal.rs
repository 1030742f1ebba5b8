//! Changing a file's index area in place, for files too large to copy: the Parquet bytes
//! stay where they are and only the tail (index blocks and footer) is rewritten, under a
//! journal that makes the change all or nothing across crashes.
//!
//! 1. The journal, `.<name>.pqindex-journal` beside the file (hidden from Spark's and
//!    pqindex's listings), records where the tail starts, the old tail and the new one,
//!    under a CRC-32C; it is made durable (file and directory synced) before the file is
//!    touched.
//! 2. The new tail is written over the old one and the file cut to its new length, then
//!    synced.
//! 3. The journal is removed.
//!
//! A crash before step 1 ends leaves an incomplete journal and the old file: `recover`
//! discards the journal. A crash after it leaves a complete journal and a file that may be
//! broken: `recover` writes the new tail again (the change completes). Readers other than
//! pqindex that open the file during step 2 may see a broken tail; a change by copy
//! (the default) never shows them one. Changes and `recover` hold the file's writer lock
//! (writer_lock.rs), so `recover` never completes a journal another writer is still
//! applying.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::error::{Error, Result};
use crate::io::FileIdentity;

const MAGIC: &[u8; 8] = b"PQIXJRNL";
const VERSION: u32 = 1;
/// Bytes before the tail recorded to recognise the file a journal belongs to.
const GUARD: u64 = 4096;

/// The journal of `target`.
pub fn journal_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.pqindex-journal"))
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(&path.to_string_lossy(), e)
}

fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().and_then(|d| File::open(d).ok()) {
        let _ = dir.sync_all();
    }
}

/// What a journal holds.
struct Entry {
    cut: u64,
    guard: Vec<u8>,
    new_tail: Vec<u8>,
}

fn encode(cut: u64, guard: &[u8], old_tail: &[u8], new_tail: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + guard.len() + old_tail.len() + new_tail.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&cut.to_le_bytes());
    for part in [guard, old_tail, new_tail] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The entry of a complete journal; `None` when it is incomplete or damaged (it was being
/// written when the process died, so the file was never touched).
fn decode(bytes: &[u8]) -> Option<Entry> {
    let (body, crc) = bytes.split_at(bytes.len().checked_sub(4)?);
    if crc32c::crc32c(body).to_le_bytes() != crc || body.get(..8)? != MAGIC {
        return None;
    }
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?))
    };
    if u32::from_le_bytes(body.get(8..12)?.try_into().ok()?) != VERSION {
        return None;
    }
    let cut = u64_at(12)?;
    let mut at = 20usize;
    let mut parts = Vec::new();
    for _ in 0..3 {
        let len = usize::try_from(u64_at(at)?).ok()?;
        let start = at.checked_add(8)?;
        let end = start.checked_add(len)?;
        parts.push(body.get(start..end)?.to_vec());
        at = end;
    }
    let new_tail = parts.pop()?;
    let _old_tail = parts.pop()?;
    let guard = parts.pop()?;
    Some(Entry {
        cut,
        guard,
        new_tail,
    })
}

/// Write `tail` at `cut` and end the file after it.
fn apply(target: &Path, cut: u64, tail: &[u8]) -> Result<u64> {
    let f = OpenOptions::new()
        .write(true)
        .open(target)
        .map_err(|e| io(target, e))?;
    f.write_all_at(tail, cut).map_err(|e| io(target, e))?;
    let size = cut + tail.len() as u64;
    f.set_len(size).map_err(|e| io(target, e))?;
    f.sync_all().map_err(|e| io(target, e))?;
    Ok(size)
}

fn guard_of(f: &File, target: &Path, cut: u64) -> Result<Vec<u8>> {
    let start = cut.saturating_sub(GUARD);
    let mut guard = vec![0u8; (cut - start) as usize];
    f.read_exact_at(&mut guard, start)
        .map_err(|e| io(target, e))?;
    Ok(guard)
}

/// Replace the bytes of `target` from `cut` to its end by `new_tail`, under a journal. The
/// file must still have identity `before`. Returns the new size.
pub fn rewrite_tail(
    target: &Path,
    cut: u64,
    new_tail: &[u8],
    before: &FileIdentity,
) -> Result<u64> {
    let journal = journal_path(target);
    if journal.exists() {
        return Err(Error::Source(format!(
            "{}: an earlier in-place index change did not finish; run pqindex.recover on it first",
            target.display()
        )));
    }
    let f = File::open(target).map_err(|e| io(target, e))?;
    let size = f.metadata().map_err(|e| io(target, e))?.len();
    if size < cut {
        return Err(Error::FileChanged {
            path: target.to_string_lossy().into_owned(),
            what: "it became shorter while indexes were built".into(),
        });
    }
    let mut old_tail = vec![0u8; (size - cut) as usize];
    f.read_exact_at(&mut old_tail, cut)
        .map_err(|e| io(target, e))?;
    let guard = guard_of(&f, target, cut)?;
    drop(f);
    let entry = encode(cut, &guard, &old_tail, new_tail);
    {
        let mut j = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&journal)
            .map_err(|e| io(&journal, e))?;
        j.write_all(&entry).map_err(|e| io(&journal, e))?;
        j.sync_all().map_err(|e| io(&journal, e))?;
    }
    sync_dir(&journal);
    let now = FileIdentity::stat(&target.to_string_lossy())?;
    if let Some(what) = before.difference(&now) {
        let _ = std::fs::remove_file(&journal);
        return Err(Error::FileChanged {
            path: target.to_string_lossy().into_owned(),
            what: format!("its {what} changed while indexes were built"),
        });
    }
    let size = apply(target, cut, new_tail)?;
    std::fs::remove_file(&journal).map_err(|e| io(&journal, e))?;
    sync_dir(&journal);
    Ok(size)
}

/// What `recover` found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// No unfinished change.
    Nothing,
    /// A change that had not started: its incomplete journal was removed.
    Discarded,
    /// A change that had started: it was completed.
    Completed,
}

/// Finish or discard an interrupted in-place index change of `target`.
pub fn recover(target: &Path) -> Result<Recovery> {
    recover_until(target, &AtomicBool::new(false))
}

/// `recover`, giving up with `Error::Cancelled` if `cancel` is set while it waits for
/// another writer of the file.
pub fn recover_until(target: &Path, cancel: &AtomicBool) -> Result<Recovery> {
    let journal = journal_path(target);
    if !journal.exists() {
        return Ok(Recovery::Nothing);
    }
    let _lock = crate::index::writer_lock::lock(&target.to_string_lossy(), cancel)?;
    let mut bytes = Vec::new();
    match File::open(&journal) {
        Ok(mut j) => {
            j.read_to_end(&mut bytes).map_err(|e| io(&journal, e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recovery::Nothing),
        Err(e) => return Err(io(&journal, e)),
    }
    let Some(entry) = decode(&bytes) else {
        std::fs::remove_file(&journal).map_err(|e| io(&journal, e))?;
        sync_dir(&journal);
        return Ok(Recovery::Discarded);
    };
    let f = File::open(target).map_err(|e| io(target, e))?;
    let size = f.metadata().map_err(|e| io(target, e))?.len();
    let matches = size >= entry.cut
        && entry.cut >= entry.guard.len() as u64
        && guard_of(&f, target, entry.cut)? == entry.guard;
    drop(f);
    if !matches {
        return Err(Error::Source(format!(
            "{}: its in-place index journal ({}) describes another file; it was left as it is",
            target.display(),
            journal.display()
        )));
    }
    apply(target, entry.cut, &entry.new_tail)?;
    std::fs::remove_file(&journal).map_err(|e| io(&journal, e))?;
    sync_dir(&journal);
    Ok(Recovery::Completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journals_round_trip_and_damage_reads_as_incomplete() {
        let bytes = encode(10, b"guard", b"old", b"new tail");
        let e = decode(&bytes).unwrap();
        assert_eq!(
            (e.cut, e.guard.as_slice(), e.new_tail.as_slice()),
            (10, &b"guard"[..], &b"new tail"[..])
        );
        for cut in [0, 5, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_none());
        }
        let mut bad = bytes.clone();
        bad[30] ^= 1;
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn every_crash_point_recovers_to_the_new_tail_or_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let old: Vec<u8> = [&body[..], b"OLD TAIL"].concat();
        let new_tail = b"a longer new tail".to_vec();
        let cut = body.len() as u64;
        // A finished change.
        std::fs::write(&target, &old).unwrap();
        let before = FileIdentity::stat(&target.to_string_lossy()).unwrap();
        rewrite_tail(&target, cut, &new_tail, &before).unwrap();
        assert_eq!(
            std::fs::read(&target).unwrap(),
            [&body[..], &new_tail].concat()
        );
        assert!(!journal_path(&target).exists());
        assert_eq!(recover(&target).unwrap(), Recovery::Nothing);
        // A crash while the journal was written: the file is the old one.
        std::fs::write(&target, &old).unwrap();
        let entry = encode(cut, &body[body.len() - 4096..], b"OLD TAIL", &new_tail);
        std::fs::write(journal_path(&target), &entry[..entry.len() / 2]).unwrap();
        assert_eq!(recover(&target).unwrap(), Recovery::Discarded);
        assert_eq!(std::fs::read(&target).unwrap(), old);
        // A crash at every point of the tail's rewrite: completed.
        for written in [0, 3, new_tail.len()] {
            let mut partial = [&body[..], &new_tail[..written]].concat();
            partial.extend_from_slice(&b"OLD TAIL"[written.min(8)..]);
            std::fs::write(&target, &partial).unwrap();
            std::fs::write(journal_path(&target), &entry).unwrap();
            assert_eq!(recover(&target).unwrap(), Recovery::Completed);
            assert_eq!(
                std::fs::read(&target).unwrap(),
                [&body[..], &new_tail].concat()
            );
        }
        // A journal of another file is refused and kept.
        std::fs::write(&target, vec![7u8; 20_000]).unwrap();
        std::fs::write(journal_path(&target), &entry).unwrap();
        assert!(matches!(recover(&target), Err(Error::Source(_))));
        assert!(journal_path(&target).exists());
        assert!(rewrite_tail(&target, 0, b"", &before).is_err());
    }
}
