//! The interface every kind of embedded index implements, and the definition of one index
//! (`IndexSpec`) that users write.
//!
//! A kind says who it is (`KindInfo`: its stored name, block code, the Python class and
//! CLI flag built from it, its parameters), how it is built from a column's values page
//! by page (`IndexBuilder`), how its payload is checked (`verify`), and what it tells the
//! planner about a predicate's leaves (`IndexProbe`). The registry lists the kinds;
//! nothing else names them.

use std::borrow::Cow;

use parquet::schema::types::ColumnDescriptor;

use crate::error::{Error, Result};
use crate::index::block::BlockReader;
use crate::index::column_values::PageValues;
use crate::index::locator::Granularity;
use crate::index::span::Span;
use crate::predicate::Predicate;

/// Who a kind is, for the registry and everything built from it.
#[derive(Debug)]
pub struct KindInfo {
    /// The name in footer locators and block headers' registry (never changes).
    pub name: &'static str,
    /// The kind code in block headers (never changes).
    pub code: u16,
    /// The Python class that defines an index of this kind.
    pub class_name: &'static str,
    /// The `pqindex index add` flag.
    pub cli_flag: &'static str,
    /// One paragraph for users: what it answers and what it costs.
    pub doc: &'static str,
    /// Whether a definition takes several columns (one index per column).
    pub multi_column: bool,
    /// Granularities a user may ask for; the first is the default.
    pub granularities: &'static [Granularity],
    pub params: &'static [Param],
}

/// A parameter of a kind beyond its column and granularity.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub doc: &'static str,
    pub ty: ParamType,
    pub default: ParamValue,
}

/// What values a parameter takes.
#[derive(Debug)]
pub enum ParamType {
    /// A float strictly between `min` and `max`.
    Float { min: f64, max: f64 },
    /// An integer from `min` to `max`.
    Int { min: i64, max: i64 },
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// A parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Float(f64),
    Int(i64),
    Str(Cow<'static, str>),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl Param {
    /// `value` if it is one this parameter takes (an integer also gives a float).
    fn check(&self, value: ParamValue) -> Result<ParamValue> {
        let bad = |what: String| {
            Error::InvalidArgument(format!("{} must be {what}, got {value}", self.name))
        };
        match (&self.ty, &value) {
            (ParamType::Float { min, max }, ParamValue::Float(v)) if v > min && v < max => {
                Ok(value)
            }
            (ParamType::Float { min, max }, ParamValue::Int(v))
                if (*v as f64) > *min && (*v as f64) < *max =>
            {
                Ok(ParamValue::Float(*v as f64))
            }
            (ParamType::Float { min, max }, _) => {
                Err(bad(format!("between {min} and {max} exclusive")))
            }
            (ParamType::Int { min, max }, ParamValue::Int(v)) if v >= min && v <= max => Ok(value),
            (ParamType::Int { min, max }, _) => Err(bad(format!("an integer from {min} to {max}"))),
            (ParamType::Choice(names), ParamValue::Str(s)) if names.contains(&s.as_ref()) => {
                Ok(value)
            }
            (ParamType::Choice(names), _) => Err(bad(format!("one of {}", names.join(", ")))),
        }
    }
}

/// One kind of embedded index.
pub trait IndexKind: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &'static KindInfo;

    /// The granularity an index asked for at `requested` is stored at.
    fn stored_granularity(&self, requested: Granularity) -> Granularity {
        requested
    }

    /// Whether planning asks an index of this kind stored at `granularity`, in a file that
    /// has (or lacks) a page index of its own.
    fn used_in_planning(&self, granularity: Granularity, file_has_page_index: bool) -> bool;

    /// Whether an index of this kind can say anything about `leaf` (checked before it is
    /// read, so a lookup index is not fetched for a range predicate).
    fn answers(&self, leaf: &Predicate) -> bool;

    /// A builder of an index with these settings.
    fn builder(&self, settings: &Settings) -> Box<dyn IndexBuilder>;

    /// Decode and check a whole payload, returning the spans its units cover.
    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>>;

    /// Open an index for planning; reads from `block` only what it needs up front.
    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>>;

