//! The `token` index: per unit (page, row group or file), a bloom filter of the tokens of
//! a string column's values. A token is a maximal run of characters the tokenizer keeps:
//!
//! - `alnum` (the default): Unicode alphanumeric characters (`char::is_alphanumeric`);
//!   everything else separates tokens. `"GET /api/v2?id=42"` has tokens `GET`, `api`,
//!   `v2`, `id`, `42`.
//! - `whitespace`: anything but Unicode whitespace. `"GET /api/v2?id=42"` has tokens
//!   `GET` and `/api/v2?id=42`.
//!
//! Tokens keep their case and are hashed as their UTF-8 bytes. A search keeps a unit only
//! if every *whole* token of its literal pieces may be in it: a token the piece itself
//! delimits (or that touches the value's start or end, as in `LIKE 'GET /%'`). So
//! `contains(s, ' timeout ')`, `s LIKE '%error code 42%'` (`code` is whole) and `s = 'a b'`
//! prune; `contains(s, 'timeout')` does not (the value may hold `timeouts`): use an n-gram
//! index for that. Payload: bloom_payload.rs, the parameter being the tokenizer (0
//! `alnum`, 1 `whitespace`).

use parquet::schema::types::ColumnDescriptor;

use crate::error::{Error, Result};
use crate::index::block::BlockReader;
use crate::index::bloom_payload::{Hashes, Header, PayloadBuilder, PayloadProbe, HEAD_GUESS};
use crate::index::hash::hash_bytes;
use crate::index::kind::{
    IndexBuilder, IndexKind, IndexProbe, KindInfo, Param, ParamType, ParamValue, Settings,
};
use crate::index::locator::Granularity;
use crate::index::span::Span;
use crate::index::text::{is_string, string_values, text_pieces};
use crate::predicate::pattern::Piece;
use crate::predicate::Predicate;

/// The token index kind.
#[derive(Debug)]
pub struct Token;

const TOKENIZERS: &[&str] = &["alnum", "whitespace"];

static INFO: KindInfo = KindInfo {
    name: "token",
    code: 7,
    class_name: "TokenIndex",
    cli_flag: "token",
    doc: "Bloom filters of the tokens (words) of a string column per page, row group or file, \
          sized from the distinct tokens of the fullest unit: equality and searches for whole \
          words (LIKE '%error 42%', contains(s, ' timeout ')) read only the units that may hold \
          every word.",
    multi_column: false,
    granularities: &[Granularity::Page, Granularity::RowGroup, Granularity::File],
    params: &[
        Param {
            name: "tokenizer",
            doc: "alnum: runs of letters and digits; whitespace: runs of anything but spaces",
            ty: ParamType::Choice(TOKENIZERS),
            default: ParamValue::Str(std::borrow::Cow::Borrowed("alnum")),
        },
        Param {
            name: "fpp",
            doc: "target false-positive rate of each filter, per token",
            ty: ParamType::Float { min: 0.0, max: 1.0 },
            default: ParamValue::Float(0.01),
        },
    ],
};

const PAYLOAD_VERSION: u32 = 1;

impl IndexKind for Token {
    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn used_in_planning(&self, _granularity: Granularity, _file_has_page_index: bool) -> bool {
        true
    }

    fn answers(&self, leaf: &Predicate) -> bool {
        // Whether some tokenizer finds a whole token (the alnum one finds the fewest).
        [Tokenizer::Alnum, Tokenizer::Whitespace]
            .into_iter()
            .any(|t| TokenHashes(t).groups(leaf).is_some())
    }

    fn builder(&self, settings: &Settings) -> Box<dyn IndexBuilder> {
        let tokenizer = match settings.choice("tokenizer") {
            "whitespace" => Tokenizer::Whitespace,
            _ => Tokenizer::Alnum,
        };
        Box::new(PayloadBuilder::new(
            PAYLOAD_VERSION,
            tokenizer as u32,
            settings.granularity,
            settings.float("fpp"),
            Box::new(TokenHashes(tokenizer)),
        ))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        let header = Header::verify(payload, PAYLOAD_VERSION, INFO.name)?;
        Tokenizer::from_code(header.param)?;
        Ok(header.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        let header = Header::read(block, PAYLOAD_VERSION, INFO.name)?;
        let tokenizer = Tokenizer::from_code(header.param)?;
        Ok(Box::new(PayloadProbe::new(
            header,
            Box::new(TokenHashes(tokenizer)),
        )))
    }

    fn head_len(&self) -> Option<u64> {
        Some(HEAD_GUESS)
    }
}

/// How text is cut into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tokenizer {
    Alnum = 0,
    Whitespace = 1,
}

impl Tokenizer {
    fn from_code(code: u32) -> Result<Tokenizer> {
        match code {
            0 => Ok(Tokenizer::Alnum),
            1 => Ok(Tokenizer::Whitespace),
            other => Err(Error::InvalidIndex(format!(
                "token index with unknown tokenizer {other}"
            ))),
        }
    }

    fn separates(self, c: char) -> bool {
        match self {
            Tokenizer::Alnum => !c.is_alphanumeric(),
            Tokenizer::Whitespace => c.is_whitespace(),
        }
    }

