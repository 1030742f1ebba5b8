//! The `ngram` index: per unit (page, row group or file), a bloom filter of every n-byte
//! substring of a string column's values. A substring search (`contains`, `LIKE '%x%'`,
//! `regexp_matches` with literals every match contains) keeps a unit only if every n-gram
//! of each literal piece of at least n bytes may be in it; an equality the same way.
//!
//! N-grams are of bytes, so they work for any UTF-8 text (a piece's bytes lie in the value
//! as they are) and need no tokenizer. Case-insensitive patterns are not answered: their
//! values may spell a literal in another case. Payload: bloom_payload.rs, the parameter
//! being n.

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
use crate::predicate::Predicate;

/// The n-gram index kind.
#[derive(Debug)]
pub struct Ngram;

static INFO: KindInfo = KindInfo {
    name: "ngram",
    code: 6,
    class_name: "NgramIndex",
    cli_flag: "ngram",
    doc: "Bloom filters of the n-byte substrings of a string column per page, row group or \
          file, sized from the distinct n-grams of the fullest unit: contains, LIKE '%x%' and \
          regexp_matches read only the units where every n-gram of the searched text may be.",
    multi_column: false,
    granularities: &[Granularity::Page, Granularity::RowGroup, Granularity::File],
    params: &[
        Param {
            name: "n",
            doc: "bytes in each n-gram; a searched piece shorter than n cannot prune",
            ty: ParamType::Int { min: 2, max: 8 },
            default: ParamValue::Int(3),
        },
        Param {
            name: "fpp",
            doc: "target false-positive rate of each filter, per n-gram",
            ty: ParamType::Float { min: 0.0, max: 1.0 },
            default: ParamValue::Float(0.01),
        },
    ],
};

const PAYLOAD_VERSION: u32 = 1;

impl IndexKind for Ngram {
    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    fn used_in_planning(&self, _granularity: Granularity, _file_has_page_index: bool) -> bool {
        true
    }

    fn answers(&self, leaf: &Predicate) -> bool {
        NgramHashes { n: 3 }.groups(leaf, 1).is_some()
    }

    fn builder(&self, settings: &Settings) -> Box<dyn IndexBuilder> {
        let n = settings.int("n").clamp(2, 8) as usize;
        Box::new(PayloadBuilder::new(
            PAYLOAD_VERSION,
            n as u32,
            settings.granularity,
            settings.float("fpp"),
            Box::new(NgramHashes { n }),
        ))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        let header = Header::verify(payload, PAYLOAD_VERSION, INFO.name)?;
        NgramHashes::with_n(header.param)?;
        Ok(header.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        let header = Header::read(block, PAYLOAD_VERSION, INFO.name)?;
        let hashes = NgramHashes::with_n(header.param)?;
        Ok(Box::new(PayloadProbe::new(header, Box::new(hashes))))
    }

    fn head_len(&self) -> Option<u64> {
        Some(HEAD_GUESS)
    }
}

/// The n-grams of values and of the literals a leaf needs.
struct NgramHashes {
    n: usize,
}

impl NgramHashes {
    fn with_n(n: u32) -> Result<Self> {
        if !(2..=8).contains(&n) {
            return Err(Error::InvalidIndex(format!("ngram index with n = {n}")));
        }
        Ok(NgramHashes { n: n as usize })
    }

    /// The n-gram hashes of `text` (none when it is shorter than n).
    fn grams(&self, text: &[u8], out: &mut Vec<u64>) {
        out.extend(text.windows(self.n).map(hash_bytes));
    }

    /// Groups for `leaf`, given at least `min_pieces` pieces long enough must exist.
    fn groups(&self, leaf: &Predicate, min_pieces: usize) -> Option<Vec<Vec<u64>>> {
        if let Some(pieces) = text_pieces(leaf) {
            let mut group = Vec::new();
            let mut used = 0;
            for p in pieces.iter().filter(|p| p.text.len() >= self.n) {
                self.grams(p.text.as_bytes(), &mut group);
                used += 1;
            }
            group.sort_unstable();
            group.dedup();
            return (used >= min_pieces).then_some(vec![group]);
        }
        // An equality or IN list: every n-gram of one of the values.
        let values = string_values(leaf)?;
        values
            .iter()
            .map(|v| {
                (v.len() >= self.n).then(|| {
                    let mut g = Vec::new();
                    self.grams(v, &mut g);
                    g
                })
            })
            .collect()
    }
}

impl Hashes for NgramHashes {
    fn of_value(&self, value: &[u8], out: &mut Vec<u64>) {
        self.grams(value, out);
    }

    fn of_leaf(&self, leaf: &Predicate, column: &ColumnDescriptor) -> Option<Vec<Vec<u64>>> {
        if !is_string(leaf, column) {
            return None;
        }
        self.groups(leaf, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::{build_payload, leaf_eq, leaf_like, probe_units};

    #[test]
    fn finds_units_holding_every_gram_of_each_piece() {
        let pages: Vec<Vec<&str>> = vec![
            vec!["the quick brown fox", "jumps"],
            vec!["over the lazy dog", ""],
            vec!["quick dogs and brown cats"],
        ];
        let settings = Settings::new(&INFO, Some(Granularity::Page), &[]).unwrap();
        let payload = build_payload(&Ngram, &settings, &pages);
        let spans = Ngram.verify(&payload).unwrap();
        assert_eq!(spans.len(), 3);
        let units = |leaf: &Predicate| probe_units(&Ngram, &payload, leaf);
        assert_eq!(units(&leaf_like("%quick brown%")), Some(vec![0]));
        assert_eq!(units(&leaf_like("%brown%")), Some(vec![0, 2]));
        assert_eq!(units(&leaf_like("%lazy%dog")), Some(vec![1]));
        assert_eq!(
            units(&leaf_like("%zebra%")).map(|u| u.len() <= 1),
            Some(true)
        );
        // A piece shorter than n says nothing.
        assert_eq!(units(&leaf_like("%ox%")), None);
        assert_eq!(units(&leaf_eq("jumps")), Some(vec![0]));
        assert_eq!(units(&leaf_eq("ab")), None);
        assert!(!Ngram.answers(&leaf_like("%AB%")));
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let settings = Settings::new(&INFO, Some(Granularity::RowGroup), &[]).unwrap();
        let payload = build_payload(&Ngram, &settings, &[vec!["abcdef"]]);
        for i in [0, 5, 12, payload.len() - 1] {
            let mut bad = payload.clone();
            bad[i] ^= 0x40;
            assert!(Ngram.verify(&bad).is_err(), "byte {i}");
        }
        assert!(Ngram.verify(&payload[..payload.len() - 3]).is_err());
    }
}
