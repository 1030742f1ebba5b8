//! Indexes of a table's data files, kept outside them in Puffin files (`puffin.rs`).
//!
//! A table's data files cannot change (every reader finds their footers from the sizes the
//! table records), so `add_indexes` on a table builds each file's indexes as it would for a
//! loose file and writes the blocks into a Puffin file instead, keyed by the data file's
//! path (relative to the table) and size. A Delta table keeps them in `_pqindex/indexes/`
//! below its root, a directory VACUUM skips (it never deletes what starts with `_`); an
//! Iceberg table's Puffin files are registered in its metadata as statistics files (by the
//! Python side, through pyiceberg), where orphan-file removal leaves them. Each build
//! writes one Puffin file holding every index of the snapshot's live files (the older
//! ones' still-valid blobs copied over) and drops the older files: entries for files no
//! longer in the table are left behind with them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::index::build::build_indexes;
use crate::index::container::{block_checksum, encode_block, BLOCK_VERSION};
use crate::index::evidence::FileIndexes;
use crate::index::locator::{Granularity, Locator};
use crate::index::spec::IndexSpec;
use crate::io::{IoStats, StorageFile};
use crate::metadata::schema::file_field;
use crate::metadata::MetadataCache;
use crate::prune::evidence::Evidence;
use crate::prune::planner::FileIndexEvidence;
use crate::table::delta::{delta_puffins, DELTA_INDEX_DIR};
use crate::table::puffin::{self, BlobMetadata, BLOB_TYPE};
use crate::table::TableSnapshot;

/// One index of one data file, in a Puffin file.
#[derive(Debug, Clone)]
struct Indexed {
    puffin: Arc<str>,
    body_end: u64,
    locator: Locator,
}

/// The indexes a table keeps for its data files, by data file (path, size).
#[derive(Debug, Default)]
pub struct TableIndexes {
    by_file: HashMap<(String, u64), Vec<Indexed>>,
    /// Puffin files opened so far, shared by the planning threads.
    open: Mutex<HashMap<Arc<str>, StorageFile>>,
}

/// A data file's key in blob properties: its path relative to the table root when below it.
fn relative(root: &str, path: &str) -> String {
    Path::new(path)
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string())
}

fn absolute(root: &str, key: &str) -> String {
    if Path::new(key).is_absolute() || key.contains("://") {
        key.to_string()
    } else {
        Path::new(root).join(key).to_string_lossy().into_owned()
    }
}

/// A blob's locator, if the blob is a pqindex index (other blobs are Iceberg's own).
fn locator_of(b: &BlobMetadata) -> Option<(String, u64, Locator)> {
    if b.blob_type != BLOB_TYPE {
        return None;
    }
    let p = &b.properties;
    let granularity = Granularity::from_name(p.get("granularity")?)?;
    Some((
        p.get("data-file")?.clone(),
        p.get("data-file-size")?.parse().ok()?,
        Locator {
            kind: p.get("kind")?.clone(),
            columns: vec![p.get("column")?.clone()],
            granularity,
            offset: b.offset,
            length: b.length,
            checksum: p.get("checksum")?.parse().ok()?,
            version: p.get("version")?.parse().ok()?,
        },
    ))
}

impl TableIndexes {
    /// The indexes in `puffins` (Puffin files of the table rooted at `root`). A Puffin file
    /// that cannot be read is an error: it was written for this table.
    pub fn load(root: &str, puffins: &[String]) -> Result<TableIndexes> {
        let mut by_file: HashMap<(String, u64), Vec<Indexed>> = HashMap::new();
        for path in puffins {
            let file = match StorageFile::open(path, Arc::new(IoStats::default())) {
                Ok(f) => f,
                // Replaced by a newer build since the list was taken: its entries are there.
                Err(Error::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            };
            let (blobs, body_end) = puffin::read_footer(&file)?;
            let name: Arc<str> = Arc::from(path.as_str());
            for b in &blobs {
                if let Some((data_file, size, locator)) = locator_of(b) {
                    by_file
                        .entry((absolute(root, &data_file), size))
                        .or_default()
                        .push(Indexed {
                            puffin: name.clone(),
                            body_end,
                            locator,
                        });
                }
            }
        }
        Ok(TableIndexes {
            by_file,
            open: Mutex::default(),
        })
    }

    /// Every index kept, by data file (path, size): for listing them.
    pub fn all(&self) -> Vec<(String, u64, Locator)> {
        let mut out: Vec<(String, u64, Locator)> = self
            .by_file
            .iter()
            .flat_map(|((p, s), v)| v.iter().map(|i| (p.clone(), *s, i.locator.clone())))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.2.kind, &a.2.columns).cmp(&(&b.0, &b.2.kind, &b.2.columns)));
        out
    }

    fn puffin(&self, path: &Arc<str>) -> Result<StorageFile> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = open.get(path) {
            return Ok(f.clone());
        }
        let f = StorageFile::open(path, Arc::new(IoStats::default()))?;
        open.insert(path.clone(), f.clone());
        Ok(f)
    }
}

