//! A scan: plan (list, prune files, row groups and pages) once, then stream the selected
//! rows, reading units on a pool of threads while the consumer receives them in order.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::index::evidence::EmbeddedIndexes;
use crate::io::{IoStats, StorageFile};
use crate::metadata::MetadataCache;
use crate::plan::{Decoding, Metrics, OutputShape, ScanUnit};
use crate::predicate::keys::KeySpec;
use crate::predicate::{Condition, Predicate};
use crate::prune::planner::{
    plan_file, FileCatalog, FileIndexEvidence, FileToPlan, HeldFiles, PlanContext, SchemaAdapter,
};
use crate::query::binding::Binding;
use crate::query::parallel::{default_threads, io_workers, parallel_map};
use crate::query::stream::{read_ahead, ScanStream};
use crate::query::top_k::{OrderKey, TopK};
use crate::source::{list_source_or_table, SourceFile, TableFormat};
use crate::table::columns::TableColumns;
use crate::table::indexes::TableIndexes;
use crate::table::stats::TableStats;
use crate::table::{TableOptions, TableSnapshot};

#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The condition rows must satisfy (SQL text or the structured form).
    pub predicate: Option<Condition>,
    pub columns: Option<Vec<String>>,
    pub batch_size: usize,
    pub threads: usize,
    /// "Now" for `now()` and `current_date`, in ns since the epoch; the plan time if unset.
    pub now_ns: Option<i128>,
    /// Plan without the dataset's catalog even when it has one.
    pub ignore_catalog: bool,
    /// Which snapshot of a table to read, and how to reach it.
    pub table: TableOptions,
    /// Keep only the rows whose key is among these (a semi join), pruning with them.
    pub keys: Option<KeySpec>,
    /// Bytes the stream may hold for units ahead of the consumer (fetched pages and
    /// decoded batches); the process-wide [`read_ahead`] when unset.
    pub read_ahead: Option<usize>,
    /// Output string and binary columns as Arrow views (`Utf8View`, `BinaryView`), which
    /// a dictionary-encoded or plain page decodes into without copying each value.
    pub string_view: bool,
    /// Who decodes pages: pqindex's decoders, or the parquet crate's stock reader alone.
    pub decoding: Decoding,
    /// Return at most this many rows (any of them, unless `order_by` says which), and stop
    /// reading once they are out.
    pub limit: Option<u64>,
    /// With `limit`, the rows returned are the first in this order (NULLs last).
    pub order_by: Vec<OrderKey>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            predicate: None,
            columns: None,
            batch_size: 65536,
            threads: default_threads(),
            now_ns: None,
            ignore_catalog: false,
            table: TableOptions::default(),
            keys: None,
            read_ahead: None,
            string_view: false,
            decoding: Decoding::from_env(),
            limit: None,
            order_by: Vec::new(),
        }
    }
}

impl ScanOptions {
    pub(crate) fn check(&self) -> Result<()> {
        if self.batch_size == 0 {
            return Err(Error::InvalidArgument("batch_size must be positive".into()));
        }
        if !self.order_by.is_empty() && self.limit.is_none() {
            return Err(Error::InvalidArgument(
                "order_by needs a limit: the scan returns the first rows in that order".into(),
            ));
        }
        Ok(())
    }
}

/// Files `explain()` describes one by one before "... more files".
const FILES_SHOWN: usize = 20;

