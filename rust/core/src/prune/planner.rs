//! The planner: one access plan per file, narrowed stage by stage, coarse to fine.
//!
//! 1. partition values fold into the predicate (a file whose values rule it out is done);
//! 2. a catalog's description of the file (bounds, blooms) rules it out unopened, and
//!    hands over its footer;
//! 3. the footer: statistics rule out row groups;
//! 4. what the rest of planning reads (page index, bloom filters, index blocks) is fetched
//!    at once; embedded indexes rule out the file;
//! 5. Parquet bloom filters (where the pages they could save, weighed by the chance they
//!    rule the row group out, cost more than they do), then embedded indexes, rule out
//!    row groups;
//! 6. the page index and embedded page-level indexes narrow each row group to rows;
//! 7. what is left becomes scan units.
//!
//! Every stage asks its sources through [`Evidence`], so adding a source of evidence
//! means implementing that trait, not touching this file's logic. Each stage combines its
//! own evidence with that of the stages before it (a leaf is possible only if no source
//! rules it out), and what it newly prunes is counted as its own.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_schema::Schema;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;

use crate::error::{Error, Result};
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::dictionary_page::probe_range;
use crate::metadata::page_index::{
    dictionary_range, has_page_index, offset_index, page_boundaries,
};
use crate::metadata::schema::{check_schema, DatasetSchema};
use crate::metadata::MetadataCache;
use crate::plan::{needed_leaves, AccessPlan, ColumnMap, Metrics, PlannedFile, ScanUnit};
use crate::predicate::plain::is_probe;
use crate::predicate::{Predicate, Value};
use crate::prune::bloom_odds::chance_ruled_out;
use crate::prune::dictionary_probes::{dictionary_probes, selected_bytes};
use crate::prune::evidence::{
    file_may_match, row_group_may_match, rows_may_match, Evidence, Report, Source,
};
use crate::prune::page_index::{conjunct_rows, ColumnIndexes};
use crate::prune::parquet_bloom::ParquetBlooms;
use crate::prune::statistics::FooterStatistics;

/// A file to plan: its path, identity as listed, and partition values.
pub struct FileToPlan<'a> {
    pub path: &'a str,
    pub identity: &'a FileIdentity,
    pub partition_values: &'a [Option<Value>],
    /// Rows a table deleted from the file (sorted positions in file order).
    pub deleted: Option<&'a [u64]>,
}

/// What a catalog knows of one data file, before the file is opened.
pub trait DescribedFile: Evidence {
    /// The file's footer with its page index, if the description carries it.
    fn footer(&self) -> Option<Result<ParquetMetaData>>;

    /// Why the description's footer did not decode, if a decode was tried and failed.
    fn footer_unusable(&self) -> Option<String> {
        None
    }
}

/// Per-file descriptions kept outside the files (a dataset catalog): evidence that rules
/// files out without opening them, and their footers.
pub trait FileCatalog: Sync {
    /// The description of the file at `path` if it describes the file as it is now
    /// (`identity`); `schema` is the dataset's, to read the description's values.
    fn describe<'a>(
        &'a self,
        path: &str,
        identity: &FileIdentity,
        schema: &'a SchemaDescriptor,
    ) -> Option<Box<dyn DescribedFile + 'a>>;
}

/// Makes the evidence of indexes a file carries itself (pqindex's embedded indexes).
pub trait FileIndexEvidence: Sync {
    /// The file's usable indexes as evidence; `None` when it has none.
    fn open<'f>(
        &self,
        file: &'f StorageFile,
        md: &'f ParquetMetaData,
    ) -> Option<Box<dyn Evidence + 'f>>;

    /// Whether the footer `md` shows that [`Self::open`] would find no index, nor any to
    /// report as unusable: such a file need not be opened to learn it.
    fn none_in(&self, _md: &ParquetMetaData) -> bool {
        false
    }
}

/// How a table's data file relates to the table: its columns (`ColumnMap`), and the scan's
/// predicate (bound against the table's columns) in the file's own columns.
pub trait SchemaAdapter: Sync {
    /// The predicate for the file at `path` with footer `md`, and its column map. A leaf
    /// on a column the file lacks folds to its value on NULL.
    fn adapt(
        &self,
        path: &str,
        predicate: Option<&Predicate>,
        md: &ParquetMetaData,
    ) -> Result<(Option<Predicate>, Arc<ColumnMap>)>;
}

/// Everything planning needs besides the file itself.
pub struct PlanContext<'a> {
    pub predicate: Option<&'a Predicate>,
    /// The schema every file must produce.
    pub schema: &'a Schema,
    /// The dataset's Parquet schema.
    pub descr: &'a SchemaDescriptor,
    /// The dataset's Arrow type hint (its first file's), with `descr` what gives `schema`.
    pub hint: Option<&'a str>,
    /// Root columns of the scan's schema the output reads (predicate leaves are added
    /// per file).
    pub projected_roots: &'a [usize],
    pub cache: &'a MetadataCache,
    pub io: &'a Arc<IoStats>,
    /// The dataset's catalog, when planning uses one.
    pub catalog: Option<&'a dyn FileCatalog>,
    pub indexes: &'a dyn FileIndexEvidence,
    /// A file already opened (the one the schema came from), with the bytes it fetched.
    pub opened: Option<&'a StorageFile>,
    /// Files whose handle the scan keeps; see [`HeldFiles`].
    pub held: &'a HeldFiles,
    /// For a table's files: how each file's columns make the table's. Without one, every
    /// file must have the scan's schema.
    pub adapter: Option<&'a dyn SchemaAdapter>,
}