impl FileIndexEvidence for TableIndexes {
    fn open<'f>(
        &self,
        file: &'f StorageFile,
        md: &'f ParquetMetaData,
    ) -> Option<Box<dyn Evidence + 'f>> {
        let Some(found) = self
            .by_file
            .get(&(file.path().to_string(), file.identity().size))
        else {
            // Files written with their indexes inside (pqindex.write) keep using them.
            return crate::index::evidence::EmbeddedIndexes.open(file, md);
        };
        // The indexes of one data file are all in one Puffin file (each build writes one).
        let first = found.first()?;
        let blocks = match self.puffin(&first.puffin) {
            Ok(f) => f,
            Err(_) => return None,
        };
        let entries = found
            .iter()
            .filter(|i| Arc::ptr_eq(&i.puffin, &first.puffin))
            .enumerate()
            .map(|(n, i)| (format!("{}#{n}", i.puffin), Ok(i.locator.clone())))
            .collect();
        Some(Box::new(FileIndexes::with_locators(
            blocks,
            Some(first.body_end),
            md,
            entries,
        )))
    }
}

/// What building a table's indexes did.
#[derive(Debug, Default)]
pub struct TableIndexReport {
    /// The Puffin file written.
    pub puffin: String,
    pub files: u64,
    /// Indexes built now, and kept from earlier builds.
    pub built: u64,
    pub kept: u64,
    /// Indexes of live files left out because `drop_indexes` selected them.
    pub dropped: u64,
    /// Bytes of the Puffin file, and of its footer (magic, payload, length, flags, magic).
    pub bytes: u64,
    pub footer_bytes: u64,
    /// The blobs written, as the footer describes them (JSON), for registering the file
    /// with a table.
    pub blobs_json: String,
}

/// The kept indexes a rebuild leaves out (`drop_indexes` on a table): those matching
/// every field given. Columns are the table's (logical) names.
#[derive(Debug, Clone, Default)]
pub struct DropFilter {
    pub kind: Option<String>,
    pub columns: Option<Vec<String>>,
    pub granularity: Option<Granularity>,
}

impl DropFilter {
    /// Whether the filter selects `l`, an index of the file `md`.
    fn selects(
        &self,
        l: &Locator,
        snapshot: &TableSnapshot,
        md: &ParquetMetaData,
        path: &str,
    ) -> bool {
        if self.kind.as_ref().is_some_and(|k| *k != l.kind)
            || self.granularity.is_some_and(|g| g != l.granularity)
        {
            return false;
        }
        let Some(columns) = &self.columns else {
            return true;
        };
        // A column the table no longer has is matched by the name its indexes keep.
        let physical: Vec<String> = columns
            .iter()
            .map(|c| physical_column(snapshot, c, md, path).unwrap_or_else(|_| c.clone()))
            .collect();
        physical == l.columns
    }
}