/// A planned scan. Its rows are read by `stream`.
pub struct Scan {
    pub(crate) shape: OutputShape,
    pub(crate) units: Vec<ScanUnit>,
    /// Planning counters, and reading counters that grow as the stream is consumed.
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) predicate: Option<Predicate>,
    pub(crate) where_text: Option<Condition>,
    /// The `explain()` lines of the first planned files.
    pub(crate) summaries: Vec<String>,
    /// Planned files in all (those beyond `summaries` are counted, not described).
    pub(crate) files_planned: usize,
    /// Indexes planning could not use (damaged, unknown version, not this file's).
    pub(crate) warnings: Vec<String>,
    pub(crate) threads: usize,
    pub(crate) io: Arc<IoStats>,
    pub(crate) binding: Binding,
    /// The "now" that `now()` and `current_date` folded to.
    pub(crate) now_ns: i128,
    /// The catalog planning used: the dataset root it describes, and its version.
    pub(crate) catalog: Option<(String, u64)>,
    /// The table planning read: its format, location and version (or snapshot id).
    pub(crate) table: Option<(TableFormat, String, i64)>,
    /// The stream's read-ahead budget; the process-wide one when unset.
    pub(crate) read_ahead: Option<usize>,
    /// At most this many rows are returned.
    pub(crate) limit: Option<u64>,
    /// Which rows `limit` keeps: the first in this order.
    pub(crate) order_by: Vec<OrderKey>,
}

/// Read the footers of object-store files into the cache, many requests at a time, before
/// planning needs the first one: on a store, a footer costs a round trip, and planning
/// would otherwise wait for the first file's before asking for the others'. Returns the
/// footers and page indexes read.
fn warm_footers(
    files: &[SourceFile],
    cache: &MetadataCache,
    io: &Arc<IoStats>,
    threads: usize,
    cancel: &AtomicBool,
) -> Result<(u64, u64)> {
    let outcomes = parallel_map(files, io_workers(threads), cancel, |f| {
        let file = StorageFile::open_listed(&f.path, &f.identity, io.clone())?;
        Ok(cache.get(&file, false)?.1)
    })?;
    let footers = outcomes.iter().filter(|o| !o.footer_hit).count() as u64;
    let page_indexes = outcomes.iter().filter(|o| o.page_index_loaded).count() as u64;
    Ok((footers, page_indexes))
}

/// What planning plans: the files, how names and literals bind, and what else knows
/// about the files (a catalog, a table's log).
struct Sources<'a> {
    files: Arc<Vec<SourceFile>>,
    binding: Binding,
    io: Arc<IoStats>,
    catalog: Option<Arc<Catalog>>,
    table: Option<&'a TableParts>,
    /// The first file, opened to read the schema (loose files only).
    first: Option<(StorageFile, bool)>,
    /// Footers and page indexes read ahead for object stores.
    warmed: (u64, u64),
}

/// What a scan of paths reads (see [`Scan::source`]).
pub(crate) enum ScanSource {
    /// A Delta table's snapshot, and the I/O its listing took.
    Table(Arc<TableSnapshot>, Arc<IoStats>),
    Files(crate::source::listing::Listing),
}

/// A table snapshot's evidence and column mapping.
struct TableParts {
    stats: TableStats,
    columns: TableColumns,
    indexes: TableIndexes,
}

impl Scan {
    /// Plan a scan of `paths`: loose Parquet files, or the directory of a Delta table
    /// (read at the version `opts.table` names). `cancel` is polled between files.
    pub fn plan(
        paths: &[String],
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        opts.check()?;
        let source = Self::source(paths, opts)?;
        Self::plan_source(paths, source, opts, cache, cancel)
    }

    /// What a scan of `paths` reads: the snapshot of the Delta table they name, or the
    /// loose files listed.
    pub(crate) fn source(paths: &[String], opts: &ScanOptions) -> Result<ScanSource> {
        let listing = list_source_or_table(paths)?;
        match listing.table {
            Some(TableFormat::Delta) => {
                let snapshot = crate::table::delta::snapshot(&paths[0], &opts.table)?;
                let io = Arc::new(IoStats::default());
                io.record_listing(listing.requests);
                Ok(ScanSource::Table(Arc::new(snapshot), io))
            }
            Some(TableFormat::Iceberg) => Err(Error::Unsupported(format!(
                "{} is an Iceberg table: pass pqindex.scan the pyiceberg Table (catalog.load_table(...)) so that its snapshot is planned from its manifests",
                paths[0]
            ))),
            None => {
                if opts.table.version.is_some() || opts.table.timestamp_ms.is_some() {
                    return Err(Error::InvalidArgument(format!(
                        "{}: version and timestamp apply to tables; the source is not one",
                        paths[0]
                    )));
                }
                Ok(ScanSource::Files(listing))
            }
        }
    }