/// How many planned files a scan keeps open, so that it reads the versions it planned even
/// if a path is replaced before it is read (an atomic rewrite by `add_indexes`, say).
/// Bounded: a scan of many thousands of files must not exhaust descriptors; files past
/// the bound are opened again at read time and checked against the plan.
#[derive(Debug, Default)]
pub struct HeldFiles(std::sync::atomic::AtomicUsize);

impl HeldFiles {
    /// Files a scan keeps open at most.
    pub const MAX: usize = 256;

    /// Whether one more file may be kept open.
    pub fn take(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < Self::MAX).then_some(n + 1)
            })
            .is_ok()
    }
}

/// The plan of one file.
#[derive(Debug, Default)]
pub struct FilePlan {
    pub units: Vec<ScanUnit>,
    pub metrics: Metrics,
    /// What `explain()` says of the file.
    pub summary: Summary,
    /// Indexes and catalog entries that could not be used, and why.
    pub warnings: Vec<String>,
}

/// What `explain()` says of a file after its path, formatted only for the files it shows:
/// most files of a large dataset are ruled out, and a string each cost more than ruling
/// them out from a catalog.
#[derive(Debug, Default)]
pub enum Summary {
    #[default]
    None,
    /// Ruled out by the named source of evidence.
    PrunedBy(&'static str),
    /// What each stage ruled out of a file whose footer was read.
    Counts(Box<Counts>),
    Text(String),
}

/// A file's row groups, those each stage ruled out, and the rows left.
#[derive(Debug, Default)]
pub struct Counts {
    row_groups: u64,
    by_stats: u64,
    by_bloom: u64,
    by_page_index: u64,
    /// Row groups and rows embedded indexes ruled out, and their kinds; none used if empty.
    by_index: (u64, u64, Vec<&'static str>),
    rows_selected: u64,
    /// The file has no page index to narrow its row groups with.
    no_page_index: bool,
}

impl Counts {
    fn of(m: &Metrics, kinds: Vec<&'static str>, no_page_index: bool) -> Box<Counts> {
        Box::new(Counts {
            row_groups: m.row_groups.get(),
            by_stats: m.row_groups_pruned_by_stats.get(),
            by_bloom: m.row_groups_pruned_by_bloom.get(),
            by_page_index: m.row_groups_pruned_by_page_index.get(),
            by_index: (
                m.row_groups_pruned_by_index.get(),
                m.rows_pruned_by_index.get(),
                kinds,
            ),
            rows_selected: m.rows_selected.get(),
            no_page_index,
        })
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} row groups, {} pruned by statistics, {} by bloom filters",
            self.row_groups, self.by_stats, self.by_bloom
        )?;
        let (groups, rows, kinds) = &self.by_index;
        if !kinds.is_empty() {
            let kinds = kinds.join(" and ");
            write!(
                f,
                ", {groups} by embedded {kinds} index ({rows} rows ruled out within row groups)"
            )?;
        }
        write!(
            f,
            ", {} by page index; {} rows selected{}",
            self.by_page_index,
            self.rows_selected,
            if self.no_page_index {
                " (no page index)"
            } else {
                ""
            }
        )
    }
}

impl Summary {
    /// The `explain()` line of the file at `path`.
    pub fn line(&self, path: &str) -> String {
        match self {
            Summary::None => path.to_string(),
            Summary::PrunedBy(what) => format!("{path}: pruned by {what}"),
            Summary::Counts(counts) => format!("{path}: {counts}"),
            Summary::Text(text) => format!("{path}: {text}"),
        }
    }
}

impl FilePlan {
    fn pruned(metrics: Metrics, summary: Summary, warnings: Vec<String>) -> FilePlan {
        metrics.files_pruned.set(1);
        FilePlan {
            units: Vec::new(),
            metrics,
            summary,
            warnings,
        }
    }
}

