//! Binding an untyped expression to a dataset schema: resolve columns (case-insensitively,
//! as DuckDB does), coerce literals into the column domains, and normalise to NNF.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::schema::types::SchemaDescriptor;

use crate::error::{Error, Result};
use crate::predicate::coerce::{coerce, Coerced};
use crate::predicate::expr::{CmpOp, Column, ColumnRef, Predicate};
use crate::predicate::literal::{cast_literal, describe, Literal, SqlType};
use crate::predicate::pattern::StrPattern;
use crate::predicate::sql::{Ast, MatchFn};
use crate::predicate::value::{Domain, IntKind, Value};

/// What a predicate can refer to.
pub struct BindSchema<'a> {
    /// The schema the reader produces (with the writer's Arrow type hints applied).
    pub arrow: &'a Schema,
    /// The same columns as stored, without hints: what statistics are written in.
    pub native: &'a Schema,
    pub parquet: &'a SchemaDescriptor,
    /// Hive partition columns.
    pub partitions: &'a [Field],
}

pub fn bind(ast: &Ast, schema: &BindSchema) -> Result<Predicate> {
    Binder { schema }.condition(ast)
}

/// Resolve a column path as predicates do.
pub fn bind_column(path: &[String], schema: &BindSchema) -> Result<Column> {
    Binder { schema }.column(path)
}

struct Binder<'a, 'b> {
    schema: &'a BindSchema<'b>,
}

/// A resolved operand of a comparison.
enum Operand {
    Column(Column),
    Lit(Literal),
}

