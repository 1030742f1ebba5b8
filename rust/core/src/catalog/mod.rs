//! The dataset catalog: per data file its identity, row counts, column summaries, a
//! file-level bloom filter for chosen columns, and its serialised footer with the page
//! index. Planning with it rules out files by their blooms without touching them and takes
//! every kept file's footer from the catalog instead of the file. A file whose identity
//! differs from the catalog's (added, rewritten) is planned the usual way, so a stale
//! catalog costs reads, never rows.

mod evidence;
pub mod store;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::PageType;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::{PageEncodingStats, ParquetMetaData};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::bloom::{BloomBuilder, BloomIndex};
use crate::index::column_values::for_each_page;
use crate::index::locator::Granularity;
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::footer::decode_tail;
use crate::metadata::schema::file_schemas;
use crate::metadata::schema::leaves_named;
use crate::metadata::MetadataCache;
use crate::predicate::bind::bind_column;
use crate::predicate::expr::{ColumnRef, Predicate};
use crate::predicate::plain::probe_values;
use crate::predicate::value::Value;
use crate::predicate::BindSchema;
use crate::prune::parquet_bloom::values_may_match;
use crate::prune::statistics::{self as stats, decode, row_group_stats, ChunkStats};
use crate::source::list_source;

/// A column the catalog summarises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogColumn {
    pub name: String,
    /// Whether each file gets a bloom filter of the column's values.
    pub bloom: bool,
    pub fpp: f64,
}

/// What the catalog knows of one column in one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnSummary {
    /// Bounds over the file's row groups, as SQL literals (for people looking inside).
    pub min: Option<String>,
    pub max: Option<String>,
    pub null_count: Option<u64>,
    /// The same bounds, plain-encoded as statistics are, for pruning.
    pub lo: Option<Vec<u8>>,
    pub hi: Option<Vec<u8>>,
    /// A file-granular bloom index payload (see `index::bloom`).
    pub bloom: Option<Vec<u8>>,
    /// `bloom` decoded on first use, where planning finds it without a lock.
    pub decoded: DecodedBloom,
}

/// A bloom filter decoded once (`None` when the payload is unusable): a cache, equal to
/// any other.
#[derive(Debug, Clone, Default)]
pub struct DecodedBloom(std::sync::OnceLock<Option<Arc<Sbbf>>>);

impl PartialEq for DecodedBloom {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One data file.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    /// Relative to the dataset root.
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub ino: u64,
    pub ctime_ns: i64,
    pub etag: Option<String>,
    pub num_rows: i64,
    pub num_row_groups: i32,
    /// The footer and page index, as `ParquetMetaDataWriter` writes them (with the data
    /// pages' encodings stated: [`with_encodings_stated`]).
    pub footer: Bytes,
    /// In the order of `Catalog::columns`.
    pub columns: Vec<ColumnSummary>,
    /// Why `footer` did not decode, once a decode was tried: planning then says the
    /// file's own footer was read, whoever read it.
    pub unusable: std::sync::OnceLock<String>,
}

impl CatalogEntry {
    fn describes(&self, id: &FileIdentity) -> bool {
        self.size == id.size
            && self.mtime_ns == id.mtime_ns
            && self.ino == id.ino
            && self.ctime_ns == id.ctime_ns
            && self.etag == id.etag
    }

    /// The file's metadata, page index included: an `InvalidFile` naming the entry when
    /// the catalog's copy is damaged (the file's own footer may still be whole).
    pub fn metadata(&self) -> Result<ParquetMetaData> {
        decode_tail(&self.path, &self.footer).inspect_err(|e| {
            let why = match e {
                Error::InvalidFile { reason, .. } => reason.clone(),
                other => other.to_string(),
            };
            let _ = self.unusable.set(why);
        })
    }
}

/// What `build` and `refresh` did.
#[derive(Debug, Clone, Default)]
pub struct CatalogReport {
    pub version: u64,
    pub files: u64,
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
    pub kept: u64,
    /// Unchanged files whose footer copy did not decode, summarised again.
    pub mended: u64,
    pub bytes: u64,
}

/// A loaded catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub root: PathBuf,
    pub version: u64,
    pub columns: Vec<CatalogColumn>,
    pub entries: HashMap<String, Arc<CatalogEntry>>,
    /// The same entries by their path joined to the root, as listings name files.
    by_path: HashMap<String, Arc<CatalogEntry>, foldhash::fast::RandomState>,
}

