//! Embedded user-defined indexes: blocks in the file body, located by footer entries, one
//! file per kind, plus building them over existing files and probing them while planning.

pub mod aggregates;
pub mod approx_distinct;
pub mod bloom;
pub mod build;
pub mod codec;
pub mod column_values;
pub mod container;
pub mod distinct;
pub mod hash;
pub mod hll;
pub mod locator;
pub mod probe;
pub mod units;
pub mod verify;
