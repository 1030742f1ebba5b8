//! Expanding a source (a file, a directory, or a list of them) into data files.
//!
//! Spark's rules: names starting with `_` or `.` are not data (`_SUCCESS`, `_pqindex/`,
//! `.part-0.crc`), at any depth. A table format's directory is refused rather than read as
//! loose files: its data files include removed and uncommitted ones.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_schema::Field;

use crate::error::{Error, Result};
use crate::io::{object, FileIdentity};
use crate::predicate::value::Value;
use crate::source::partition::{infer_partitions, parse_hive_segment};
use crate::source::watched::{self, Walked, Watch};

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: String,
    /// Values of the partition columns, in `Listing::partition_fields` order.
    pub partition_values: Vec<Option<Value>>,
    /// The file as the listing saw it.
    pub identity: FileIdentity,
    /// Rows a table deleted from the file (sorted positions in file order).
    pub deleted: Option<std::sync::Arc<Vec<u64>>>,
}

/// The table formats whose directories are not loose Parquet files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Delta,
    Iceberg,
}

impl TableFormat {
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Delta => "Delta Lake",
            TableFormat::Iceberg => "Iceberg",
        }
    }

    /// Why such a directory cannot be read as loose files.
    fn refusal(self, root: &str) -> Error {
        let why = match self {
            TableFormat::Delta => {
                "its directory holds removed and uncommitted files, so it cannot be read as loose Parquet files; read it as a table (pqindex.scan reads Delta tables) instead"
            }
            TableFormat::Iceberg => {
                "its data directory holds files of old snapshots, so it cannot be read as loose Parquet files; read it as a table (pqindex.scan takes a pyiceberg Table) instead"
            }
        };
        let article = if self == TableFormat::Iceberg {
            "an"
        } else {
            "a"
        };
        Error::Source(format!("{root} is {article} {} table: {why}", self.name()))
    }
}

#[derive(Debug, Clone)]
pub struct Listing {
    /// Shared: a directory listed again unchanged hands every scan the same files.
    pub files: Arc<Vec<SourceFile>>,
    pub partition_fields: Vec<Field>,
    /// Requests the listing made of an object store (none for local files).
    pub requests: u64,
    /// An object-store prefix listed with a catalog pointer (`_pqindex/CURRENT`) below it:
    /// the listing shows it for free, where asking would cost a request per scan.
    pub has_catalog: bool,
    /// The single directory or prefix listed is a table of this format (then `files` is
    /// empty: a table's files come from its metadata).
    pub table: Option<TableFormat>,
}

/// Expand `paths`. A single directory gets hive partition columns from `key=value`
/// directories below it; explicit files are taken as they are. A table's directory is
/// refused: its files are not loose Parquet files.
pub fn list_source(paths: &[String]) -> Result<Listing> {
    let listing = list_source_or_table(paths)?;
    match listing.table {
        Some(format) => Err(format.refusal(&paths[0])),
        None => Ok(listing),
    }
}

/// `list_source`, except that a single table directory or prefix comes back as a listing
/// with `table` set and no files, for the caller to read through the table's metadata.
pub fn list_source_or_table(paths: &[String]) -> Result<Listing> {
    if paths.is_empty() {
        return Err(Error::Source("the source names no files".into()));
    }
    let mut found: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut identities: Vec<FileIdentity> = Vec::new();
    let single_dir = paths.len() == 1 && Path::new(&paths[0]).is_dir();
    if paths.iter().any(|p| object::is_remote(p)) {
        return list_objects(paths);
    }
    for p in paths {
        let path = Path::new(p);
        let md = std::fs::metadata(path).map_err(|e| Error::io(p, e))?;
        if md.is_dir() {
            if let Some(format) = table_format(path) {
                if paths.len() > 1 {
                    return Err(format.refusal(p));
                }
                return Ok(table_listing(format, 0));
            }
            let files = watched::listing(path, |watch| {
                let mut files = Vec::new();
                let plain = walk(path, path, &mut files, watch)?;
                Ok((files, plain))
            })?;
            if files.is_empty() {
                return Err(Error::Source(format!(
                    "{p}: no data files below this directory (names starting with '_' or '.' are skipped)"
                )));
            }
            if single_dir {
                return finished(p, files);
            }
            // One of several paths: no partition columns.
            for (file, _, identity) in files.iter() {
                identities.push(identity.clone());
                found.push((file.to_string_lossy().into_owned(), Vec::new()));
            }
        } else {
            found.push((p.clone(), Vec::new()));
            identities.push(FileIdentity::of_metadata(p, &md));
        }
    }
    finish(found, identities, 0)
}

/// The last listing finished from a walk of a single directory: the directory, the walk and
/// the listing.
type Finished = Option<(String, Arc<Vec<Walked>>, Listing)>;
static LAST: Mutex<Finished> = Mutex::new(None);

