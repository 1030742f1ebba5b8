//! Embedded user-defined indexes: blocks in the file body, located by footer entries, one
//! file per kind, plus building them over existing files, the evidence they give planning,
//! and the rewrite of a file's index area.

pub mod aggregates;
pub mod approx_distinct;
pub mod block;
pub mod bloom;
pub mod bloom_payload;
pub mod bloom_set;
pub mod build;
pub mod codec;
pub mod column_values;
pub mod container;
pub mod distinct;
pub mod evidence;
pub mod hash;
pub mod hll;
pub mod journal;
pub mod kind;
pub mod locator;
pub mod minmax;
pub mod ngram;
pub mod registry;
pub mod rewrite;
pub mod span;
pub mod spec;
#[cfg(test)]
pub mod testing;
pub mod text;
pub mod token;
pub mod verify;
pub mod worth;
pub mod writer_lock;
