//! SQL `WHERE` text to an untyped expression tree, with constants folded.
//!
//! The `sqlparser` crate parses with its DuckDB dialect (double quotes name identifiers,
//! single quotes are strings). Everything that does not depend on a column is evaluated
//! here, once, when the scan is planned: typed literals, casts of literals, `now()` and
//! `current_date`, interval arithmetic. What remains refers to columns.

use sqlparser::ast::{
    BinaryOperator, CastKind, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
    Value as SqlValue,
};
use sqlparser::dialect::DuckDbDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{Error, Result};
use crate::predicate::expr::CmpOp;
use crate::predicate::literal::parse_number;
use crate::predicate::literal::{cast_literal, sql_type, Literal, SqlType};
use crate::predicate::time;

/// An expression before it is bound to a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Ast {
    /// A column by its path (`"s"."a"` is `["s", "a"]`).
    Column(Vec<String>),
    Lit(Literal),
    /// A cast of a column; casts of constants are folded away.
    Cast(Box<Ast>, SqlType),
    Cmp(Box<Ast>, CmpOp, Box<Ast>),
    And(Box<Ast>, Box<Ast>),
    Or(Box<Ast>, Box<Ast>),
    Not(Box<Ast>),
    IsNull(Box<Ast>, bool),
    InList(Box<Ast>, Vec<Ast>, bool),
    Between(Box<Ast>, Box<Ast>, Box<Ast>, bool),
    /// A string matched against a pattern: `[NOT] [I]LIKE`, `starts_with`, `regexp_matches`...
    Match {
        expr: Box<Ast>,
        pattern: Box<Ast>,
        how: MatchFn,
        negated: bool,
    },
}

/// How a string is matched against its pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchFn {
    /// `LIKE` (`ILIKE` when `case_insensitive`), with an optional `ESCAPE` constant.
    Like {
        escape: Option<Box<Ast>>,
        case_insensitive: bool,
    },
    /// `starts_with` and `prefix`.
    StartsWith,
    /// `ends_with` and `suffix`.
    EndsWith,
    Contains,
    /// `regexp_matches`, with its options constant.
    Regex {
        options: Option<Box<Ast>>,
    },
    /// `has_token`: a whole token (or phrase) under the `alnum` tokenizer.
    Token,
}

/// Parse `text` as one boolean expression; `now_ns` is the plan's "now".
pub fn parse(text: &str, now_ns: i128) -> Result<Ast> {
    let dialect = DuckDbDialect {};
    let cannot = |e: &dyn std::fmt::Display| {
        Error::predicate(format!("cannot parse predicate {text:?}: {e}"))
    };
    let tokens = Tokenizer::new(&dialect, text)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(|e| cannot(&e))?;
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(typed_strings(tokens));
    let expr = parser
        .parse_expr()
        .map_err(|e| Error::predicate(format!("cannot parse predicate {text:?}: {e}")))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(Error::predicate(format!(
            "cannot parse predicate {text:?}: unexpected {} after the expression",
            next.token
        )));
    }
    Converter { now_ns }.convert(&expr)
}

struct Converter {
    now_ns: i128,
}