    /// How many payload bytes `probe` reads first, so planning can fetch them with the
    /// page index; `None` when it reads the whole block.
    fn head_len(&self) -> Option<u64> {
        None
    }
}

/// Builds one index while its column is read, page by page in file order.
pub trait IndexBuilder: Send {
    fn page(&mut self, p: &PageValues);
    /// The payload.
    fn finish(self: Box<Self>) -> Vec<u8>;
}

/// An index opened for planning.
pub trait IndexProbe: Send {
    /// The rows each unit covers.
    fn spans(&self) -> &[Span];

    /// How many distinct values the column holds in the whole file, where the index
    /// knows.
    fn distinct_values(&self) -> Option<u64> {
        None
    }

    /// Payload ranges `units` will read for `leaf` that it has not read yet, so planning
    /// can fetch those of every leaf and index at once.
    fn wanted(&self, _leaf: &Predicate, _column: &ColumnDescriptor) -> Vec<std::ops::Range<u64>> {
        Vec::new()
    }

    /// The ids of the units that may hold a row satisfying `leaf` (a leaf on this index's
    /// column, described by `column`); `None` when this kind cannot answer for the leaf.
    fn units(
        &mut self,
        leaf: &Predicate,
        column: &ColumnDescriptor,
        block: &BlockReader,
    ) -> Result<Option<Vec<u32>>>;
}

/// The granularity and parameter values of one index, checked against its kind.
#[derive(Debug, Clone)]
pub struct Settings {
    pub granularity: Granularity,
    info: &'static KindInfo,
    /// One value per parameter of the kind, in its order.
    values: Vec<ParamValue>,
}

impl PartialEq for Settings {
    fn eq(&self, other: &Self) -> bool {
        self.info.name == other.info.name
            && self.granularity == other.granularity
            && self.values == other.values
    }
}

impl Settings {
    /// `granularity` (the kind's default when `None`) and `params` (defaults for those left
    /// out) for a kind described by `info`; anything the kind does not take is an error.
    pub fn new(
        info: &'static KindInfo,
        granularity: Option<Granularity>,
        params: &[(String, ParamValue)],
    ) -> Result<Settings> {
        let granularity = granularity.unwrap_or(info.granularities[0]);
        if !info.granularities.contains(&granularity) {
            return Err(Error::InvalidArgument(format!(
                "a {} index takes granularity {}, not {}",
                info.name,
                info.granularities
                    .iter()
                    .map(|g| g.name())
                    .collect::<Vec<_>>()
                    .join(" or "),
                granularity.name()
            )));
        }
        for (name, _) in params {
            if !info.params.iter().any(|p| p.name == name) {
                return Err(Error::InvalidArgument(format!(
                    "a {} index has no parameter {name:?}",
                    info.name
                )));
            }
        }
        let values = info
            .params
            .iter()
            .map(|p| match params.iter().rev().find(|(n, _)| n == p.name) {
                Some((_, v)) => p.check(v.clone()),
                None => Ok(p.default.clone()),
            })
            .collect::<Result<_>>()?;
        Ok(Settings {
            granularity,
            info,
            values,
        })
    }

    /// (name, value) of every parameter.
    pub fn params(&self) -> impl Iterator<Item = (&'static str, &ParamValue)> {
        self.info.params.iter().map(|p| p.name).zip(&self.values)
    }

    fn value(&self, name: &str) -> Option<&ParamValue> {
        let i = self.info.params.iter().position(|p| p.name == name)?;
        self.values.get(i)
    }

    /// A float parameter of the kind (`NaN` if it has none of that name).
    pub fn float(&self, name: &str) -> f64 {
        match self.value(name) {
            Some(ParamValue::Float(v)) => *v,
            Some(ParamValue::Int(v)) => *v as f64,
            _ => f64::NAN,
        }
    }

    /// An integer parameter of the kind (0 if it has none of that name).
    pub fn int(&self, name: &str) -> i64 {
        match self.value(name) {
            Some(ParamValue::Int(v)) => *v,
            _ => 0,
        }
    }

    /// A named choice of the kind ("" if it has none of that name).
    pub fn choice(&self, name: &str) -> &str {
        match self.value(name) {
            Some(ParamValue::Str(s)) => s,
            _ => "",
        }
    }
}