/// Plan one file: each stage narrows the file's access plan; a stage that leaves nothing
/// ends planning there.
pub fn plan_file(f: &FileToPlan, ctx: &PlanContext) -> Result<FilePlan> {
    let m = Metrics::default();
    m.files.set(1);
    let mut warnings = Vec::new();
    // 1. Partition values.
    let Some(predicate) = with_partition_values(f, ctx.predicate) else {
        m.files_pruned_by_partition.set(1);
        let summary = Summary::PrunedBy(Source::Partition.what());
        return Ok(FilePlan::pruned(m, summary, warnings));
    };
    let pred = predicate.as_deref();
    // 2. The catalog's (or the table's) description.
    let by_catalog = match described(f, ctx, pred, &m, &mut warnings)? {
        Description::Pruned(summary) => return Ok(FilePlan::pruned(m, summary, warnings)),
        Description::Kept { answered } => answered,
    };
    // 3. The footer, in the scan's terms.
    if let Some(counts) = ruled_out_unopened(f, ctx, pred, &m)? {
        return Ok(FilePlan::pruned(m, Summary::Counts(counts), warnings));
    }
    let (file, md) = open_footer(f, ctx, &m)?;
    let (adapted, columns) = adapt(f, ctx, &file, &md, pred)?;
    let needed = needed_leaves(&md, &file_roots(ctx, columns.as_deref()), adapted.as_ref());
    let pred = adapted
        .as_ref()
        .filter(|p| **p != Predicate::Const(Some(true)));
    m.row_groups.set(md.num_row_groups() as u64);
    if matches!(pred, Some(Predicate::Const(_))) {
        let summary = Summary::Text("no row can match (columns it lacks are NULL)".into());
        return Ok(FilePlan::pruned(m, summary, warnings));
    }
    let rows = md
        .row_groups()
        .iter()
        .map(|g| g.num_rows().max(0) as u64)
        .collect();
    let mut access = AccessPlan::new(rows);
    // Opened now, so that indexes it cannot use are reported whatever prunes the file.
    let mut indexes = ctx.indexes.open(&file, &md);
    let mut paged = md.clone();
    if let Some(pred) = pred {
        let mut statistics = FooterStatistics::new(&md);
        for rg in 0..access.row_groups() {
            if !row_group_may_match(pred, rg, &mut [&mut statistics])? {
                m.row_groups_pruned_by_stats.incr();
                access.skip(rg);
            }
        }
        if !access.kept().is_empty() {
            // 4. Fetch what the finer stages read; embedded indexes may rule out the file.
            // Leaves whose Parquet blooms would rule out nothing more: those embedded
            // indexes answer for, and in a file of one row group those the catalog's
            // file-level blooms already answered.
            let by_catalog = if md.num_row_groups() == 1 && ctx.adapter.is_none() {
                by_catalog
            } else {
                Vec::new()
            };
            let with_catalog = |ix: Option<&dyn Evidence>| {
                let mut a = answered(pred, ix);
                a.extend(&by_catalog);
                a
            };
            prefetch(
                pred,
                &file,
                &md,
                &access,
                &with_catalog(indexes.as_deref()),
                indexes.as_deref(),
                &m,
            )?;
            if let Some(ix) = indexes.as_deref_mut() {
                ix.prepare(pred, &access.kept())?;
                if !file_may_match(pred, &mut [ix])? {
                    m.row_groups_pruned_by_index.set(access.kept().len() as u64);
                    let report = ix.report();
                    record_report(&m, &report, &mut warnings);
                    m.files_pruned_by_index.set(1);
                    let used = report.used.join(" and ");
                    let summary = Summary::Text(format!("pruned by embedded {used} index"));
                    return Ok(FilePlan::pruned(m, summary, warnings));
                }
            }
            // 5. Row groups by Parquet bloom filters (where they can pay), then by
            // embedded indexes (those not set aside as not worth asking).
            let answered = with_catalog(indexes.as_deref());
            let mut blooms =
                ParquetBlooms::new(&file, &md, &m.bloom_filters_read).without(answered.clone());
            let mut pages = PageIndex::new(ctx, &file, &md, &m);
            let mut no_blooms = NoEvidence;
            for rg in access.kept() {
                let pay = file.is_remote()
                    || blooms_pay(
                        pred,
                        &md,
                        rg,
                        access.rows(rg),
                        &answered,
                        &needed,
                        &mut pages,
                    )?;
                let blooms: &mut dyn Evidence = if pay { &mut blooms } else { &mut no_blooms };
                if !row_group_may_match(pred, rg, &mut [&mut statistics, blooms])? {
                    m.row_groups_pruned_by_bloom.incr();
                    access.skip(rg);
                    continue;
                }
                if let Some(ix) = indexes.as_deref_mut() {
                    if !row_group_may_match(pred, rg, &mut [&mut statistics, blooms, ix])? {
                        m.row_groups_pruned_by_index.incr();
                        access.skip(rg);
                    }
                }
            }
            warnings.extend(blooms.report().warnings);
            // 6. Rows, by the page index and embedded page-level indexes.
            paged = if access.kept().is_empty() {
                md.clone()
            } else {
                pages.footer()?
            };
            narrow_rows(pred, &paged, &mut access, indexes.as_deref_mut(), &m)?;
        }
    }
    // 7. What is left.
    let report = indexes.as_deref().map(|ix| ix.report());
    units_of(
        f, ctx, &file, paged, pred, access, report, m, warnings, columns,
    )
}

/// The scan's predicate with the file's partition values folded in (only files with
/// values need a copy); `None` when the values rule the file out.
fn with_partition_values<'p>(
    f: &FileToPlan,
    predicate: Option<&'p Predicate>,
) -> Option<Option<Cow<'p, Predicate>>> {
    let predicate: Option<Cow<Predicate>> = predicate.map(|p| {
        if f.partition_values.is_empty() {
            Cow::Borrowed(p)
        } else {
            Cow::Owned(p.bind_partitions(f.partition_values))
        }
    });
    if matches!(
        predicate.as_deref(),
        Some(Predicate::Const(Some(false)) | Predicate::Const(None))
    ) {
        return None;
    }
    Some(predicate.filter(|p| **p != Predicate::Const(Some(true))))
}

