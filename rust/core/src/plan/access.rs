//! The access plan of one file: for each row group, skip it, scan it whole, or read a
//! selection of its rows. Planning starts from "scan everything" and each stage of
//! evidence (statistics, bloom filters, indexes, the page index, deletes) only narrows
//! it, so a stage can never bring back rows an earlier one ruled out.

use crate::plan::row_ranges::RowRanges;

/// What to read of one row group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowGroupAccess {
    /// Nothing here can match.
    Skip,
    /// Every row may match.
    Scan,
    /// Only these rows may match.
    Select(RowRanges),
}

/// What to read of each row group of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPlan {
    row_groups: Vec<RowGroupAccess>,
    rows: Vec<u64>,
}

impl AccessPlan {
    /// Scan every row group; `rows` holds each row group's row count.
    pub fn new(rows: Vec<u64>) -> AccessPlan {
        AccessPlan {
            row_groups: vec![RowGroupAccess::Scan; rows.len()],
            rows,
        }
    }

    /// Row groups in the file.
    pub fn row_groups(&self) -> usize {
        self.row_groups.len()
    }

    pub fn rows(&self, rg: usize) -> u64 {
        self.rows[rg]
    }

    /// Row groups with rows left to read, in order.
    pub fn kept(&self) -> Vec<usize> {
        (0..self.row_groups.len())
            .filter(|&rg| self.row_groups[rg] != RowGroupAccess::Skip)
            .collect()
    }

    pub fn skip(&mut self, rg: usize) {
        self.row_groups[rg] = RowGroupAccess::Skip;
    }

    /// The rows of `rg` left to read.
    pub fn ranges(&self, rg: usize) -> RowRanges {
        match &self.row_groups[rg] {
            RowGroupAccess::Skip => RowRanges::empty(),
            RowGroupAccess::Scan => RowRanges::full(self.rows[rg]),
            RowGroupAccess::Select(r) => r.clone(),
        }
    }

    /// Keep only `ranges` of what `rg` had left; a row group left with no rows is skipped.
    pub fn select(&mut self, rg: usize, ranges: &RowRanges) {
        let next = match &self.row_groups[rg] {
            RowGroupAccess::Skip => return,
            RowGroupAccess::Scan => ranges.intersect(&RowRanges::full(self.rows[rg])),
            RowGroupAccess::Select(r) => r.intersect(ranges),
        };
        self.set(rg, next);
    }

    /// Remove `ranges` (deleted rows, say) from what `rg` had left.
    pub fn remove(&mut self, rg: usize, ranges: &RowRanges) {
        if self.row_groups[rg] != RowGroupAccess::Skip {
            let left = self.ranges(rg).subtract(ranges, self.rows[rg]);
            self.set(rg, left);
        }
    }

    /// Remove the rows at `deleted` (sorted positions in the file, across row groups);
    /// returns how many selected rows that removed.
    pub fn remove_positions(&mut self, deleted: &[u64]) -> u64 {
        let mut removed = 0;
        let mut start = 0u64;
        for rg in 0..self.row_groups.len() {
            let end = start + self.rows[rg];
            let from = deleted.partition_point(|p| *p < start);
            let to = deleted.partition_point(|p| *p < end);
            if from < to && self.row_groups[rg] != RowGroupAccess::Skip {
                let rows = RowRanges::from_ranges(
                    deleted[from..to].iter().map(|p| p - start..p - start + 1),
                );
                let before = self.ranges(rg).row_count();
                self.remove(rg, &rows);
                removed += before - self.ranges(rg).row_count();
            }
            start = end;
        }
        removed
    }

    fn set(&mut self, rg: usize, ranges: RowRanges) {
        self.row_groups[rg] = if ranges.is_empty() {
            RowGroupAccess::Skip
        } else if ranges == RowRanges::full(self.rows[rg]) {
            RowGroupAccess::Scan
        } else {
            RowGroupAccess::Select(ranges)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_only_narrow() {
        let mut plan = AccessPlan::new(vec![100, 50, 10]);
        assert_eq!(plan.kept(), vec![0, 1, 2]);
        plan.skip(1);
        plan.select(0, &RowRanges::from_ranges([10..20, 90..120]));
        assert_eq!(plan.ranges(0), RowRanges::from_ranges([10..20, 90..100]));
        // A later stage cannot bring back a skipped row group or unselected rows.
        plan.select(1, &RowRanges::full(50));
        plan.select(0, &RowRanges::full(100));
        assert!(plan.ranges(1).is_empty());
        assert_eq!(plan.ranges(0).row_count(), 20);
        // A row group left with no rows is skipped.
        plan.select(2, &RowRanges::empty());
        assert_eq!(plan.kept(), vec![0]);
        // Deleted rows by file position: 95 is row 95 of the first row group, 120 row 20
        // of the second (skipped), 155 row 5 of the third.
        let mut plan = AccessPlan::new(vec![100, 50, 10]);
        plan.skip(1);
        assert_eq!(plan.remove_positions(&[3, 95, 99, 120, 155]), 4);
        assert_eq!(plan.ranges(0).row_count(), 97);
        assert_eq!(plan.ranges(2), RowRanges::from_ranges([0..5, 6..10]));
        let mut whole = AccessPlan::new(vec![5]);
        whole.select(0, &RowRanges::full(5));
        assert_eq!(whole.row_groups[0], RowGroupAccess::Scan);
        assert_eq!(whole.rows(0), 5);
    }
}
