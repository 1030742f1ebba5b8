//! Storage access: file identity, and ranged reads of local files and objects that count
//! what they fetch.

pub mod attempts;
pub mod coalesce;
pub mod file;
pub mod identity;
pub mod object;
pub mod pread;
pub mod range_cache;

pub use file::{FileHandle, StorageFile};
pub use identity::{FileIdentity, IoStats};
