//! Fetch many small byte ranges as few reads: ranges closer than a gap are merged.

use std::ops::Range;

/// Merge `ranges` whose gaps are at most `max_gap` bytes; the result is sorted and disjoint.
pub fn coalesce_ranges(mut ranges: Vec<Range<u64>>, max_gap: u64) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(max_gap) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_across_small_gaps_only() {
        let got = coalesce_ranges(vec![10..20, 0..5, 22..30, 100..110, 5..6], 2);
        assert_eq!(got, vec![0..6, 10..30, 100..110]);
    }

    #[test]
    fn drops_empty_and_merges_overlaps() {
        assert_eq!(coalesce_ranges(vec![5..5, 0..10, 3..4], 0), vec![0..10]);
        assert!(coalesce_ranges(vec![], 10).is_empty());
    }
}
