//! A scan: plan (list, prune files, row groups and pages) once, then stream the selected
//! rows, reading units on a pool of threads while the consumer receives them in order.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_schema::{Field, Schema, SchemaRef};

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::io::{IoStats, StorageFile};
use crate::metadata::MetadataCache;
use crate::predicate::{self, BindSchema, Predicate};
use crate::prune::plan::{plan_file, FilePlan, PlanContext, PlanMetrics, ScanUnit};
use crate::read::{OutputColumn, OutputShape, ReadMetrics};
use crate::source::list_source;
pub use crate::stream::ScanStream;

#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub predicate: Option<String>,
    pub columns: Option<Vec<String>>,
    pub batch_size: usize,
    pub threads: usize,
    /// "Now" for `now()` and `current_date`, in ns since the epoch; the plan time if unset.
    pub now_ns: Option<i128>,
    /// Plan without the dataset's catalog even when it has one.
    pub ignore_catalog: bool,
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
        }
    }
}

/// Threads for work that waits on object-store requests rather than the CPU.
fn io_workers(threads: usize) -> usize {
    (threads * 8).clamp(1, 64)
}

/// Read the footers of object-store files into the cache, many requests at a time, before
/// planning needs the first one: on a store, a footer costs a round trip, and planning
/// would otherwise wait for the first file's before asking for the others'. Returns the
/// footers and page indexes read.
fn warm_footers(
    files: &[crate::source::SourceFile],
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

/// `f` of every item, on `threads` threads, in item order. Workers stop at the first
/// failure; the error of the earliest failed item is returned.
fn parallel_map<I: Sync, T: Send>(
    items: &[I],
    threads: usize,
    cancel: &AtomicBool,
    f: impl Fn(&I) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<Result<T>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                if cancel.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                let r = f(item);
                failed.fetch_or(r.is_err(), Ordering::Relaxed);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    let mut out = Vec::with_capacity(items.len());
    let mut stopped = false;
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            // Not run: a later item failed, or the work was cancelled.
            None => stopped = true,
        }
    }
    if stopped {
        return Err(Error::Cancelled);
    }
    Ok(out)
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// A planned scan. Its rows are read by `stream`.
pub struct Scan {
    pub shape: OutputShape,
    pub units: Vec<ScanUnit>,
    pub plan_metrics: PlanMetrics,
    pub predicate: Option<Predicate>,
    pub where_text: Option<String>,
    pub summaries: Vec<String>,
    /// Embedded indexes skipped while planning (damaged, unknown version, not this file's).
    pub warnings: Vec<String>,
    pub threads: usize,
    pub io: Arc<IoStats>,
    pub read: Arc<ReadMetrics>,
    /// Hive partition columns of the source, in output order.
    pub partition_fields: Vec<Field>,
    /// The "now" that `now()` and `current_date` folded to.
    pub now_ns: i128,
    /// The catalog planning used: the dataset root it describes, and its version.
    pub catalog: Option<(String, u64)>,
    /// The files' schema as read, as stored, and as Parquet: what names bind against.
    pub file_schema: Schema,
    pub native_schema: Schema,
    pub descr: parquet::schema::types::SchemaDescPtr,
}

