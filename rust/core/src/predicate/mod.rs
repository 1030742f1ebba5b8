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
pub mod structured;
pub mod time;
pub mod value;
pub mod value_set;

pub use bind::{bind, BindSchema};
pub use expr::{Column, Predicate};
pub use value::Value;

/// A condition as a caller gives it: SQL text as DuckDB reads it, or the structured form
/// (`predicate::structured`, `docs/predicates.md`) as JSON text. Both read into one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Sql(String),
    Structured(String),
}

impl Condition {
    /// The untyped tree of the condition; `now_ns` is what `now()` folds to.
    pub fn parse(&self, now_ns: i128) -> crate::error::Result<sql::Ast> {
        match self {
            Condition::Sql(text) => sql::parse(text, now_ns),
            Condition::Structured(json) => structured::parse(json),
        }
    }

    /// The text given, as `explain()` shows it.
    pub fn text(&self) -> &str {
        match self {
            Condition::Sql(text) | Condition::Structured(text) => text,
        }
    }
}

impl From<&str> for Condition {
    fn from(text: &str) -> Self {
        Condition::Sql(text.to_string())
    }
}

impl From<String> for Condition {
    fn from(text: String) -> Self {
        Condition::Sql(text)
    }
}
