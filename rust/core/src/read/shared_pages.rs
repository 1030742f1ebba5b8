//! Pages the pieces of one split unit fetch once.
//!
//! The last units of a scan are cut in pieces read on different threads
//! ([`super::split`]). Each piece decodes its own rows, but the chunks' dictionary pages
//! are the same for all of them (a sorted key's dictionary is hundreds of KB), and so is
//! a whole chunk read where there is no offset index to select pages by (a scan with no
//! condition does not load the page index). Fetched by each piece, they would be read as
//! many times as there are pieces.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::Result;
use crate::io::StorageFile;

/// Byte ranges of one file fetched by one piece, handed to the others.
#[derive(Debug, Default)]
pub struct SharedPages {
    held: Mutex<Vec<(Range<u64>, Bytes)>>,
}

impl SharedPages {
    /// Make `ranges` readable from `file` without reading any of them twice across the
    /// pieces: ranges another piece fetched are handed over, the rest are fetched here.
    /// The fetch holds the lock, so a piece asking meanwhile waits for these bytes
    /// instead of reading them too.
    pub fn prefetch(&self, file: &StorageFile, ranges: Vec<Range<u64>>) -> Result<()> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (have, todo): (Vec<_>, Vec<_>) = ranges
            .into_iter()
            .partition(|r| held.iter().any(|(h, _)| h == r));
        file.keep(
            held.iter()
                .filter(|(h, _)| have.contains(h))
                .map(|(h, b)| (h.start, b.clone())),
        );
        file.prefetch(todo.clone())?;
        for r in todo {
            if let Some(bytes) = file.prefetched(r.clone()) {
                held.push((r, bytes));
            }
        }
        Ok(())
    }
}

/// Ranges of one piece's file that every piece of its unit reads alike, fetched through
/// the unit's [`SharedPages`] when the reader asks for one of them.
#[derive(Debug)]
pub struct AlikePages {
    pub shared: Arc<SharedPages>,
    pub ranges: Vec<Range<u64>>,
}

impl AlikePages {
    /// Before `range` of `file` is read: if every piece reads it, fetch it once for all.
    pub fn before_read(&self, file: &StorageFile, range: Range<u64>) -> Result<()> {
        if self.ranges.contains(&range) {
            self.shared.prefetch(file, Vec::from([range]))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::io::{FileIdentity, IoStats};

    #[test]
    fn a_range_is_read_once_for_every_piece() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, (0..=255u8).cycle().take(10_000).collect::<Vec<_>>()).unwrap();
        let path = path.to_string_lossy().into_owned();
        let identity = FileIdentity::stat(&path).unwrap();
        let io = Arc::new(IoStats::default());
        let shared = SharedPages::default();
        let first = StorageFile::open_listed(&path, &identity, io.clone()).unwrap();
        let second = StorageFile::open_listed(&path, &identity, io.clone()).unwrap();
        let first_range = 100..600;
        shared.prefetch(&first, vec![first_range]).unwrap();
        let read = io.bytes();
        shared
            .prefetch(&second, vec![100..600, 2000..2100])
            .unwrap();
        // Only the range the first piece did not fetch was read again.
        assert_eq!(io.bytes() - read, 100);
        assert_eq!(second.prefetched(100..600), first.prefetched(100..600));
        assert_eq!(second.read_range(100, 4).unwrap()[..], [100, 101, 102, 103]);
    }
}