/// A file as the catalog sees it.
pub enum Lookup<'a> {
    /// Described, and unchanged since.
    Fresh(&'a Arc<CatalogEntry>),
    /// Described, but the file changed since.
    Changed,
    /// Not described (added since).
    Unknown,
}

/// Per dataset root, the identity of the version file read and the catalog read from it.
type LoadedCatalogs = HashMap<PathBuf, (FileIdentity, Arc<Catalog>)>;

/// Catalogs already read in this process, by dataset root, with the identity of the
/// version file they were read from: a scan re-reads only the small `CURRENT` pointer.
fn loaded() -> &'static std::sync::Mutex<LoadedCatalogs> {
    static LOADED: std::sync::OnceLock<std::sync::Mutex<LoadedCatalogs>> =
        std::sync::OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// Forget every catalog read in this process.
pub fn clear_loaded() {
    loaded().lock().unwrap_or_else(|e| e.into_inner()).clear();
}

impl Catalog {
    fn new(
        root: PathBuf,
        version: u64,
        columns: Vec<CatalogColumn>,
        entries: Vec<CatalogEntry>,
    ) -> Catalog {
        let entries: HashMap<String, Arc<CatalogEntry>> = entries
            .into_iter()
            .map(|e| (e.path.clone(), Arc::new(e)))
            .collect();
        let by_path = entries
            .values()
            .map(|e| (root.join(&e.path).to_string_lossy().into_owned(), e.clone()))
            .collect();
        Catalog {
            root,
            version,
            columns,
            entries,
            by_path,
        }
    }