impl Binder<'_, '_> {
    fn condition(&self, ast: &Ast) -> Result<Predicate> {
        Ok(match ast {
            Ast::And(a, b) => Predicate::and(vec![self.condition(a)?, self.condition(b)?]),
            Ast::Or(a, b) => Predicate::or(vec![self.condition(a)?, self.condition(b)?]),
            Ast::Not(a) => self.condition(a)?.negate(),
            Ast::Lit(Literal::Bool(b)) => Predicate::Const(Some(*b)),
            Ast::Lit(Literal::Null) => Predicate::Const(None),
            Ast::Cmp(l, op, r) => self.comparison(l, *op, r)?,
            Ast::IsNull(e, negated) => match self.operand(e)? {
                Operand::Column(col) => Predicate::IsNull {
                    col,
                    negated: *negated,
                },
                Operand::Lit(l) => Predicate::Const(Some((l == Literal::Null) != *negated)),
            },
            Ast::InList(e, list, negated) => {
                let col = match self.operand(e)? {
                    Operand::Column(col) => col,
                    Operand::Lit(_) => {
                        return Err(Error::unsupported("IN lists need a column on the left"))
                    }
                };
                let mut values = Vec::new();
                let mut spans = Vec::new();
                let mut has_null = false;
                let items = list
                    .iter()
                    .map(|item| match self.operand(item)? {
                        Operand::Lit(lit) => Ok(lit),
                        Operand::Column(_) => {
                            Err(Error::unsupported("IN lists may only hold constants"))
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                for lit in unify_list(items, col.domain) {
                    match lit {
                        Literal::Null => has_null = true,
                        lit => match coerce(&lit, col.domain, &col.name)? {
                            Coerced::Exact(v) => values.push(v),
                            Coerced::Span { lo, hi } => spans.push(span(&col, lo, hi)),
                            // A value the column cannot hold never equals it.
                            Coerced::Between { .. } => {}
                        },
                    }
                }
                if !values.is_empty() {
                    spans.push(Predicate::in_list(col.clone(), values, false));
                }
                let base = if spans.is_empty() {
                    Predicate::NullOr {
                        col: col.clone(),
                        value: false,
                    }
                } else {
                    Predicate::or(spans)
                };
                let with_null = if has_null {
                    Predicate::or(vec![base, Predicate::Const(None)])
                } else {
                    base
                };
                if *negated {
                    with_null.negate()
                } else {
                    with_null
                }
            }
            Ast::Between(e, lo, hi, negated) => {
                let p = Predicate::and(vec![
                    self.comparison(e, CmpOp::GtEq, lo)?,
                    self.comparison(e, CmpOp::LtEq, hi)?,
                ]);
                if *negated {
                    p.negate()
                } else {
                    p
                }
            }
            Ast::Match {
                expr,
                pattern,
                how,
                negated,
            } => self.string_match(expr, pattern, how, *negated)?,
            Ast::Column(_) | Ast::Cast(..) => match self.operand(ast)? {
                Operand::Column(col) if col.domain == Domain::Bool => Predicate::Cmp {
                    col,
                    op: CmpOp::Eq,
                    value: Value::Bool(true),
                },
                Operand::Column(col) => {
                    return Err(Error::predicate(format!(
                        "column {} is not boolean and cannot be used as a condition",
                        col.name
                    )))
                }
                Operand::Lit(l) => {
                    return Err(Error::predicate(format!(
                        "{} is not a boolean condition",
                        describe(&l)
                    )))
                }
            },
            Ast::Lit(l) => {
                return Err(Error::predicate(format!(
                    "{} is not a boolean condition",
                    describe(l)
                )))
            }
        })
    }

    fn comparison(&self, l: &Ast, op: CmpOp, r: &Ast) -> Result<Predicate> {
        let (col, op, lit) = match (self.operand(l)?, self.operand(r)?) {
            (Operand::Column(c), Operand::Lit(lit)) => (c, op, lit),
            (Operand::Lit(lit), Operand::Column(c)) => (c, op.flip(), lit),
            (Operand::Lit(a), Operand::Lit(b)) => return constant_comparison(&a, op, &b),
            (Operand::Column(a), Operand::Column(b)) => {
                return Err(Error::unsupported(format!(
                    "comparisons between two columns ({} and {}) are not supported",
                    a.name, b.name
                )))
            }
        };
        if lit == Literal::Null {
            return Ok(Predicate::Const(None));
        }
        Ok(match coerce(&lit, col.domain, &col.name)? {
            Coerced::Exact(value) => Predicate::Cmp { col, op, value },
            Coerced::Span { lo, hi } => {
                let cmp = |op, value| Predicate::Cmp {
                    col: col.clone(),
                    op,
                    value,
                };
                match op {
                    CmpOp::Eq => span(&col, lo, hi),
                    CmpOp::NotEq => Predicate::or(vec![cmp(CmpOp::Lt, lo), cmp(CmpOp::Gt, hi)]),
                    CmpOp::Lt => cmp(CmpOp::Lt, lo),
                    CmpOp::LtEq => cmp(CmpOp::LtEq, hi),
                    CmpOp::Gt => cmp(CmpOp::Gt, hi),
                    CmpOp::GtEq => cmp(CmpOp::GtEq, lo),
                }
            }
            Coerced::Between { lo, hi } => {
                let bound = match op {
                    CmpOp::Eq => None,
                    CmpOp::NotEq => {
                        return Ok(Predicate::NullOr { col, value: true });
                    }
                    CmpOp::Lt | CmpOp::LtEq => lo.map(|v| (CmpOp::LtEq, v)),
                    CmpOp::Gt | CmpOp::GtEq => hi.map(|v| (CmpOp::GtEq, v)),
                };
                match bound {
                    Some((op, value)) => Predicate::Cmp { col, op, value },
                    None => Predicate::NullOr { col, value: false },
                }
            }
        })
    }

    /// `x LIKE 'p'` and the string functions: a pattern on a string column. A pattern
    /// without wildcards is an equality, `'%'` holds for every value; NULL gives NULL.
    fn string_match(
        &self,
        expr: &Ast,
        pattern: &Ast,
        how: &MatchFn,
        negated: bool,
    ) -> Result<Predicate> {
        let text = |ast: &Ast, what: &str| -> Result<Option<String>> {
            match self.operand(ast)? {
                Operand::Lit(Literal::Null) => Ok(None),
                Operand::Lit(Literal::Str(s)) => Ok(Some(s)),
                Operand::Lit(other) => Err(Error::predicate(format!(
                    "{what} must be a string, not {}",
                    describe(&other)
                ))),
                Operand::Column(c) => Err(Error::unsupported(format!(
                    "{what} must be a constant, not column {}",
                    c.name
                ))),
            }
        };
        let Some(pattern_text) = text(pattern, "the pattern")? else {
            return Ok(Predicate::Const(None));
        };
        let pattern = match how {
            MatchFn::Like {
                escape,
                case_insensitive,
            } => {
                let escape = match escape {
                    None => None,
                    Some(e) => match text(e, "the ESCAPE character")? {
                        None => return Ok(Predicate::Const(None)),
                        Some(e) if e.chars().count() > 1 => {
                            return Err(Error::predicate(format!(
                                "the ESCAPE character must be one character, not {e:?}"
                            )))
                        }
                        Some(e) => e.chars().next(),
                    },
                };
                StrPattern::like(&pattern_text, escape, *case_insensitive)?
            }
            MatchFn::StartsWith => StrPattern::starts_with(&pattern_text),
            MatchFn::EndsWith => StrPattern::ends_with(&pattern_text),
            MatchFn::Contains => StrPattern::contains(&pattern_text),
            MatchFn::Token => StrPattern::token(&pattern_text),
            MatchFn::Regex { options } => {
                let options = match options {
                    None => None,
                    Some(o) => match text(o, "the options of regexp_matches")? {
                        None => return Ok(Predicate::Const(None)),
                        Some(o) => Some(o),
                    },
                };
                StrPattern::regex(&pattern_text, options.as_deref())?
            }
        };
        let col = match self.operand(expr)? {
            Operand::Column(col) if col.domain == Domain::Utf8 => col,
            Operand::Column(col) => {
                return Err(Error::predicate(format!(
                    "string patterns need a string column; {} is {}",
                    col.name, col.data_type
                )))
            }
            Operand::Lit(Literal::Null) => return Ok(Predicate::Const(None)),
            Operand::Lit(Literal::Str(s)) => {
                return Ok(Predicate::Const(pattern.matches(&s).map(|m| m != negated)))
            }
            Operand::Lit(other) => {
                return Err(Error::predicate(format!(
                    "string patterns need a string, not {}",
                    describe(&other)
                )))
            }
        };
        if let Some(exact) = pattern.exact() {
            return Ok(Predicate::Cmp {
                col,
                op: if negated { CmpOp::NotEq } else { CmpOp::Eq },
                value: Value::Bytes(exact.as_bytes().to_vec()),
            });
        }
        if pattern.matches_everything() {
            return Ok(Predicate::NullOr {
                col,
                value: !negated,
            });
        }
        Ok(Predicate::Match {
            col,
            pattern: Arc::new(pattern),
            negated,
        })
    }

    fn operand(&self, ast: &Ast) -> Result<Operand> {
        match ast {
            Ast::Lit(l) => Ok(Operand::Lit(l.clone())),
            Ast::Column(path) => Ok(Operand::Column(self.column(path)?)),
            Ast::Cast(inner, ty) => match self.operand(inner)? {
                Operand::Column(col) if widening_cast(&col.data_type, *ty) => {
                    Ok(Operand::Column(col))
                }
                Operand::Column(col) => Err(Error::unsupported(format!(
                    "CAST({} AS {ty:?}) is not supported: only casts that keep every value and its order (integer and float widening, DATE to TIMESTAMP) can be used",
                    col.name
                ))),
                Operand::Lit(l) => Ok(Operand::Lit(cast_literal(l, *ty)?)),
            },
            other => Err(Error::predicate(format!(
                "expected a column or a constant, found a condition: {other:?}"
            ))),
        }
    }

    fn column(&self, path: &[String]) -> Result<Column> {
        let joined = path.join(".");
        let Some((first, rest)) = path.split_first() else {
            return Err(Error::predicate("empty column name"));
        };
        if let Some((idx, field)) = find_field(self.schema.partitions.iter(), first) {
            if !rest.is_empty() {
                return Err(Error::predicate(format!(
                    "partition column {} has no field {}",
                    field.name(),
                    rest.join(".")
                )));
            }
            let data_type = field.data_type().clone();
            let domain = Domain::of(&data_type).ok_or_else(|| {
                Error::unsupported(format!(
                    "predicates on {data_type} columns are not supported"
                ))
            })?;
            return Ok(Arc::new(ColumnRef {
                name: field.name().clone(),
                path: vec![field.name().clone()],
                leaf: None,
                partition: Some(idx),
                data_type,
                domain,
                prunable: true,
            }));
        }
        let mut fields: &Fields = self.schema.arrow.fields();
        let mut native_fields: Option<&Fields> = Some(self.schema.native.fields());
        let mut resolved: Vec<String> = Vec::new();
        let mut field: Option<&Field> = None;
        let mut native: Option<&Field> = None;
        for (i, part) in path.iter().enumerate() {
            let (_, f) = find_field(fields.iter().map(|f| f.as_ref()), part).ok_or_else(|| {
                let known: Vec<&str> = if i == 0 {
                    self.schema
                        .arrow
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .chain(self.schema.partitions.iter().map(|f| f.name().as_str()))
                        .collect()
                } else {
                    fields.iter().map(|f| f.name().as_str()).collect()
                };
                Error::predicate(format!(
                    "unknown column {joined} (columns{}: {})",
                    if i == 0 { "" } else { " of the struct" },
                    known.join(", ")
                ))
            })?;
            resolved.push(f.name().clone());
            native = native_fields
                .and_then(|nf| nf.iter().find(|n| n.name() == f.name()))
                .map(|n| n.as_ref());
            field = Some(f);
            if i + 1 < path.len() {
                match f.data_type() {
                    DataType::Struct(children) => {
                        fields = children;
                        native_fields = match native.map(|n| n.data_type()) {
                            Some(DataType::Struct(nc)) => Some(nc),
                            _ => None,
                        };
                    }
                    other => {
                        return Err(Error::predicate(format!(
                            "column {} is {other}, not a struct, so {joined} does not exist",
                            resolved.join(".")
                        )))
                    }
                }
            }
        }
        let field = field.ok_or_else(|| Error::predicate("empty column name"))?;
        let data_type = match field.data_type() {
            DataType::Dictionary(_, v) => v.as_ref().clone(),
            other => other.clone(),
        };
        let domain = match &data_type {
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(..)
            | DataType::Map(..) => {
                return Err(Error::unsupported(format!(
                    "predicates on list or map columns are not supported ({joined} is {data_type})"
                )))
            }
            DataType::Struct(_) => {
                return Err(Error::unsupported(format!(
                    "{joined} is a struct; compare one of its fields instead ({joined}.<field>)"
                )))
            }
            dt => Domain::of(dt).ok_or_else(|| {
                Error::unsupported(format!(
                    "predicates on {dt} columns are not supported ({joined})"
                ))
            })?,
        };
        let leaf = self
            .schema
            .parquet
            .columns()
            .iter()
            .position(|c| c.path().parts() == resolved.as_slice())
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "{joined} is not a primitive Parquet column and cannot be filtered on"
                ))
            })?;
        let native_domain = native.and_then(|n| match n.data_type() {
            DataType::Dictionary(_, v) => Domain::of(v),
            dt => Domain::of(dt),
        });
        // The Parquet UUID type reads as 16 plain bytes; literals meet it as UUIDs.
        let uuid = matches!(
            self.schema.parquet.column(leaf).logical_type_ref(),
            Some(parquet::basic::LogicalType::Uuid)
        );
        let as_uuid = |d: Domain| match d {
            Domain::Binary if uuid => Domain::Uuid,
            d => d,
        };
        let (domain, native_domain) = (as_uuid(domain), native_domain.map(as_uuid));
        Ok(Arc::new(ColumnRef {
            name: resolved.join("."),
            path: resolved,
            leaf: Some(leaf),
            partition: None,
            data_type,
            domain,
            prunable: native_domain == Some(domain),
        }))
    }
}