    /// Byte ranges of the tokens of `text`.
    fn tokens(self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (self.separates(c), start) {
                (true, Some(s)) => {
                    out.push((s, i));
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push((s, text.len()));
        }
        out
    }

    /// The tokens of a piece that are whole in every value containing it: delimited by the
    /// piece itself or by the value's start or end.
    fn whole<'a>(self, piece: &Piece<'a>) -> impl Iterator<Item = &'a str> + 'a {
        let text = piece.text;
        // `has_token` bounds its text by alphanumeric characters: whole tokens only for
        // the tokenizer that cuts there.
        let bounded = piece.token_bounded && self == Tokenizer::Alnum;
        let (at_start, at_end) = (piece.at_start || bounded, piece.at_end || bounded);
        self.tokens(text)
            .into_iter()
            .filter(move |&(s, e)| (s > 0 || at_start) && (e < text.len() || at_end))
            .map(move |(s, e)| &text[s..e])
    }
}

/// The tokens of values and of the literals a leaf needs.
struct TokenHashes(Tokenizer);

impl TokenHashes {
    fn groups(&self, leaf: &Predicate) -> Option<Vec<Vec<u64>>> {
        if let Some(pieces) = text_pieces(leaf) {
            let mut group: Vec<u64> = pieces
                .iter()
                .flat_map(|p| self.0.whole(p))
                .map(|t| hash_bytes(t.as_bytes()))
                .collect();
            group.sort_unstable();
            group.dedup();
            return (!group.is_empty()).then_some(vec![group]);
        }
        string_values(leaf)?
            .into_iter()
            .map(|v| {
                let mut g = Vec::new();
                self.of_value(v, &mut g);
                (!g.is_empty()).then_some(g)
            })
            .collect()
    }
}

impl Hashes for TokenHashes {
    fn of_value(&self, value: &[u8], out: &mut Vec<u64>) {
        // Text that is not UTF-8 is read with replacement characters: they separate tokens
        // (alnum) or join the token they touch (whitespace), and no searched literal holds
        // one, so a literal's whole tokens are found either way.
        let text = String::from_utf8_lossy(value);
        for (s, e) in self.0.tokens(&text) {
            out.push(hash_bytes(&text.as_bytes()[s..e]));
        }
    }

    fn of_leaf(&self, leaf: &Predicate, column: &ColumnDescriptor) -> Option<Vec<Vec<u64>>> {
        if !is_string(leaf, column) {
            return None;
        }
        self.groups(leaf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::{build_payload, leaf_eq, leaf_like, probe_units};

    #[test]
    fn tokenizers_cut_as_documented() {
        let text = "GET /api/v2?id=42 naïve 東京";
        let cut = |t: Tokenizer| {
            t.tokens(text)
                .into_iter()
                .map(|(s, e)| &text[s..e])
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cut(Tokenizer::Alnum),
            vec!["GET", "api", "v2", "id", "42", "naïve", "東京"]
        );
        assert_eq!(
            cut(Tokenizer::Whitespace),
            vec!["GET", "/api/v2?id=42", "naïve", "東京"]
        );
    }

    #[test]
    fn only_whole_tokens_of_pieces_are_required() {
        let whole = |pattern: &str| {
            let leaf = leaf_like(pattern);
            let pieces = text_pieces(&leaf).unwrap();
            pieces
                .iter()
                .flat_map(|p| {
                    Tokenizer::Alnum
                        .whole(p)
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(whole("%error code 42%"), vec!["code"]);
        assert_eq!(whole("%timeout%"), Vec::<String>::new());
        assert_eq!(whole("% timeout %"), vec!["timeout"]);
        assert_eq!(whole("GET /%"), vec!["GET"]);
        assert_eq!(whole("%id=42"), vec!["42"]);
        assert_eq!(whole("a_b c%"), Vec::<String>::new());
        assert_eq!(whole("a_b c d%"), vec!["c"]);
    }

    #[test]
    fn finds_units_holding_every_whole_token() {
        let pages: Vec<Vec<&str>> = vec![
            vec!["error code 42 in parser", "ok"],
            vec!["warning code 7", "error codes 43"],
            vec!["timeout after 30 s"],
        ];
        let settings = Settings::new(&INFO, Some(Granularity::Page), &[]).unwrap();
        let payload = build_payload(&Token, &settings, &pages);
        assert_eq!(Token.verify(&payload).unwrap().len(), 3);
        let units = |leaf: &Predicate| probe_units(&Token, &payload, leaf);
        assert_eq!(units(&leaf_like("%error code 42 %")), Some(vec![0]));
        assert_eq!(units(&leaf_like("% code %")), Some(vec![0, 1]));
        assert_eq!(units(&leaf_like("timeout %")), Some(vec![2]));
        assert_eq!(units(&leaf_like("%timeout%")), None);
        assert_eq!(units(&leaf_eq("ok")), Some(vec![0]));
        assert_eq!(units(&leaf_eq("")), None);
        assert!(!Token.answers(&leaf_like("%abc%")));
        assert!(Token.answers(&leaf_like("%a b c%")));
    }
}
