//! The rows of one row group that may match, as sorted disjoint ranges.
//!
//! Page-level pruning works column by column, but the pages of different columns do
//! not line up: a page boundary in one column falls in the middle of a page in another.
//! Pruning results therefore cannot be combined page by page. Instead each predicate
//! translates the pages it keeps into the row ranges they cover, and predicates meet
//! here, in row space, by [`RowRanges::intersect`] (AND) and [`RowRanges::union`] (OR).
//! The result is turned into a [`RowSelection`] for the arrow reader with
//! [`RowRanges::to_selection`].
//!
//! Every value is kept in a single canonical form (see [`RowRanges`]), so equality of
//! values is equality of the row sets they denote, and every operation can rely on the
//! form of its inputs to run in one linear pass.

use std::ops::Range;

use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

/// Row indexes within one row group: sorted, disjoint, non-adjacent, non-empty half-open ranges.
///
/// The representation is canonical: two values are equal exactly when they contain
/// the same rows. The invariants are established by the constructors and preserved by
/// every operation, which is why the field is private.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RowRanges {
    ranges: Vec<Range<u64>>,
}

impl RowRanges {
    /// No rows: the answer when a predicate proves that nothing in the row group matches.
    pub fn empty() -> Self {
        Self { ranges: Vec::new() }
    }

    /// Every row of a row group with `num_rows` rows: `[0, num_rows)`, or empty when
    /// `num_rows` is 0. This is the neutral element of [`Self::intersect`], the starting
    /// point before any predicate has pruned anything.
    pub fn full(num_rows: u64) -> Self {
        Self::from_ranges(std::iter::once(0..num_rows))
    }

    /// Builds the canonical form of an arbitrary collection of ranges.
    ///
    /// Ranges may come in any order, may overlap or touch, and may be empty (including
    /// "reversed" ranges with `start > end`, which contain no rows). The result sorts
    /// them, drops the empty ones and merges those that overlap or are adjacent.
    pub fn from_ranges<I: IntoIterator<Item = Range<u64>>>(ranges: I) -> Self {
        let mut input: Vec<Range<u64>> = ranges.into_iter().filter(|r| r.start < r.end).collect();
        // Pages arrive in row order almost always, so this is usually a no-op scan.
        input.sort_unstable_by_key(|r| r.start);
        let mut out = Self {
            ranges: Vec::with_capacity(input.len()),
        };
        for r in input {
            out.push_sorted(r);
        }
        out
    }

    /// The canonical ranges, in ascending order.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// True when no row can match, so the row group need not be read at all.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The number of rows covered.
    pub fn row_count(&self) -> u64 {
        // Ranges are disjoint subranges of u64, so the sum cannot overflow.
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Rows in both `self` and `other` (the AND of two predicates).
    ///
    /// A two-pointer merge over both sorted lists, linear in their combined length.
    pub fn intersect(&self, other: &Self) -> Self {
        let (a, b) = (&self.ranges, &other.ranges);
        let mut out = Self {
            ranges: Vec::with_capacity(a.len().max(b.len())),
        };
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            let start = a[i].start.max(b[j].start);
            let end = a[i].end.min(b[j].end);
            if start < end {
                out.push_sorted(start..end);
            }
            // The range that ends first cannot meet anything further in the other list.
            if a[i].end <= b[j].end {
                i += 1;
            } else {
                j += 1;
            }
        }
        out
    }

