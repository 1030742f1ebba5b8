//! The counters a scan reports, declared once: the struct, its merge and the names
//! `metrics()` shows all come from one list, and `explain()` reads the same fields.
//!
//! Counters are atomic so that the threads planning files and reading units add to one
//! scan's counters without locks.

use std::sync::atomic::{AtomicU64, Ordering};

/// One counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn incr(&self) {
        self.add(1);
    }
    fn add_nonzero(&self, n: u64) {
        if n != 0 {
            self.add(n);
        }
    }
    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }
}

impl Clone for Counter {
    fn clone(&self) -> Self {
        Counter(AtomicU64::new(self.get()))
    }
}

impl PartialEq for Counter {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// Declares a struct of counters in two groups, planning and reading, with `add` (field by
/// field), `values` (name, value in declaration order), `NAMES` and `READING` (the names of
/// the counters reading units adds to: what Spark's executors report back).
macro_rules! counters {
    (
        $(#[$meta:meta])* $vis:vis struct $name:ident {
            planning { $($(#[$pdoc:meta])* $plan:ident,)* }
            reading { $($(#[$rdoc:meta])* $read:ident,)* }
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default, Clone, PartialEq)]
        $vis struct $name {
            $($(#[$pdoc])* pub $plan: Counter,)*
            $($(#[$rdoc])* pub $read: Counter,)*
        }

        impl $name {
            /// Every counter's name, in the order `values` gives them.
            pub const NAMES: &'static [&'static str] =
                &[$(stringify!($plan),)* $(stringify!($read)),*];

            /// The counters reading a scan's units adds to.
            pub const READING: &'static [&'static str] = &[$(stringify!($read)),*];

            /// Add every counter of `other` to this one's. Zeros are skipped: a scan adds
            /// one file's metrics per file, mostly zeros, and an atomic add costs more
            /// than a load.
            pub fn add(&self, other: &$name) {
                $(self.$plan.add_nonzero(other.$plan.get());)*
                $(self.$read.add_nonzero(other.$read.get());)*
            }

            /// (name, value) of every counter, in declaration order.
            pub fn values(&self) -> Vec<(&'static str, u64)> {
                vec![
                    $((stringify!($plan), self.$plan.get()),)*
                    $((stringify!($read), self.$read.get())),*
                ]
            }
        }
    };
}

counters! {
    /// What planning pruned and what reading fetched, summed over files and units.
    pub struct Metrics {
        planning {
            /// Files listed.
            files,
            /// Files with nothing left to read.
            files_pruned,
            files_pruned_by_partition,
            row_groups,
            row_groups_pruned_by_stats,
            row_groups_pruned_by_bloom,
            row_groups_pruned_by_page_index,
            /// Pages of the needed columns in kept row groups.
            pages,
            pages_pruned,
            rows_selected,
            units,
            page_indexes_read,
            bloom_filters_read,
            files_pruned_by_index,
            row_groups_pruned_by_index,
            /// Rows the page index left that embedded page-level indexes ruled out.
            rows_pruned_by_index,
            indexes_read,
            /// Bytes of embedded indexes fetched for planning (part of bytes_read).
            index_bytes_read,
            indexes_skipped,
            /// Embedded indexes opened but not asked: the values asked about are almost
            /// surely in every unit they could rule out.
            indexes_declined,
            files_pruned_by_catalog,
            /// Files a table's own per-file statistics ruled out.
            files_pruned_by_table_stats,
            /// Rows a table's deletes removed from the selection.
            rows_deleted,
            /// Kept files whose footer came from the catalog.
            footers_from_catalog,
            /// Files the catalog does not describe as they are now (added or changed since).
            files_not_in_catalog,
            list_requests,
            /// Files planning opened: one whose footer the cache holds as listed, and
            /// whose statistics rule out every row group, is not. The file a scan opens
            /// first to learn its schema is planned on that opening, not counted here.
            files_opened,
        }
        reading {
            pages_read,
            dictionary_pages_read,
            /// Dictionary pages not read because no selected page of their chunk uses them.
            dictionary_pages_skipped,
            /// Dictionary pages asked whether their chunk holds a value an `=` or `IN` needs,
            /// before the chunk's data pages were read.
            dictionary_pages_probed,
            /// Units (or pieces of one) whose dictionary pages held none of the values: no
            /// data page of them was read.
            units_pruned_by_dictionary,
            /// PLAIN data pages searched for the bytes of an `=` or `IN` on a string or
            /// fixed-length binary column, before the predicate pass.
            plain_pages_searched,
            /// Of those, pages holding none of the values: their rows were not read.
            pages_ruled_out_by_values,
            rows_scanned,
            rows_matched,
            units_read,
            /// Groups of columns read side by side by a unit's spare threads.
            column_groups_read,
            /// Chunks stored as 32- or 64-bit integers (integers, dates, timestamps,
            /// decimals) decoded straight into their Arrow arrays.
            integer_chunks_decoded,
            footers_read,
            footer_cache_hits,
            bytes_read,
            requests,
            /// Reads of file bytes repeated after a failure (a 5xx, a broken connection, a
            /// short body).
            retries,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_and_list_in_declaration_order() {
        let a = Metrics::default();
        a.files.add(2);
        a.pages_read.incr();
        let b = Metrics::default();
        b.files.add(3);
        a.add(&b);
        let values = a.values();
        assert_eq!(values[0], ("files", 5));
        assert_eq!(values.len(), Metrics::NAMES.len());
        assert!(values.contains(&("pages_read", 1)));
        assert!(Metrics::READING.iter().all(|n| Metrics::NAMES.contains(n)));
        assert!(Metrics::READING.contains(&"bytes_read") && !Metrics::READING.contains(&"files"));
        assert_eq!(a.clone(), a);
    }
}
