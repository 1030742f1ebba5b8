//! `aggregate`: count, min, max, sum and avg over the rows that satisfy a predicate.
//!
//! The scan plan gives, per row group, the rows that may match. Of those, the rows on which
//! the predicate certainly holds (`prune::certain`) need not be read wherever a column's
//! aggregates index has a unit lying wholly inside them: the unit's exact count, bounds and
//! sum are the answer for its rows. Only the remaining rows are read, filtered and folded
//! in. `count(*)` alone needs no index: the certain rows are counted, not read; of a whole
//! table it needs no file either ([`metadata`]).
//!
//! Each aggregated column is answered on its own (the units of different columns do not
//! line up), so a row the index answers for one column may be read for another.

pub mod acc;
mod aggregation;
pub mod metadata;
pub mod select;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{Field, Schema};

use crate::error::{Error, Result};
use crate::index::aggregates::AggregatesIndex;
use crate::index::evidence::FileIndexes;
use crate::index::locator::{locators, Granularity};
use crate::index::registry;
use crate::index::span::{check_spans, WHOLE_FILE};
use crate::io::IoStats;
use crate::metadata::footer_start;
use crate::metadata::schema::leaves_named;
use crate::metadata::MetadataCache;
use crate::plan::{PlannedFile, RowRanges, ScanUnit};
use crate::predicate::bind::bind_column;
use crate::predicate::Column;
use crate::prune::certain::certain_ranges;
use crate::prune::page_index::ColumnIndexes;
use crate::query::scan::{Scan, ScanOptions, ScanSource};
use crate::table::{TableOptions, TableSnapshot};
use acc::{sum_unsupported, summable, ColumnAcc, Needs};
pub use aggregation::{Aggregation, ColumnReport};
use metadata::counted;
use select::{parse_select, Call, Func};

/// What to aggregate over which rows.
#[derive(Debug, Clone, Default)]
pub struct AggregateOptions {
    /// The select list, e.g. `count(*), sum(x)`.
    pub select: String,
    pub predicate: Option<crate::predicate::Condition>,
    pub threads: usize,
    pub now_ns: Option<i128>,
    /// The version of a Delta table read, and its storage options.
    pub table: TableOptions,
}

/// One aggregated column (or `count(*)` alone) and its running state.
struct Group {
    col: Option<Column>,
    needs: Needs,
    acc: ColumnAcc,
    /// Whether `count(*)` is counted in this group.
    star: bool,
    star_rows: u64,
    reads: Vec<ScanUnit>,
    report: ColumnReport,
}

pub fn aggregate(
    paths: &[String],
    opts: &AggregateOptions,
    cache: &MetadataCache,
    cancel: &AtomicBool,
) -> Result<Aggregation> {
    let (calls, scan_opts) = parse(opts)?;
    let source = Scan::source(paths, &scan_opts)?;
    aggregate_source(paths, source, &calls, &scan_opts, cache, cancel)
}

/// [`aggregate`] over a table snapshot planned elsewhere (an Iceberg table's, from its
/// manifests): its files, deleted rows and column mapping are the scan's.
pub fn aggregate_table(
    snapshot: Arc<TableSnapshot>,
    opts: &AggregateOptions,
    cache: &MetadataCache,
    cancel: &AtomicBool,
) -> Result<Aggregation> {
    let (calls, scan_opts) = parse(opts)?;
    let source = ScanSource::Table(snapshot, Arc::new(IoStats::default()));
    aggregate_source(&[], source, &calls, &scan_opts, cache, cancel)
}

/// `calls` over `source` (of `paths`): a whole table's count from its metadata, anything
/// else over the rows its scan plans.
fn aggregate_source(
    paths: &[String],
    source: ScanSource,
    calls: &[Call],
    scan_opts: &ScanOptions,
    cache: &MetadataCache,
    cancel: &AtomicBool,
) -> Result<Aggregation> {
    if let ScanSource::Table(snapshot, io) = &source {
        if let Some(a) = counted(snapshot, io.clone(), calls, scan_opts, cache, cancel)? {
            return Ok(a);
        }
    }
    let scan = Scan::plan_source(paths, source, scan_opts, cache, cancel)?;
    aggregate_planned(scan, calls, cancel)
}

