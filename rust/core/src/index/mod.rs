//! Embedded user-defined indexes: blocks in the file body, located by footer entries.

pub mod container;
pub mod locator;
