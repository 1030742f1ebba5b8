//! Predicates: SQL text → untyped tree → bound, typed NNF predicate → exact evaluation.

pub mod bind;
pub mod coerce;
pub mod eval;
pub mod expr;
pub mod key_tuples;
pub mod keys;
pub mod literal;
pub mod pattern;
pub mod plain;
pub mod sql;
pub mod time;
pub mod value;
pub mod value_set;

pub use bind::{bind, BindSchema};
pub use expr::{Column, Predicate};
pub use value::Value;