/// Forget every kept listing, and the last one finished from a kept walk (the next scan of
/// each directory lists it again, as a new process would).
pub fn forget_kept() {
    watched::forget();
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// The listing of the single directory `dir` from its walk `files`: the last one made
/// again when the walk is the same kept one (nothing changed below `dir` since).
fn finished(dir: &str, files: Arc<Vec<Walked>>) -> Result<Listing> {
    if let Some((d, walk, listing)) = LAST.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        if d == dir && Arc::ptr_eq(walk, &files) {
            return Ok(listing.clone());
        }
    }
    let mut found = Vec::with_capacity(files.len());
    let mut identities = Vec::with_capacity(files.len());
    for (file, rel_dirs, identity) in files.iter() {
        identities.push(identity.clone());
        let parts = rel_dirs
            .iter()
            .filter_map(|d| parse_hive_segment(d))
            .collect();
        found.push((file.to_string_lossy().into_owned(), parts));
    }
    let listing = finish(found, identities, 0)?;
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((dir.to_string(), files, listing.clone()));
    Ok(listing)
}

fn finish(
    found: Vec<(String, Vec<(String, String)>)>,
    identities: Vec<FileIdentity>,
    requests: u64,
) -> Result<Listing> {
    let (partition_fields, values) = infer_partitions(&found)?;
    Ok(Listing {
        files: Arc::new(
            found
                .into_iter()
                .zip(values)
                .zip(identities)
                .map(|(((path, _), partition_values), identity)| SourceFile {
                    path,
                    partition_values,
                    identity,
                    deleted: None,
                })
                .collect(),
        ),
        partition_fields,
        requests,
        has_catalog: false,
        table: None,
    })
}

fn table_listing(format: TableFormat, requests: u64) -> Listing {
    Listing {
        files: Default::default(),
        partition_fields: Vec::new(),
        requests,
        has_catalog: false,
        table: Some(format),
    }
}