    /// Plan a scan of `source`, found for `paths` by [`Scan::source`].
    pub(crate) fn plan_source(
        paths: &[String],
        source: ScanSource,
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        match source {
            ScanSource::Table(snapshot, io) => {
                Self::plan_table_with(snapshot, opts, cache, cancel, io)
            }
            ScanSource::Files(listing) => Self::plan_files(paths, listing, opts, cache, cancel),
        }
    }

    /// Plan a scan of a table snapshot (Delta's, or one built from Iceberg's manifests).
    pub fn plan_table(
        snapshot: Arc<TableSnapshot>,
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        opts.check()?;
        Self::plan_table_with(snapshot, opts, cache, cancel, Arc::new(IoStats::default()))
    }

    fn plan_table_with(
        snapshot: Arc<TableSnapshot>,
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
        io: Arc<IoStats>,
    ) -> Result<Scan> {
        let binding = Binding::of_table(&snapshot.schema, snapshot.partitions.clone())?;
        let files: Vec<SourceFile> = snapshot
            .files
            .iter()
            .map(|f| SourceFile {
                path: f.path.clone(),
                partition_values: f.partition_values.clone(),
                identity: f.identity(),
                deleted: f.deleted.clone(),
            })
            .collect();
        let parts = TableParts {
            stats: TableStats::new(snapshot.clone()),
            columns: TableColumns {
                root: snapshot.root.clone(),
                schema: snapshot.schema.clone(),
                identity: snapshot
                    .files
                    .iter()
                    .filter(|f| !f.identity_columns.is_empty())
                    .map(|f| (f.path.clone(), f.identity_columns.clone()))
                    .collect(),
            },
            indexes: TableIndexes::load(&snapshot.root, &snapshot.index_files)?,
        };
        let sources = Sources {
            files: Arc::new(files),
            binding,
            io,
            catalog: None,
            table: Some(&parts),
            first: None,
            warmed: (0, 0),
        };
        let mut scan = Self::plan_sources(sources, opts, cache, cancel)
            .map_err(|e| e.in_table(&snapshot.root))?;
        scan.table = Some((snapshot.format, snapshot.root.clone(), snapshot.version));
        Ok(scan)
    }

    fn plan_files(
        paths: &[String],
        listing: crate::source::listing::Listing,
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        let io = Arc::new(IoStats::default());
        io.record_listing(listing.requests);
        let catalog = match paths {
            [dir]
                if !opts.ignore_catalog
                    && (listing.has_catalog || std::path::Path::new(dir).is_dir()) =>
            {
                Catalog::open_cached(dir, &io)?
            }
            _ => None,
        };
        let first = &listing.files[0];
        if let Some(c) = &catalog {
            c.seed_as(&first.path, &first.identity, cache)?;
        }
        let remote = crate::io::object::is_remote(&first.path);
        let mut warmed = (0, 0);
        // Without partition values or a catalog to rule files out, planning opens every
        // file: fetch all footers at once instead of the first one alone.
        if remote
            && catalog.is_none()
            && listing.files.len() > 1
            && listing.partition_fields.is_empty()
        {
            warmed = warm_footers(&listing.files, cache, &io, opts.threads, cancel)?;
        }
        let first_file = StorageFile::open_listed(&first.path, &first.identity, io.clone())?;
        // The first footer gives the schema; planning then finds it in the cache.
        let (md, first_outcome) = cache.get(&first_file, false)?;
        let binding = Binding::of(&md, &first.path, listing.partition_fields.clone())?;
        let sources = Sources {
            files: listing.files,
            binding,
            io,
            catalog,
            table: None,
            first: Some((first_file, first_outcome.footer_hit)),
            warmed,
        };
        Self::plan_sources(sources, opts, cache, cancel)
    }