impl Converter {
    fn convert(&self, expr: &Expr) -> Result<Ast> {
        Ok(match expr {
            Expr::Identifier(ident) => {
                if ident.quote_style.is_none() {
                    if let Some(lit) = self.special_identifier(&ident.value) {
                        return Ok(Ast::Lit(lit));
                    }
                }
                Ast::Column(vec![ident.value.clone()])
            }
            Expr::CompoundIdentifier(parts) => {
                Ast::Column(parts.iter().map(|p| p.value.clone()).collect())
            }
            Expr::Nested(inner) => self.convert(inner)?,
            Expr::Value(v) => Ast::Lit(literal_of(&v.value)?),
            Expr::TypedString(ts) => {
                let text = match &ts.value.value {
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => s.clone(),
                    other => {
                        return Err(Error::predicate(format!(
                            "expected a quoted string after {}, found {other}",
                            ts.data_type
                        )))
                    }
                };
                let ty = sql_type(&ts.data_type.to_string())?;
                Ast::Lit(cast_literal(Literal::Str(text), ty)?)
            }
            Expr::Interval(iv) => {
                let value = match self.convert(&iv.value)? {
                    Ast::Lit(Literal::Str(s)) => s,
                    Ast::Lit(Literal::Number(n)) => n,
                    other => {
                        return Err(Error::predicate(format!(
                            "INTERVAL needs a constant, found {other:?}"
                        )))
                    }
                };
                let text = match &iv.leading_field {
                    Some(field) => format!("{value} {field}"),
                    None => value,
                };
                let (months, ns) = time::parse_interval(&text)?;
                Ast::Lit(Literal::Interval { months, ns })
            }
            Expr::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                let no_args = match &f.args {
                    FunctionArguments::None => true,
                    FunctionArguments::List(list) => list.args.is_empty(),
                    FunctionArguments::Subquery(_) => false,
                };
                match (name.as_str(), no_args) {
                    (
                        "now"
                        | "current_timestamp"
                        | "get_current_timestamp"
                        | "transaction_timestamp",
                        true,
                    ) => Ast::Lit(Literal::Timestamp {
                        ns: self.now_ns,
                        tz: true,
                    }),
                    ("current_date" | "today", true) => {
                        Ast::Lit(Literal::Date(
                            time::floor_div(self.now_ns, time::NS_PER_DAY) as i32,
                        ))
                    }
                    ("cast", false) => return Err(Error::unsupported("use CAST(x AS type)")),
                    (
                        "starts_with" | "prefix" | "ends_with" | "suffix" | "contains"
                        | "regexp_matches" | "has_token",
                        false,
                    ) => self.match_function(&name, &f.args)?,
                    _ => {
                        return Err(Error::unsupported(format!(
                            "function {} is not supported in predicates (supported: now(), current_date, current_timestamp, starts_with, prefix, ends_with, suffix, contains, has_token, regexp_matches)",
                            f.name
                        )));
                    }
                }
            }
            Expr::UnaryOp { op, expr } => match op {
                UnaryOperator::Not => Ast::Not(Box::new(self.convert(expr)?)),
                UnaryOperator::Minus => match self.convert(expr)? {
                    Ast::Lit(Literal::Number(n)) => Ast::Lit(Literal::Number(negate_number(&n))),
                    Ast::Lit(Literal::Float(f)) => Ast::Lit(Literal::Float(-f)),
                    Ast::Lit(Literal::Real(f)) => Ast::Lit(Literal::Real(-f)),
                    Ast::Lit(Literal::Interval { months, ns }) => Ast::Lit(Literal::Interval {
                        months: -months,
                        ns: -ns,
                    }),
                    Ast::Lit(Literal::Null) => Ast::Lit(Literal::Null),
                    other => {
                        return Err(Error::unsupported(format!(
                            "unary minus is only supported on constants, not {other:?}"
                        )))
                    }
                },
                UnaryOperator::Plus => self.convert(expr)?,
                other => {
                    return Err(Error::unsupported(format!(
                        "operator {other} is not supported in predicates"
                    )))
                }
            },
            Expr::BinaryOp { left, op, right } => {
                let l = self.convert(left)?;
                let r = self.convert(right)?;
                match op {
                    BinaryOperator::And => Ast::And(Box::new(l), Box::new(r)),
                    BinaryOperator::Or => Ast::Or(Box::new(l), Box::new(r)),
                    BinaryOperator::Eq => Ast::Cmp(Box::new(l), CmpOp::Eq, Box::new(r)),
                    BinaryOperator::NotEq => Ast::Cmp(Box::new(l), CmpOp::NotEq, Box::new(r)),
                    BinaryOperator::Lt => Ast::Cmp(Box::new(l), CmpOp::Lt, Box::new(r)),
                    BinaryOperator::LtEq => Ast::Cmp(Box::new(l), CmpOp::LtEq, Box::new(r)),
                    BinaryOperator::Gt => Ast::Cmp(Box::new(l), CmpOp::Gt, Box::new(r)),
                    BinaryOperator::GtEq => Ast::Cmp(Box::new(l), CmpOp::GtEq, Box::new(r)),
                    BinaryOperator::Plus | BinaryOperator::Minus => {
                        fold_arithmetic(l, op == &BinaryOperator::Minus, r)?
                    }
                    other => {
                        return Err(Error::unsupported(format!(
                            "operator {other} is not supported in predicates"
                        )))
                    }
                }
            }
            Expr::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => self.like(expr, pattern, escape_char.as_deref(), false, *negated)?,
            Expr::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => self.like(expr, pattern, escape_char.as_deref(), true, *negated)?,
            Expr::IsNull(e) => Ast::IsNull(Box::new(self.convert(e)?), false),
            Expr::IsNotNull(e) => Ast::IsNull(Box::new(self.convert(e)?), true),
            Expr::InList {
                expr,
                list,
                negated,
            } => Ast::InList(
                Box::new(self.convert(expr)?),
                list.iter()
                    .map(|e| self.convert(e))
                    .collect::<Result<_>>()?,
                *negated,
            ),
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => Ast::Between(
                Box::new(self.convert(expr)?),
                Box::new(self.convert(low)?),
                Box::new(self.convert(high)?),
                *negated,
            ),
            Expr::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if format.is_some() || matches!(kind, CastKind::TryCast | CastKind::SafeCast) {
                    return Err(Error::unsupported(format!(
                        "only CAST(x AS type) and x::type are supported, not {expr_text}",
                        expr_text = expr
                    )));
                }
                let ty = sql_type(&data_type.to_string())?;
                match self.convert(expr)? {
                    Ast::Lit(lit) => Ast::Lit(cast_literal(lit, ty)?),
                    other => Ast::Cast(Box::new(other), ty),
                }
            }
            other => {
                return Err(Error::unsupported(format!(
                    "expression {other} is not supported in predicates"
                )))
            }
        })
    }

    fn like(
        &self,
        expr: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        case_insensitive: bool,
        negated: bool,
    ) -> Result<Ast> {
        Ok(Ast::Match {
            expr: Box::new(self.convert(expr)?),
            pattern: Box::new(self.convert(pattern)?),
            how: MatchFn::Like {
                escape: escape.map(|e| self.convert(e).map(Box::new)).transpose()?,
                case_insensitive,
            },
            negated,
        })
    }

    /// `starts_with(x, 'a')` and the other string functions that make a condition.
    fn match_function(&self, name: &str, args: &FunctionArguments) -> Result<Ast> {
        let FunctionArguments::List(list) = args else {
            return Err(Error::unsupported(format!(
                "{name}() takes plain arguments"
            )));
        };
        let args = list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => self.convert(e),
                other => Err(Error::unsupported(format!(
                    "argument {other} of {name}() is not supported"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let arity = if name == "regexp_matches" {
            2..=3
        } else {
            2..=2
        };
        if !arity.contains(&args.len()) {
            return Err(Error::predicate(format!(
                "{name}() takes {} arguments, got {}",
                if name == "regexp_matches" {
                    "2 or 3"
                } else {
                    "2"
                },
                args.len()
            )));
        }
        let mut args = args.into_iter();
        let expr = Box::new(args.next().expect("checked arity"));
        let pattern = Box::new(args.next().expect("checked arity"));
        let how = match name {
            "starts_with" | "prefix" => MatchFn::StartsWith,
            "ends_with" | "suffix" => MatchFn::EndsWith,
            "contains" => MatchFn::Contains,
            "has_token" => MatchFn::Token,
            _ => MatchFn::Regex {
                options: args.next().map(Box::new),
            },
        };
        Ok(Ast::Match {
            expr,
            pattern,
            how,
            negated: false,
        })
    }

    fn special_identifier(&self, name: &str) -> Option<Literal> {
        match name.to_ascii_lowercase().as_str() {
            "current_date" => Some(Literal::Date(
                time::floor_div(self.now_ns, time::NS_PER_DAY) as i32,
            )),
            "current_timestamp" => Some(Literal::Timestamp {
                ns: self.now_ns,
                tz: true,
            }),
            _ => None,
        }
    }
}

fn literal_of(v: &SqlValue) -> Result<Literal> {
    Ok(match v {
        SqlValue::Null => Literal::Null,
        SqlValue::Boolean(b) => Literal::Bool(*b),
        SqlValue::Number(n, _) => number_literal(n),
        SqlValue::SingleQuotedString(s)
        | SqlValue::EscapedStringLiteral(s)
        | SqlValue::UnicodeStringLiteral(s) => Literal::Str(s.clone()),
        SqlValue::HexStringLiteral(h) => Literal::Bytes(parse_hex(h)?),
        other => {
            return Err(Error::unsupported(format!(
                "literal {other} is not supported in predicates"
            )))
        }
    })
}

/// DuckDB types `1e3` and numbers beyond 38 digits as DOUBLE, every other number as an
/// exact INTEGER or DECIMAL.
fn number_literal(n: &str) -> Literal {
    let scientific = n.contains(['e', 'E']);
    match n.parse::<f64>() {
        Ok(f) if scientific || parse_number(n).is_none() => Literal::Float(f),
        _ => Literal::Number(n.to_string()),
    }
}

/// DuckDB's typed strings of types the parser does not know as such (`TIMESTAMP_NS '...'`,
/// `TIMESTAMP_MS`, `TIMESTAMP_S`, `TIMESTAMP_US`) as the casts they mean, token by token, so
/// nothing inside a string is touched.
fn typed_strings(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    const TYPES: [&str; 4] = [
        "TIMESTAMP_NS",
        "TIMESTAMP_MS",
        "TIMESTAMP_S",
        "TIMESTAMP_US",
    ];
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut it = tokens.into_iter().peekable();
    while let Some(t) = it.next() {
        let typed = match &t.token {
            Token::Word(w) if w.quote_style.is_none() => TYPES
                .iter()
                .find(|ty| w.value.eq_ignore_ascii_case(ty))
                .copied(),
            _ => None,
        };
        let Some(ty) = typed else {
            out.push(t);
            continue;
        };
        // The string may follow after whitespace.
        let mut gap = Vec::new();
        while matches!(it.peek().map(|n| &n.token), Some(Token::Whitespace(_))) {
            gap.extend(it.next());
        }
        match it.peek().map(|n| &n.token) {
            Some(Token::SingleQuotedString(_)) => {
                let string = it.next().expect("peeked");
                let span = t.span;
                let at = |token| TokenWithSpan { token, span };
                out.push(at(Token::make_keyword("CAST")));
                out.push(at(Token::LParen));
                out.push(string);
                out.push(at(Token::make_keyword("AS")));
                out.push(at(Token::make_word(ty, None)));
                out.push(at(Token::RParen));
            }
            _ => {
                out.push(t);
                out.extend(gap);
            }
        }
    }
    out
}

pub(crate) fn parse_hex(h: &str) -> Result<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return Err(Error::predicate(format!(
            "hex literal X'{h}' has an odd length"
        )));
    }
    (0..h.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&h[i..i + 2], 16)
                .map_err(|_| Error::predicate(format!("invalid hex literal X'{h}'")))
        })
        .collect()
}