/// Exact name first, then the unique case-insensitive match.
fn find_field<'f>(
    fields: impl Iterator<Item = &'f Field> + Clone,
    name: &str,
) -> Option<(usize, &'f Field)> {
    if let Some(hit) = fields.clone().enumerate().find(|(_, f)| f.name() == name) {
        return Some(hit);
    }
    let mut matches = fields
        .enumerate()
        .filter(|(_, f)| f.name().eq_ignore_ascii_case(name));
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

/// Casts that keep every value and its order, so comparing the cast column with a literal
/// is comparing the column with the literal brought into the column's own domain.
fn widening_cast(from: &DataType, to: SqlType) -> bool {
    let Some(domain) = Domain::of(from) else {
        return false;
    };
    match (domain, to) {
        (
            Domain::Int {
                min,
                max,
                kind: IntKind::Integer,
            },
            SqlType::Int { bits, signed },
        ) => {
            let (lo, hi) = if signed {
                if bits == 128 {
                    (i128::MIN, i128::MAX)
                } else {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                }
            } else {
                (0, (1i128 << bits) - 1)
            };
            lo <= min && max <= hi
        }
        (
            Domain::Int {
                min,
                max,
                kind: IntKind::Integer,
            },
            SqlType::Float64,
        ) => min >= -(1i128 << 53) && max <= 1i128 << 53,
        (
            Domain::Int {
                min,
                max,
                kind: IntKind::Integer,
            },
            SqlType::Float32,
        ) => min >= -(1i128 << 24) && max <= 1i128 << 24,
        (Domain::Float32, SqlType::Float32 | SqlType::Float64) => true,
        (Domain::Float64, SqlType::Float64) => true,
        (
            Domain::Int {
                kind: IntKind::Date,
                ..
            },
            SqlType::Date | SqlType::Timestamp,
        ) => true,
        (
            Domain::Int {
                kind: IntKind::Timestamp { tz: false, .. },
                ..
            },
            SqlType::Timestamp,
        ) => true,
        (
            Domain::Int {
                kind: IntKind::Timestamp { tz: true, .. },
                ..
            },
            SqlType::TimestampTz,
        ) => true,
        (Domain::Utf8, SqlType::Varchar) => true,
        (Domain::Bool, SqlType::Bool) => true,
        _ => false,
    }
}

/// `lo <= col <= hi`.
fn span(col: &Column, lo: Value, hi: Value) -> Predicate {
    Predicate::and(vec![
        Predicate::Cmp {
            col: col.clone(),
            op: CmpOp::GtEq,
            value: lo,
        },
        Predicate::Cmp {
            col: col.clone(),
            op: CmpOp::LtEq,
            value: hi,
        },
    ])
}

/// DuckDB gives an IN list one type, the widest of the column's and the items': one DOUBLE
/// item makes every number in the list a DOUBLE (and the column too), a FLOAT item makes
/// them FLOATs against an integer or decimal column.
fn unify_list(items: Vec<Literal>, domain: Domain) -> Vec<Literal> {
    let numeric = matches!(
        domain,
        Domain::Float32
            | Domain::Int {
                kind: IntKind::Integer | IntKind::Decimal { .. },
                ..
            }
    );
    let any_double = items.iter().any(|l| matches!(l, Literal::Float(_)));
    let any_float = items.iter().any(|l| matches!(l, Literal::Real(_)));
    if !numeric || !(any_double || any_float && domain != Domain::Float32) {
        return items;
    }
    let ty = if any_double {
        SqlType::Float64
    } else {
        SqlType::Float32
    };
    items
        .into_iter()
        .map(|l| match l {
            Literal::Number(_) | Literal::Str(_) | Literal::Real(_) | Literal::Float(_) => {
                cast_literal(l.clone(), ty).unwrap_or(l)
            }
            other => other,
        })
        .collect()
}

fn constant_comparison(a: &Literal, op: CmpOp, b: &Literal) -> Result<Predicate> {
    use crate::predicate::literal::parse_number;
    let ord = match (a, b) {
        (Literal::Null, _) | (_, Literal::Null) => return Ok(Predicate::Const(None)),
        (Literal::Number(x), Literal::Number(y)) => match (parse_number(x), parse_number(y)) {
            (Some(x), Some(y)) => match (x.num.checked_mul(y.den), y.num.checked_mul(x.den)) {
                (Some(l), Some(r)) => l.cmp(&r),
                _ => return Err(Error::unsupported("comparison of very large constants")),
            },
            _ => return Err(Error::unsupported("comparison of very large constants")),
        },
        (Literal::Str(x), Literal::Str(y)) => x.cmp(y),
        (
            Literal::Number(_) | Literal::Float(_) | Literal::Real(_),
            Literal::Number(_) | Literal::Float(_) | Literal::Real(_),
        ) => {
            let as_f64 = |l: &Literal| match l {
                Literal::Number(n) => n.parse::<f64>().ok(),
                Literal::Float(f) => Some(*f),
                Literal::Real(f) => Some(f64::from(*f)),
                _ => None,
            };
            match (as_f64(a), as_f64(b)) {
                (Some(x), Some(y)) => crate::predicate::value::float_cmp(x, y),
                _ => return Err(Error::unsupported("comparison of very large constants")),
            }
        }
        (Literal::Bool(x), Literal::Bool(y)) => x.cmp(y),
        (Literal::Date(x), Literal::Date(y)) => x.cmp(y),
        (Literal::Timestamp { ns: x, .. }, Literal::Timestamp { ns: y, .. }) => x.cmp(y),
        _ => {
            return Err(Error::unsupported(format!(
                "cannot compare constants {} and {}",
                describe(a),
                describe(b)
            )))
        }
    };
    Ok(Predicate::Const(Some(op.holds(ord))))
}