/// Stage 2: what a catalog (or a table's log) says of the file before it is opened. Its
/// summary when that rules the file out; otherwise the footer it carries goes to the
/// metadata cache.
fn described(
    f: &FileToPlan,
    ctx: &PlanContext,
    pred: Option<&Predicate>,
    m: &Metrics,
    warnings: &mut Vec<String>,
) -> Result<Description> {
    let path = f.path;
    let kept = Description::Kept {
        answered: Vec::new(),
    };
    let Some(catalog) = ctx.catalog else {
        return Ok(kept);
    };
    let Some(mut described) = catalog.describe(path, f.identity, ctx.descr) else {
        m.files_not_in_catalog.set(1);
        return Ok(kept);
    };
    let source = described.source();
    let mut answered = Vec::new();
    if let Some(p) = pred {
        if !file_may_match(p, &mut [described.as_mut()])? {
            match source {
                Source::TableStats => m.files_pruned_by_table_stats.set(1),
                _ => m.files_pruned_by_catalog.set(1),
            }
            return Ok(Description::Pruned(Summary::PrunedBy(source.what())));
        }
        answered = answered_columns(p, described.as_ref());
    }
    if source == Source::Catalog {
        // Ok: the footer is in the cache or came from the catalog; Err: it is read from
        // the file, with the reason the catalog's copy did not serve when it has one.
        let from_catalog: Result<(), Option<String>> = match described.footer_unusable() {
            Some(why) => Err(Some(why)),
            None if ctx.cache.contains(f.identity) => Ok(()),
            None => match described.footer() {
                Some(Ok(md)) => {
                    ctx.cache.seed(f.identity.clone(), Arc::new(md), true);
                    Ok(())
                }
                Some(Err(Error::InvalidFile { reason, .. })) => Err(Some(reason)),
                Some(Err(e)) => Err(Some(e.to_string())),
                None => Err(None),
            },
        };
        match from_catalog {
            Ok(()) => m.footers_from_catalog.set(1),
            Err(why) => {
                if let Some(why) = why {
                    warnings.push(format!(
                        "{path}: the catalog's footer is unusable ({why}); read from the file"
                    ));
                }
                m.files_not_in_catalog.set(1);
            }
        }
    }
    Ok(Description::Kept { answered })
}

/// What stage 2 concluded about a file.
enum Description {
    /// Ruled out, with the summary to report.
    Pruned(Summary),
    /// Kept; `answered` lists the leaf columns whose every `=`/`IN` leaf the description's
    /// own filters already answered for the whole file.
    Kept { answered: Vec<usize> },
}

/// Stage 3 without opening the file, where the cache holds its footer as listed: the
/// summary when the footer's statistics rule out every row group. Opening and closing a
/// file costs more than the rest of planning one a lookup rules out. Files of a table
/// (whose columns are mapped first) and files with embedded indexes (whose warnings are
/// reported whatever prunes the file) take the way that opens them.
fn ruled_out_unopened(
    f: &FileToPlan,
    ctx: &PlanContext,
    pred: Option<&Predicate>,
    m: &Metrics,
) -> Result<Option<Box<Counts>>> {
    let Some(pred) = pred else {
        return Ok(None);
    };
    if ctx.adapter.is_some() {
        return Ok(None);
    }
    let Some(md) = ctx.cache.peek(f.identity) else {
        return Ok(None);
    };
    if !ctx.indexes.none_in(&md) {
        return Ok(None);
    }
    check_schema(f.path, &md, &dataset_schema(ctx))?;
    let mut statistics = FooterStatistics::new(&md);
    for rg in 0..md.num_row_groups() {
        if row_group_may_match(pred, rg, &mut [&mut statistics])? {
            return Ok(None);
        }
    }
    ctx.cache.hit();
    m.footer_cache_hits.incr();
    m.row_groups.set(md.num_row_groups() as u64);
    m.row_groups_pruned_by_stats.set(md.num_row_groups() as u64);
    Ok(Some(Counts::of(m, Vec::new(), !has_page_index(&md))))
}

/// Stage 3: the file opened (or the one already open) and its footer, from the cache
/// when it holds it.
fn open_footer(
    f: &FileToPlan,
    ctx: &PlanContext,
    m: &Metrics,
) -> Result<(StorageFile, Arc<ParquetMetaData>)> {
    let file = match ctx.opened {
        Some(o) if o.path() == f.path && o.identity().as_ref() == f.identity => o.clone(),
        _ => {
            m.files_opened.incr();
            StorageFile::open_listed(f.path, f.identity, ctx.io.clone())?
        }
    };
    let (md, outcome) = ctx.cache.get(&file, false)?;
    if outcome.footer_hit {
        m.footer_cache_hits.incr();
    } else {
        m.footers_read.incr();
    }
    if outcome.page_index_loaded {
        m.page_indexes_read.incr();
    }
    Ok((file, md))
}

/// The predicate in the file's terms: a table's file is read in the table's terms (its
/// columns mapped); any other file must have the scan's schema.
fn adapt(
    f: &FileToPlan,
    ctx: &PlanContext,
    file: &StorageFile,
    md: &ParquetMetaData,
    pred: Option<&Predicate>,
) -> Result<(Option<Predicate>, Option<Arc<ColumnMap>>)> {
    match ctx.adapter {
        Some(adapter) => {
            if file.identity().size != f.identity.size {
                return Err(Error::Source(format!(
                    "{}: the table records {} bytes, the file has {}; the table is damaged or the file was replaced",
                    f.path,
                    f.identity.size,
                    file.identity().size
                )));
            }
            let (p, map) = adapter.adapt(f.path, pred, md)?;
            Ok((p, Some(map)))
        }
        None => {
            check_schema(f.path, md, &dataset_schema(ctx))?;
            Ok((pred.cloned(), None))
        }
    }
}

/// The schema every file of a scan without a table must have.
fn dataset_schema<'a>(ctx: &PlanContext<'a>) -> DatasetSchema<'a> {
    DatasetSchema {
        arrow: ctx.schema,
        descr: ctx.descr,
        hint: ctx.hint,
    }
}