    fn plan_sources(
        sources: Sources,
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        let Sources {
            files,
            binding,
            io,
            catalog,
            table,
            first,
            warmed,
        } = sources;
        let now_ns = opts.now_ns.unwrap_or_else(now_ns);
        let predicate = binding.bind_read(opts.predicate.as_ref(), opts.keys.as_ref(), now_ns)?;
        let mut shape = binding.output_shape(opts.columns.as_deref(), opts.batch_size)?;
        shape.decoding = opts.decoding;
        let shape = if opts.string_view {
            shape.viewed()
        } else {
            shape
        };
        crate::query::top_k::key_columns(&shape.schema, &opts.order_by)?;
        let projected_roots = shape.roots();
        let threads = opts.threads.max(1);
        let remote = files
            .first()
            .is_some_and(|f| crate::io::object::is_remote(&f.path));
        let warmed = if table.is_some() && remote && files.len() > 1 {
            warm_footers(&files, cache, &io, threads, cancel)?
        } else {
            warmed
        };
        let catalog_ref: Option<&dyn FileCatalog> = match (&catalog, table) {
            (_, Some(t)) => Some(&t.stats),
            (Some(c), None) => Some(c.as_ref()),
            (None, None) => None,
        };
        let ctx = PlanContext {
            predicate: predicate.as_ref(),
            schema: &binding.schema,
            descr: &binding.descr,
            hint: binding.hint.as_deref(),
            projected_roots: &projected_roots,
            cache,
            io: &io,
            catalog: catalog_ref,
            indexes: match table {
                Some(t) => &t.indexes as &dyn FileIndexEvidence,
                None => &EmbeddedIndexes,
            },
            opened: first.as_ref().map(|(f, _)| f),
            held: &HeldFiles::default(),
            adapter: table.map(|t| &t.columns as &dyn SchemaAdapter),
        };
        let planners = if remote { io_workers(threads) } else { threads };
        // Local files are planned in chunks, each folded on its thread: a file ruled out
        // leaves nothing behind but its counters, so 100,000 of them cost no result to
        // keep and copy. A remote file waits on requests: one a chunk.
        let per_chunk = if remote {
            1
        } else {
            (files.len() / (planners * 8)).clamp(1, 256)
        };
        let chunks: Vec<(usize, &[SourceFile])> = files
            .chunks(per_chunk)
            .enumerate()
            .map(|(i, c)| (i * per_chunk, c))
            .collect();
        let planned = parallel_map(
            &chunks,
            planners.min(chunks.len()),
            cancel,
            |(at, chunk)| plan_chunk(*at, chunk, &ctx, cancel),
        )?;
        let metrics = Arc::new(Metrics::default());
        let mut units = Vec::new();
        let mut summaries = Vec::new();
        let mut warnings = Vec::new();
        for p in planned {
            metrics.add(&p.metrics);
            units.extend(p.units);
            summaries.extend(p.summaries);
            warnings.extend(p.warnings);
        }
        let files_planned = files.len();
        // The first footer was read before planning, which then found it in the cache.
        let m = &metrics;
        if first.as_ref().is_some_and(|(_, hit)| !hit) && m.footer_cache_hits.get() > 0 {
            m.footers_read.incr();
            m.footer_cache_hits.set(m.footer_cache_hits.get() - 1);
        }
        // Footers the warm-up read show up as cache hits in planning.
        let (warm_footers_read, warm_indexes) = warmed;
        let moved = warm_footers_read.min(m.footer_cache_hits.get());
        m.footers_read.add(moved);
        m.footer_cache_hits.set(m.footer_cache_hits.get() - moved);
        m.page_indexes_read.add(warm_indexes);
        metrics.units.set(units.len() as u64);
        Ok(Scan {
            shape,
            units,
            metrics,
            predicate,
            where_text: opts.predicate.clone(),
            summaries,
            files_planned,
            warnings,
            threads,
            io,
            binding,
            now_ns,
            catalog: catalog.map(|c| (c.root.to_string_lossy().into_owned(), c.version)),
            table: None,
            read_ahead: opts.read_ahead,
            limit: opts.limit,
            order_by: opts.order_by.clone(),
        })
    }

