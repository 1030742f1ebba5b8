//! Planned table snapshots, kept per process.
//!
//! A snapshot never changes once committed, but turning it into pqindex's file list (the
//! Delta log's statistics parsed and converted for every file and column, or Iceberg's
//! manifests converted row by row) costs milliseconds per thousand files on every scan.
//! The list is kept here under a key that names the snapshot exactly: the table, its
//! version and that version's commit time (so a table deleted and written again at the same
//! path is a different key), or the Iceberg table's uuid, snapshot id and schema id. Index
//! files are not part of it: they change without a commit and are listed on every scan.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_schema::{Field, SchemaRef};
use lru::LruCache;

use crate::table::TableFile;

/// Snapshots kept at most (least recently used out first).
const CAPACITY: usize = 16;

/// What a snapshot's planning needs besides its index files.
#[derive(Debug)]
pub struct SnapshotFiles {
    pub schema: SchemaRef,
    pub partitions: Vec<Field>,
    pub files: Arc<Vec<TableFile>>,
}

fn cache() -> &'static Mutex<LruCache<String, Arc<SnapshotFiles>>> {
    static CACHE: OnceLock<Mutex<LruCache<String, Arc<SnapshotFiles>>>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(LruCache::new(
            NonZeroUsize::new(CAPACITY).expect("a positive capacity"),
        ))
    })
}

/// The snapshot kept under `key`, if any.
pub fn get(key: &str) -> Option<Arc<SnapshotFiles>> {
    cache().lock().ok()?.get(key).cloned()
}

/// Keep `files` under `key`.
pub fn put(key: String, files: Arc<SnapshotFiles>) {
    if let Ok(mut c) = cache().lock() {
        c.put(key, files);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Schema;

    #[test]
    fn snapshots_are_kept_by_key() {
        let files = Arc::new(SnapshotFiles {
            schema: Arc::new(Schema::empty()),
            partitions: Vec::new(),
            files: Arc::new(Vec::new()),
        });
        put("test:a:1".into(), files.clone());
        assert!(Arc::ptr_eq(&get("test:a:1").unwrap(), &files));
        assert!(get("test:a:2").is_none());
    }
}