impl Scan {
    /// Plan a scan of `paths`. `cancel` is polled between files.
    pub fn plan(
        paths: &[String],
        opts: &ScanOptions,
        cache: &MetadataCache,
        cancel: &AtomicBool,
    ) -> Result<Scan> {
        if opts.batch_size == 0 {
            return Err(Error::InvalidArgument("batch_size must be positive".into()));
        }
        let listing = list_source(paths)?;
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
        let first = &listing.files[0].path;
        if let Some(c) = &catalog {
            c.seed_as(first, &listing.files[0].identity, cache)?;
        }
        let remote = crate::io::object::is_remote(first);
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
        let first_file = StorageFile::open_listed(first, &listing.files[0].identity, io.clone())?;
        // The first footer gives the schema; planning then finds it in the cache.
        let (md, first_outcome) = cache.get(&first_file, false)?;
        let descr = md.file_metadata().schema_descr();
        let (schema, native) = file_schemas(&md, first)?;
        for f in &listing.partition_fields {
            if schema
                .fields()
                .iter()
                .any(|d| d.name().eq_ignore_ascii_case(f.name()))
            {
                return Err(Error::Source(format!(
                    "partition directory key {} is also a column of the files",
                    f.name()
                )));
            }
        }

        let now_ns = opts.now_ns.unwrap_or_else(now_ns);
        let predicate = bind_where(
            opts.predicate.as_deref(),
            now_ns,
            &schema,
            &native,
            descr,
            &listing.partition_fields,
        )?;

        let shape = output_shape(&schema, &listing.partition_fields, opts)?;
        let roots = shape.roots();
        let projected_leaves = crate::read::leaves_of(descr, &roots);

        let ctx = PlanContext {
            predicate: predicate.as_ref(),
            schema: &schema,
            projected_leaves: &projected_leaves,
            cache,
            io: &io,
            catalog: catalog.as_deref(),
            descr,
            opened: Some(&first_file),
        };
        let threads = opts.threads.max(1);
        let planners = if remote { io_workers(threads) } else { threads };
        let plans = plan_files(
            &listing.files,
            &ctx,
            planners.min(listing.files.len()),
            cancel,
        )?;
        let mut plan_metrics = PlanMetrics::default();
        let mut units = Vec::new();
        let mut summaries = Vec::new();
        let mut warnings = Vec::new();
        for p in &plans {
            plan_metrics.add(&p.metrics);
        }
        if !first_outcome.footer_hit && plan_metrics.footer_cache_hits > 0 {
            plan_metrics.footers_read += 1;
            plan_metrics.footer_cache_hits -= 1;
        }
        // Footers the warm-up read show up as cache hits in planning.
        let (warm_footers_read, warm_indexes) = warmed;
        let moved = warm_footers_read.min(plan_metrics.footer_cache_hits);
        plan_metrics.footers_read += moved;
        plan_metrics.footer_cache_hits -= moved;
        plan_metrics.page_indexes_read += warm_indexes;
        for p in plans {
            units.extend(p.units);
            summaries.push(p.summary);
            warnings.extend(p.warnings);
        }
        Ok(Scan {
            shape,
            units,
            plan_metrics,
            predicate,
            where_text: opts.predicate.clone(),
            summaries,
            warnings,
            threads,
            io,
            read: Arc::new(ReadMetrics::default()),
            partition_fields: listing.partition_fields,
            now_ns,
            catalog: catalog.map(|c| (c.root.to_string_lossy().into_owned(), c.version)),
            file_schema: schema,
            native_schema: native,
            descr: md.file_metadata().schema_descr_ptr(),
        })
    }

    /// Stream `units` (units of this scan, their ranges possibly narrowed) in `shape`.
    pub fn stream_units(&self, units: Vec<ScanUnit>, shape: OutputShape) -> ScanStream {
        ScanStream::start(
            units,
            shape,
            self.io.clone(),
            self.read.clone(),
            self.threads,
            crate::stream::AHEAD_BYTES,
        )
    }

    pub fn schema(&self) -> SchemaRef {
        self.shape.schema.clone()
    }

    /// Stream the selected rows. Units are read on `threads` threads; batches arrive in
    /// plan order, and at most a few units are read ahead of the consumer.
    pub fn stream(&self) -> ScanStream {
        ScanStream::start(
            self.units.clone(),
            self.shape.clone(),
            self.io.clone(),
            self.read.clone(),
            self.threads,
            crate::stream::AHEAD_BYTES,
        )
    }