    /// The catalog of the dataset at `root`, if it has one, from this process's memory when
    /// its current version was read before.
    ///
    /// Requests to a store are counted in `io`: the pointer, the version's HEAD, and the
    /// version itself when it was not read before.
    pub fn open_cached(root: &str, io: &IoStats) -> Result<Option<Arc<Catalog>>> {
        let key = PathBuf::from(root);
        let Some((version, file)) = store::current(&key, io)? else {
            return Ok(None);
        };
        let shown = file.to_string_lossy();
        let id = FileIdentity::stat(&shown)?;
        if crate::io::object::is_remote(&shown) {
            io.record_read(&shown, 0..0);
        }
        if let Some((seen, c)) = loaded().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            if seen == &id {
                return Ok(Some(c.clone()));
            }
        }
        let (columns, entries) = store::read(&file, io)?;
        let c = Arc::new(Catalog::new(key.clone(), version, columns, entries));
        loaded()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (id, c.clone()));
        Ok(Some(c))
    }

    /// `open_cached` without counting its requests: for a process that reads units planned
    /// elsewhere and wants the footers the catalog holds.
    pub fn open_for_reading(root: &str) -> Result<Option<Arc<Catalog>>> {
        Self::open_cached(root, &IoStats::default())
    }

    /// The catalog of the dataset at `root`, if it has one.
    pub fn open(root: &str) -> Result<Option<Catalog>> {
        let root = PathBuf::from(root);
        let io = IoStats::default();
        let Some((version, file)) = store::current(&root, &io)? else {
            return Ok(None);
        };
        let (columns, entries) = store::read(&file, &io)?;
        Ok(Some(Catalog::new(root, version, columns, entries)))
    }

    /// Build a catalog of the dataset at `root` summarising `columns` (every column
    /// statistics can bound, without blooms, when none is given), replacing any.
    pub fn build(
        root: &str,
        columns: &[CatalogColumn],
        cache: &MetadataCache,
        progress: &dyn Fn(u64, u64) -> Result<()>,
    ) -> Result<(Catalog, CatalogReport)> {
        dataset_dir(root)?;
        let every;
        let columns = if columns.is_empty() {
            every = default_columns(root, cache)?
                .into_iter()
                .map(|name| CatalogColumn {
                    name,
                    bloom: false,
                    fpp: 0.01,
                })
                .collect::<Vec<_>>();
            &every
        } else {
            columns
        };
        let previous = store::current(Path::new(root), &IoStats::default())?.map_or(0, |(v, _)| v);
        Self::write_version(
            root,
            previous + 1,
            columns,
            &HashMap::new(),
            cache,
            progress,
        )
    }

    /// Bring the catalog up to date: files added or changed are summarised again, removed
    /// ones dropped, unchanged ones kept; a new version is written.
    pub fn refresh(
        &self,
        cache: &MetadataCache,
        progress: &dyn Fn(u64, u64) -> Result<()>,
    ) -> Result<(Catalog, CatalogReport)> {
        let root = self.root.to_string_lossy().into_owned();
        Self::write_version(
            &root,
            self.version + 1,
            &self.columns,
            &self.entries,
            cache,
            progress,
        )
    }

    fn write_version(
        root: &str,
        version: u64,
        columns: &[CatalogColumn],
        old: &HashMap<String, Arc<CatalogEntry>>,
        cache: &MetadataCache,
        progress: &dyn Fn(u64, u64) -> Result<()>,
    ) -> Result<(Catalog, CatalogReport)> {
        dataset_dir(root)?;
        let listing = list_source(&[root.to_string()])?;
        let mut report = CatalogReport {
            version,
            files: listing.files.len() as u64,
            ..Default::default()
        };
        let mut entries = Vec::with_capacity(listing.files.len());
        let total = listing.files.len() as u64;
        for (i, f) in listing.files.iter().enumerate() {
            let rel = relative(root, &f.path);
            let summary = || {
                let file =
                    StorageFile::open_listed(&f.path, &f.identity, Arc::new(IoStats::default()))?;
                summarise(&file, &rel, columns, cache)
            };
            match old.get(&rel) {
                // A copy that no longer decodes (written damaged, or refused by checks
                // added since) is summarised again from the file, which is unchanged.
                Some(e) if e.describes(&f.identity) => {
                    if e.metadata().is_ok() {
                        report.kept += 1;
                        entries.push(e.as_ref().clone());
                    } else {
                        report.mended += 1;
                        entries.push(summary()?);
                    }
                }
                Some(_) => {
                    report.changed += 1;
                    entries.push(summary()?);
                }
                None => {
                    if !old.is_empty() {
                        report.added += 1;
                    }
                    entries.push(summary()?);
                }
            }
            progress(i as u64 + 1, total)?;
        }
        let listed: HashSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        report.removed = old.keys().filter(|k| !listed.contains(k.as_str())).count() as u64;
        let (_, bytes) = store::write(Path::new(root), version, columns, &entries)?;
        report.bytes = bytes;
        let catalog = Catalog::new(PathBuf::from(root), version, columns.to_vec(), entries);
        Ok((catalog, report))
    }

    /// Write `entries` (summarised elsewhere, e.g. by Spark executors) as the next version
    /// of the catalog of the dataset at `root`.
    pub fn write_entries(
        root: &str,
        columns: &[CatalogColumn],
        entries: Vec<CatalogEntry>,
    ) -> Result<(Catalog, CatalogReport)> {
        dataset_dir(root)?;
        let version =
            store::current(Path::new(root), &IoStats::default())?.map_or(0, |(v, _)| v) + 1;
        let (_, bytes) = store::write(Path::new(root), version, columns, &entries)?;
        let report = CatalogReport {
            version,
            files: entries.len() as u64,
            bytes,
            ..Default::default()
        };
        Ok((
            Catalog::new(PathBuf::from(root), version, columns.to_vec(), entries),
            report,
        ))
    }

    /// Rows summarising the data files `paths` (below the dataset `root`), for a catalog
    /// built in parallel elsewhere (Spark tasks); `write_rows` makes them a version.
    pub fn summary_rows(
        root: &str,
        paths: &[String],
        columns: &[CatalogColumn],
        cache: &MetadataCache,
    ) -> Result<arrow_array::RecordBatch> {
        let entries = paths
            .iter()
            .map(|p| {
                let file = StorageFile::open(p, Arc::new(IoStats::default()))?;
                summarise(&file, &relative(root, p), columns, cache)
            })
            .collect::<Result<Vec<_>>>()?;
        store::to_batch(columns, &entries)
    }

    /// Write `rows` (from `summary_rows`) as the next version of the catalog of the
    /// dataset at `root`.
    pub fn write_rows(
        root: &str,
        columns: &[CatalogColumn],
        rows: &[arrow_array::RecordBatch],
    ) -> Result<(Catalog, CatalogReport)> {
        let mut entries = Vec::new();
        for b in rows {
            entries.extend(store::entries_from_batch(b, columns)?);
        }
        Self::write_entries(root, columns, entries)
    }

    /// Forget every catalog read in this process.
    pub fn forget_loaded() {
        clear_loaded();
    }

    /// Seed `cache` with the footer of every file the catalog describes as it is now, so
    /// a process that plans or reads later (a Spark executor) reads no footer; returns how
    /// many were seeded.
    pub fn seed_cache(&self, cache: &MetadataCache) -> Result<u64> {
        let mut seeded = 0;
        for e in self.entries.values() {
            let path = self.root.join(&e.path).to_string_lossy().into_owned();
            let Ok(id) = FileIdentity::stat(&path) else {
                continue;
            };
            if e.describes(&id) && !cache.contains(&id) {
                // A damaged copy is left out: the file's own footer is read when needed.
                if let Ok(md) = e.metadata() {
                    cache.seed(id, Arc::new(md), true);
                    seeded += 1;
                }
            }
        }
        Ok(seeded)
    }

    /// Seed `cache` with the footer of the file at `path` if the catalog describes it as
    /// it is now.
    pub fn seed_one(&self, path: &str, cache: &MetadataCache) -> Result<()> {
        let Ok(id) = FileIdentity::stat(path) else {
            return Ok(());
        };
        self.seed_as(path, &id, cache)
    }

    /// `seed_one` for a file whose identity a listing gave.
    pub fn seed_as(&self, path: &str, id: &FileIdentity, cache: &MetadataCache) -> Result<()> {
        if let Lookup::Fresh(e) = self.lookup(path, id) {
            if !cache.contains(id) {
                // As in `seed_cache`; planning warns that the file's footer was read.
                if let Ok(md) = e.metadata() {
                    cache.seed(id.clone(), Arc::new(md), true);
                }
            }
        }
        Ok(())
    }

    /// How the data files now compare with the catalog: (described as they are, changed
    /// since, added since, removed since).
    pub fn freshness(&self) -> Result<(u64, u64, u64, u64)> {
        let listing = list_source(&[self.root.to_string_lossy().into_owned()])?;
        let (mut fresh, mut changed, mut added) = (0, 0, 0);
        for f in listing.files.iter() {
            let id = FileIdentity::stat(&f.path)?;
            match self.lookup(&f.path, &id) {
                Lookup::Fresh(_) => fresh += 1,
                Lookup::Changed => changed += 1,
                Lookup::Unknown => added += 1,
            }
        }
        let removed = (self.entries.len() as u64).saturating_sub(fresh + changed);
        Ok((fresh, changed, added, removed))
    }

    /// How the catalog describes the file at `path` (a path below the root), as it is now.
    pub fn lookup(&self, path: &str, id: &FileIdentity) -> Lookup<'_> {
        let entry = match self.by_path.get(path) {
            Some(e) => Some(e),
            None => self
                .entries
                .get(&relative(&self.root.to_string_lossy(), path)),
        };
        match entry {
            Some(e) if e.describes(id) => Lookup::Fresh(e),
            Some(_) => Lookup::Changed,
            None => Lookup::Unknown,
        }
    }

    /// Whether the file of `entry` may hold a row satisfying `leaf` (on a column of
    /// `physical` type), by the file-level bounds and null count the catalog keeps;
    /// `true` when it keeps none for the column, `false` for a file without rows.
    pub fn bounds_may_match(
        &self,
        entry: &CatalogEntry,
        leaf: &Predicate,
        physical: parquet::basic::Type,
    ) -> bool {
        // An empty file (Spark writes them for empty partitions) matches nothing.
        if entry.num_rows == 0 {
            return false;
        }
        let Some(col) = leaf.column() else {
            return true;
        };
        match self.file_stats(entry, col, physical) {
            Some(stats) => stats::leaf_may_match(leaf, &stats),
            None => true,
        }
    }

    /// The file-level bounds and null count the catalog keeps of `col` for the file of
    /// `entry`, as statistics; `None` when it keeps none.
    fn file_stats(
        &self,
        entry: &CatalogEntry,
        col: &ColumnRef,
        physical: parquet::basic::Type,
    ) -> Option<ChunkStats> {
        let i = self
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(&col.name))?;
        let s = entry.columns.get(i)?;
        let bound = |b: &Option<Vec<u8>>| {
            b.as_deref()
                .filter(|_| col.prunable)
                .and_then(|b| decode(b, physical, col))
        };
        Some(ChunkStats {
            min: bound(&s.lo),
            max: bound(&s.hi),
            exact: false,
            null_count: s.null_count,
            rows: entry.num_rows.max(0) as u64,
            all_null: false,
        })
    }

    /// Whether the catalog keeps a usable bloom filter of column `name` for the file of
    /// `entry`.
    pub fn has_bloom(&self, entry: &CatalogEntry, name: &str) -> bool {
        self.bloom(entry, name).is_some()
    }

    /// Whether the file of `entry` may hold a row satisfying the probe leaf `leaf` (on a
    /// column of `physical` type), by the catalog's bloom filter of its column; `true` when
    /// the catalog has none.
    pub fn bloom_may_match(
        &self,
        entry: &CatalogEntry,
        leaf: &Predicate,
        physical: parquet::basic::Type,
        type_length: i32,
    ) -> bool {
        let (Some(values), Some(col)) = (probe_values(leaf), leaf.column()) else {
            return true;
        };
        let Some(sbbf) = self.bloom(entry, &col.name) else {
            return true;
        };
        let bounds = self.file_stats(entry, col, physical);
        values_may_match(values, bounds.as_ref(), col, &sbbf, physical, type_length)
    }

    /// The bloom filter of column `name` for the file of `entry`, decoded once.
    fn bloom(&self, entry: &CatalogEntry, name: &str) -> Option<Arc<Sbbf>> {
        let i = self
            .columns
            .iter()
            .position(|c| c.bloom && c.name.eq_ignore_ascii_case(name))?;
        let summary = entry.columns.get(i)?;
        summary
            .decoded
            .0
            .get_or_init(|| {
                let mut index = BloomIndex::decode(summary.bloom.as_ref()?).ok()?;
                (index.filters.len() == 1).then(|| Arc::new(index.filters.remove(0)))
            })
            .clone()
    }
}

