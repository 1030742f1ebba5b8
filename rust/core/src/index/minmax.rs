//! The `page_minmax` index: exact min, max and null count of each page of a column, for
//! files written without a page index: the planner prunes pages with it as with a
//! ColumnIndex. Its payload is the aggregates payload without sums (see aggregates.rs).

use crate::error::Result;
use crate::index::aggregates::{bounds_used, AggregatesBuilder, AggregatesIndex};
use crate::index::block::BlockReader;
use crate::index::kind::{IndexBuilder, IndexKind, IndexProbe, KindInfo, Settings};
use crate::index::locator::Granularity;
use crate::index::span::Span;
use crate::predicate::Predicate;

/// The page_minmax index kind.
#[derive(Debug)]
pub struct MinMax;

static INFO: KindInfo = KindInfo {
    name: "page_minmax",
    code: 3,
    class_name: "MinMaxIndex",
    cli_flag: "minmax",
    doc: "The exact min, max and null count of each page of a column, for files written \
          without a page index: the planner prunes pages with it as with a ColumnIndex.",
    multi_column: false,
    granularities: &[Granularity::Page],
    params: &[],
};

impl IndexKind for MinMax {
    fn info(&self) -> &'static KindInfo {
        &INFO
    }

    /// Page bounds are what old writers lack; coarser ones are in the footer.
    fn stored_granularity(&self, _requested: Granularity) -> Granularity {
        Granularity::Page
    }

    fn used_in_planning(&self, granularity: Granularity, file_has_page_index: bool) -> bool {
        bounds_used(granularity, file_has_page_index)
    }

    fn answers(&self, _leaf: &Predicate) -> bool {
        true
    }

    fn builder(&self, _settings: &Settings) -> Box<dyn IndexBuilder> {
        Box::new(AggregatesBuilder::new(Granularity::Page, false))
    }

    fn verify(&self, payload: &[u8]) -> Result<Vec<Span>> {
        Ok(AggregatesIndex::decode(payload)?.spans)
    }

    fn probe(&self, block: &BlockReader) -> Result<Box<dyn IndexProbe>> {
        Ok(Box::new(AggregatesIndex::decode(&block.payload()?)?))
    }
}