    /// Counters of pruning and reading; read counters grow as the stream is consumed.
    pub fn metrics(&self) -> Vec<(&'static str, u64)> {
        let m = &self.plan_metrics;
        let r = &self.read;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        vec![
            ("files", m.files),
            ("files_pruned", m.files_pruned),
            ("files_pruned_by_partition", m.files_pruned_by_partition),
            ("row_groups", m.row_groups),
            ("row_groups_pruned_by_stats", m.row_groups_pruned_by_stats),
            ("row_groups_pruned_by_bloom", m.row_groups_pruned_by_bloom),
            (
                "row_groups_pruned_by_page_index",
                m.row_groups_pruned_by_page_index,
            ),
            ("pages", m.pages),
            ("pages_pruned", m.pages_pruned),
            ("pages_read", l(&r.pages_read)),
            ("dictionary_pages_read", l(&r.dictionary_pages_read)),
            ("dictionary_pages_skipped", l(&r.dictionary_pages_skipped)),
            ("rows_selected", m.rows_selected),
            ("rows_scanned", l(&r.rows_scanned)),
            ("rows_matched", l(&r.rows_matched)),
            ("units", self.units.len() as u64),
            ("units_read", l(&r.units_read)),
            ("column_groups_read", l(&r.column_groups_read)),
            ("footers_read", m.footers_read),
            ("footer_cache_hits", m.footer_cache_hits),
            ("page_indexes_read", m.page_indexes_read),
            ("bloom_filters_read", m.bloom_filters_read),
            ("files_pruned_by_index", m.files_pruned_by_index),
            ("row_groups_pruned_by_index", m.row_groups_pruned_by_index),
            ("rows_pruned_by_index", m.rows_pruned_by_index),
            ("indexes_read", m.indexes_read),
            ("indexes_skipped", m.indexes_skipped),
            ("files_pruned_by_catalog", m.files_pruned_by_catalog),
            ("footers_from_catalog", m.footers_from_catalog),
            ("files_not_in_catalog", m.files_not_in_catalog),
            ("bytes_read", self.io.bytes()),
            ("requests", self.io.requests()),
            ("list_requests", self.io.list_requests()),
        ]
    }

    pub fn explain(&self) -> String {
        use std::fmt::Write;
        let m = &self.plan_metrics;
        let mut s = String::new();
        let _ = writeln!(s, "pqindex scan");
        let _ = writeln!(
            s,
            "  where:       {}",
            self.where_text.as_deref().unwrap_or("(none)")
        );
        if let Some(p) = &self.predicate {
            let _ = writeln!(s, "  bound as:    {p}");
        }
        let names: Vec<&str> = self
            .shape
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let _ = writeln!(s, "  columns:     {}", names.join(", "));
        let _ = writeln!(
            s,
            "  files:       {} listed, {} pruned ({} by partition values, {} by embedded indexes)",
            m.files, m.files_pruned, m.files_pruned_by_partition, m.files_pruned_by_index
        );
        if let Some((root, version)) = &self.catalog {
            let dir = std::path::Path::new(root).join(crate::catalog::store::DIR);
            let _ = writeln!(
                s,
                "  catalog:     {} version {version}: {} files pruned by its bounds and bloom filters, {} footers taken from it, {} files not in it or changed since (footers read)",
                dir.display(),
                m.files_pruned_by_catalog,
                m.footers_from_catalog,
                m.files_not_in_catalog
            );
        }
        let _ = writeln!(
            s,
            "  row groups:  {} in opened files, {} pruned by statistics, {} by bloom filters, {} by embedded indexes, {} by page index",
            m.row_groups, m.row_groups_pruned_by_stats, m.row_groups_pruned_by_bloom, m.row_groups_pruned_by_index, m.row_groups_pruned_by_page_index
        );
        if m.indexes_read > 0 || m.indexes_skipped > 0 {
            let _ = writeln!(
                s,
                "  indexes:     {} embedded indexes read, {} skipped; they ruled out {} more rows within kept row groups",
                m.indexes_read, m.indexes_skipped, m.rows_pruned_by_index
            );
        }
        for w in self.warnings.iter().take(5) {
            let _ = writeln!(s, "  warning:     {w}");
        }
        let _ = writeln!(
            s,
            "  pages:       {} of the needed columns in kept row groups, {} pruned by page index",
            m.pages, m.pages_pruned
        );
        let _ = writeln!(
            s,
            "  units:       {} (row groups to read), {} rows selected",
            self.units.len(),
            m.rows_selected
        );
        let _ = writeln!(
            s,
            "  metadata:    {} footers read, {} from cache, {} page indexes, {} bloom filters",
            m.footers_read, m.footer_cache_hits, m.page_indexes_read, m.bloom_filters_read
        );
        let r = &self.read;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            s,
            "  read so far: {} rows scanned, {} matched, {} data pages, {} dictionary pages ({} not needed), {} bytes in {} requests ({} listing)",
            l(&r.rows_scanned),
            l(&r.rows_matched),
            l(&r.pages_read),
            l(&r.dictionary_pages_read),
            l(&r.dictionary_pages_skipped),
            self.io.bytes(),
            self.io.requests(),
            self.io.list_requests()
        );
        let logged = self.io.logged_requests();
        if !logged.is_empty() {
            let _ = writeln!(s, "  requests:");
            for line in &logged {
                let _ = writeln!(s, "    {line}");
            }
            let more = self.io.requests() - self.io.list_requests();
            if more > logged.len() as u64 {
                let _ = writeln!(s, "    ... and {} more", more - logged.len() as u64);
            }
        }
        const SHOWN: usize = 20;
        for line in self.summaries.iter().take(SHOWN) {
            let _ = writeln!(s, "    {line}");
        }
        if self.summaries.len() > SHOWN {
            let _ = writeln!(s, "    ... {} more files", self.summaries.len() - SHOWN);
        }
        s
    }
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The schema a file's reader produces (with the writer's Arrow type hints applied) and the
/// one its statistics are written in (without them).
pub(crate) fn file_schemas(
    md: &parquet::file::metadata::ParquetMetaData,
    path: &str,
) -> Result<(Schema, Schema)> {
    let descr = md.file_metadata().schema_descr();
    let hinted =
        parquet::arrow::parquet_to_arrow_schema(descr, md.file_metadata().key_value_metadata())
            .map_err(|e| Error::from(e).in_file(path))?;
    // Index locators describe this file's bytes; carried into results, a table written
    // elsewhere would point at index blocks it does not have.
    let mut metadata = hinted.metadata().clone();
    metadata.retain(|k, _| !k.starts_with(crate::index::locator::KEY_PREFIX));
    let hinted = hinted.with_metadata(metadata);
    let native = parquet::arrow::parquet_to_arrow_schema(descr, None)
        .map_err(|e| Error::from(e).in_file(path))?;
    Ok((hinted, native))
}