    /// Rows in `self` or `other` (the OR of two predicates).
    ///
    /// A merge of both sorted lists by start, linear in their combined length.
    pub fn union(&self, other: &Self) -> Self {
        let (a, b) = (&self.ranges, &other.ranges);
        let mut out = Self {
            ranges: Vec::with_capacity(a.len() + b.len()),
        };
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let take_a = match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) => x.start <= y.start,
                (Some(_), None) => true,
                _ => false,
            };
            let next = if take_a {
                i += 1;
                a[i - 1].clone()
            } else {
                j += 1;
                b[j - 1].clone()
            };
            out.push_sorted(next);
        }
        out
    }

    /// Rows of `[0, num_rows)` not in `self`.
    pub fn complement(&self, num_rows: u64) -> Self {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        let mut cursor = 0u64;
        for r in &self.ranges {
            out.push(cursor..r.start.min(num_rows));
            cursor = r.end;
        }
        out.push(cursor..num_rows);
        Self::from_ranges(out)
    }

    /// Rows in `self` but not in `other`.
    pub fn subtract(&self, other: &Self, num_rows: u64) -> Self {
        self.intersect(&other.complement(num_rows.max(self.end())))
    }

    /// The `len` rows covered after the first `skip` of them, in order: a piece of the
    /// selection (a LIMIT read takes its rows piece by piece).
    pub fn slice(&self, skip: u64, len: u64) -> Self {
        let mut out = Vec::new();
        let (mut skip, mut len) = (skip, len);
        for r in &self.ranges {
            if len == 0 {
                break;
            }
            let n = r.end - r.start;
            if skip >= n {
                skip -= n;
                continue;
            }
            let start = r.start + skip;
            let end = start + len.min(r.end - start);
            len -= end - start;
            skip = 0;
            out.push(start..end);
        }
        RowRanges { ranges: out }
    }

    /// One past the last row covered (0 when empty).
    pub fn end(&self) -> u64 {
        self.ranges.last().map_or(0, |r| r.end)
    }

    /// True if any row of `range` is in `self`; used to decide whether a page (given
    /// as the row range it covers) has to be read at all.
    ///
    /// A binary search, logarithmic in the number of ranges. An empty `range` overlaps
    /// nothing.
    pub fn overlaps(&self, range: &Range<u64>) -> bool {
        if range.start >= range.end {
            return false;
        }
        // The first range that ends after `range` starts is the only candidate: every
        // earlier one ends before `range`, every later one starts after this one ends.
        let idx = self.ranges.partition_point(|r| r.end <= range.start);
        self.ranges.get(idx).is_some_and(|r| r.start < range.end)
    }

    /// Select/skip runs covering exactly `num_rows` rows (ranges beyond num_rows are clipped);
    /// adjacent runs of the same kind merged, no zero-length selectors.
    ///
    /// The arrow reader requires a selection that accounts for every row of the row
    /// group, so a trailing skip is emitted when the last range ends before `num_rows`.
    /// Because the ranges are disjoint and non-adjacent, select runs alternate with
    /// non-empty skip runs and never need merging.
    pub fn to_selection(&self, num_rows: u64) -> RowSelection {
        let mut selectors = Vec::with_capacity(2 * self.ranges.len() + 1);
        let mut cursor = 0u64;
        for r in &self.ranges {
            if r.start >= num_rows {
                break;
            }
            let end = r.end.min(num_rows);
            if r.start > cursor {
                selectors.push(RowSelector::skip(to_usize(r.start - cursor)));
            }
            selectors.push(RowSelector::select(to_usize(end - r.start)));
            cursor = end;
        }
        if cursor < num_rows {
            selectors.push(RowSelector::skip(to_usize(num_rows - cursor)));
        }
        RowSelection::from(selectors)
    }

    /// Appends `r` (non-empty, starting at or after the start of the last range), merging
    /// it into the last range when they overlap or touch. This is what keeps every
    /// operation's output canonical.
    fn push_sorted(&mut self, r: Range<u64>) {
        debug_assert!(r.start < r.end);
        match self.ranges.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => self.ranges.push(r),
        }
    }
}