/// The columns a catalog summarises when it is not told which: every leaf of the first
/// file (struct fields by their dotted paths) that predicates can compare, except repeated
/// ones. Their bounds and null counts come from the footers, so summarising them is cheap.
pub fn default_columns(root: &str, cache: &MetadataCache) -> Result<Vec<String>> {
    let listing = list_source(&[root.to_string()])?;
    let Some(first) = listing.files.first() else {
        return Ok(Vec::new());
    };
    let file =
        StorageFile::open_listed(&first.path, &first.identity, Arc::new(IoStats::default()))?;
    let (md, _) = cache.get(&file, false)?;
    let (schema, _) = file_schemas(&md, &first.path)?;
    let mut out = Vec::new();
    fn walk(prefix: &str, fields: &arrow_schema::Fields, out: &mut Vec<String>) {
        for f in fields {
            let name = if prefix.is_empty() {
                f.name().clone()
            } else {
                format!("{prefix}.{}", f.name())
            };
            match f.data_type() {
                arrow_schema::DataType::Struct(children) => walk(&name, children, out),
                dt if crate::predicate::value::Domain::of(dt).is_some() => out.push(name),
                _ => {}
            }
        }
    }
    walk("", schema.fields(), &mut out);
    // A name that is ambiguous in the Parquet schema (a dotted column beside a struct) is
    // not summarised.
    let descr = md.file_metadata().schema_descr();
    out.retain(|n| leaves_named(descr, n).len() == 1);
    Ok(out)
}

