//! String patterns as DuckDB reads them: `LIKE` and `ILIKE` (with `ESCAPE`), the functions
//! `starts_with`/`prefix`, `ends_with`/`suffix` and `contains` (written as LIKE patterns),
//! and `regexp_matches` (a regular expression that matches anywhere in the value).
//!
//! Besides matching, a pattern tells pruning what every matching value must contain: its
//! literal prefix (a range of values, for min/max statistics) and its literal pieces (for
//! n-gram and token indexes). For a regular expression those come from its syntax tree
//! (`regex-syntax`): only literals that any match must contain.

use regex_syntax::hir::{Hir, HirKind, Look};

use crate::error::{Error, Result};

/// One element of a LIKE pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Characters matched as they are (a maximal run).
    Lit(String),
    /// `_`: exactly one character.
    One,
    /// `%`: any run of characters, maybe empty.
    Many,
}

/// A pattern a string column is matched against.
#[derive(Debug, Clone, PartialEq)]
pub enum StrPattern {
    /// `LIKE`, or `ILIKE` when `case_insensitive` (then the literals are lower-cased, as
    /// DuckDB lower-cases both sides).
    Like {
        tokens: Vec<Token>,
        case_insensitive: bool,
    },
    /// `regexp_matches`: the expression matches somewhere in the value.
    Regex {
        pattern: String,
        case_insensitive: bool,
        /// Literals every match contains.
        required: Vec<String>,
        /// A literal every matching value starts with (the expression is anchored).
        prefix: Option<String>,
    },
    /// `has_token(s, text)`: the value holds `text` where a token starts and ends, tokens
    /// being runs of alphanumeric characters (`char::is_alphanumeric`, as the token
    /// index's `alnum` tokenizer cuts them): the text's first character starts a token
    /// (nothing alphanumeric just before it, unless the text starts with a separator), and
    /// its last ends one. `has_token(m, 'connection reset')` is the phrase.
    Token { text: String },
}

/// A literal run every matching value contains, and whether it is known to sit at the
/// value's start or end, or to start and end where tokens do (`has_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    pub text: &'a str,
    pub at_start: bool,
    pub at_end: bool,
    /// The text sits between token boundaries: its first and last tokens are whole.
    pub token_bounded: bool,
}

