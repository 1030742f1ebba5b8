//! One error type for the core. Each variant maps to one Python exception class, so the
//! variant says what kind of problem it is, and the message says which file and why.

use parquet::errors::ParquetError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path named by the caller does not exist.
    #[error("{path}: no such file or directory")]
    NotFound { path: String },

    /// The file is not Parquet, or its footer, page index, bloom filter or pages are damaged.
    #[error("{path}: {reason}")]
    InvalidFile { path: String, reason: String },

    /// The file is encrypted (Parquet modular encryption) and the keys it needs were not
    /// given, or do not decrypt it.
    #[error("{path}: {reason}")]
    Encrypted { path: String, reason: String },

    /// An embedded index is damaged, truncated or of a version this code does not read.
    /// Readers skip such an index and stay correct; writers refuse to build on it.
    #[error("embedded index: {0}")]
    InvalidIndex(String),

    /// The predicate cannot be parsed or bound to the schema.
    #[error("{0}")]
    Predicate(String),

    /// Valid input that is not supported.
    #[error("{0}")]
    Unsupported(String),

    /// An argument other than the predicate is invalid (an unknown column, a bad size).
    #[error("{0}")]
    InvalidArgument(String),

    /// The source cannot be read as loose Parquet files.
    #[error("{0}")]
    Source(String),

    /// A file's identity differs from the one recorded when the scan was planned.
    #[error("{path}: file changed since the scan was planned ({what})")]
    FileChanged { path: String, what: String },

    /// Storage failed for a reason other than a missing file.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// A Parquet error with no file to attribute it to (writing, mostly).
    #[error("parquet: {0}")]
    Parquet(#[from] ParquetError),

    /// An Arrow error with no file to attribute it to.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),

    /// The caller asked the work to stop.
    #[error("cancelled")]
    Cancelled,
}

/// The message a caught panic carried, for the error that replaces it.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panicked".to_string())
}

impl Error {
    pub fn predicate(msg: impl Into<String>) -> Self {
        Error::Predicate(msg.into())
    }

    pub fn unsupported(msg: impl Into<String>) -> Self {
        Error::Unsupported(msg.into())
    }

    pub fn invalid_file(path: &str, reason: impl Into<String>) -> Self {
        Error::InvalidFile {
            path: path.to_string(),
            reason: reason.into(),
        }
    }

    /// An I/O error on `path`, with a missing file told apart from other failures.
    pub fn io(path: &str, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound {
                path: path.to_string(),
            }
        } else {
            Error::Io {
                path: path.to_string(),
                source,
            }
        }
    }

    /// Name the table a failing data file belongs to: a table's files are found through
    /// its metadata, so a missing or damaged one is the table's problem to report.
    pub fn in_table(self, root: &str) -> Self {
        let named = |path: String| format!("table {root}: data file {path}");
        match self {
            Error::NotFound { path } => Error::NotFound { path: named(path) },
            Error::InvalidFile { path, reason } => Error::InvalidFile {
                path: named(path),
                reason,
            },
            Error::FileChanged { path, what } => Error::FileChanged {
                path: named(path),
                what,
            },
            Error::Encrypted { path, reason } => Error::Encrypted {
                path: named(path),
                reason,
            },
            Error::Io { path, source } => Error::Io {
                path: named(path),
                source,
            },
            other => other,
        }
    }

    /// Attribute a Parquet or Arrow failure to the file being read: while reading, such a
    /// failure means the bytes on disk are not what the footer promised.
    pub fn in_file(self, path: &str) -> Self {
        match self {
            Error::Parquet(ParquetError::External(e)) => match e.downcast::<Error>() {
                Ok(inner) => inner.in_file(path),
                // A reader's `Read` carries a storage failure inside an io::Error.
                Err(e) => match e.downcast::<std::io::Error>() {
                    Ok(io) if io.get_ref().is_some_and(|i| i.is::<Error>()) => {
                        match io.into_inner().map(|i| i.downcast::<Error>()) {
                            Some(Ok(inner)) => inner.in_file(path),
                            _ => Error::invalid_file(path, "unreadable"),
                        }
                    }
                    Ok(io) => Error::invalid_file(path, io.to_string()),
                    Err(e) => Error::invalid_file(path, e.to_string()),
                },
            },
            Error::Parquet(e) => Error::invalid_file(path, e.to_string()),
            Error::Arrow(arrow_schema::ArrowError::ExternalError(e)) => {
                match e.downcast::<Error>() {
                    Ok(inner) => inner.in_file(path),
                    Err(e) => Error::invalid_file(path, e.to_string()),
                }
            }
            Error::Arrow(arrow_schema::ArrowError::ParquetError(msg)) => {
                Error::invalid_file(path, msg)
            }
            other => other,
        }
    }
}

impl From<Error> for arrow_schema::ArrowError {
    fn from(e: Error) -> Self {
        match e {
            Error::Arrow(e) => e,
            other => arrow_schema::ArrowError::ExternalError(Box::new(other)),
        }
    }
}

impl From<Error> for ParquetError {
    fn from(e: Error) -> Self {
        match e {
            Error::Parquet(e) => e,
            other => ParquetError::External(Box::new(other)),
        }
    }
}