    /// The schema of the rows the scan returns.
    pub fn schema(&self) -> SchemaRef {
        self.shape.schema.clone()
    }

    /// Stream the selected rows. Units are read on `threads` threads; batches arrive in
    /// plan order, and at most a few units are read ahead of the consumer.
    pub fn stream(&self) -> ScanStream {
        self.stream_units(self.units.clone(), self.shape.clone())
    }

    /// Stream the selected rows for a caller that keeps every batch (`to_arrow`): batches
    /// of later units held for it are memory the result takes anyway, so the read-ahead
    /// budget bounds only the units' reads. Threads then read large row groups side by
    /// side instead of one stopping, its batches held, until the consumer reaches it.
    pub fn stream_kept(&self) -> ScanStream {
        self.start(self.units.clone(), self.shape.clone(), true)
    }

    /// Stream `units` (units of this scan, their ranges possibly narrowed) in `shape`.
    pub(crate) fn stream_units(&self, units: Vec<ScanUnit>, shape: OutputShape) -> ScanStream {
        self.start(units, shape, false)
    }

    fn start(&self, units: Vec<ScanUnit>, shape: OutputShape, keep_all: bool) -> ScanStream {
        let budget = self.read_ahead.unwrap_or_else(read_ahead);
        if let (Some(k), false) = (self.limit, self.order_by.is_empty()) {
            let top = TopK::new(
                units,
                &self.order_by,
                k,
                &self.binding.bind_schema(),
                shape.clone(),
                self.io.clone(),
                self.metrics.clone(),
                self.threads,
                budget,
            );
            return match top {
                Ok(top) => top.stream(),
                Err(e) => ScanStream::deferred(shape.schema.clone(), Box::new(move || Err(e))),
            };
        }
        if let Some(limit) = self.limit {
            let budget = crate::query::limit::read_ahead(&units, budget);
            let pieces = crate::query::limit::limited_units(units, limit);
            return ScanStream::start_limited(
                pieces,
                shape,
                self.io.clone(),
                self.metrics.clone(),
                self.threads,
                budget,
                limit,
            );
        }
        ScanStream::start(
            units,
            shape,
            self.io.clone(),
            self.metrics.clone(),
            self.threads,
            budget,
            keep_all,
        )
    }

    /// Row groups left to read.
    pub fn unit_count(&self) -> usize {
        self.units.len()
    }

    /// What `now()` and `current_date` folded to, in ns since the epoch.
    pub fn now_ns(&self) -> i128 {
        self.now_ns
    }

    /// Embedded indexes planning skipped (damaged, unknown version, not this file's).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The dataset root whose catalog planning used, if any.
    pub fn catalog_root(&self) -> Option<&str> {
        self.catalog.as_ref().map(|(root, _)| root.as_str())
    }

    /// Counters of pruning and reading, by name; read counters grow as the stream is
    /// consumed.
    pub fn metrics(&self) -> Vec<(&'static str, u64)> {
        let m = &self.metrics;
        m.bytes_read.set(self.io.bytes());
        m.requests.set(self.io.requests());
        m.list_requests.set(self.io.list_requests());
        m.retries.set(self.io.retries());
        m.values()
    }