/// `spec` on the table column `column` (a logical dotted name) as the file `md` names it.
fn physical_column(
    snapshot: &TableSnapshot,
    column: &str,
    md: &ParquetMetaData,
    path: &str,
) -> Result<String> {
    let (file, _) = crate::metadata::schema::file_schemas(md, path)?;
    let mut logical = snapshot.schema.fields();
    let mut in_file = file.fields();
    let mut physical = Vec::new();
    let parts: Vec<&str> = column.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let l = logical
            .iter()
            .find(|f| f.name() == part)
            .ok_or_else(|| Error::InvalidArgument(format!("the table has no column {column}")))?;
        let Some((_, f)) = file_field(l, in_file) else {
            return Ok(String::new());
        };
        physical.push(f.name().clone());
        if i + 1 < parts.len() {
            match (l.data_type(), f.data_type()) {
                (arrow_schema::DataType::Struct(a), arrow_schema::DataType::Struct(b)) => {
                    logical = a;
                    in_file = b;
                }
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "{column} is not a struct field"
                    )))
                }
            }
        }
    }
    Ok(physical.join("."))
}

/// What a rebuild of a table's indexes changes: indexes to build (on the table's column
/// names) and kept indexes to leave out.
#[derive(Debug, Clone, Default)]
pub struct IndexChange {
    pub build: Vec<IndexSpec>,
    pub drop: Option<DropFilter>,
}

/// Build `change.build` for every live data file of `snapshot` (local files) and write
/// them, with the still-valid indexes of `existing` that `change.drop` does not select,
/// into a new Puffin file in `dir`. `fields` gives a column's Iceberg field ids for the
/// blobs. Entries of files no longer in the snapshot are not carried over.
fn build(
    snapshot: &TableSnapshot,
    change: &IndexChange,
    existing: &TableIndexes,
    dir: &Path,
    fields: &dyn Fn(&str) -> Vec<i32>,
    cache: &MetadataCache,
) -> Result<TableIndexReport> {
    let specs = &change.build;
    let mut blobs: Vec<(BlobMetadata, Vec<u8>)> = Vec::new();
    let mut report = TableIndexReport {
        files: snapshot.files.len() as u64,
        ..Default::default()
    };
    let blob = |data_file: &str, size: u64, l: &Locator, fields: Vec<i32>| BlobMetadata {
        blob_type: BLOB_TYPE.into(),
        fields,
        snapshot_id: snapshot.version,
        sequence_number: 0,
        offset: 0,
        length: 0,
        compression_codec: None,
        properties: HashMap::from([
            ("data-file".into(), relative(&snapshot.root, data_file)),
            ("data-file-size".into(), size.to_string()),
            ("kind".into(), l.kind.clone()),
            ("column".into(), l.columns.join(".")),
            ("granularity".into(), l.granularity.name().into()),
            ("checksum".into(), l.checksum.to_string()),
            ("version".into(), l.version.to_string()),
        ]),
    };
    for f in snapshot.files.iter() {
        let data = StorageFile::open(&f.path, Arc::new(IoStats::default()))?;
        let md = cache.get(&data, false)?.0;
        let mut physical_specs = Vec::new();
        let mut wanted = Vec::new();
        for s in specs {
            let column = physical_column(snapshot, &s.column, &md, &f.path)?;
            if column.is_empty() {
                continue; // the file predates the column: nothing to index
            }
            let spec = IndexSpec {
                column: column.clone(),
                ..s.clone()
            };
            wanted.push((
                spec.identity().0,
                column,
                spec.stored_granularity(),
                s.column.clone(),
            ));
            physical_specs.push(spec);
        }
        // Earlier indexes of the file that are not replaced now are copied over.
        if let Some(old) = existing.by_file.get(&(f.path.clone(), f.size)) {
            for i in old {
                let l = &i.locator;
                let replaced = wanted.iter().any(|(k, c, g, _)| {
                    *k == l.kind && l.columns == [c.clone()] && *g == l.granularity
                });
                if replaced {
                    continue;
                }
                if let Some(d) = &change.drop {
                    if d.selects(l, snapshot, &md, &f.path) {
                        report.dropped += 1;
                        continue;
                    }
                }
                let puffin = existing.puffin(&i.puffin)?;
                let bytes = puffin.read_range(l.offset, l.length as usize)?.to_vec();
                if block_checksum(&bytes) != Some(l.checksum) {
                    continue; // damaged: dropped
                }
                blobs.push((blob(&f.path, f.size, l, Vec::new()), bytes));
                report.kept += 1;
            }
        }
        if physical_specs.is_empty() {
            continue;
        }
        let (identity, built) = build_indexes(&f.path, &physical_specs)?;
        if identity.size != f.size {
            return Err(Error::Source(format!(
                "{}: the table records {} bytes, the file has {}",
                f.path, f.size, identity.size
            )));
        }
        for n in built {
            let bytes = encode_block(n.kind.code, &n.payload);
            let l = Locator {
                kind: n.kind.name.into(),
                columns: n.columns.clone(),
                granularity: n.granularity,
                offset: 0,
                length: bytes.len() as u64,
                checksum: block_checksum(&bytes).expect("a block has a checksum"),
                version: BLOCK_VERSION,
            };
            let logical = wanted
                .iter()
                .find(|(_, c, _, _)| n.columns == [c.clone()])
                .map(|(_, _, _, l)| l.clone())
                .unwrap_or_default();
            blobs.push((blob(&f.path, f.size, &l, fields(&logical)), bytes));
            report.built += 1;
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(&dir.to_string_lossy(), e))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "pqindex-{}-{stamp}-{}.puffin",
        snapshot.version,
        std::process::id()
    );
    let target: PathBuf = dir.join(name);
    let described: Vec<BlobMetadata> = blobs.iter().map(|(m, _)| m.clone()).collect();
    let bytes = puffin::encode(
        blobs,
        HashMap::from([("created-by".into(), "pqindex".into())]),
    );
    let tmp = crate::io::file::temp_path(&target);
    std::fs::write(&tmp, &bytes).map_err(|e| Error::io(&tmp.to_string_lossy(), e))?;
    std::fs::rename(&tmp, &target).map_err(|e| Error::io(&target.to_string_lossy(), e))?;
    report.puffin = target.to_string_lossy().into_owned();
    report.bytes = bytes.len() as u64;
    let file = StorageFile::open(&report.puffin, Arc::new(IoStats::default()))?;
    let (written, body_end) = puffin::read_footer(&file)?;
    report.footer_bytes = report.bytes - body_end;
    debug_assert_eq!(written.len(), described.len());
    report.blobs_json = serde_json::to_string(&written).expect("blob metadata serialises");
    Ok(report)
}