/// `Ok` when `root` is a directory (or an object-store prefix): a catalog describes one
/// dataset directory.
fn dataset_dir(root: &str) -> Result<()> {
    if crate::io::object::is_remote(root) || Path::new(root).is_dir() {
        Ok(())
    } else {
        Err(Error::Source(format!(
            "{root}: a catalog describes a dataset directory"
        )))
    }
}

/// `path` relative to `root` (unchanged when it is not below it).
pub fn relative(root: &str, path: &str) -> String {
    Path::new(path)
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string())
}

/// `md` with each chunk's data page encodings stated as page encoding statistics, which
/// the footer's copy would otherwise lose: the crate decodes them to a mask of the data
/// pages' encodings and writes nothing back for a mask. They say whether a chunk is all
/// dictionary encoded, which decides how its dictionary is fetched and whether it can rule
/// a row group out. The copy states one data page per encoding (the mask keeps no counts),
/// which decodes to the same mask.
fn with_encodings_stated(md: &ParquetMetaData) -> parquet::errors::Result<ParquetMetaData> {
    let mut groups = Vec::with_capacity(md.num_row_groups());
    for group in md.row_groups() {
        let mut columns = Vec::with_capacity(group.num_columns());
        for chunk in group.columns() {
            columns.push(match chunk.page_encoding_stats_mask() {
                Some(mask) => {
                    let stats = mask
                        .encodings()
                        .map(|encoding| PageEncodingStats {
                            page_type: PageType::DATA_PAGE,
                            encoding,
                            count: 1,
                        })
                        .collect();
                    chunk
                        .clone()
                        .into_builder()
                        .set_page_encoding_stats(stats)
                        .build()?
                }
                None => chunk.clone(),
            });
        }
        groups.push(
            group
                .clone()
                .into_builder()
                .set_column_metadata(columns)
                .build()?,
        );
    }
    Ok(md.clone().into_builder().set_row_groups(groups).build())
}