/// Stage 4: fetch in one go what the finer stages read for the kept row groups (the page
/// index, embedded index heads, and on object stores Parquet blooms, which saves a round
/// trip). Parquet blooms are not read for columns an embedded lookup index answers for; on
/// local files each is read when stage 5 finds it can pay.
fn prefetch(
    pred: &Predicate,
    file: &StorageFile,
    md: &ParquetMetaData,
    access: &AccessPlan,
    answered: &[usize],
    indexes: Option<&dyn Evidence>,
    m: &Metrics,
) -> Result<()> {
    let leaves: Vec<usize> = pred.columns().iter().filter_map(|c| c.leaf).collect();
    let kept = access.kept();
    let mut ranges = ColumnIndexes::new(md).planning_ranges(&leaves, &kept);
    if file.is_remote() {
        ranges.extend(
            ParquetBlooms::new(file, md, &m.bloom_filters_read)
                .without(answered.to_vec())
                .planning_ranges(&leaves, &kept),
        );
    }
    // Index reads are small and scattered: not merged across other blocks.
    let mut scattered = match indexes {
        Some(ix) => ix.planning_ranges(&leaves, &kept),
        None => Vec::new(),
    };
    let size = file.identity().size;
    ranges.retain(|r| r.end <= size);
    scattered.retain(|r| r.end <= size);
    file.prefetch_with_scattered(ranges, scattered)
}

/// The footer with its page index, loaded the first time a stage asks for it (bloom
/// filters, then rows) and only if the file has one.
struct PageIndex<'a> {
    ctx: &'a PlanContext<'a>,
    file: &'a StorageFile,
    md: &'a Arc<ParquetMetaData>,
    m: &'a Metrics,
    loaded: Option<Arc<ParquetMetaData>>,
}

impl<'a> PageIndex<'a> {
    fn new(
        ctx: &'a PlanContext<'a>,
        file: &'a StorageFile,
        md: &'a Arc<ParquetMetaData>,
        m: &'a Metrics,
    ) -> Self {
        PageIndex {
            ctx,
            file,
            md,
            m,
            loaded: None,
        }
    }

    fn footer(&mut self) -> Result<Arc<ParquetMetaData>> {
        if let Some(md) = &self.loaded {
            return Ok(md.clone());
        }
        let md = if has_page_index(self.md) {
            let (loaded, outcome) = self.ctx.cache.get(self.file, true)?;
            if outcome.page_index_loaded {
                self.m.page_indexes_read.incr();
            }
            loaded
        } else {
            self.md.clone()
        };
        self.loaded = Some(md.clone());
        Ok(md)
    }
}

/// Whether row group `rg`'s Parquet bloom filters can pay for their bytes: the pages of
/// the probed columns the page index leaves, times the chance the filters rule the row
/// group out ([`chance_ruled_out`]), must outweigh the filters. Not, then, when the page
/// index has already narrowed those columns to a page or two, nor when the values asked
/// about are almost surely there (a dense key column, a long IN list), nor when the
/// chunks' dictionary pages, where the reader asks them first ([`dictionary_probes`]),
/// would rule the row group out for fewer bytes. A filter answers for the whole row
/// group; the pages are read and checked exactly anyway. (On object stores the filters
/// came with the page index in one round trip, so they are always used.)
fn blooms_pay(
    pred: &Predicate,
    md: &ParquetMetaData,
    rg: usize,
    rows: u64,
    answered: &[usize],
    needed: &[usize],
    pages: &mut PageIndex,
) -> Result<bool> {
    let mut filtered: Vec<usize> = pred
        .leaves()
        .into_iter()
        .filter(|l| is_probe(l))
        .filter_map(|l| l.column().and_then(|c| c.leaf))
        .filter(|leaf| !answered.contains(leaf))
        .collect();
    filtered.sort_unstable();
    filtered.dedup();
    let chunks: Vec<_> = filtered
        .iter()
        .filter_map(|&leaf| {
            md.row_groups()
                .get(rg)?
                .columns()
                .get(leaf)
                .map(|c| (leaf, c))
        })
        .filter(|(_, c)| c.bloom_filter_offset().is_some())
        .collect();
    if chunks.is_empty() || !has_page_index(md) {
        return Ok(true);
    }
    let Some(filter_bytes) = chunks
        .iter()
        .map(|(_, c)| c.bloom_filter_length().and_then(|l| u64::try_from(l).ok()))
        .sum::<Option<u64>>()
    else {
        return Ok(true);
    };
    let paged = pages.footer()?;
    let selected = rows_may_match(pred, rg, rows, &mut [&mut ColumnIndexes::new(&paged)])?;
    let probed = dictionary_probes(pred, &paged, rg, rows, &selected, needed);
    // What a row group the filters would rule out costs to read without them.
    let mut unfiltered = 0u64;
    for (leaf, _) in &chunks {
        if offset_index(&paged, rg, *leaf).is_none() {
            return Ok(true);
        }
        let mut page_bytes = selected_bytes(&paged, rg, *leaf, rows, &selected);
        let any = page_bytes > 0;
        // A dictionary page is read with any of the chunk's pages.
        if let (true, Some(dictionary)) = (any, dictionary_range(&paged, rg, *leaf)) {
            page_bytes += dictionary.end - dictionary.start;
        }
        // A dictionary holding every value of its chunk, when the reader asks it first, is
        // all it reads of a row group the dictionary rules out.
        unfiltered += match probe_range(&paged, rg, *leaf) {
            Some(dictionary) if any && probed.contains(leaf) => {
                page_bytes.min(dictionary.end - dictionary.start)
            }
            _ => page_bytes,
        };
    }
    let chance = chance_ruled_out(pred, md, rg, answered);
    Ok(chance * unfiltered as f64 > filter_bytes as f64)
}

