//! The select list of `aggregate`: `count(*)`, `count(x)`, `min(x)`, `max(x)`, `sum(x)`
//! and `avg(x)` over columns, each optionally `AS name`, parsed with `sqlparser`.

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem};
use sqlparser::dialect::DuckDbDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    CountStar,
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

/// One aggregate of the select list.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub func: Func,
    /// The column's path as written (none for `count(*)`).
    pub column: Option<Vec<String>>,
    /// The output column's name: the alias, else the call as written.
    pub name: String,
}

/// Parse a select list of aggregates.
pub fn parse_select(text: &str) -> Result<Vec<Call>> {
    let bad = |why: String| Error::predicate(format!("cannot parse aggregates {text:?}: {why}"));
    let dialect = DuckDbDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| bad(e.to_string()))?;
    let items = parser.parse_projection().map_err(|e| bad(e.to_string()))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(bad(format!("unexpected {} after the list", next.token)));
    }
    items.iter().map(|item| call(item).map_err(bad)).collect()
}

fn call(item: &SelectItem) -> std::result::Result<Call, String> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
        _ => return Err(format!("only aggregates may be selected, not {item}")),
    };
    let Expr::Function(f) = expr else {
        return Err(format!("{expr} is not an aggregate"));
    };
    let name = f.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &f.args else {
        return Err(format!("{expr} needs one argument"));
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() || f.filter.is_some() {
        return Err(format!(
            "{expr}: DISTINCT, FILTER and ORDER BY are not supported"
        ));
    }
    if f.over.is_some() {
        return Err(format!("{expr}: window functions are not supported"));
    }
    let arg = match &list.args[..] {
        [FunctionArg::Unnamed(a)] => a,
        _ => return Err(format!("{expr} needs exactly one argument")),
    };
    let column = match arg {
        FunctionArgExpr::Wildcard => None,
        FunctionArgExpr::Expr(Expr::Identifier(i)) => Some(vec![i.value.clone()]),
        FunctionArgExpr::Expr(Expr::CompoundIdentifier(parts)) => {
            Some(parts.iter().map(|p| p.value.clone()).collect())
        }
        other => {
            return Err(format!(
                "{expr}: the argument must be a column, found {other}"
            ))
        }
    };
    let func = match (name.as_str(), column.is_some()) {
        ("count", false) => Func::CountStar,
        ("count", true) => Func::Count,
        ("min", true) => Func::Min,
        ("max", true) => Func::Max,
        ("sum", true) => Func::Sum,
        ("avg" | "mean", true) => Func::Avg,
        (_, false) => return Err(format!("{expr}: only count takes *")),
        _ => {
            return Err(format!(
                "{name} is not supported (count, min, max, sum and avg are)"
            ))
        }
    };
    Ok(Call {
        func,
        column,
        name: alias.unwrap_or_else(|| expr.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_aggregates_with_aliases() {
        let calls = parse_select("count(*), SUM(l_quantity) AS q, min(\"a b\"), max(s.x)").unwrap();
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[0].func, Func::CountStar);
        assert_eq!(calls[0].name, "count(*)");
        assert_eq!(calls[1].func, Func::Sum);
        assert_eq!(calls[1].name, "q");
        assert_eq!(calls[2].column, Some(vec!["a b".to_string()]));
        assert_eq!(
            calls[3].column,
            Some(vec!["s".to_string(), "x".to_string()])
        );
    }

    #[test]
    fn refuses_what_it_cannot_answer() {
        for bad in [
            "*",
            "x",
            "count(DISTINCT x)",
            "sum(x + 1)",
            "median(x)",
            "sum(*)",
            "count(*) count(*)",
            "",
        ] {
            assert!(parse_select(bad).is_err(), "{bad}");
        }
    }
}
