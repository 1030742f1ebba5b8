//! Storage access: file identity and positional reads that count what they fetch.

pub mod coalesce;
pub mod local;

pub use local::{FileIdentity, IoStats, LocalFile};