/// Expand object-store URLs: a prefix lists every object below it (one paged LIST), an
/// object names itself. The rules are the local ones, applied to key segments.
fn list_objects(paths: &[String]) -> Result<Listing> {
    let mut found: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut identities: Vec<FileIdentity> = Vec::new();
    let single = paths.len() == 1;
    let mut requests = 0;
    let mut has_catalog = false;
    for p in paths {
        if !object::is_remote(p) {
            return Err(Error::Source(format!(
                "{p}: a source mixes local paths and object-store URLs"
            )));
        }
        let loc = object::locate(p)?;
        // A name that looks like a file is asked for as one first (one HEAD); a prefix is
        // listed.
        if looks_like_a_file(p) {
            requests += 1;
            match loc.head() {
                Ok(identity) => {
                    identities.push(identity);
                    found.push((loc.url.clone(), Vec::new()));
                    continue;
                }
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let (below, listed) = loc.list_for_scan()?;
        if listed {
            // S3 returns at most 1,000 keys per listing page.
            requests += 1 + below.len().saturating_sub(1) as u64 / 1000;
        }
        if below.is_empty() {
            // Not a prefix: the object itself, or nothing.
            requests += 1;
            identities.push(loc.head()?);
            found.push((loc.url.clone(), Vec::new()));
            continue;
        }
        if let Some(format) = table_format_of_keys(below.iter().map(|(rel, _)| rel.as_str())) {
            if !single {
                return Err(format.refusal(p));
            }
            return Ok(table_listing(format, requests));
        }
        has_catalog |= single && below.iter().any(|(rel, _)| rel == "_pqindex/CURRENT");
        let before = found.len();
        for (rel, identity) in below.iter().cloned() {
            let segments: Vec<&str> = rel.split('/').collect();
            if segments.iter().any(|s| is_hidden(s)) {
                continue;
            }
            let parts = if single {
                segments[..segments.len() - 1]
                    .iter()
                    .filter_map(|d| parse_hive_segment(d))
                    .collect()
            } else {
                Vec::new()
            };
            found.push((identity.path.clone(), parts));
            identities.push(identity);
        }
        if found.len() == before {
            return Err(Error::Source(format!(
                "{p}: no data objects below this prefix (names starting with '_' or '.' are skipped)"
            )));
        }
    }
    let mut listing = finish(found, identities, requests)?;
    listing.has_catalog = has_catalog;
    Ok(listing)
}

fn looks_like_a_file(url: &str) -> bool {
    let last = url.rsplit('/').next().unwrap_or("");
    !url.ends_with('/')
        && [".parquet", ".parq", ".pq"]
            .iter()
            .any(|e| last.ends_with(e))
}

/// The table format of a prefix, from the keys a listing returned below it.
fn table_format_of_keys<'a>(keys: impl Iterator<Item = &'a str>) -> Option<TableFormat> {
    for k in keys {
        if k.starts_with("_delta_log/") {
            return Some(TableFormat::Delta);
        }
        if k.starts_with("metadata/")
            && (k.ends_with(".metadata.json") || k.ends_with("version-hint.text"))
        {
            return Some(TableFormat::Iceberg);
        }
    }
    None
}

fn is_hidden(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

/// Files below `dir` in name order, with the directory names between `root` and each;
/// `watch` is told of each directory before it is read. Whether every entry is a plain
/// file or directory of one name (no symlink, no hard link).
pub(crate) fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(PathBuf, Vec<String>, FileIdentity)>,
    watch: &mut Watch<'_>,
) -> Result<bool> {
    let mut plain = watch(dir);
    let shown = dir.to_string_lossy().into_owned();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(&shown, e))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::io(&shown, e))?;
    entries.retain(|e| !is_hidden(&e.file_name().to_string_lossy()));
    entries.sort_by_cached_key(|e| e.file_name());
    let rel_dirs: Vec<String> = dir
        .strip_prefix(root)
        .map(|rel| {
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for entry in entries {
        let path = entry.path();
        // A stat relative to the directory (no path walk), following symlinks as a path
        // stat would. One at a time: stats of one directory on several threads contend
        // in the kernel and take longer in all.
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        let md = if is_link {
            std::fs::metadata(&path)
        } else {
            entry.metadata()
        }
        .map_err(|e| Error::io(&path.to_string_lossy(), e))?;
        plain &= !is_link;
        if md.is_dir() {
            plain &= walk(root, &path, out, watch)?;
        } else if md.is_file() {
            plain &= md.nlink() == 1;
            let identity = FileIdentity::of_metadata(&path.to_string_lossy(), &md);
            out.push((path, rel_dirs.clone(), identity));
        }
    }
    Ok(plain)
}

/// The table format of a local directory, if it is a table's.
pub fn table_format(dir: &Path) -> Option<TableFormat> {
    if dir.join("_delta_log").is_dir() {
        return Some(TableFormat::Delta);
    }
    let meta = dir.join("metadata");
    let iceberg = meta.join("version-hint.text").is_file()
        || std::fs::read_dir(&meta)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().ends_with(".metadata.json"))
            })
            .unwrap_or(false);
    iceberg.then_some(TableFormat::Iceberg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_hidden_and_reads_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (d, f) in [
            ("year=2024/m=1", "a.parquet"),
            ("year=2025/m=2", "b.parquet"),
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
            std::fs::write(root.join(d).join(f), b"x").unwrap();
        }
        std::fs::write(root.join("_SUCCESS"), b"").unwrap();
        std::fs::create_dir_all(root.join("_pqindex")).unwrap();
        std::fs::write(root.join("_pqindex/c.parquet"), b"x").unwrap();
        std::fs::write(root.join("year=2024/.a.parquet.crc"), b"x").unwrap();
        let l = list_source(&[root.to_string_lossy().into_owned()]).unwrap();
        assert_eq!(l.files.len(), 2);
        assert_eq!(l.partition_fields.len(), 2);
        assert_eq!(
            l.files[1].partition_values,
            vec![Some(Value::Int(2025)), Some(Value::Int(2))]
        );
    }

    #[test]
    fn an_unchanged_directory_lists_to_the_same_files_and_a_change_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("k=1")).unwrap();
        std::fs::write(root.join("k=1/a.parquet"), b"x").unwrap();
        let source = [root.to_string_lossy().into_owned()];
        let first = list_source(&source).unwrap();
        let again = list_source(&source).unwrap();
        let paths = |l: &Listing| l.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&again), paths(&first));
        assert_eq!(again.partition_fields, first.partition_fields);
        std::fs::create_dir_all(root.join("k=2")).unwrap();
        std::fs::write(root.join("k=2/b.parquet"), b"yy").unwrap();
        let changed = list_source(&source).unwrap();
        let seen: Vec<_> = changed
            .files
            .iter()
            .map(|f| (f.identity.size, f.partition_values.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (1, vec![Some(Value::Int(1))]),
                (2, vec![Some(Value::Int(2))])
            ]
        );
    }

    #[test]
    fn forgetting_kept_listings_drops_the_last_finished_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.parquet"), b"x").unwrap();
        let root = dir.path().to_string_lossy().into_owned();
        list_source(std::slice::from_ref(&root)).unwrap();
        let last_is_root = || {
            LAST.lock()
                .unwrap()
                .as_ref()
                .is_some_and(|(d, _, _)| *d == root)
        };
        // Other tests may finish their own listings in between, never this directory's.
        forget_kept();
        assert!(!last_is_root());
    }

    #[test]
    fn refuses_delta_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("_delta_log")).unwrap();
        std::fs::write(dir.path().join("a.parquet"), b"x").unwrap();
        let e = list_source(&[dir.path().to_string_lossy().into_owned()]).unwrap_err();
        assert!(matches!(e, Error::Source(m) if m.contains("Delta")));
        let e = list_source(&["/nonexistent/x.parquet".to_string()]).unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }));
    }
}