/// The select list's calls, and the scan that plans them: their columns, the rows `where`
/// keeps, checked.
fn parse(opts: &AggregateOptions) -> Result<(Vec<Call>, ScanOptions)> {
    let calls = parse_select(&opts.select)?;
    let scan_opts = scan_options(opts, &calls)?;
    scan_opts.check()?;
    Ok((calls, scan_opts))
}

/// The scan that plans an aggregation: the select list's columns, the rows `where` keeps.
fn scan_options(opts: &AggregateOptions, calls: &[Call]) -> Result<ScanOptions> {
    let mut roots: Vec<String> = Vec::new();
    for c in calls {
        if let Some(path) = &c.column {
            if path.len() > 1 {
                return Err(Error::unsupported(format!(
                    "{}: aggregates over nested fields are not supported",
                    c.name
                )));
            }
            if !roots.iter().any(|r| r.eq_ignore_ascii_case(&path[0])) {
                roots.push(path[0].clone());
            }
        }
    }
    Ok(ScanOptions {
        predicate: opts.predicate.clone(),
        columns: Some(roots),
        threads: opts.threads,
        now_ns: opts.now_ns,
        table: opts.table.clone(),
        ..Default::default()
    })
}

/// `calls` over the rows `scan` planned.
fn aggregate_planned(scan: Scan, calls: &[Call], cancel: &AtomicBool) -> Result<Aggregation> {
    let bind_schema = scan.binding.bind_schema();

    // Bind each call's column; one group per column.
    let mut groups: Vec<Group> = Vec::new();
    let mut call_group: Vec<Option<usize>> = Vec::new();
    for c in calls {
        let Some(path) = &c.column else {
            call_group.push(None);
            continue;
        };
        let col = bind_column(path, &bind_schema)?;
        if col.leaf.is_none() {
            return Err(Error::unsupported(format!(
                "{}: aggregates over partition columns are not supported",
                c.name
            )));
        }
        if matches!(c.func, Func::Sum | Func::Avg) && !summable(&col) {
            return Err(sum_unsupported(&col));
        }
        let g = match groups
            .iter()
            .position(|g| g.col.as_ref().is_some_and(|x| x.leaf == col.leaf))
        {
            Some(g) => g,
            None => {
                groups.push(Group {
                    report: ColumnReport {
                        name: col.name.clone(),
                        ..Default::default()
                    },
                    col: Some(col),
                    needs: Needs::default(),
                    acc: ColumnAcc::default(),
                    star: false,
                    star_rows: 0,
                    reads: Vec::new(),
                });
                groups.len() - 1
            }
        };
        match c.func {
            Func::Min | Func::Max => groups[g].needs.bounds = true,
            Func::Sum | Func::Avg => groups[g].needs.sum = true,
            _ => {}
        }
        call_group.push(Some(g));
    }
    if calls.iter().any(|c| c.func == Func::CountStar) {
        match groups.first_mut() {
            Some(g) => g.star = true,
            None => groups.push(Group {
                col: None,
                needs: Needs::default(),
                acc: ColumnAcc::default(),
                star: true,
                star_rows: 0,
                reads: Vec::new(),
                report: ColumnReport {
                    name: "*".into(),
                    ..Default::default()
                },
            }),
        }
    }

    // Answer what the indexes can, unit by unit; collect the rows left to read.
    let mut loaded: HashMap<(String, usize), Option<Arc<AggregatesIndex>>> = HashMap::new();
    let mut warnings = Vec::new();
    let mut indexes_read = 0u64;
    let (certain_rows, bounds_read) = certain_rows(&scan, &mut warnings)?;
    indexes_read += bounds_read;
    for (unit, certain) in scan.units.iter().zip(certain_rows) {
        let md = unit.file.reader_metadata.metadata().clone();
        let rg = unit.row_group;
        let rows = unit.row_group_rows;
        for g in groups.iter_mut() {
            let answered = match &g.col {
                None => certain.clone(),
                Some(col) => {
                    let leaf = col.leaf.expect("bound to a leaf");
                    // Loaded once per file, when some rows are certain.
                    let key = (unit.file.path.clone(), leaf);
                    if !certain.is_empty() && !loaded.contains_key(&key) {
                        let index = if col.prunable {
                            match load_index(&unit.file, col, &scan) {
                                Ok(Some(i)) => {
                                    indexes_read += 1;
                                    Some(Arc::new(i))
                                }
                                Ok(None) => None,
                                Err(e) => {
                                    warnings.push(format!(
                                        "{}: aggregates index of {} skipped: {e}",
                                        unit.file.path, col.name
                                    ));
                                    None
                                }
                            }
                        } else {
                            None
                        };
                        loaded.insert(key.clone(), index);
                    }
                    let index = loaded.get(&key).cloned().flatten();
                    let physical = md
                        .file_metadata()
                        .schema_descr()
                        .column(leaf)
                        .physical_type();
                    let mut answered = Vec::new();
                    for (span, stats) in index.iter().flat_map(|i| i.spans.iter().zip(&i.units)) {
                        // A file unit answers only for a file of one row group.
                        let single = md.num_row_groups() == 1;
                        let (first, n) = match span.row_group {
                            WHOLE_FILE if single && rg == 0 => (0, span.rows),
                            r if r as usize == rg => (span.first_row, span.rows),
                            _ => continue,
                        };
                        let range = RowRanges::from_ranges(std::iter::once(first..first + n));
                        if n == 0 || !range.subtract(&certain, rows).is_empty() {
                            continue;
                        }
                        if g.acc.unit(n, stats, g.needs, physical, col) {
                            answered.push(first..first + n);
                            g.report.units_from_index += 1;
                        }
                    }
                    RowRanges::from_ranges(answered)
                }
            };
            if g.star {
                g.star_rows += answered.row_count();
            }
            g.report.rows_from_index += answered.row_count();
            let read = unit.ranges.subtract(&answered, rows);
            if !read.is_empty() {
                g.report.rows_to_read += read.row_count();
                g.reads.push(ScanUnit {
                    ranges: read,
                    ..unit.clone()
                });
            }
        }
    }

    // Read the rest, column by column.
    for g in groups.iter_mut() {
        let reads = std::mem::take(&mut g.reads);
        if reads.is_empty() {
            continue;
        }
        let columns: Vec<String> = g.col.iter().map(|c| c.name.clone()).collect();
        let mut shape = scan
            .binding
            .output_shape(Some(&columns), ScanOptions::default().batch_size)?;
        shape.decoding = scan.shape.decoding;
        for batch in scan.stream_units(reads, shape) {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let batch = batch?;
            if g.star {
                g.star_rows += batch.num_rows() as u64;
            }
            if let Some(col) = &g.col {
                g.acc.array(batch.column(0), col)?;
            }
        }
    }

    // One row in the select list's order.
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    let star_rows = groups.iter().find(|g| g.star).map_or(0, |g| g.star_rows);
    for (c, g) in calls.iter().zip(&call_group) {
        let array: ArrayRef = match (c.func, g) {
            (Func::CountStar, _) => Arc::new(Int64Array::from(vec![star_rows as i64])),
            (func, Some(g)) => {
                let g = &groups[*g];
                let col = g.col.as_ref().expect("a column group");
                match func {
                    Func::Count => Arc::new(Int64Array::from(vec![g.acc.count as i64])),
                    Func::Min => g.acc.bound(false, col)?,
                    Func::Max => g.acc.bound(true, col)?,
                    Func::Sum => g.acc.sum(col)?,
                    _ => g.acc.avg(col)?,
                }
            }
            (_, None) => unreachable!("only count(*) has no column"),
        };
        fields.push(Field::new(&c.name, array.data_type().clone(), true));
        arrays.push(array);
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
    let mut warnings_all = scan.warnings.clone();
    let mut seen: std::collections::HashSet<String> = warnings_all.iter().cloned().collect();
    for w in warnings {
        if seen.insert(w.clone()) {
            warnings_all.push(w);
        }
    }
    Ok(Aggregation {
        batch,
        columns: groups.into_iter().map(|g| g.report).collect(),
        scan,
        indexes_read,
        warnings: warnings_all,
        from_metadata: None,
    })
}

/// Per unit of `scan`, the rows on which its file's predicate certainly holds; files
/// without a page index use the page bounds of their embedded indexes. Also the number of
/// those indexes read.
fn certain_rows(scan: &Scan, warnings: &mut Vec<String>) -> Result<(Vec<RowRanges>, u64)> {
    let mut out = Vec::with_capacity(scan.units.len());
    let mut indexes_read = 0;
    let mut i = 0;
    while i < scan.units.len() {
        let file = scan.units[i].file.clone();
        let end = i + scan.units[i..]
            .iter()
            .take_while(|u| Arc::ptr_eq(&u.file, &file))
            .count();
        let units = &scan.units[i..end];
        match &file.predicate {
            None => out.extend(units.iter().map(|u| u.ranges.clone())),
            Some(p) => {
                let md = file.reader_metadata.metadata();
                let local = file.open(scan.io.clone())?;
                let mut indexes = FileIndexes::new(&local, md);
                let mut pages = ColumnIndexes::new(md);
                for u in units {
                    let c = certain_ranges(md, u.row_group, p, &mut [&mut pages, &mut indexes])?;
                    out.push(c.intersect(&u.ranges));
                }
                indexes_read += indexes.indexes_read;
                warnings.append(&mut indexes.warnings);
            }
        }
        i = end;
    }
    Ok((out, indexes_read))
}

/// The finest usable aggregates index of `col` in `file`, if any.
fn load_index(file: &PlannedFile, col: &Column, scan: &Scan) -> Result<Option<AggregatesIndex>> {
    let md = file.reader_metadata.metadata();
    let descr = md.file_metadata().schema_descr();
    let mut found: Vec<_> = locators(md.file_metadata().key_value_metadata())
        .into_iter()
        .filter_map(|(_, l)| l.ok())
        .filter(|l| {
            l.kind == "aggregates"
                && l.columns.len() == 1
                && leaves_named(descr, &l.columns[0]) == [col.leaf.unwrap_or(usize::MAX)]
        })
        .collect();
    found.sort_by_key(|l| match l.granularity {
        Granularity::Page => 0,
        Granularity::RowGroup => 1,
        Granularity::File => 2,
    });
    let Some(l) = found.first() else {
        return Ok(None);
    };
    let f = file.open(scan.io.clone())?;
    let body_end = footer_start(&f)?;
    let index = AggregatesIndex::decode(&registry::open_block(&f, l, body_end)?.1.payload()?)?;
    check_spans(&index.spans, md)?;
    Ok(Some(index))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::build::add_indexes;
    use crate::index::spec::IndexSpec;
    use crate::testing::{self, int64s, Layout};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
    use arrow_array::Float64Array;

    /// 20,000 rows: `k` sorted, `q` = k % 50 with every 7th NULL, `f` = k / 4.
    fn write_file(dir: &std::path::Path) -> String {
        let n = 20_000i64;
        testing::write_file(
            dir,
            "a.parquet",
            vec![
                ("k", int64s(0..n)),
                (
                    "q",
                    Arc::new(Int64Array::from_iter(
                        (0..n).map(|i| (i % 7 != 0).then_some(i % 50)),
                    )),
                ),
                (
                    "f",
                    Arc::new(Float64Array::from_iter_values(
                        (0..n).map(|i| i as f64 / 4.0),
                    )),
                ),
            ],
            Layout {
                row_group_size: 5000,
                page_rows: Some(500),
                ..Default::default()
            },
        )
    }

    fn run(path: &str, select: &str, predicate: Option<&str>) -> Aggregation {
        let opts = AggregateOptions {
            select: select.into(),
            predicate: predicate.map(Into::into),
            threads: 2,
            ..Default::default()
        };
        aggregate(
            &[path.to_string()],
            &opts,
            &MetadataCache::new(1 << 24),
            &AtomicBool::new(false),
        )
        .unwrap()
    }

    fn metric(a: &Aggregation, key: &str) -> u64 {
        a.metrics().iter().find(|(k, _)| *k == key).unwrap().1
    }

    #[test]
    fn answers_from_the_index_and_reads_only_straddling_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let select = "count(*), count(q), sum(q), min(q), max(q), sum(f), avg(q)";
        let pred = "k < 12345";
        let before = run(&path, select, Some(pred));
        // Exact answers, computed here.
        let rows: Vec<i64> = (0..12345).collect();
        let qs: Vec<i64> = rows
            .iter()
            .filter(|i| *i % 7 != 0)
            .map(|i| i % 50)
            .collect();
        let check = |a: &Aggregation| {
            let b = &a.batch;
            assert_eq!(b.column(0).as_primitive::<Int64Type>().value(0), 12345);
            assert_eq!(
                b.column(1).as_primitive::<Int64Type>().value(0),
                qs.len() as i64
            );
            assert_eq!(
                b.column(2).as_primitive::<Decimal128Type>().value(0),
                qs.iter().map(|&q| i128::from(q)).sum::<i128>()
            );
            assert_eq!(b.column(3).as_primitive::<Int64Type>().value(0), 0);
            assert_eq!(b.column(4).as_primitive::<Int64Type>().value(0), 49);
            let f: f64 = rows.iter().map(|&i| i as f64 / 4.0).sum();
            let got = b.column(5).as_primitive::<Float64Type>().value(0);
            assert!((got - f).abs() <= f * 1e-12, "{got} {f}");
        };
        check(&before);
        assert_eq!(metric(&before, "rows_from_index"), 0);

        let spec = |column: &str| {
            IndexSpec::new("aggregates", column, Some(Granularity::Page), &[]).unwrap()
        };
        add_indexes(&path, &[spec("q"), spec("f")]).unwrap();
        let after = run(&path, select, Some(pred));
        check(&after);
        // Every page but the one holding row 12345 is answered by the index.
        for c in &after.columns {
            assert_eq!(c.rows_to_read, 500, "{c:?}");
        }
        // The straddling page of each column and of `k`, for each column: four pages.
        assert_eq!(metric(&after, "pages_read"), 4);
        assert!(metric(&before, "pages_read") >= 100);
        assert!(metric(&after, "bytes_read") < metric(&before, "bytes_read"));

        // count(*) alone needs no index and reads only the straddling page.
        let star = run(&path, "count(*)", Some(pred));
        assert_eq!(
            star.batch.column(0).as_primitive::<Int64Type>().value(0),
            12345
        );
        assert_eq!(star.columns[0].rows_to_read, 500);

        // No predicate: everything from the index.
        let all = run(&path, "count(*), max(q)", None);
        assert_eq!(
            all.batch.column(0).as_primitive::<Int64Type>().value(0),
            20_000
        );
        assert_eq!(all.columns[0].rows_to_read, 0);

        // A predicate on the aggregated column itself, and one matching nothing.
        let none = run(&path, "count(*), sum(q), min(f)", Some("k > 99999"));
        assert_eq!(none.batch.column(0).as_primitive::<Int64Type>().value(0), 0);
        assert!(none.batch.column(1).is_null(0));
        assert!(none.batch.column(2).is_null(0));
    }

    #[test]
    fn refuses_what_it_cannot_sum() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let opts = AggregateOptions {
            select: "sum(nope)".into(),
            ..Default::default()
        };
        let cache = MetadataCache::new(1 << 20);
        let cancel = AtomicBool::new(false);
        assert!(aggregate(&[path], &opts, &cache, &cancel).is_err());
    }
}
