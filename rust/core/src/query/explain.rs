//! `explain()`: what each pruning level ruled out and what reading has fetched so far, in
//! words, from the scan's counters.

use std::fmt::Write;

use crate::query::scan::Scan;

impl Scan {
    /// What each pruning level ruled out, and what reading has fetched so far.
    pub fn explain(&self) -> String {
        explain(self)
    }
}

fn explain(scan: &Scan) -> String {
    scan.metrics(); // brings the I/O counters up to date
    let m = &scan.metrics;
    let mut s = String::new();
    let _ = writeln!(s, "pqindex scan");
    let _ = writeln!(
        s,
        "  where:       {}",
        scan.where_text.as_ref().map_or("(none)", |c| c.text())
    );
    if let Some(p) = &scan.predicate {
        let _ = writeln!(s, "  bound as:    {p}");
    }
    let names: Vec<&str> = scan
        .shape
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let _ = writeln!(s, "  columns:     {}", names.join(", "));
    match (scan.limit, scan.order_by.is_empty()) {
        (Some(k), false) => {
            let keys: Vec<String> = scan
                .order_by
                .iter()
                .map(|o| format!("{} {}", o.column, if o.descending { "desc" } else { "asc" }))
                .collect();
            let _ = writeln!(
                s,
                "  top:         {k} rows by {} (nulls last): pages best bound first, skipping those that cannot hold one",
                keys.join(", ")
            );
        }
        (Some(n), true) => {
            let _ = writeln!(
                s,
                "  limit:       {n} rows: units whose every row matches first, read until the rows are out"
            );
        }
        _ => {}
    }
    let _ = writeln!(
        s,
        "  files:       {} listed, {} pruned ({} by partition values, {} by embedded indexes)",
        m.files.get(),
        m.files_pruned.get(),
        m.files_pruned_by_partition.get(),
        m.files_pruned_by_index.get()
    );
    if let Some((format, root, version)) = &scan.table {
        let _ = writeln!(
            s,
            "  table:       {} table {root} version {version}: {} files pruned by its file statistics, {} deleted rows left out",
            format.name(),
            m.files_pruned_by_table_stats.get(),
            m.rows_deleted.get()
        );
    }
    if let Some((root, version)) = &scan.catalog {
        let dir = std::path::Path::new(root).join(crate::catalog::store::DIR);
        let _ = writeln!(
            s,
            "  catalog:     {} version {version}: {} files pruned by its bounds and bloom filters, {} footers taken from it, {} files not in it or changed since (footers read)",
            dir.display(),
            m.files_pruned_by_catalog.get(),
            m.footers_from_catalog.get(),
            m.files_not_in_catalog.get()
        );
    }
    let _ = writeln!(
        s,
        "  row groups:  {} in opened files, {} pruned by statistics, {} by bloom filters, {} by embedded indexes, {} by page index",
        m.row_groups.get(),
        m.row_groups_pruned_by_stats.get(),
        m.row_groups_pruned_by_bloom.get(),
        m.row_groups_pruned_by_index.get(),
        m.row_groups_pruned_by_page_index.get()
    );
    if m.indexes_read.get() > 0 || m.indexes_skipped.get() > 0 || m.indexes_declined.get() > 0 {
        let _ = writeln!(
            s,
            "  indexes:     {} embedded indexes read, {} skipped, {} not worth asking; they ruled out {} more rows within kept row groups",
            m.indexes_read.get(),
            m.indexes_skipped.get(),
            m.indexes_declined.get(),
            m.rows_pruned_by_index.get()
        );
    }
    for w in scan.warnings.iter().take(5) {
        let _ = writeln!(s, "  warning:     {w}");
    }
    let _ = writeln!(
        s,
        "  pages:       {} of the needed columns in kept row groups, {} pruned (holding no selected row: the page index, embedded indexes and deletes select rows)",
        m.pages.get(),
        m.pages_pruned.get()
    );
    let _ = writeln!(
        s,
        "  units:       {} (row groups to read), {} rows selected",
        scan.units.len(),
        m.rows_selected.get()
    );
    let _ = writeln!(
        s,
        "  metadata:    {} footers read, {} from cache, {} page indexes, {} bloom filters",
        m.footers_read.get(),
        m.footer_cache_hits.get(),
        m.page_indexes_read.get(),
        m.bloom_filters_read.get()
    );
    let _ = writeln!(
        s,
        "  read so far: {} rows scanned, {} matched, {} data pages, {} dictionary pages ({} not needed; {} asked before the data pages, ruling out {} units), {} plain pages searched for values ({} ruled out), {} bytes in {} requests ({} listing)",
        m.rows_scanned.get(),
        m.rows_matched.get(),
        m.pages_read.get(),
        m.dictionary_pages_read.get(),
        m.dictionary_pages_skipped.get(),
        m.dictionary_pages_probed.get(),
        m.units_pruned_by_dictionary.get(),
        m.plain_pages_searched.get(),
        m.pages_ruled_out_by_values.get(),
        m.bytes_read.get(),
        m.requests.get(),
        m.list_requests.get()
    );
    let logged = scan.io.logged_requests();
    if !logged.is_empty() {
        let _ = writeln!(s, "  requests:");
        for line in &logged {
            let _ = writeln!(s, "    {line}");
        }
        let more = m.requests.get() - m.list_requests.get();
        if more > logged.len() as u64 {
            let _ = writeln!(s, "    ... and {} more", more - logged.len() as u64);
        }
    }
    for line in &scan.summaries {
        let _ = writeln!(s, "    {line}");
    }
    if scan.files_planned > scan.summaries.len() {
        let _ = writeln!(
            s,
            "    ... {} more files",
            scan.files_planned - scan.summaries.len()
        );
    }
    s
}
