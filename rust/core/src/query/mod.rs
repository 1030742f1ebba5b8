//! Queries over a source: planning a scan and streaming its rows, the units wire form that
//! carries a plan to other processes, and aggregates answered from indexes.

pub mod aggregate;
pub mod binding;
mod explain;
mod limit;
pub mod parallel;
pub mod scan;
pub mod stream;
pub mod top_k;
pub mod wire;