/// Parse and bind a `WHERE` text against a file schema and the partition columns.
pub(crate) fn bind_where(
    text: Option<&str>,
    now_ns: i128,
    schema: &Schema,
    native: &Schema,
    descr: &parquet::schema::types::SchemaDescriptor,
    partitions: &[Field],
) -> Result<Option<Predicate>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let ast = predicate::sql::parse(text, now_ns)?;
    let bind_schema = BindSchema {
        arrow: schema,
        native,
        parquet: descr,
        partitions,
    };
    Ok(Some(predicate::bind(&ast, &bind_schema)?))
}

pub(crate) fn output_shape(
    schema: &Schema,
    partitions: &[Field],
    opts: &ScanOptions,
) -> Result<OutputShape> {
    let columns: Vec<OutputColumn> = match &opts.columns {
        None => (0..schema.fields().len())
            .map(OutputColumn::Root)
            .chain((0..partitions.len()).map(OutputColumn::Partition))
            .collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                let find = |exact: bool| {
                    let eq = |a: &str| {
                        if exact {
                            a == n
                        } else {
                            a.eq_ignore_ascii_case(n)
                        }
                    };
                    schema
                        .fields()
                        .iter()
                        .position(|f| eq(f.name()))
                        .map(OutputColumn::Root)
                        .or_else(|| {
                            partitions
                                .iter()
                                .position(|f| eq(f.name()))
                                .map(OutputColumn::Partition)
                        })
                };
                find(true).or_else(|| find(false)).ok_or_else(|| {
                    let known: Vec<&str> = schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .chain(partitions.iter().map(|f| f.name().as_str()))
                        .collect();
                    Error::InvalidArgument(format!(
                        "unknown column {n:?} in columns (columns: {})",
                        known.join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?,
    };
    let fields: Vec<Field> = columns
        .iter()
        .map(|c| match c {
            OutputColumn::Root(i) => schema.field(*i).clone(),
            OutputColumn::Partition(p) => partitions[*p].clone(),
        })
        .collect();
    Ok(OutputShape {
        schema: Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        columns,
        batch_size: opts.batch_size,
    })
}

/// Plan every file on `threads` threads; results in file order.
fn plan_files(
    files: &[crate::source::SourceFile],
    ctx: &PlanContext,
    threads: usize,
    cancel: &AtomicBool,
) -> Result<Vec<FilePlan>> {
    parallel_map(files, threads, cancel, |f| {
        plan_file(&f.path, &f.partition_values, &f.identity, ctx)
    })
}
