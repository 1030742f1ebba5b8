//! Bound predicates: every literal already lives in its column's domain.
//!
//! Predicates are kept in negation normal form (no `Not` nodes): under SQL's three-valued
//! logic `NOT (x < 5)` is exactly `x >= 5` (NULL stays NULL, and DuckDB's float order is a
//! total order), so pruning only ever has to ask "could this be true?".

use std::fmt;
use std::sync::Arc;

use arrow_schema::DataType;

use crate::predicate::key_tuples::KeyTuples;
use crate::predicate::pattern::StrPattern;
use crate::predicate::value::{Domain, Value};
use crate::predicate::value_set::ValueList;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// The operator of `NOT (a op b)`.
    pub fn negate(self) -> Self {
        match self {
            CmpOp::Eq => CmpOp::NotEq,
            CmpOp::NotEq => CmpOp::Eq,
            CmpOp::Lt => CmpOp::GtEq,
            CmpOp::LtEq => CmpOp::Gt,
            CmpOp::Gt => CmpOp::LtEq,
            CmpOp::GtEq => CmpOp::Lt,
        }
    }

    /// The operator of `b op' a` equal to `a op b`.
    pub fn flip(self) -> Self {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }

    /// Whether `a op b` holds given how `a` compares with `b`.
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => ord == Equal,
            CmpOp::NotEq => ord != Equal,
            CmpOp::Lt => ord == Less,
            CmpOp::LtEq => ord != Greater,
            CmpOp::Gt => ord == Greater,
            CmpOp::GtEq => ord != Less,
        }
    }
}

/// A column a predicate refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRef {
    /// The name as shown to users: the field path joined with dots.
    pub name: String,
    /// Field names from the top-level field down to the leaf.
    pub path: Vec<String>,
    /// The Parquet leaf column, or `None` for a hive partition column.
    pub leaf: Option<usize>,
    /// The index among the partition columns, for partition columns.
    pub partition: Option<usize>,
    /// The Arrow type the reader produces (dictionaries unwrapped).
    pub data_type: DataType,
    pub domain: Domain,
    /// Whether footer statistics, the page index and bloom filters of this column hold
    /// values of `domain` (false when the reader converts them, e.g. seconds stored as ms).
    pub prunable: bool,
}

pub type Column = Arc<ColumnRef>;

