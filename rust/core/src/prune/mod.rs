//! Pruning, coarse to fine: what each source of evidence (statistics, the page index,
//! Parquet bloom filters, embedded indexes, a catalog) says about a predicate's leaves, and
//! the planner that narrows one access plan per file with it.

pub mod bloom_odds;
pub mod certain;
pub mod dictionary_probes;
pub mod evidence;
pub mod page_index;
pub mod parquet_bloom;
pub mod planner;
pub mod selectivity;
pub mod statistics;