fn negate_number(n: &str) -> String {
    match n.strip_prefix('-') {
        Some(rest) => rest.to_string(),
        None => format!("-{n}"),
    }
}

/// `date ± interval`, `timestamp ± interval`, `date ± integer days`, `interval ± interval`.
fn fold_arithmetic(l: Ast, minus: bool, r: Ast) -> Result<Ast> {
    let sign = if minus { -1 } else { 1 };
    let out = match (l, r) {
        (Ast::Lit(Literal::Null), _) | (_, Ast::Lit(Literal::Null)) => Literal::Null,
        (Ast::Lit(Literal::Date(d)), Ast::Lit(Literal::Interval { months, ns })) => {
            let (months, ns) = (months * sign, ns * sign as i128);
            let base = i128::from(d) * time::NS_PER_DAY;
            let shifted = time::add_interval(base, months, ns)?;
            if ns % time::NS_PER_DAY == 0 {
                Literal::Date(time::floor_div(shifted, time::NS_PER_DAY) as i32)
            } else {
                Literal::Timestamp {
                    ns: shifted,
                    tz: false,
                }
            }
        }
        (Ast::Lit(Literal::Timestamp { ns: t, tz }), Ast::Lit(Literal::Interval { months, ns })) => {
            Literal::Timestamp {
                ns: time::add_interval(t, months * sign, ns * sign as i128)?,
                tz,
            }
        }
        (Ast::Lit(Literal::Interval { months, ns }), Ast::Lit(Literal::Date(d))) if !minus => {
            let base = i128::from(d) * time::NS_PER_DAY;
            Literal::Timestamp {
                ns: time::add_interval(base, months, ns)?,
                tz: false,
            }
        }
        (Ast::Lit(Literal::Date(d)), Ast::Lit(Literal::Number(n))) => {
            let days: i64 = n
                .parse()
                .map_err(|_| Error::predicate(format!("cannot add {n} days to a date")))?;
            let out = i64::from(d) + days * sign;
            Literal::Date(i32::try_from(out).map_err(|_| Error::predicate("date out of range"))?)
        }
        (
            Ast::Lit(Literal::Interval { months: m1, ns: n1 }),
            Ast::Lit(Literal::Interval { months: m2, ns: n2 }),
        ) => Literal::Interval {
            months: m1 + m2 * sign,
            ns: n1 + n2 * sign as i128,
        },
        (l, r) => {
            return Err(Error::unsupported(format!(
                "arithmetic is only supported between constant dates, timestamps and intervals, not {l:?} {} {r:?}",
                if minus { "-" } else { "+" }
            )))
        }
    };
    Ok(Ast::Lit(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Ast {
        parse(s, 0).unwrap()
    }

    #[test]
    fn identifiers_and_strings() {
        assert_eq!(
            p("\"a b\" = 'x'"),
            Ast::Cmp(
                Box::new(Ast::Column(vec!["a b".into()])),
                CmpOp::Eq,
                Box::new(Ast::Lit(Literal::Str("x".into())))
            )
        );
        assert_eq!(
            p("s.a IS NULL"),
            Ast::IsNull(Box::new(Ast::Column(vec!["s".into(), "a".into()])), false)
        );
    }

    #[test]
    fn folds_time_arithmetic() {
        let day = time::NS_PER_DAY;
        match p("ts > now() - INTERVAL '7 days'") {
            Ast::Cmp(_, CmpOp::Gt, r) => {
                assert_eq!(
                    *r,
                    Ast::Lit(Literal::Timestamp {
                        ns: -7 * day,
                        tz: true
                    })
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            p("d = DATE '2024-01-31' + INTERVAL 1 MONTH"),
            p("d = DATE '2024-02-29'")
        );
        assert_eq!(p("d = current_date"), p("d = DATE '1970-01-01'"));
    }

    #[test]
    fn casts_of_constants_fold() {
        assert_eq!(p("x = CAST('12' AS INTEGER)"), p("x = 12"));
        assert_eq!(p("x = '2.5'::DECIMAL(4,1)"), p("x = 2.5"));
        assert!(
            matches!(p("CAST(x AS BIGINT) = 1"), Ast::Cmp(l, _, _) if matches!(*l, Ast::Cast(..)))
        );
    }

    #[test]
    fn rejects_trailing_garbage_and_unknown_functions() {
        assert!(matches!(parse("x = 1 y", 0), Err(Error::Predicate(_))));
        assert!(matches!(
            parse("lower(x) = 'a'", 0),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(parse("x = ", 0), Err(Error::Predicate(_))));
    }

    #[test]
    fn string_matches() {
        let m = |s: &str| match p(s) {
            Ast::Match { how, negated, .. } => (how, negated),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            m("s NOT ILIKE 'a%'"),
            (
                MatchFn::Like {
                    escape: None,
                    case_insensitive: true
                },
                true
            )
        );
        assert_eq!(
            m("s LIKE 'a!%' ESCAPE '!'").0,
            MatchFn::Like {
                escape: Some(Box::new(Ast::Lit(Literal::Str("!".into())))),
                case_insensitive: false
            }
        );
        assert_eq!(m("prefix(s, 'a')").0, MatchFn::StartsWith);
        assert_eq!(m("suffix(s, 'a')").0, MatchFn::EndsWith);
        assert_eq!(m("contains(s, 'a')").0, MatchFn::Contains);
        assert!(matches!(
            m("regexp_matches(s, 'a', 'i')").0,
            MatchFn::Regex { options: Some(_) }
        ));
        assert!(matches!(parse("contains(s)", 0), Err(Error::Predicate(_))));
    }
}
