//! Local files read with positional reads (`pread`), one shared descriptor per file.
//!
//! `ChunkReader for File` clones the descriptor and shares one seek position; positional
//! reads let many threads read one file without locking, and every read is counted so
//! `bytes_read` reports what was really fetched.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, Result};

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
}

impl FileIdentity {
    pub fn of_metadata(path: &str, md: &std::fs::Metadata) -> Self {
        FileIdentity {
            path: path.to_string(),
            size: md.len(),
            mtime_ns: md.mtime().saturating_mul(1_000_000_000) + md.mtime_nsec(),
            ino: md.ino(),
            ctime_ns: md.ctime().saturating_mul(1_000_000_000) + md.ctime_nsec(),
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
        ]
    }

    pub fn stat(path: &str) -> Result<Self> {
        let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(Self::of_metadata(path, &md))
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
        } else {
            None
        }
    }
}

/// Bytes and requests fetched from storage, shared by every reader of one scan.
#[derive(Debug, Default)]
pub struct IoStats {
    pub bytes: AtomicU64,
    pub requests: AtomicU64,
}

impl IoStats {
    pub fn record(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// An open local file whose identity was checked when it was opened.
#[derive(Debug, Clone)]
pub struct LocalFile {
    file: Arc<File>,
    identity: Arc<FileIdentity>,
    stats: Arc<IoStats>,
}

impl LocalFile {
    /// Open `path` and record its identity from the open descriptor (not a second `stat`
    /// of the path, which could name another file by then).
    pub fn open(path: &str, stats: Arc<IoStats>) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let md = file.metadata().map_err(|e| Error::io(path, e))?;
        if md.is_dir() {
            return Err(Error::invalid_file(
                path,
                "is a directory, not a Parquet file",
            ));
        }
        Ok(LocalFile {
            file: Arc::new(file),
            identity: Arc::new(FileIdentity::of_metadata(path, &md)),
            stats,
        })
    }

    /// Open `path` and fail unless it is still the file described by `expected`.
    pub fn open_expecting(
        path: &str,
        expected: &FileIdentity,
        stats: Arc<IoStats>,
    ) -> Result<Self> {
        let file = Self::open(path, stats)?;
        if let Some(what) = file.identity.difference(expected) {
            return Err(Error::FileChanged {
                path: path.to_string(),
                what: what.to_string(),
            });
        }
        Ok(file)
    }

    pub fn identity(&self) -> &Arc<FileIdentity> {
        &self.identity
    }

    pub fn path(&self) -> &str {
        &self.identity.path
    }

    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }

    /// Read exactly `range`, refusing ranges past the end of the file before allocating:
    /// offsets and lengths come from metadata that may be damaged or hostile.
    pub fn read_range(&self, start: u64, length: usize) -> Result<Bytes> {
        let end = start.checked_add(length as u64);
        match end {
            Some(end) if end <= self.identity.size => {}
            _ => {
                return Err(Error::invalid_file(
                    self.path(),
                    format!(
                        "a read of {length} bytes at offset {start} goes past the end of the file ({} bytes)",
                        self.identity.size
                    ),
                ))
            }
        }
        let mut buf = vec![0u8; length];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| Error::io(self.path(), e))?;
        self.stats.record(length as u64);
        Ok(Bytes::from(buf))
    }
}

impl Length for LocalFile {
    fn len(&self) -> u64 {
        self.identity.size
    }
}

impl ChunkReader for LocalFile {
    type T = PositionalRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<PositionalRead> {
        Ok(PositionalRead {
            file: self.clone(),
            pos: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read_range(start, length).map_err(ParquetError::from)
    }
}

/// A `Read` at a position of its own, for readers that stream page headers.
pub struct PositionalRead {
    file: LocalFile,
    pos: u64,
}

impl Read for PositionalRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let remaining = self.file.identity.size.saturating_sub(self.pos);
        let want = buf.len().min(remaining.min(usize::MAX as u64) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        self.file.stats.record(n as u64);
        Ok(n)
    }
}