/// Apply `change` to the indexes of the live files of the Delta table at `root` (its
/// latest version): a new Puffin file in its index directory replaces the ones there.
pub fn change_delta_indexes(
    root: &str,
    change: &IndexChange,
    opts: &crate::table::TableOptions,
    cache: &MetadataCache,
) -> Result<TableIndexReport> {
    let snapshot = crate::table::delta::snapshot(root, opts)?;
    local_only(&snapshot)?;
    let old = delta_puffins(&snapshot.root)?;
    let existing = TableIndexes::load(&snapshot.root, &old)?;
    let dir = Path::new(&snapshot.root).join(DELTA_INDEX_DIR);
    let report = build(&snapshot, change, &existing, &dir, &|_| Vec::new(), cache)?;
    for p in old {
        if p != report.puffin {
            let _ = std::fs::remove_file(&p);
        }
    }
    Ok(report)
}

/// Apply `change` to the indexes of the files of `snapshot` (an Iceberg table's, planned
/// elsewhere): a new Puffin file in `dir` holds them, with the still-valid indexes of the
/// table's Puffin files (`snapshot.index_files`) it keeps; `fields` gives each column's
/// field ids. Registering the new file with the table is the caller's (pyiceberg's) part.
pub fn change_snapshot_indexes(
    snapshot: &TableSnapshot,
    change: &IndexChange,
    dir: &Path,
    fields: &HashMap<String, Vec<i32>>,
    cache: &MetadataCache,
) -> Result<TableIndexReport> {
    local_only(snapshot)?;
    let existing = TableIndexes::load(&snapshot.root, &snapshot.index_files)?;
    build(
        snapshot,
        change,
        &existing,
        dir,
        &|c| fields.get(c).cloned().unwrap_or_default(),
        cache,
    )
}

/// Index builds read whole columns of every file: object-store tables are refused for now.
fn local_only(snapshot: &TableSnapshot) -> Result<()> {
    if crate::io::object::is_remote(&snapshot.root)
        || snapshot
            .files
            .iter()
            .any(|f| crate::io::object::is_remote(&f.path))
    {
        return Err(Error::Unsupported(format!(
            "{}: indexes are built for tables on local storage only",
            snapshot.root
        )));
    }
    Ok(())
}