/// Summarise one data file (`rel` is its path relative to the dataset root).
pub fn summarise(
    file: &StorageFile,
    rel: &str,
    columns: &[CatalogColumn],
    cache: &MetadataCache,
) -> Result<CatalogEntry> {
    let path = file.path();
    let id = file.identity().as_ref().clone();
    let (md, _) = cache.get(file, true)?;
    let mut footer = Vec::new();
    let stated = with_encodings_stated(&md).map_err(|e| Error::from(e).in_file(path))?;
    parquet::file::metadata::ParquetMetaDataWriter::new(&mut footer, &stated)
        .finish()
        .map_err(|e| Error::from(e).in_file(path))?;
    let (schema, native) = file_schemas(&md, path)?;
    let bind_schema = BindSchema {
        arrow: &schema,
        native: &native,
        parquet: md.file_metadata().schema_descr(),
        partitions: &[],
    };
    let mut summaries = Vec::with_capacity(columns.len());
    for c in columns {
        let descr = md.file_metadata().schema_descr();
        if leaves_named(descr, &c.name).len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "{path}: no single column {:?} to summarise",
                c.name
            )));
        }
        let parts: Vec<String> = c.name.split('.').map(str::to_string).collect();
        let col = bind_column(&parts, &bind_schema)?;
        let mut s = ColumnSummary::default();
        let mut bounds: Option<(Value, Value, Vec<u8>, Vec<u8>)> = None;
        let mut exact_bounds = true;
        let mut nulls = Some(0u64);
        for rg in 0..md.num_row_groups() {
            let stats = row_group_stats(&md, rg, &col);
            // A row group of NULLs alone (or of no rows) has no bounds and needs none.
            let no_values = md.row_group(rg).num_rows() == 0
                || stats.as_ref().is_some_and(|s| s.null_count == Some(s.rows));
            nulls = match (nulls, stats.as_ref().and_then(|s| s.null_count)) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            let raw = col
                .leaf
                .and_then(|l| md.row_group(rg).column(l).statistics())
                .and_then(|st| Some((st.min_bytes_opt()?.to_vec(), st.max_bytes_opt()?.to_vec())));
            match stats.and_then(|s| Some((s.min?, s.max?))).zip(raw) {
                Some(((lo, hi), (lo_raw, hi_raw))) => {
                    bounds = Some(match bounds {
                        None => (lo, hi, lo_raw, hi_raw),
                        Some((a, b, a_raw, b_raw)) => {
                            let (lo, lo_raw) = if lo.sql_cmp(&a).is_lt() {
                                (lo, lo_raw)
                            } else {
                                (a, a_raw)
                            };
                            let (hi, hi_raw) = if hi.sql_cmp(&b).is_gt() {
                                (hi, hi_raw)
                            } else {
                                (b, b_raw)
                            };
                            (lo, hi, lo_raw, hi_raw)
                        }
                    })
                }
                None if no_values => {}
                None => exact_bounds = false,
            }
        }
        // Bounds of every row group that holds values, or none: a row group without them
        // could hold anything.
        if exact_bounds {
            if let Some((lo, hi, lo_raw, hi_raw)) = bounds {
                s.min = Some(lo.to_string());
                s.max = Some(hi.to_string());
                s.lo = Some(lo_raw);
                s.hi = Some(hi_raw);
            }
        }
        s.null_count = nulls;
        if c.bloom {
            let mut b = BloomBuilder::new(Granularity::File, c.fpp);
            for_each_page(path, &c.name, &mut |p| {
                b.page(p);
                Ok(())
            })?;
            s.bloom = Some(b.finish());
        }
        summaries.push(s);
    }
    Ok(CatalogEntry {
        path: rel.to_string(),
        size: id.size,
        mtime_ns: id.mtime_ns,
        ino: id.ino,
        ctime_ns: id.ctime_ns,
        etag: id.etag.clone(),
        // The rows its row groups hold (what a reader reads), not the footer's own claim.
        num_rows: md.row_groups().iter().map(|rg| rg.num_rows()).sum(),
        num_row_groups: md.num_row_groups() as i32,
        footer: Bytes::from(footer),
        columns: summaries,
        unusable: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    use crate::query::scan::{Scan, ScanOptions};
    use crate::testing::{int64s, keys, write_file, Layout};

    /// Three files of 1,000 sorted keys each: 0.., 1000.., 2000...
    fn dataset(dir: &Path) -> String {
        for f in 0..3i64 {
            write_file(
                dir,
                &format!("part-{f}.parquet"),
                vec![("k", int64s(f * 1000..(f + 1) * 1000))],
                Layout {
                    row_group_size: 500,
                    page_rows: Some(100),
                    ..Default::default()
                },
            );
        }
        dir.to_string_lossy().into_owned()
    }

    fn columns() -> Vec<CatalogColumn> {
        vec![CatalogColumn {
            name: "k".into(),
            bloom: true,
            fpp: 0.01,
        }]
    }

    fn scan(root: &str, predicate: &str) -> Scan {
        let opts = ScanOptions {
            predicate: Some(predicate.into()),
            ..Default::default()
        };
        Scan::plan(
            &[root.to_string()],
            &opts,
            &MetadataCache::new(1 << 24),
            &AtomicBool::new(false),
        )
        .unwrap()
    }

    #[test]
    fn a_catalog_rules_out_files_and_hands_over_footers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let (catalog, report) = Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        assert_eq!((report.version, report.files), (1, 3));
        assert_eq!(catalog.entries.len(), 3);
        let s = scan(&root, "k = 1500");
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(2));
        assert_eq!(s.metric("footers_from_catalog"), Some(1));
        assert_eq!(keys(s.stream()), vec![1500]);
        // An IN list keeps only the files a value may be in.
        let s = scan(&root, "k IN (1500, 5000)");
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(2));
    }

    #[test]
    fn a_footer_copy_says_which_chunks_are_all_dictionary_encoded() {
        use crate::metadata::dictionary_page::only_dictionary_pages;
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let (catalog, _) = Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        let (rel, entry) = catalog.entries.iter().next().unwrap();
        let own = crate::metadata::read_metadata(&format!("{root}/{rel}"), true, &cache)
            .unwrap()
            .metadata;
        let copy = entry.metadata().unwrap();
        assert!(only_dictionary_pages(own.row_group(0).column(0)));
        for rg in 0..own.num_row_groups() {
            let (a, b) = (own.row_group(rg).column(0), copy.row_group(rg).column(0));
            assert_eq!(a.page_encoding_stats_mask(), b.page_encoding_stats_mask());
        }
        assert_eq!(
            copy.offset_index().map(|o| o.len()),
            Some(own.num_row_groups())
        );
    }

    #[test]
    fn a_catalog_read_back_shares_its_files_bytes_for_the_footers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let (built, _) = Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        let read = Catalog::open(&root).unwrap().unwrap();
        let (_, file) = store::current(Path::new(&root), &IoStats::default())
            .unwrap()
            .unwrap();
        let bytes = std::fs::read(file).unwrap();
        let at = |footer: &[u8]| {
            bytes
                .windows(footer.len())
                .position(|w| w == footer)
                .expect("a footer is stored as it is")
        };
        assert_eq!(read.entries.len(), 3);
        let mut shared = Vec::new();
        for (path, b) in &built.entries {
            let r = &read.entries[path];
            assert_eq!(b.footer, r.footer);
            // Summaries come back as built: bounds as text and bytes, blooms.
            assert_eq!(b.columns, r.columns);
            assert!(r.columns[0].min.is_some() && r.columns[0].bloom.is_some());
            assert!(r.metadata().is_ok());
            shared.push((r.footer.as_ptr() as isize, at(&r.footer) as isize));
        }
        // The footers lie as far apart in memory as in the file: they are the file's bytes,
        // not copies.
        let (p0, f0) = shared[0];
        for (p, f) in shared {
            assert_eq!(p - p0, f - f0);
        }
    }

    #[test]
    fn a_catalog_rules_out_empty_files_of_any_column() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        write_file(
            dir.path(),
            "part-empty.parquet",
            vec![("k", int64s(0..0))],
            Layout::default(),
        );
        let cache = MetadataCache::new(1 << 24);
        Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        // The empty file has no bounds to rule it out by.
        let s = scan(&root, "k = 1500");
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(3));
        assert_eq!(s.metric("footers_from_catalog"), Some(1));
        assert_eq!(keys(s.stream()), vec![1500]);
    }

    #[test]
    fn a_row_group_of_nulls_leaves_the_files_bounds_standing() {
        let dir = tempfile::tempdir().unwrap();
        let nullable = |v: Vec<Option<i64>>| Arc::new(arrow_array::Int64Array::from(v)) as _;
        let layout = Layout {
            row_group_size: 500,
            ..Default::default()
        };
        // (A NULL makes the column nullable in both files.)
        let low = (0..499).map(Some).chain([None]).collect();
        write_file(dir.path(), "a.parquet", vec![("k", nullable(low))], layout);
        // 500 keys, then a row group where the column holds only NULLs.
        let high = (3000..3500)
            .map(Some)
            .chain((0..500).map(|_| None))
            .collect();
        write_file(dir.path(), "b.parquet", vec![("k", nullable(high))], layout);
        let root = dir.path().to_string_lossy().into_owned();
        let cache = MetadataCache::new(1 << 24);
        let (catalog, _) = Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        let summary = &catalog.entries["b.parquet"].columns[0];
        assert_eq!(
            (
                summary.min.as_deref(),
                summary.max.as_deref(),
                summary.null_count
            ),
            (Some("3000"), Some("3499"), Some(500))
        );
        let s = scan(&root, "k = 200");
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(1));
        assert_eq!(keys(s.stream()), vec![200]);
        let s = scan(&root, "k = 3200");
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(1));
        assert_eq!(keys(s.stream()), vec![3200]);
        let s = scan(&root, "k IS NULL");
        assert_eq!(
            s.stream().map(|b| b.unwrap().num_rows()).sum::<usize>(),
            501
        );
    }

    #[test]
    fn a_stale_catalog_costs_reads_never_rows() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let cache = MetadataCache::new(1 << 24);
        let (catalog, _) = Catalog::build(&root, &columns(), &cache, &|_, _| Ok(())).unwrap();
        // Rewrite one file with other keys, and add one.
        std::thread::sleep(std::time::Duration::from_millis(10));
        write_file(
            dir.path(),
            "part-0.parquet",
            vec![("k", int64s(5000..5010))],
            Layout::default(),
        );
        write_file(
            dir.path(),
            "part-9.parquet",
            vec![("k", int64s(9000..9010))],
            Layout::default(),
        );
        let (fresh, changed, added, removed) = catalog.freshness().unwrap();
        assert_eq!((fresh, changed, added, removed), (2, 1, 1, 0));
        let s = scan(&root, "k = 5005 OR k = 9009");
        assert_eq!(keys(s.stream()), vec![5005, 9009]);
        assert_eq!(s.metric("files_not_in_catalog"), Some(2));
        let (refreshed, report) = catalog.refresh(&cache, &|_, _| Ok(())).unwrap();
        assert_eq!((report.kept, report.changed, report.added), (2, 1, 1));
        assert_eq!(refreshed.version, 2);
        let s = scan(&root, "k = 5005");
        assert_eq!(s.metric("files_not_in_catalog"), Some(0));
        assert_eq!(s.metric("files_pruned_by_catalog"), Some(3));
    }
}
