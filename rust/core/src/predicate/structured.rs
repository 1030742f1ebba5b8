//! A predicate given as data: the JSON form engines hand over their filters in (Spark's
//! pushed filters, DataFusion's and polars' expressions), read into the same untyped tree
//! SQL text parses into, so nothing renders a literal as text for the core to parse again.
//!
//! ```text
//! expr    := {"op": "and" | "or", "args": [expr, ...]}
//!          | {"op": "not", "args": [expr]}
//!          | {"op": "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=", "args": [operand, operand]}
//!          | {"op": "is_null" | "is_not_null", "args": [operand]}
//!          | {"op": "in" | "not_in", "args": [operand, value, ...]}
//!          | {"op": "between" | "not_between", "args": [operand, low, high]}
//!          | {"op": "like" | "not_like" | "ilike" | "not_ilike", "args": [operand, pattern],
//!             "escape": "\\"}                                          (escape optional)
//!          | {"op": "starts_with" | "ends_with" | "contains", "args": [operand, text]}
//!          | {"op": "regexp_matches", "args": [operand, regex] | [operand, regex, options]}
//!          | {"op": "has_token", "args": [operand, token or phrase]}
//!          | operand                        (a boolean column or constant)
//! operand := {"col": "name"} | {"col": ["struct", "field"]}
//!          | {"lit": json-value}            (null, true/false, a number as written, text)
//!          | {"lit": "text", "type": "DATE" | "TIMESTAMP" | "DECIMAL(38,10)" | ...}
//!          | {"lit": "0a1b", "type": "BLOB", "encoding": "hex" | "base64"}
//!          | {"op": "cast", "args": [operand], "type": "BIGINT"}
//! ```
//!
//! Literals mean what the same literal means in SQL text (`docs/predicates.md`): a JSON
//! integer is an INTEGER, any other JSON number a DOUBLE (JSON's numbers are doubles), and
//! `{"lit": text, "type": T}` is `CAST(text AS T)`, folded as the parser folds it (exact
//! decimals, dates, timestamps and the rest are typed text).

use base64::Engine;
use serde_json::{Map, Value as Json};

use crate::error::{Error, Result};
use crate::predicate::expr::CmpOp;
use crate::predicate::literal::{cast_literal, sql_type, Literal};
use crate::predicate::sql::{parse_hex, Ast, MatchFn};

/// Nesting deeper than this is refused: a hostile document must not exhaust the stack.
const MAX_DEPTH: usize = 256;

/// Read the JSON text of a predicate into the untyped tree.
pub fn parse(text: &str) -> Result<Ast> {
    let json: Json = serde_json::from_str(text)
        .map_err(|e| Error::predicate(format!("the predicate is not JSON: {e}")))?;
    expr(&json, 0)
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::predicate(format!("structured predicate: {what}"))
}

fn object(json: &Json) -> Result<&Map<String, Json>> {
    json.as_object()
        .ok_or_else(|| bad(format!("expected an object, found {json}")))
}