impl StrPattern {
    /// A `LIKE` pattern with an optional escape character (DuckDB has no default one).
    pub fn like(pattern: &str, escape: Option<char>, case_insensitive: bool) -> Result<Self> {
        let text = if case_insensitive {
            lower(pattern)
        } else {
            pattern.to_string()
        };
        let mut tokens = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if Some(c) == escape {
                let escaped = chars.next().ok_or_else(|| {
                    Error::predicate(format!(
                        "LIKE pattern {pattern:?} must not end with its escape character"
                    ))
                })?;
                push_char(&mut tokens, escaped);
            } else if c == '%' {
                if tokens.last() != Some(&Token::Many) {
                    tokens.push(Token::Many);
                }
            } else if c == '_' {
                tokens.push(Token::One);
            } else {
                push_char(&mut tokens, c);
            }
        }
        Ok(StrPattern::Like {
            tokens,
            case_insensitive,
        })
    }

    /// `starts_with(x, text)`.
    pub fn starts_with(text: &str) -> Self {
        Self::literal_with(false, text, true)
    }

    /// `ends_with(x, text)`.
    pub fn ends_with(text: &str) -> Self {
        Self::literal_with(true, text, false)
    }

    /// `contains(x, text)`.
    pub fn contains(text: &str) -> Self {
        Self::literal_with(true, text, true)
    }

    fn literal_with(before: bool, text: &str, after: bool) -> Self {
        let mut tokens = Vec::new();
        if before {
            tokens.push(Token::Many);
        }
        if !text.is_empty() {
            tokens.push(Token::Lit(text.to_string()));
        }
        if after && tokens.last() != Some(&Token::Many) {
            tokens.push(Token::Many);
        }
        StrPattern::Like {
            tokens,
            case_insensitive: false,
        }
    }

    /// `regexp_matches(x, pattern[, options])`; options `i` (ignore case) and `c` (match
    /// case, the default), as DuckDB spells them.
    pub fn regex(pattern: &str, options: Option<&str>) -> Result<Self> {
        let mut case_insensitive = false;
        for o in options.unwrap_or("").chars() {
            match o {
                'i' => case_insensitive = true,
                'c' => case_insensitive = false,
                other => {
                    return Err(Error::unsupported(format!(
                        "regexp_matches option {other:?} is not supported (supported: 'i', 'c')"
                    )))
                }
            }
        }
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(case_insensitive)
            .build()
            .parse(pattern)
            .map_err(|e| {
                Error::predicate(format!("invalid regular expression {pattern:?}: {e}"))
            })?;
        // The evaluator compiles the same text; check now that it can.
        regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| {
                Error::predicate(format!("invalid regular expression {pattern:?}: {e}"))
            })?;
        let (required, prefix) = required_literals(&hir);
        Ok(StrPattern::Regex {
            pattern: pattern.to_string(),
            case_insensitive,
            required,
            prefix,
        })
    }

    /// The one value a pattern without wildcards matches (case-sensitive LIKE only): such
    /// a pattern is an equality.
    pub fn exact(&self) -> Option<&str> {
        match self {
            StrPattern::Like {
                tokens,
                case_insensitive: false,
            } => match tokens.as_slice() {
                [] => Some(""),
                [Token::Lit(s)] => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether every non-NULL value matches (`LIKE '%'`).
    pub fn matches_everything(&self) -> bool {
        matches!(self, StrPattern::Like { tokens, .. } if tokens.as_slice() == [Token::Many])
    }

    /// The literal every matching value starts with (bytewise), when there is one.
    pub fn prefix(&self) -> Option<&str> {
        match self {
            StrPattern::Like {
                tokens,
                case_insensitive: false,
            } => match tokens.first() {
                Some(Token::Lit(s)) => Some(s),
                _ => None,
            },
            StrPattern::Regex { prefix, .. } => prefix.as_deref(),
            StrPattern::Like { .. } | StrPattern::Token { .. } => None,
        }
    }

    /// `p` when the pattern is `p%`: every value starting with `p` matches, and only those.
    pub fn prefix_only(&self) -> Option<&str> {
        match self {
            StrPattern::Like {
                tokens,
                case_insensitive: false,
            } => match tokens.as_slice() {
                [Token::Lit(s), Token::Many] => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// Literal runs every matching value contains as they are (none for case-insensitive
    /// patterns: their values may spell a literal in another case).
    pub fn pieces(&self) -> Vec<Piece<'_>> {
        match self {
            StrPattern::Like {
                tokens,
                case_insensitive: false,
            } => tokens
                .iter()
                .enumerate()
                .filter_map(|(i, t)| match t {
                    Token::Lit(s) => Some(Piece {
                        text: s,
                        at_start: i == 0,
                        at_end: i + 1 == tokens.len(),
                        token_bounded: false,
                    }),
                    _ => None,
                })
                .collect(),
            StrPattern::Regex {
                required,
                case_insensitive: false,
                prefix,
                ..
            } => required
                .iter()
                .map(|s| Piece {
                    text: s,
                    at_start: prefix.as_deref() == Some(s.as_str()),
                    at_end: false,
                    token_bounded: false,
                })
                .collect(),
            StrPattern::Token { text } => vec![Piece {
                text,
                at_start: false,
                at_end: false,
                token_bounded: true,
            }],
            _ => Vec::new(),
        }
    }

    pub fn case_insensitive(&self) -> bool {
        match self {
            StrPattern::Like {
                case_insensitive, ..
            }
            | StrPattern::Regex {
                case_insensitive, ..
            } => *case_insensitive,
            StrPattern::Token { .. } => false,
        }
    }

    /// `has_token(s, text)`.
    pub fn token(text: &str) -> Self {
        StrPattern::Token {
            text: text.to_string(),
        }
    }

    /// Whether one value matches (`None` if the pattern cannot be compiled).
    pub fn matches(&self, value: &str) -> Option<bool> {
        match self {
            StrPattern::Like {
                tokens,
                case_insensitive,
            } => {
                let mut re = String::from("(?s)^");
                for t in tokens {
                    match t {
                        Token::Lit(s) => re.push_str(&regex_syntax::escape(s)),
                        Token::One => re.push('.'),
                        Token::Many => re.push_str(".*"),
                    }
                }
                re.push('$');
                let regex = regex::Regex::new(&re).ok()?;
                Some(if *case_insensitive {
                    regex.is_match(&lower(value))
                } else {
                    regex.is_match(value)
                })
            }
            StrPattern::Regex {
                pattern,
                case_insensitive,
                ..
            } => {
                let regex = regex::RegexBuilder::new(pattern)
                    .case_insensitive(*case_insensitive)
                    .build()
                    .ok()?;
                Some(regex.is_match(value))
            }
            StrPattern::Token { text } => Some(has_token(value, text)),
        }
    }

    /// The LIKE pattern in arrow's syntax (backslash escapes `%`, `_` and itself).
    pub fn arrow_like(&self) -> Option<String> {
        let StrPattern::Like { tokens, .. } = self else {
            return None;
        };
        let mut out = String::new();
        for t in tokens {
            match t {
                Token::Many => out.push('%'),
                Token::One => out.push('_'),
                Token::Lit(s) => {
                    for c in s.chars() {
                        if matches!(c, '%' | '_' | '\\') {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                }
            }
        }
        Some(out)
    }
}

impl StrPattern {
    /// The condition as DuckDB SQL on column text `column`: `s NOT LIKE 'a\%%' ESCAPE '\'`,
    /// `regexp_matches(s, 'a+', 'i')`.
    pub fn sql(&self, column: &str, negated: bool) -> String {
        let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
        let not = if negated { "NOT " } else { "" };
        match self {
            StrPattern::Like {
                case_insensitive, ..
            } => {
                let text = self.arrow_like().unwrap_or_default();
                let op = if *case_insensitive { "ILIKE" } else { "LIKE" };
                let escape = if text.contains('\\') {
                    " ESCAPE '\\'"
                } else {
                    ""
                };
                format!("{column} {not}{op} {}{escape}", quote(&text))
            }
            StrPattern::Regex {
                pattern,
                case_insensitive,
                ..
            } => {
                let options = if *case_insensitive { ", 'i'" } else { "" };
                format!("{not}regexp_matches({column}, {}{options})", quote(pattern))
            }
            StrPattern::Token { text } => format!("{not}has_token({column}, {})", quote(text)),
        }
    }
}

/// Whether `value` holds `text` between token boundaries (see [`StrPattern::Token`]).
/// Each occurrence is tried: in `xab ab` the first `ab` is inside a token, the second is
/// one.
pub fn has_token(value: &str, text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let first_alnum = text.chars().next().is_some_and(char::is_alphanumeric);
    let last_alnum = text.chars().next_back().is_some_and(char::is_alphanumeric);
    let finder = memchr::memmem::Finder::new(text.as_bytes());
    finder.find_iter(value.as_bytes()).any(|at| {
        let before = value[..at].chars().next_back();
        let after = value[at + text.len()..].chars().next();
        (!first_alnum || !before.is_some_and(char::is_alphanumeric))
            && (!last_alnum || !after.is_some_and(char::is_alphanumeric))
    })
}

fn push_char(tokens: &mut Vec<Token>, c: char) {
    match tokens.last_mut() {
        Some(Token::Lit(s)) => s.push(c),
        _ => tokens.push(Token::Lit(c.to_string())),
    }
}

/// Lower case as DuckDB's `lower()`: each character by its simple mapping (so `İ` becomes
/// `i`, and a final sigma is not special).
pub fn lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\u{130}' {
            out.push('i');
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The literals every match of `hir` contains, and the literal it starts with when it is
/// anchored at the start of the text.
fn required_literals(hir: &Hir) -> (Vec<String>, Option<String>) {
    let mut seq = Vec::new();
    flatten(hir, &mut seq);
    let mut runs: Vec<String> = Vec::new();
    let mut run: Vec<u8> = Vec::new();
    let mut prefix = None;
    let mut anchored = false;
    let mut first_run = true;
    let end_run = |run: &mut Vec<u8>, runs: &mut Vec<String>, first: &mut bool| {
        if !run.is_empty() {
            if let Ok(s) = String::from_utf8(std::mem::take(run)) {
                runs.push(s);
            }
        }
        run.clear();
        *first = false;
    };
    for (i, item) in seq.iter().enumerate() {
        match item {
            Item::Lit(bytes) => run.extend_from_slice(bytes),
            Item::Start if i == 0 => anchored = true,
            Item::Required(inner) => {
                if anchored && first_run && !run.is_empty() {
                    prefix = String::from_utf8(run.clone()).ok();
                }
                end_run(&mut run, &mut runs, &mut first_run);
                runs.extend(inner.iter().cloned());
            }
            Item::Start | Item::Break => {
                if anchored && first_run && !run.is_empty() {
                    prefix = String::from_utf8(run.clone()).ok();
                }
                end_run(&mut run, &mut runs, &mut first_run);
            }
        }
    }
    if anchored && first_run && !run.is_empty() {
        prefix = String::from_utf8(run.clone()).ok();
    }
    end_run(&mut run, &mut runs, &mut first_run);
    (runs, prefix)
}

/// One step of a regular expression read as a sequence.
enum Item {
    /// Bytes matched as they are.
    Lit(Vec<u8>),
    /// The start of the text (`^`, `\A`).
    Start,
    /// Something that matches a variable text but contains these literals.
    Required(Vec<String>),
    /// Anything else: it ends a literal run.
    Break,
}

fn flatten(hir: &Hir, out: &mut Vec<Item>) {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => out.push(Item::Lit(lit.0.to_vec())),
        HirKind::Concat(parts) => parts.iter().for_each(|p| flatten(p, out)),
        HirKind::Capture(c) => flatten(&c.sub, out),
        HirKind::Look(Look::Start) => out.push(Item::Start),
        HirKind::Repetition(r) if r.min >= 1 => {
            let (inner, _) = required_literals(&r.sub);
            out.push(Item::Required(inner));
        }
        _ => out.push(Item::Break),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Token {
        Token::Lit(s.into())
    }

    #[test]
    fn like_patterns_parse_with_and_without_escape() {
        let p = StrPattern::like("a%b_c%%", None, false).unwrap();
        assert_eq!(
            p,
            StrPattern::Like {
                tokens: vec![
                    lit("a"),
                    Token::Many,
                    lit("b"),
                    Token::One,
                    lit("c"),
                    Token::Many
                ],
                case_insensitive: false
            }
        );
        // DuckDB has no default escape: a backslash is a literal.
        let p = StrPattern::like("a\\%", None, false).unwrap();
        assert_eq!(p.prefix(), Some("a\\"));
        let p = StrPattern::like("10!%!_%", Some('!'), false).unwrap();
        assert_eq!(p.prefix_only(), Some("10%_"));
        assert_eq!(p.arrow_like().unwrap(), "10\\%\\_%");
        assert!(StrPattern::like("ab!", Some('!'), false).is_err());
        assert_eq!(
            StrPattern::like("abc", None, false).unwrap().exact(),
            Some("abc")
        );
        assert_eq!(StrPattern::like("ABC", None, true).unwrap().exact(), None);
        assert!(StrPattern::like("%%", None, false)
            .unwrap()
            .matches_everything());
    }

    #[test]
    fn functions_are_like_patterns() {
        assert_eq!(
            StrPattern::starts_with("ab%").arrow_like().unwrap(),
            "ab\\%%"
        );
        assert_eq!(StrPattern::ends_with("ab").arrow_like().unwrap(), "%ab");
        assert_eq!(StrPattern::contains("a_b").arrow_like().unwrap(), "%a\\_b%");
        assert!(StrPattern::contains("").matches_everything());
        assert!(StrPattern::starts_with("").matches_everything());
    }

    #[test]
    fn has_token_wants_token_boundaries() {
        assert!(has_token("read timeout after", "timeout"));
        assert!(has_token("timeout", "timeout"));
        assert!(!has_token("timeouts: 3", "timeout"));
        assert!(has_token("request_timeout=5", "timeout"));
        // A later occurrence may be whole where the first is not.
        assert!(has_token("xab ab", "ab"));
        assert!(!has_token("xab abx", "ab"));
        // Separators at the text's ends need no boundary beside them.
        assert!(has_token("GET /api/v2?x", "/api/v2"));
        assert!(!has_token("GET /api/v23", "/api/v2"));
        assert!(has_token("connection reset by peer", "connection reset"));
        assert!(!has_token("école", "cole"));
        assert!(!has_token("anything", ""));
    }

    #[test]
    fn pieces_know_their_anchors() {
        let p = StrPattern::like("GET /%?id=_%x", None, false).unwrap();
        let pieces = p.pieces();
        assert_eq!(
            pieces,
            vec![
                Piece {
                    text: "GET /",
                    at_start: true,
                    at_end: false,
                    token_bounded: false
                },
                Piece {
                    text: "?id=",
                    at_start: false,
                    at_end: false,
                    token_bounded: false
                },
                Piece {
                    text: "x",
                    at_start: false,
                    at_end: true,
                    token_bounded: false
                },
            ]
        );
        assert!(StrPattern::like("%ABC%", None, true)
            .unwrap()
            .pieces()
            .is_empty());
    }

    #[test]
    fn ilike_lowers_as_duckdb_does() {
        assert_eq!(lower("İSTANBUL ΑΣ"), "istanbul ασ");
        let p = StrPattern::like("ÉCOLE%", None, true).unwrap();
        assert_eq!(p.arrow_like().unwrap(), "école%");
        assert_eq!(p.prefix(), None);
    }

    #[test]
    fn regular_expressions_give_required_literals() {
        let p = StrPattern::regex("error (code|id)=4[0-9]+ in foo.bar", None).unwrap();
        let StrPattern::Regex {
            required, prefix, ..
        } = &p
        else {
            panic!()
        };
        assert_eq!(
            required,
            &vec![
                "error ".to_string(),
                "=4".into(),
                " in foo".into(),
                "bar".into()
            ]
        );
        assert_eq!(prefix, &None);
        let p = StrPattern::regex("^GET /api(/v[12])+x", None).unwrap();
        assert_eq!(p.prefix(), Some("GET /api"));
        assert_eq!(
            p.pieces().iter().map(|p| p.text).collect::<Vec<_>>(),
            vec!["GET /api", "/v", "x"]
        );
        let p = StrPattern::regex("abc", Some("i")).unwrap();
        assert!(p.pieces().is_empty());
        assert!(StrPattern::regex("(?i)abc", None)
            .unwrap()
            .pieces()
            .is_empty());
        assert!(StrPattern::regex("a(", None).is_err());
        assert!(StrPattern::regex("a", Some("g")).is_err());
        assert!(StrPattern::regex("a|b", None).unwrap().pieces().is_empty());
        assert!(StrPattern::regex("(abc)?", None)
            .unwrap()
            .pieces()
            .is_empty());
    }
}