/// The file's root columns the scan's output reads (`columns` maps a table's columns to
/// the file's).
fn file_roots(ctx: &PlanContext, columns: Option<&ColumnMap>) -> Vec<usize> {
    match columns {
        Some(map) => map.file_roots(ctx.projected_roots),
        None => ctx.projected_roots.to_vec(),
    }
}

/// Evidence of nothing: stands in for a source a stage chose not to ask.
struct NoEvidence;

impl Evidence for NoEvidence {
    fn source(&self) -> Source {
        Source::ParquetBloom
    }
}

/// Stage 6: each kept row group narrowed to rows by the page index (`paged`, the footer
/// with its page index when the file has one), then by embedded page-level indexes.
fn narrow_rows(
    pred: &Predicate,
    paged: &ParquetMetaData,
    access: &mut AccessPlan,
    mut indexes: Option<&mut (dyn Evidence + '_)>,
    m: &Metrics,
) -> Result<()> {
    let mut pages = ColumnIndexes::new(paged);
    for rg in access.kept() {
        let rows = access.rows(rg);
        let by_pages = rows_may_match(pred, rg, rows, &mut [&mut pages])?;
        let narrowed = match indexes.as_deref_mut() {
            Some(ix) => {
                let both = rows_may_match(pred, rg, rows, &mut [&mut pages, ix])?;
                m.rows_pruned_by_index
                    .add(by_pages.row_count() - both.row_count());
                both
            }
            None => by_pages,
        };
        access.select(rg, &narrowed);
        if access.ranges(rg).is_empty() {
            m.row_groups_pruned_by_page_index.incr();
        }
    }
    Ok(())
}

/// The leaf columns embedded indexes answer for (none without indexes).
fn answered(pred: &Predicate, indexes: Option<&dyn Evidence>) -> Vec<usize> {
    indexes
        .map(|ix| answered_columns(pred, ix))
        .unwrap_or_default()
}

/// Leaf columns whose every `=`/`IN` leaf an embedded index answers for at row-group level
/// or finer: their Parquet bloom filters would rule out nothing more.
fn answered_columns(pred: &Predicate, indexes: &dyn Evidence) -> Vec<usize> {
    let probes: Vec<&Predicate> = pred.leaves().into_iter().filter(|l| is_probe(l)).collect();
    let mut out: Vec<usize> = probes
        .iter()
        .filter_map(|l| l.column().and_then(|c| c.leaf))
        .filter(|&leaf| {
            probes
                .iter()
                .filter(|l| l.column().and_then(|c| c.leaf) == Some(leaf))
                .all(|l| indexes.answers(l))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn record_report(m: &Metrics, report: &Report, warnings: &mut Vec<String>) {
    m.indexes_read.set(report.read);
    m.index_bytes_read.set(report.bytes);
    m.indexes_skipped.set(report.warnings.len() as u64);
    m.indexes_declined.set(report.declined);
    warnings.splice(0..0, report.warnings.iter().cloned());
}

/// 7. The kept rows as units, with the pages they keep counted and the file's summary.
#[allow(clippy::too_many_arguments)]
fn units_of(
    f: &FileToPlan,
    ctx: &PlanContext,
    file: &StorageFile,
    md: Arc<ParquetMetaData>,
    pred: Option<&Predicate>,
    mut access: AccessPlan,
    report: Option<Report>,
    m: Metrics,
    mut warnings: Vec<String>,
    columns: Option<Arc<ColumnMap>>,
) -> Result<FilePlan> {
    if let Some(r) = &report {
        record_report(&m, r, &mut warnings);
    }
    // Rows the table deleted leave the selection before any page is read.
    if let Some(deleted) = f.deleted {
        m.rows_deleted.add(access.remove_positions(deleted));
    }
    let needed = needed_leaves(&md, &file_roots(ctx, columns.as_deref()), pred);
    let kept = access.kept();
    let mut units = Vec::new();
    // A file with no row group left needs no reader: its schema's conversion would cost
    // more than the rest of its planning.
    if !kept.is_empty() {
        let mut planned = PlannedFile::new(
            file.identity().as_ref().clone(),
            md.clone(),
            pred.cloned(),
            f.partition_values.to_vec(),
        )?;
        if ctx.held.take() {
            planned.handle = Some(file.handle());
        }
        planned.columns = columns;
        let planned = Arc::new(planned);
        for rg in kept {
            let rows = access.rows(rg);
            let ranges = access.ranges(rg);
            for &leaf in &needed {
                if let Some(oi) = offset_index(&md, rg, leaf) {
                    let bounds = page_boundaries(oi, rows);
                    for w in bounds.windows(2) {
                        m.pages.incr();
                        if !ranges.overlaps(&(w[0]..w[1].max(w[0]))) {
                            m.pages_pruned.incr();
                        }
                    }
                }
            }
            m.rows_selected.add(ranges.row_count());
            let conjunct_rows = pred.map_or_else(Vec::new, |p| conjunct_rows(&md, rg, p, &ranges));
            let dictionary_probes = pred.map_or_else(Vec::new, |p| {
                dictionary_probes(p, &md, rg, rows, &ranges, &needed)
            });
            units.push(ScanUnit {
                file: planned.clone(),
                row_group: rg,
                ranges,
                row_group_rows: rows,
                conjunct_rows,
                dictionary_probes,
            });
        }
    }
    if units.is_empty() {
        m.files_pruned.set(1);
    }
    let kinds = report.map(|r| r.used).unwrap_or_default();
    let summary = Summary::Counts(Counts::of(
        &m,
        kinds,
        pred.is_some() && !has_page_index(&md),
    ));
    Ok(FilePlan {
        units,
        metrics: m,
        summary,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::index::evidence::EmbeddedIndexes;
    use crate::query::binding::Binding;
    use crate::testing::{int64s, strings, write_file, Layout};

    /// 4 row groups of 1,000 rows, 100-row pages: `k` sorted 0..4000, `u` = k * 7 % 4000
    /// (unsorted), `s` = "s<k>" (pages smaller than its filter) and `t` = [`t_value`] of
    /// `u` (pages that do not compress), both with a Parquet bloom filter.
    fn file(dir: &std::path::Path) -> String {
        write_file(
            dir,
            "f.parquet",
            vec![
                ("k", int64s(0..4000)),
                ("u", int64s((0..4000).map(|k| k * 7 % 4000))),
                ("s", strings((0..4000).map(|k| Some(format!("s{k:04}"))))),
                ("t", strings((0..4000).map(|k| Some(t_value(k * 7 % 4000))))),
            ],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                bloom: &["s", "t"],
            },
        )
    }

    /// A string of `u` that does not compress.
    fn t_value(u: i64) -> String {
        format!("t{:016x}", (u as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Plan `path` with `predicate`, with the given catalog.
    fn plan_with(path: &str, predicate: &str, catalog: Option<&dyn FileCatalog>) -> FilePlan {
        let footer =
            crate::metadata::read_metadata(path, false, &MetadataCache::new(1 << 20)).unwrap();
        let cache = MetadataCache::new(1 << 24);
        let binding = Binding::of(&footer.metadata, path, Vec::new()).unwrap();
        let pred = binding.bind_where(Some(predicate), 0).unwrap();
        let identity = FileIdentity::stat(path).unwrap();
        let io = Arc::new(IoStats::default());
        let ctx = PlanContext {
            predicate: pred.as_ref(),
            schema: &binding.schema,
            descr: &binding.descr,
            hint: binding.hint.as_deref(),
            projected_roots: &[0],
            cache: &cache,
            io: &io,
            catalog,
            indexes: &EmbeddedIndexes,
            opened: None,
            held: &HeldFiles::default(),
            adapter: None,
        };
        let f = FileToPlan {
            path,
            identity: &identity,
            partition_values: &[],
            deleted: None,
        };
        plan_file(&f, &ctx).unwrap()
    }

    fn plan(path: &str, predicate: &str) -> FilePlan {
        plan_with(path, predicate, None)
    }

    #[test]
    fn statistics_rule_out_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let p = plan(&path, "k < 100");
        assert_eq!(p.metrics.row_groups.get(), 4);
        assert_eq!(p.metrics.row_groups_pruned_by_stats.get(), 3);
        assert_eq!(p.units.len(), 1);
        // Nothing below the minimum: the file has nothing to read.
        let none = plan(&path, "k < 0");
        assert_eq!(none.metrics.row_groups_pruned_by_stats.get(), 4);
        assert!(none.units.is_empty());
        assert_eq!(none.metrics.files_pruned.get(), 1);
    }

    #[test]
    fn parquet_blooms_rule_out_what_statistics_keep() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        // Within every row group's and page's bounds, absent from all.
        let p = plan(&path, "t = 't8x'");
        assert_eq!(p.metrics.row_groups_pruned_by_stats.get(), 0);
        assert_eq!(p.metrics.row_groups_pruned_by_bloom.get(), 4);
        assert_eq!(p.metrics.bloom_filters_read.get(), 4);
        assert!(p.units.is_empty());
        // Present: kept by its filter, where the page index could not narrow it.
        let p = plan(&path, &format!("t = '{}'", t_value(1234)));
        assert_eq!(p.metrics.row_groups_pruned_by_bloom.get(), 3);
        assert_eq!(p.units.len(), 1);
    }

    #[test]
    fn no_bloom_filter_is_read_where_the_page_index_leaves_cheaper_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        // The page index narrows the one row group statistics keep to one page, which
        // costs less than the row group's filter (absent value or not).
        let p = plan(&path, "s = 's0000x'");
        assert_eq!(p.metrics.row_groups_pruned_by_stats.get(), 3);
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert_eq!(p.units.len(), 1);
        assert_eq!(p.units[0].ranges.row_count(), 100);
        let p = plan(&path, "s IN ('s1234', 's1250')");
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert_eq!(p.units[0].ranges.row_count(), 100);
        // Where the page index rules every page out, no filter is read either.
        let p = plan(&path, "s = 's1099x'");
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert!(p.units.is_empty());
    }

    #[test]
    fn no_bloom_filter_is_read_for_values_the_statistics_say_are_almost_surely_there() {
        let dir = tempfile::tempdir().unwrap();
        // Each 1,000-row row group holds 1,000 distinct values of 0..8000 in scattered
        // order, so a value within the bounds is absent from one with a chance of about
        // e^-1/8: worth a filter for one value, not for ten at once.
        let path = write_file(
            dir.path(),
            "sparse.parquet",
            vec![("d", int64s((0..4000).map(|k| k * 7919 % 1000 * 8 + k % 8)))],
            Layout {
                row_group_size: 1000,
                page_rows: Some(100),
                bloom: &["d"],
            },
        );
        // Worth asking for one value, but each chunk's dictionary holds all its values in
        // fewer bytes than its filter: the reader asks the dictionaries instead.
        let p = plan(&path, "d = 4001");
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert_eq!(p.units.len(), 4);
        assert!(p.units.iter().all(|u| u.dictionary_probes == [0]));
        let ten = (0..10).map(|i| (i * 797).to_string()).collect::<Vec<_>>();
        let p = plan(&path, &format!("d IN ({})", ten.join(", ")));
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert_eq!(p.metrics.rows_selected.get(), 4000);
        // Outside every bound: statistics alone rule the row groups out.
        let p = plan(&path, "d IN (8000, 8001)");
        assert_eq!(p.metrics.bloom_filters_read.get(), 0);
        assert!(p.units.is_empty());
    }

    #[test]
    fn the_page_index_narrows_rows_and_each_conjunct_is_estimated() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let p = plan(&path, "k BETWEEN 1150 AND 1249");
        assert_eq!(p.units.len(), 1);
        assert_eq!(p.units[0].row_group, 1);
        assert_eq!(p.metrics.rows_selected.get(), 200);
        assert_eq!(p.metrics.pages_pruned.get(), 8);
        // Two conjuncts: the reader learns which is the more selective.
        let p = plan(&path, "k >= 0 AND k = 3001");
        assert_eq!(p.units.len(), 1);
        assert_eq!(p.units[0].conjunct_rows, vec![100, 100]);
        let p = plan(&path, "u >= 0 AND k >= 3000");
        assert_eq!(p.units.len(), 1);
        assert_eq!(p.units[0].conjunct_rows, vec![1000, 1000]);
    }

    #[test]
    fn or_keeps_what_either_side_may_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let p = plan(&path, "k < 50 OR k >= 3950");
        let kept: Vec<usize> = p.units.iter().map(|u| u.row_group).collect();
        assert_eq!(kept, vec![0, 3]);
        assert_eq!(p.metrics.rows_selected.get(), 200);
    }

    /// A catalog that knows every file and says no row of it has `k = 42`.
    struct NoFortyTwo;

    struct Described;

    impl Evidence for Described {
        fn source(&self) -> Source {
            Source::Catalog
        }
        fn file(&mut self, leaf: &Predicate) -> Result<Option<bool>> {
            Ok(Some(!leaf.to_string().contains("42")))
        }
    }

    impl DescribedFile for Described {
        fn footer(&self) -> Option<Result<ParquetMetaData>> {
            None
        }
    }

    impl FileCatalog for NoFortyTwo {
        fn describe<'a>(
            &'a self,
            _path: &str,
            _identity: &FileIdentity,
            _schema: &'a SchemaDescriptor,
        ) -> Option<Box<dyn DescribedFile + 'a>> {
            Some(Box::new(Described))
        }
    }

    #[test]
    fn a_catalog_rules_files_out_unopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let p = plan_with(&path, "k = 42", Some(&NoFortyTwo));
        assert_eq!(p.metrics.files_pruned_by_catalog.get(), 1);
        assert_eq!(p.metrics.footers_read.get(), 0, "the file was not opened");
        let line = p.summary.line(&path);
        assert!(line.contains("catalog"), "{line}");
        // A leaf it cannot rule out keeps the file; without a footer from the catalog, the
        // file's own is read.
        let p = plan_with(&path, "k = 43", Some(&NoFortyTwo));
        assert_eq!(p.metrics.files_pruned_by_catalog.get(), 0);
        assert_eq!(p.metrics.files_not_in_catalog.get(), 1);
        assert_eq!(p.units.len(), 1);
        // Under OR, a leaf the catalog rules out leaves the other one.
        let p = plan_with(&path, "k = 42 OR k = 43", Some(&NoFortyTwo));
        assert_eq!(p.units.len(), 1);
    }

    #[test]
    fn partition_values_decide_before_anything_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let footer = crate::metadata::read_metadata(&path, false, &cache).unwrap();
        let part = arrow_schema::Field::new("p", arrow_schema::DataType::Int64, true);
        let binding = Binding::of(&footer.metadata, &path, vec![part]).unwrap();
        let pred = binding.bind_where(Some("p = 1 AND k < 10"), 0).unwrap();
        let identity = FileIdentity::stat(&path).unwrap();
        let io = Arc::new(IoStats::default());
        let ctx = PlanContext {
            predicate: pred.as_ref(),
            schema: &binding.schema,
            descr: &binding.descr,
            hint: binding.hint.as_deref(),
            projected_roots: &[0],
            cache: &MetadataCache::new(1 << 24),
            io: &io,
            catalog: None,
            indexes: &EmbeddedIndexes,
            opened: None,
            held: &HeldFiles::default(),
            adapter: None,
        };
        let other = [Some(Value::Int(2))];
        let f = FileToPlan {
            path: &path,
            identity: &identity,
            partition_values: &other,
            deleted: None,
        };
        let p = plan_file(&f, &ctx).unwrap();
        assert_eq!(p.metrics.files_pruned_by_partition.get(), 1);
        assert_eq!(p.metrics.footers_read.get(), 0);
        let this = [Some(Value::Int(1))];
        let f = FileToPlan {
            partition_values: &this,
            ..f
        };
        let p = plan_file(&f, &ctx).unwrap();
        assert_eq!(p.metrics.rows_selected.get(), 100);
        // The planned file carries the predicate with its partition value folded in.
        let folded = p.units[0].file.predicate.as_ref().unwrap().to_string();
        assert!(!folded.contains('p'), "{folded}");
    }
}