#[cfg(test)]
impl ColumnRef {
    /// A top-level, prunable leaf column of type `data_type`, for unit tests.
    pub fn for_test(name: &str, data_type: DataType) -> Column {
        Arc::new(ColumnRef {
            name: name.into(),
            path: vec![name.into()],
            leaf: Some(0),
            partition: None,
            domain: Domain::of(&data_type).expect("a supported type"),
            data_type,
            prunable: true,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// TRUE, FALSE or NULL.
    Const(Option<bool>),
    Cmp {
        col: Column,
        op: CmpOp,
        value: Value,
    },
    InList {
        col: Column,
        values: ValueList,
        negated: bool,
    },
    IsNull {
        col: Column,
        negated: bool,
    },
    /// NULL where the column is NULL, else the constant: a comparison with a literal that
    /// lies outside the column's domain (`int8_col = 1000`, `int_col = 2.5`).
    NullOr {
        col: Column,
        value: bool,
    },
    /// A string column matched against a pattern (`LIKE`, `starts_with`,
    /// `regexp_matches`...); NULL where the column is NULL.
    Match {
        col: Column,
        pattern: Arc<StrPattern>,
        negated: bool,
    },
    /// The row's values of `cols` form one of `keys`' tuples (a semi join on several
    /// columns; a NULL in any of them matches nothing). Evidence sources do not read it:
    /// each column's IN list beside it is what prunes.
    InKeys {
        cols: Vec<Column>,
        keys: Arc<KeyTuples>,
        negated: bool,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

impl Predicate {
    /// `col [NOT] IN (values)`, its values sorted and distinct (what evidence sources and
    /// the evaluator rely on to search long lists).
    pub fn in_list(col: Column, values: Vec<Value>, negated: bool) -> Predicate {
        Predicate::InList {
            col,
            values: ValueList::new(values),
            negated,
        }
    }

    pub fn and(parts: Vec<Predicate>) -> Predicate {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Predicate::Const(Some(true)) => {}
                Predicate::Const(Some(false)) => return Predicate::Const(Some(false)),
                Predicate::And(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        // NULL AND x is FALSE or NULL: never true, and so never selects a row.
        if out.iter().any(|p| matches!(p, Predicate::Const(None))) && out.len() > 1 {
            out.retain(|p| !matches!(p, Predicate::Const(None)));
            out.push(Predicate::Const(None));
        }
        match out.len() {
            0 => Predicate::Const(Some(true)),
            1 => out.pop().unwrap_or(Predicate::Const(Some(true))),
            _ => Predicate::And(out),
        }
    }

    pub fn or(parts: Vec<Predicate>) -> Predicate {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Predicate::Const(Some(false)) => {}
                Predicate::Const(Some(true)) => return Predicate::Const(Some(true)),
                Predicate::Or(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Predicate::Const(Some(false)),
            1 => out.pop().unwrap_or(Predicate::Const(Some(false))),
            _ => Predicate::Or(out),
        }
    }

    /// `NOT self`, pushed down to the leaves.
    pub fn negate(self) -> Predicate {
        match self {
            Predicate::Const(c) => Predicate::Const(c.map(|b| !b)),
            Predicate::Cmp { col, op, value } => Predicate::Cmp {
                col,
                op: op.negate(),
                value,
            },
            Predicate::InList {
                col,
                values,
                negated,
            } => Predicate::InList {
                col,
                values,
                negated: !negated,
            },
            Predicate::IsNull { col, negated } => Predicate::IsNull {
                col,
                negated: !negated,
            },
            Predicate::NullOr { col, value } => Predicate::NullOr { col, value: !value },
            Predicate::Match {
                col,
                pattern,
                negated,
            } => Predicate::Match {
                col,
                pattern,
                negated: !negated,
            },
            Predicate::InKeys {
                cols,
                keys,
                negated,
            } => Predicate::InKeys {
                cols,
                keys,
                negated: !negated,
            },
            Predicate::And(parts) => Predicate::or(parts.into_iter().map(Self::negate).collect()),
            Predicate::Or(parts) => Predicate::and(parts.into_iter().map(Self::negate).collect()),
        }
    }

    /// Every leaf (anything but AND, OR and constants), in order of appearance.
    pub fn leaves(&self) -> Vec<&Predicate> {
        match self {
            Predicate::And(parts) | Predicate::Or(parts) => {
                parts.iter().flat_map(|p| p.leaves()).collect()
            }
            Predicate::Const(_) => Vec::new(),
            leaf => vec![leaf],
        }
    }

    /// Every column the predicate reads, without duplicates, in order of appearance.
    pub fn columns(&self) -> Vec<Column> {
        let mut out: Vec<Column> = Vec::new();
        self.visit_columns(&mut |c| {
            if !out.iter().any(|o| o.path == c.path) {
                out.push(c.clone());
            }
        });
        out
    }

    fn visit_columns(&self, f: &mut impl FnMut(&Column)) {
        match self {
            Predicate::Const(_) => {}
            Predicate::Cmp { col, .. }
            | Predicate::InList { col, .. }
            | Predicate::IsNull { col, .. }
            | Predicate::NullOr { col, .. }
            | Predicate::Match { col, .. } => f(col),
            Predicate::InKeys { cols, .. } => cols.iter().for_each(f),
            Predicate::And(parts) | Predicate::Or(parts) => {
                parts.iter().for_each(|p| p.visit_columns(f))
            }
        }
    }

    /// The top-level conjuncts.
    pub fn conjuncts(&self) -> Vec<&Predicate> {
        match self {
            Predicate::And(parts) => parts.iter().collect(),
            other => vec![other],
        }
    }

    /// Replace hive partition columns by the values of one file and fold what becomes
    /// constant. The result refers to data columns only.
    pub fn bind_partitions(&self, values: &[Option<Value>]) -> Predicate {
        let value_of = |col: &Column| -> Option<Option<&Value>> {
            col.partition
                .map(|i| values.get(i).and_then(|v| v.as_ref()))
        };
        match self {
            Predicate::And(parts) => {
                Predicate::and(parts.iter().map(|p| p.bind_partitions(values)).collect())
            }
            Predicate::Or(parts) => {
                Predicate::or(parts.iter().map(|p| p.bind_partitions(values)).collect())
            }
            leaf => match leaf.column().and_then(value_of) {
                None => leaf.clone(),
                Some(v) => Predicate::Const(leaf.eval_constant(v)),
            },
        }
    }

    /// The predicate with every leaf replaced by `f(leaf)`, constants folded.
    pub fn map_leaves(&self, f: &mut impl FnMut(&Predicate) -> Predicate) -> Predicate {
        match self {
            Predicate::And(parts) => {
                Predicate::and(parts.iter().map(|p| p.map_leaves(f)).collect())
            }
            Predicate::Or(parts) => Predicate::or(parts.iter().map(|p| p.map_leaves(f)).collect()),
            Predicate::Const(c) => Predicate::Const(*c),
            leaf => f(leaf),
        }
    }

    /// A leaf on another column (same comparison), e.g. the same column as one file
    /// stores it.
    pub fn with_column(&self, col: Column) -> Predicate {
        match self {
            Predicate::Cmp { op, value, .. } => Predicate::Cmp {
                col,
                op: *op,
                value: value.clone(),
            },
            Predicate::InList {
                values, negated, ..
            } => Predicate::InList {
                col,
                values: values.clone(),
                negated: *negated,
            },
            Predicate::IsNull { negated, .. } => Predicate::IsNull {
                col,
                negated: *negated,
            },
            Predicate::NullOr { value, .. } => Predicate::NullOr { col, value: *value },
            Predicate::Match {
                pattern, negated, ..
            } => Predicate::Match {
                col,
                pattern: pattern.clone(),
                negated: *negated,
            },
            other => other.clone(),
        }
    }

    /// The column of a leaf (`None` for constants, AND and OR).
    pub fn column(&self) -> Option<&Column> {
        match self {
            Predicate::Cmp { col, .. }
            | Predicate::InList { col, .. }
            | Predicate::IsNull { col, .. }
            | Predicate::NullOr { col, .. }
            | Predicate::Match { col, .. } => Some(col),
            _ => None,
        }
    }

    /// The value of a leaf when its column holds `v` (`None` is SQL NULL).
    pub fn eval_constant(&self, v: Option<&Value>) -> Option<bool> {
        match (self, v) {
            (Predicate::Const(c), _) => *c,
            (Predicate::IsNull { negated, .. }, v) => Some(v.is_none() != *negated),
            (_, None) => None,
            (Predicate::Cmp { op, value, .. }, Some(v)) => Some(op.holds(v.sql_cmp(value))),
            (
                Predicate::InList {
                    values, negated, ..
                },
                Some(v),
            ) => Some(values.contains_value(v) != *negated),
            (Predicate::NullOr { value, .. }, Some(_)) => Some(*value),
            (
                Predicate::Match {
                    pattern, negated, ..
                },
                Some(Value::Bytes(b)),
            ) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| pattern.matches(s))
                .map(|m| m != *negated),
            (Predicate::Match { .. }, Some(_)) => None,
            (Predicate::InKeys { .. }, Some(_)) => None,
            (Predicate::And(_) | Predicate::Or(_), _) => None,
        }
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, parts: &[Predicate], sep: &str| {
            write!(f, "(")?;
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    write!(f, " {sep} ")?;
                }
                write!(f, "{p}")?;
            }
            write!(f, ")")
        };
        match self {
            Predicate::Const(Some(true)) => write!(f, "TRUE"),
            Predicate::Const(Some(false)) => write!(f, "FALSE"),
            Predicate::Const(None) => write!(f, "NULL"),
            Predicate::Cmp { col, op, value } => {
                write!(f, "{} {} {value}", col.name, op.symbol())
            }
            Predicate::InList {
                col,
                values,
                negated,
            } => {
                write!(f, "{}{} IN (", col.name, if *negated { " NOT" } else { "" })?;
                // Join keys can be millions of values: show the first ones.
                const SHOWN: usize = 20;
                for (i, v) in values.iter().take(SHOWN).enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{v}")?;
                }
                if values.len() > SHOWN {
                    write!(f, ", ... {} values in all", values.len())?;
                }
                write!(f, ")")
            }
            Predicate::InKeys {
                cols,
                keys,
                negated,
            } => write!(
                f,
                "({}){} IN <{} keys>",
                cols.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if *negated { " NOT" } else { "" },
                keys.len()
            ),
            Predicate::IsNull { col, negated } => write!(
                f,
                "{} IS {}NULL",
                col.name,
                if *negated { "NOT " } else { "" }
            ),
            Predicate::NullOr { col, value } => write!(
                f,
                "({} IS NOT NULL AND {})",
                col.name,
                if *value { "TRUE" } else { "FALSE" }
            ),
            Predicate::Match {
                col,
                pattern,
                negated,
            } => write!(f, "{}", pattern.sql(&col.name, *negated)),
            Predicate::And(parts) => join(f, parts, "AND"),
            Predicate::Or(parts) => join(f, parts, "OR"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col() -> Column {
        ColumnRef::for_test("x", DataType::Int32)
    }

    fn cmp(op: CmpOp, v: i128) -> Predicate {
        Predicate::Cmp {
            col: col(),
            op,
            value: Value::Int(v),
        }
    }

    #[test]
    fn negation_reaches_the_leaves() {
        let p = Predicate::and(vec![cmp(CmpOp::Lt, 5), cmp(CmpOp::Eq, 7)]);
        assert_eq!(
            p.negate(),
            Predicate::Or(vec![cmp(CmpOp::GtEq, 5), cmp(CmpOp::NotEq, 7)])
        );
    }

    #[test]
    fn null_in_and_never_selects() {
        let p = Predicate::and(vec![cmp(CmpOp::Lt, 5), Predicate::Const(None)]);
        assert!(matches!(p, Predicate::And(ref v) if v.len() == 2));
        assert_eq!(
            Predicate::or(vec![Predicate::Const(Some(false)), cmp(CmpOp::Lt, 5)]),
            cmp(CmpOp::Lt, 5)
        );
    }

    #[test]
    fn constants_follow_three_valued_logic() {
        let p = Predicate::InList {
            col: col(),
            values: vec![Value::Int(1)].into(),
            negated: true,
        };
        assert_eq!(p.eval_constant(Some(&Value::Int(2))), Some(true));
        assert_eq!(p.eval_constant(None), None);
        let n = Predicate::IsNull {
            col: col(),
            negated: false,
        };
        assert_eq!(n.eval_constant(None), Some(true));
    }
}