fn expr(json: &Json, depth: usize) -> Result<Ast> {
    if depth > MAX_DEPTH {
        return Err(bad(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    let obj = object(json)?;
    let Some(op) = obj.get("op") else {
        return operand(obj);
    };
    let op = op
        .as_str()
        .ok_or_else(|| bad(format!("\"op\" must be text, found {op}")))?;
    let args = match obj.get("args") {
        Some(Json::Array(a)) => a.as_slice(),
        Some(other) => {
            return Err(bad(format!(
                "\"args\" of {op} must be a list, found {other}"
            )))
        }
        None => &[],
    };
    let arity = |n: usize| -> Result<()> {
        if args.len() == n {
            Ok(())
        } else {
            Err(bad(format!("{op} takes {n} arguments, got {}", args.len())))
        }
    };
    let sub = |i: usize| expr(&args[i], depth + 1);
    let boxed = |i: usize| sub(i).map(Box::new);
    Ok(match op {
        "and" | "or" => {
            let parts = args
                .iter()
                .map(|a| expr(a, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            balanced(parts, op == "and")
                .ok_or_else(|| bad(format!("{op} needs at least one argument")))?
        }
        "not" => {
            arity(1)?;
            Ast::Not(boxed(0)?)
        }
        "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=" => {
            arity(2)?;
            let cmp = match op {
                "=" => CmpOp::Eq,
                "!=" | "<>" => CmpOp::NotEq,
                "<" => CmpOp::Lt,
                "<=" => CmpOp::LtEq,
                ">" => CmpOp::Gt,
                _ => CmpOp::GtEq,
            };
            Ast::Cmp(boxed(0)?, cmp, boxed(1)?)
        }
        "is_null" | "is_not_null" => {
            arity(1)?;
            Ast::IsNull(boxed(0)?, op == "is_not_null")
        }
        "in" | "not_in" => {
            if args.is_empty() {
                return Err(bad(format!("{op} needs an operand")));
            }
            let items = (1..args.len()).map(sub).collect::<Result<Vec<_>>>()?;
            Ast::InList(boxed(0)?, items, op == "not_in")
        }
        "between" | "not_between" => {
            arity(3)?;
            Ast::Between(boxed(0)?, boxed(1)?, boxed(2)?, op == "not_between")
        }
        "like" | "not_like" | "ilike" | "not_ilike" => {
            arity(2)?;
            let escape = match obj.get("escape") {
                None | Some(Json::Null) => None,
                Some(Json::String(s)) => Some(Box::new(Ast::Lit(Literal::Str(s.clone())))),
                Some(other) => return Err(bad(format!("\"escape\" must be text, found {other}"))),
            };
            Ast::Match {
                expr: boxed(0)?,
                pattern: boxed(1)?,
                how: MatchFn::Like {
                    escape,
                    case_insensitive: op.ends_with("ilike"),
                },
                negated: op.starts_with("not_"),
            }
        }
        "starts_with" | "ends_with" | "contains" | "has_token" => {
            arity(2)?;
            let how = match op {
                "starts_with" => MatchFn::StartsWith,
                "ends_with" => MatchFn::EndsWith,
                "has_token" => MatchFn::Token,
                _ => MatchFn::Contains,
            };
            Ast::Match {
                expr: boxed(0)?,
                pattern: boxed(1)?,
                how,
                negated: false,
            }
        }
        "regexp_matches" => {
            if !(2..=3).contains(&args.len()) {
                return Err(bad(format!(
                    "regexp_matches takes 2 or 3 arguments, got {}",
                    args.len()
                )));
            }
            Ast::Match {
                expr: boxed(0)?,
                pattern: boxed(1)?,
                how: MatchFn::Regex {
                    options: if args.len() == 3 {
                        Some(boxed(2)?)
                    } else {
                        None
                    },
                },
                negated: false,
            }
        }
        "cast" => {
            arity(1)?;
            let ty = sql_type(type_name(obj, "cast")?)?;
            match sub(0)? {
                Ast::Lit(lit) => Ast::Lit(cast_literal(lit, ty)?),
                other => Ast::Cast(Box::new(other), ty),
            }
        }
        other => return Err(bad(format!("unknown op {other:?}"))),
    })
}

/// The AND (or OR) of `parts` as a tree of depth log(n): a list of thousands (an IN list
/// pushed as ORs) must not nest as deep as it is long.
fn balanced(mut parts: Vec<Ast>, and: bool) -> Option<Ast> {
    if parts.len() <= 1 {
        return parts.pop();
    }
    let right = parts.split_off(parts.len() / 2);
    let (a, b) = (
        Box::new(balanced(parts, and)?),
        Box::new(balanced(right, and)?),
    );
    Some(if and { Ast::And(a, b) } else { Ast::Or(a, b) })
}

fn type_name<'a>(obj: &'a Map<String, Json>, what: &str) -> Result<&'a str> {
    match obj.get("type") {
        Some(Json::String(t)) => Ok(t),
        Some(other) => Err(bad(format!(
            "\"type\" of {what} must be text, found {other}"
        ))),
        None => Err(bad(format!("{what} needs a \"type\""))),
    }
}

fn operand(obj: &Map<String, Json>) -> Result<Ast> {
    if let Some(col) = obj.get("col") {
        return Ok(Ast::Column(match col {
            Json::String(name) => vec![name.clone()],
            Json::Array(parts) if !parts.is_empty() => parts
                .iter()
                .map(|p| {
                    p.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad(format!("a column path holds text, found {p}")))
                })
                .collect::<Result<_>>()?,
            other => {
                return Err(bad(format!(
                    "\"col\" must be a name or a path, found {other}"
                )))
            }
        }));
    }
    let Some(value) = obj.get("lit") else {
        return Err(bad(format!(
            "expected \"op\", \"col\" or \"lit\" in {}",
            Json::Object(obj.clone())
        )));
    };
    let bare = match value {
        Json::Null => Literal::Null,
        Json::Bool(b) => Literal::Bool(*b),
        // JSON numbers are integers or doubles; an exact decimal is typed text.
        Json::Number(n) if n.is_i64() || n.is_u64() => Literal::Number(n.to_string()),
        Json::Number(n) => Literal::Float(
            n.as_f64()
                .ok_or_else(|| bad(format!("number {n} is not a double")))?,
        ),
        Json::String(s) => Literal::Str(s.clone()),
        other => return Err(bad(format!("a literal is a JSON scalar, found {other}"))),
    };
    let Some(ty) = obj.get("type") else {
        return Ok(Ast::Lit(bare));
    };
    let ty = ty
        .as_str()
        .ok_or_else(|| bad(format!("\"type\" must be text, found {ty}")))?;
    let bare = match (obj.get("encoding").and_then(Json::as_str), bare) {
        (None, lit) => lit,
        (Some("hex"), Literal::Str(s)) => Literal::Bytes(parse_hex(&s)?),
        (Some("base64"), Literal::Str(s)) => Literal::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(s.as_bytes())
                .map_err(|e| bad(format!("invalid base64 literal: {e}")))?,
        ),
        (Some(other), _) => {
            return Err(bad(format!(
                "unknown encoding {other:?} (hex or base64, of a text literal)"
            )))
        }
    };
    Ok(Ast::Lit(cast_literal(bare, sql_type(ty)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::sql;

    /// The JSON form reads into the tree its SQL spelling parses into.
    fn same(json: &str, text: &str) {
        assert_eq!(parse(json).unwrap(), sql::parse(text, 0).unwrap(), "{json}");
    }

    #[test]
    fn reads_as_sql_parses() {
        same(
            r#"{"op": "=", "args": [{"col": "a"}, {"lit": 5}]}"#,
            "a = 5",
        );
        same(
            r#"{"op": "and", "args": [{"op": ">", "args": [{"col": "a"}, {"lit": "1.5", "type": "DECIMAL(2,1)"}]},
                {"op": "is_not_null", "args": [{"col": ["s", "b"]}]},
                {"op": "in", "args": [{"col": "c"}, {"lit": "x"}, {"lit": "y"}]}]}"#,
            // n-ary lists are read as balanced trees (same rows as left-deep ones).
            "a > 1.5::DECIMAL(2,1) AND (s.b IS NOT NULL AND c IN ('x', 'y'))",
        );
        same(
            r#"{"op": "not_between", "args": [{"col": "d"},
                {"lit": "2024-01-01", "type": "DATE"}, {"lit": "2024-02-01", "type": "DATE"}]}"#,
            "d NOT BETWEEN DATE '2024-01-01' AND DATE '2024-02-01'",
        );
        same(
            r#"{"op": "not_like", "args": [{"col": "s"}, {"lit": "a!%%"}], "escape": "!"}"#,
            "s NOT LIKE 'a!%%' ESCAPE '!'",
        );
        same(
            r#"{"op": "<", "args": [{"op": "cast", "args": [{"col": "i"}], "type": "BIGINT"}, {"lit": 1e3}]}"#,
            "CAST(i AS BIGINT) < 1e3",
        );
        same(
            r#"{"op": "=", "args": [{"col": "b"}, {"lit": "0A1b", "type": "BLOB", "encoding": "hex"}]}"#,
            "b = X'0A1B'",
        );
        same(
            r#"{"op": "=", "args": [{"col": "n"}, {"lit": "12345678901234567890.123456789012345678", "type": "DECIMAL(38,18)"}]}"#,
            "n = CAST('12345678901234567890.123456789012345678' AS DECIMAL(38,18))",
        );
        same(
            r#"{"op": "or", "args": [{"op": "not", "args": [{"col": "flag"}]}, {"lit": null}]}"#,
            "NOT flag OR NULL",
        );
    }

    #[test]
    fn malformed_documents_are_predicate_errors() {
        for bad in [
            "",
            "[]",
            r#"{"op": 5}"#,
            r#"{"op": "=", "args": [{"col": "a"}]}"#,
            r#"{"op": "frobnicate", "args": []}"#,
            r#"{"col": 7}"#,
            r#"{"lit": [1, 2]}"#,
            r#"{"lit": "x", "type": "NO SUCH TYPE"}"#,
            r#"{"lit": "zz", "type": "BLOB", "encoding": "hex"}"#,
            r#"{"op": "and", "args": []}"#,
        ] {
            assert!(
                matches!(parse(bad), Err(Error::Predicate(_) | Error::Unsupported(_))),
                "{bad}: {:?}",
                parse(bad)
            );
        }
        let deep = format!(
            "{}{{\"col\": \"a\"}}{}",
            r#"{"op": "not", "args": ["#.repeat(300),
            "]}".repeat(300)
        );
        assert!(matches!(parse(&deep), Err(Error::Predicate(_))));
        // A long list is no deeper than its logarithm.
        let many: Vec<String> = (0..10_000)
            .map(|i| format!(r#"{{"op": "=", "args": [{{"col": "a"}}, {{"lit": {i}}}]}}"#))
            .collect();
        let ored = format!(r#"{{"op": "or", "args": [{}]}}"#, many.join(","));
        fn depth(a: &Ast) -> usize {
            match a {
                Ast::And(x, y) | Ast::Or(x, y) => 1 + depth(x).max(depth(y)),
                _ => 0,
            }
        }
        assert!(depth(&parse(&ored).unwrap()) <= 14);
    }
}