/// Row counts are `u64` (Parquet stores them as i64) but [`RowSelector`] counts in
/// `usize`. On 64-bit targets the conversion is lossless; on smaller targets a row
/// group that large could not be read anyway, so saturating avoids a panic on input.
fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
// `&[0..10]` here really is a list of one range, not a list of rows.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Rows 0..UNIVERSE are enough to exercise every overlap/adjacency case while
    /// keeping the set model cheap.
    const UNIVERSE: u64 = 200;

    fn rr(ranges: &[Range<u64>]) -> RowRanges {
        RowRanges::from_ranges(ranges.iter().cloned())
    }

    fn model(ranges: &[Range<u64>]) -> BTreeSet<u64> {
        ranges.iter().flat_map(|r| r.clone()).collect()
    }

    fn rows(r: &RowRanges) -> BTreeSet<u64> {
        model(r.ranges())
    }

    fn assert_canonical(r: &RowRanges) {
        for x in r.ranges() {
            assert!(x.start < x.end, "empty range in {r:?}");
        }
        for w in r.ranges().windows(2) {
            assert!(
                w[0].end < w[1].start,
                "unsorted, overlapping or adjacent: {r:?}"
            );
        }
    }

    /// The rows a selection selects, and the total rows it covers.
    fn selected(sel: &RowSelection) -> (BTreeSet<u64>, u64) {
        let mut out = BTreeSet::new();
        let mut pos = 0u64;
        for s in sel.iter() {
            let n = s.row_count as u64;
            if !s.skip {
                out.extend(pos..pos + n);
            }
            pos += n;
        }
        (out, pos)
    }

    fn selectors(sel: &RowSelection) -> Vec<RowSelector> {
        sel.iter().copied().collect()
    }

    #[test]
    fn empty_and_default() {
        let e = RowRanges::empty();
        assert!(e.is_empty());
        assert_eq!(e.row_count(), 0);
        assert_eq!(e.ranges(), &[] as &[Range<u64>]);
        assert_eq!(e, RowRanges::default());
        assert!(!e.overlaps(&(0..10)));
        assert_eq!(e.intersect(&RowRanges::full(10)), e);
        assert_eq!(e.union(&RowRanges::full(10)), RowRanges::full(10));
    }

    #[test]
    fn full() {
        assert_eq!(RowRanges::full(0), RowRanges::empty());
        let f = RowRanges::full(7);
        assert_eq!(f.ranges(), &[0..7]);
        assert_eq!(f.row_count(), 7);
        assert!(f.overlaps(&(6..100)));
        assert!(!f.overlaps(&(7..100)));
    }

    #[test]
    fn from_ranges_drops_empty_and_reversed() {
        #[allow(clippy::reversed_empty_ranges)]
        let r = rr(&[5..5, 9..3, 0..0]);
        assert!(r.is_empty());
    }

    #[test]
    fn from_ranges_merges_touching_and_overlapping() {
        assert_eq!(rr(&[0..5, 5..10]).ranges(), &[0..10]);
        assert_eq!(rr(&[5..10, 0..5]).ranges(), &[0..10]);
        assert_eq!(rr(&[0..6, 4..10, 20..30, 2..3]).ranges(), &[0..10, 20..30]);
        assert_eq!(rr(&[0..5, 6..10]).ranges(), &[0..5, 6..10]);
        assert_eq!(rr(&[0..100, 10..20]).ranges(), &[0..100]);
    }

    #[test]
    fn intersect_touching_ranges_is_empty() {
        let a = rr(&[0..5]);
        let b = rr(&[5..10]);
        assert!(a.intersect(&b).is_empty());
        assert_eq!(a.union(&b).ranges(), &[0..10]);
    }

    #[test]
    fn intersect_and_union_examples() {
        let a = rr(&[0..10, 20..30, 40..50]);
        let b = rr(&[5..25, 45..60]);
        assert_eq!(a.intersect(&b).ranges(), &[5..10, 20..25, 45..50]);
        assert_eq!(a.union(&b).ranges(), &[0..30, 40..60]);
    }

    #[test]
    fn overlaps_edges() {
        let a = rr(&[10..20, 30..40]);
        assert!(!a.overlaps(&(0..10)));
        assert!(a.overlaps(&(0..11)));
        assert!(a.overlaps(&(19..30)));
        assert!(!a.overlaps(&(20..30)));
        assert!(a.overlaps(&(39..40)));
        assert!(!a.overlaps(&(40..1000)));
        assert!(!a.overlaps(&(15..15)));
        assert!(a.overlaps(&(0..u64::MAX)));
    }

    #[test]
    fn to_selection_basic() {
        let a = rr(&[2..4, 6..7]);
        assert_eq!(
            selectors(&a.to_selection(10)),
            vec![
                RowSelector::skip(2),
                RowSelector::select(2),
                RowSelector::skip(2),
                RowSelector::select(1),
                RowSelector::skip(3),
            ]
        );
    }

    #[test]
    fn to_selection_full_and_empty() {
        assert_eq!(
            selectors(&RowRanges::full(5).to_selection(5)),
            vec![RowSelector::select(5)]
        );
        assert_eq!(
            selectors(&RowRanges::empty().to_selection(5)),
            vec![RowSelector::skip(5)]
        );
        assert!(selectors(&RowRanges::empty().to_selection(0)).is_empty());
        assert!(selectors(&RowRanges::full(5).to_selection(0)).is_empty());
    }

    #[test]
    fn to_selection_clips() {
        // A range straddling the end is cut; ranges wholly beyond it vanish.
        let a = rr(&[0..2, 8..15, 20..30]);
        assert_eq!(
            selectors(&a.to_selection(10)),
            vec![
                RowSelector::select(2),
                RowSelector::skip(6),
                RowSelector::select(2),
            ]
        );
        // Clipping exactly at a range start leaves only the skip before it.
        let b = rr(&[0..2, 10..15]);
        assert_eq!(
            selectors(&b.to_selection(10)),
            vec![RowSelector::select(2), RowSelector::skip(8)]
        );
        assert_eq!(b.to_selection(10).row_count(), 2);
    }

    #[test]
    fn large_row_numbers() {
        let a = rr(&[0..u64::MAX]);
        assert_eq!(a.row_count(), u64::MAX);
        assert_eq!(a.union(&rr(&[5..u64::MAX])), a);
        assert!(a.overlaps(&(u64::MAX - 1..u64::MAX)));
    }

    fn arb_range() -> impl Strategy<Value = Range<u64>> {
        // Mostly short ranges so that random sets have gaps, touching ends and overlaps;
        // the length may be zero.
        (0..UNIVERSE, 0u64..60).prop_map(|(s, len)| s..(s + len).min(UNIVERSE))
    }

    fn arb_ranges() -> impl Strategy<Value = Vec<Range<u64>>> {
        prop::collection::vec(arb_range(), 0..=10)
    }

    proptest! {

        #[test]
        fn slice_takes_rows_in_order(a in arb_ranges(), skip in 0u64..UNIVERSE, len in 0u64..UNIVERSE) {
            let r = rr(&a);
            let got = r.slice(skip, len);
            assert_canonical(&got);
            let want: BTreeSet<u64> = rows(&r).into_iter().skip(skip as usize).take(len as usize).collect();
            prop_assert_eq!(rows(&got), want);
        }
        #[test]
        fn prop_from_ranges_normalises(v in arb_ranges()) {
            let r = RowRanges::from_ranges(v.clone());
            assert_canonical(&r);
            prop_assert_eq!(rows(&r), model(&v));
            prop_assert_eq!(r.row_count(), model(&v).len() as u64);
            prop_assert_eq!(r.is_empty(), model(&v).is_empty());
            // Canonical form is a fixed point.
            prop_assert_eq!(RowRanges::from_ranges(r.ranges().iter().cloned()), r.clone());
        }

        #[test]
        fn prop_intersect_union_match_model(a in arb_ranges(), b in arb_ranges()) {
            let (ra, rb) = (rr(&a), rr(&b));
            let (ma, mb) = (model(&a), model(&b));
            let i = ra.intersect(&rb);
            let u = ra.union(&rb);
            assert_canonical(&i);
            assert_canonical(&u);
            prop_assert_eq!(rows(&i), ma.intersection(&mb).copied().collect::<BTreeSet<_>>());
            prop_assert_eq!(rows(&u), ma.union(&mb).copied().collect::<BTreeSet<_>>());
        }

        #[test]
        fn prop_algebra(a in arb_ranges(), b in arb_ranges(), c in arb_ranges()) {
            let (a, b, c) = (rr(&a), rr(&b), rr(&c));
            prop_assert_eq!(a.intersect(&b), b.intersect(&a));
            prop_assert_eq!(a.union(&b), b.union(&a));
            prop_assert_eq!(a.intersect(&b).intersect(&c), a.intersect(&b.intersect(&c)));
            prop_assert_eq!(a.union(&b).union(&c), a.union(&b.union(&c)));
            prop_assert_eq!(a.intersect(&a), a.clone());
            prop_assert_eq!(a.union(&a), a.clone());
            prop_assert_eq!(
                a.intersect(&b.union(&c)),
                a.intersect(&b).union(&a.intersect(&c))
            );
            prop_assert_eq!(a.intersect(&RowRanges::empty()), RowRanges::empty());
            prop_assert_eq!(a.union(&RowRanges::empty()), a.clone());
            prop_assert_eq!(a.intersect(&RowRanges::full(UNIVERSE)), a.clone());
        }

        #[test]
        fn prop_overlaps_matches_model(v in arb_ranges(), q in arb_range()) {
            let r = rr(&v);
            let m = model(&v);
            let expected = q.clone().any(|row| m.contains(&row));
            prop_assert_eq!(r.overlaps(&q), expected);
        }

        #[test]
        fn prop_to_selection_matches_model(v in arb_ranges(), n in 0u64..=UNIVERSE + 20) {
            let r = rr(&v);
            let sel = r.to_selection(n);
            let (sel_rows, total) = selected(&sel);
            prop_assert_eq!(total, n);
            let expected: BTreeSet<u64> = model(&v).into_iter().filter(|&x| x < n).collect();
            prop_assert_eq!(sel.row_count() as u64, expected.len() as u64);
            prop_assert_eq!(sel_rows, expected);
            let s = selectors(&sel);
            prop_assert!(s.iter().all(|x| x.row_count > 0));
            prop_assert!(s.windows(2).all(|w| w[0].skip != w[1].skip));
        }
    }
}
