//! What a file is (its identity) and what reading it cost (bytes and requests).

use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;

/// What tells one version of a file from another. Size and modification time alone miss a
/// rewrite within the timestamp granularity; the inode catches a replace-by-rename and the
/// change time (which no user call can set) catches a rewrite in place.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
    pub ctime_ns: i64,
    /// The object store's ETag (or version id): what changes when an object is replaced.
    /// Local files have none; their inode and change time play that part.
    pub etag: Option<String>,
}

impl FileIdentity {
    pub fn of_metadata(path: &str, md: &std::fs::Metadata) -> Self {
        FileIdentity {
            path: path.to_string(),
            size: md.len(),
            mtime_ns: md.mtime().saturating_mul(1_000_000_000) + md.mtime_nsec(),
            ino: md.ino(),
            ctime_ns: md.ctime().saturating_mul(1_000_000_000) + md.ctime_nsec(),
            etag: None,
        }
    }

    /// The Arrow fields tables of files carry their identities in (units, catalogs).
    pub fn arrow_fields() -> Vec<arrow_schema::Field> {
        use arrow_schema::{DataType, Field};
        vec![
            Field::new("path", DataType::Utf8, false),
            Field::new("size", DataType::UInt64, false),
            Field::new("mtime_ns", DataType::Int64, false),
            Field::new("ino", DataType::UInt64, false),
            Field::new("ctime_ns", DataType::Int64, false),
            Field::new("etag", DataType::Utf8, true),
        ]
    }

    /// The ETag of each row of a table of identities; tables written before objects were
    /// read have no `etag` column, and their rows none.
    pub fn etags(batch: &arrow_array::RecordBatch) -> Result<Vec<Option<String>>> {
        use arrow_array::cast::AsArray;
        let Some(column) = batch.column_by_name("etag") else {
            return Ok(vec![None; batch.num_rows()]);
        };
        let column = arrow_cast::cast(column, &arrow_schema::DataType::Utf8)?;
        Ok(column
            .as_string::<i32>()
            .iter()
            .map(|e| e.map(str::to_string))
            .collect())
    }

    /// Which part of the identity differs, for error messages.
    pub fn difference(&self, other: &FileIdentity) -> Option<&'static str> {
        if self.size != other.size {
            Some("size")
        } else if self.mtime_ns != other.mtime_ns {
            Some("modification time")
        } else if self.ino != other.ino {
            Some("inode")
        } else if self.ctime_ns != other.ctime_ns {
            Some("change time")
        } else if self.etag != other.etag {
            Some("ETag")
        } else {
            None
        }
    }
}

/// Bytes and requests fetched from storage, shared by every reader of one scan.
#[derive(Debug, Default)]
pub struct IoStats {
    pub bytes: AtomicU64,
    /// Every request: reads, HEADs and listing pages.
    pub requests: AtomicU64,
    /// The listing part of `requests`.
    pub list_requests: AtomicU64,
    /// Requests repeated after a failure (a 5xx, a broken connection, a short body).
    pub retries: AtomicU64,
    /// The first requests, as `explain()` shows them.
    log: std::sync::Mutex<Vec<String>>,
}

/// Requests `IoStats` describes one by one; later ones are only counted.
pub const LOGGED_REQUESTS: usize = 32;

impl IoStats {
    pub fn record(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Count one read of `range` of `path`, and describe it while the log has room.
    pub fn record_read(&self, path: &str, range: std::ops::Range<u64>) {
        self.bytes
            .fetch_add(range.end - range.start, Ordering::Relaxed);
        let before = self.requests.fetch_add(1, Ordering::Relaxed);
        // Only the first requests take the lock: reads are a hot path.
        if before >= LOGGED_REQUESTS as u64 + self.list_requests() {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() < LOGGED_REQUESTS {
            log.push(format!(
                "{path} bytes {}-{} ({} B)",
                range.start,
                range.end,
                range.end - range.start
            ));
        }
    }

    pub fn logged_requests(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn record_listing(&self, requests: u64) {
        self.requests.fetch_add(requests, Ordering::Relaxed);
        self.list_requests.fetch_add(requests, Ordering::Relaxed);
    }

    pub fn list_requests(&self) -> u64 {
        self.list_requests.load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub fn record_retries(&self, n: u64) {
        self.retries.fetch_add(n, Ordering::Relaxed);
    }

    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
}
