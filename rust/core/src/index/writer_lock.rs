//! One index writer at a time per local file: `add_indexes`, `drop_indexes` and `recover`
//! take an exclusive advisory lock (`flock`) on the file itself before they read it, so
//! concurrent writers in any threads or processes run one after the other and each builds
//! on the file the previous one left; neither change is lost.
//!
//! Readers never take it: a scan opens the file and reads it as it was planned. The lock
//! is on the file, not a file beside it, so nothing is left behind; since a copy rewrite
//! replaces the file by rename, a writer that waited on the old file sees that the path
//! now names another one and locks that instead. Programs other than pqindex that replace
//! the file do not take the lock: the identity checks of the rewrite catch them
//! (`FileChangedError`). Where the file system has no `flock` (some network file systems
//! refuse it), writers go unlocked and rely on those checks alone.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a waiting writer sleeps between attempts (and checks for cancellation).
const RETRY: Duration = Duration::from_millis(5);

/// Held while a writer changes a file; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    _file: Option<File>,
}

fn try_flock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock on a descriptor this function's caller owns; no memory is passed.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) | Some(libc::EINTR) => Ok(false),
        _ => Err(e),
    }
}

/// Wait for the writer lock of the local file `path` (symbolic links resolved by the
/// caller), until `cancel` is set.
pub fn lock(path: &str, cancel: &AtomicBool) -> Result<WriterLock> {
    loop {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        loop {
            match try_flock(&file) {
                Ok(true) => break,
                Ok(false) => {}
                // No locking here: the rewrite's identity checks still catch a change.
                Err(_) => return Ok(WriterLock { _file: None }),
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            std::thread::sleep(RETRY);
        }
        // The writer we waited for may have renamed a new file over this one.
        let held = file.metadata().map_err(|e| Error::io(path, e))?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                return Ok(WriterLock { _file: Some(file) })
            }
            Ok(_) => continue,
            Err(e) => return Err(Error::io(path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_waits_and_follows_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, b"old").unwrap();
        let path = path.to_string_lossy().into_owned();
        let never = AtomicBool::new(false);
        let first = lock(&path, &never).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            let never = AtomicBool::new(false);
            let l = lock(&p, &never).unwrap();
            tx.send(std::fs::read(&p).unwrap()).unwrap();
            drop(l);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "the second writer must wait");
        // The first writer replaces the file, then lets go.
        let tmp = dir.path().join("tmp");
        std::fs::write(&tmp, b"new").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        drop(first);
        assert_eq!(rx.recv().unwrap(), b"new");
        waiter.join().unwrap();
    }

    #[test]
    fn a_waiting_writer_can_be_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, b"x").unwrap();
        let path = path.to_string_lossy().into_owned();
        let _held = lock(&path, &AtomicBool::new(false)).unwrap();
        let cancel = AtomicBool::new(true);
        assert!(matches!(lock(&path, &cancel), Err(Error::Cancelled)));
    }
}
