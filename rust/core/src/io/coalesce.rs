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

/// Merge `ranges` into at most `max_ranges` reads where gaps allow: touching ranges first,
/// then across the smallest gaps, never across one larger than `max_gap`. For small reads
/// scattered through a large block (an index's buckets or bloom rows), where merging across
/// every gap under the store's would fetch most of the block.
pub fn coalesce_to(ranges: Vec<Range<u64>>, max_ranges: usize, max_gap: u64) -> Vec<Range<u64>> {
    let mut out = coalesce_ranges(ranges, 0);
    while out.len() > max_ranges.max(1) {
        let Some((i, gap)) = out
            .windows(2)
            .map(|w| w[1].start - w[0].end)
            .enumerate()
            .min_by_key(|(_, gap)| *gap)
        else {
            break;
        };
        if gap > max_gap {
            break;
        }
        out[i].end = out[i + 1].end;
        out.remove(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_down_to_a_count_across_the_smallest_gaps() {
        let ranges = vec![0..10, 10..20, 50..60, 1000..1010, 70..80];
        assert_eq!(
            coalesce_to(ranges.clone(), 10, 0),
            vec![0..20, 50..60, 70..80, 1000..1010]
        );
        assert_eq!(
            coalesce_to(ranges.clone(), 3, 100),
            vec![0..20, 50..80, 1000..1010]
        );
        assert_eq!(coalesce_to(ranges.clone(), 2, 100), vec![0..80, 1000..1010]);
        // Never across a gap larger than allowed, whatever the count.
        assert_eq!(coalesce_to(ranges, 1, 100), vec![0..80, 1000..1010]);
        assert!(coalesce_to(vec![], 1, 0).is_empty());
    }

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