    /// One counter by name.
    pub fn metric(&self, name: &str) -> Option<u64> {
        self.metrics()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// What planning a run of consecutive files left: their units and warnings in file order,
/// `explain()` lines of those among the first `FILES_SHOWN`, and their counters summed.
#[derive(Default)]
struct PlannedChunk {
    units: Vec<ScanUnit>,
    summaries: Vec<String>,
    warnings: Vec<String>,
    metrics: Metrics,
}

/// Plan `chunk`, the files from position `at` on, one after the other.
fn plan_chunk(
    at: usize,
    chunk: &[SourceFile],
    ctx: &PlanContext,
    cancel: &AtomicBool,
) -> Result<PlannedChunk> {
    let mut planned = PlannedChunk::default();
    for (i, f) in chunk.iter().enumerate() {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let file = FileToPlan {
            path: &f.path,
            identity: &f.identity,
            partition_values: &f.partition_values,
            deleted: f.deleted.as_deref().map(Vec::as_slice),
        };
        let p = plan_file(&file, ctx)?;
        planned.metrics.add(&p.metrics);
        planned.units.extend(p.units);
        planned.warnings.extend(p.warnings);
        if at + i < FILES_SHOWN {
            planned.summaries.push(p.summary.line(&f.path));
        }
    }
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{int64s, keys, write_file, Layout};

    /// `dir/p=<p>/f.parquet` for p in 0..3, each with keys `p * 1000 ..` of 1,000 rows in
    /// row groups of 250 and 50-row pages.
    fn dataset(dir: &std::path::Path) -> String {
        for p in 0..3i64 {
            let sub = dir.join(format!("p={p}"));
            std::fs::create_dir(&sub).unwrap();
            let layout = Layout {
                row_group_size: 250,
                page_rows: Some(50),
                ..Default::default()
            };
            write_file(
                &sub,
                "f.parquet",
                vec![("k", int64s(p * 1000..(p + 1) * 1000))],
                layout,
            );
        }
        dir.to_string_lossy().into_owned()
    }

    fn scan(root: &str, predicate: Option<&str>, columns: Option<Vec<String>>) -> Result<Scan> {
        let opts = ScanOptions {
            predicate: predicate.map(Into::into),
            columns,
            threads: 2,
            ..Default::default()
        };
        Scan::plan(
            &[root.to_string()],
            &opts,
            &MetadataCache::new(1 << 24),
            &AtomicBool::new(false),
        )
    }

    #[test]
    fn a_directory_is_planned_file_by_file_with_its_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let s = scan(&root, Some("p >= 1 AND k % 2 = 0 AND k < 1100"), None)
            .err()
            .unwrap();
        assert!(
            matches!(s, Error::Predicate(_) | Error::Unsupported(_)),
            "{s}"
        );
        let s = scan(&root, Some("p >= 1 AND k < 1100"), None).unwrap();
        assert_eq!(s.metric("files"), Some(3));
        assert_eq!(s.metric("files_pruned_by_partition"), Some(1));
        // Of p=2 every row group is ruled out by statistics; of p=1 all but the first.
        assert_eq!(s.metric("row_groups_pruned_by_stats"), Some(4 + 3));
        assert_eq!(s.metric("rows_selected"), Some(100));
        assert_eq!(s.unit_count(), 1);
        assert_eq!(
            s.schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>(),
            ["k", "p"]
        );
        let rows = keys(s.stream());
        assert_eq!(rows, (1000..1100).collect::<Vec<_>>());
        assert_eq!(s.metric("rows_matched"), Some(100));
        let text = s.explain();
        assert!(text.contains("1 by partition values"), "{text}");
        assert!(text.contains("pruned by partition values"), "{text}");
        // Every counter is reported by name, in the declared order.
        let names: Vec<&str> = s.metrics().iter().map(|(k, _)| *k).collect();
        assert_eq!(names, Metrics::NAMES);
    }

    #[test]
    fn bad_options_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let err = scan(&root, None, Some(vec!["nope".into()])).err().unwrap();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("nope")),
            "{err}"
        );
        let opts = ScanOptions {
            batch_size: 0,
            ..Default::default()
        };
        let err = Scan::plan(
            &[root],
            &opts,
            &MetadataCache::new(1 << 20),
            &AtomicBool::new(false),
        );
        assert!(matches!(err, Err(Error::InvalidArgument(_))));
        // Columns match exactly first, then ignoring case; partitions can be chosen alone.
        let s = scan(
            &dataset_dir_with_key(dir.path()),
            None,
            Some(vec!["K".into()]),
        )
        .unwrap();
        assert_eq!(s.schema().field(0).name(), "k");
    }

    fn dataset_dir_with_key(dir: &std::path::Path) -> String {
        dir.join("p=0").to_string_lossy().into_owned()
    }

    #[test]
    fn a_scan_reads_the_files_it_planned_after_they_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let s = scan(&root, Some("k >= 990 AND k < 1010"), None).unwrap();
        // Every file is replaced by rename before the rows are read: a different file at
        // the same path, as add_indexes leaves it.
        for p in 0..3i64 {
            let sub = dir.path().join(format!("p={p}"));
            let layout = Layout::default();
            let other = write_file(&sub, ".new.parquet", vec![("k", int64s(0..10))], layout);
            std::fs::rename(other, sub.join("f.parquet")).unwrap();
        }
        assert_eq!(keys(s.stream()), (990..1010).collect::<Vec<_>>());
    }

    #[test]
    fn files_a_cached_footer_rules_out_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let opts = ScanOptions {
            predicate: Some("k >= 1200 AND k < 1300".into()),
            threads: 2,
            ..Default::default()
        };
        let plan = || {
            Scan::plan(
                std::slice::from_ref(&root),
                &opts,
                &cache,
                &AtomicBool::new(false),
            )
        };
        let file_lines = |s: &Scan| -> Vec<String> {
            let text = s.explain();
            text.lines()
                .filter(|l| l.contains("f.parquet:"))
                .map(str::to_string)
                .collect()
        };
        let cold = plan().unwrap();
        assert_eq!(cold.metric("footers_read"), Some(3));
        assert!(cold.metric("files_opened") >= Some(2));
        let warm = plan().unwrap();
        assert_eq!(warm.metric("files_opened"), Some(1));
        assert_eq!(warm.metric("footer_cache_hits"), Some(3));
        assert_eq!(warm.metric("files_pruned"), Some(2));
        assert_eq!(warm.metric("row_groups_pruned_by_stats"), Some(4 + 2 + 4));
        assert_eq!(file_lines(&warm), file_lines(&cold));
        assert!(file_lines(&warm).iter().any(|l| l.ends_with(
            "p=2/f.parquet: 4 row groups, 4 pruned by statistics, 0 by bloom filters, \
             0 by page index; 0 rows selected"
        )));
        assert_eq!(keys(warm.stream()), (1200..1300).collect::<Vec<_>>());
        // A file changed since its footer was cached is listed as another version: it is
        // opened, and its rows read.
        let sub = dir.path().join("p=2");
        let layout = Layout::default();
        let other = write_file(
            &sub,
            ".new.parquet",
            vec![("k", int64s(1250..1252))],
            layout,
        );
        std::fs::rename(other, sub.join("f.parquet")).unwrap();
        let changed = plan().unwrap();
        assert_eq!(changed.metric("files_opened"), Some(2));
        assert_eq!(changed.metric("footers_read"), Some(1));
        let mut expected: Vec<i64> = (1200..1300).chain(1250..1252).collect();
        expected.sort_unstable();
        let mut got = keys(changed.stream());
        got.sort_unstable();
        assert_eq!(got, expected);
    }

    #[test]
    fn cancelling_stops_planning() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cancel = AtomicBool::new(true);
        let err = Scan::plan(
            &[root],
            &ScanOptions::default(),
            &MetadataCache::new(1 << 20),
            &cancel,
        );
        assert!(matches!(err, Err(Error::Cancelled)));
    }
}
