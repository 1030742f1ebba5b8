//! Building embedded indexes over an existing file and adding them to it: each indexed
//! column is read once, page by page, feeding every index defined on it.
//!
//! A change of a local file holds its writer lock (writer_lock.rs) from before the build
//! to the rename, so concurrent changes of one file run one after the other and none is
//! lost; every page read and every chunk copied first looks at the cancel flag, so a
//! Ctrl-C stops a build promptly and leaves the file as it was.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::index::column_values::for_each_page;
use crate::index::kind::IndexBuilder;
use crate::index::locator::Locator;
use crate::index::rewrite::{rewrite_indexes_with, AppendReport, NewIndex, RewriteMode};
use crate::index::spec::IndexSpec;
use crate::index::writer_lock;
use crate::io::FileIdentity;

/// Build the indexes `specs` define over the file at `path`, with the identity of the file
/// they describe.
pub fn build_indexes(path: &str, specs: &[IndexSpec]) -> Result<(FileIdentity, Vec<NewIndex>)> {
    build_indexes_until(path, specs, &AtomicBool::new(false))
}

/// `build_indexes`, stopping with `Error::Cancelled` once `cancel` is set.
pub fn build_indexes_until(
    path: &str,
    specs: &[IndexSpec],
    cancel: &AtomicBool,
) -> Result<(FileIdentity, Vec<NewIndex>)> {
    // A file holds one index per identity: of definitions sharing one, the last wins.
    let specs: Vec<&IndexSpec> = specs
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !specs[i + 1..]
                .iter()
                .any(|later| later.identity() == s.identity())
        })
        .map(|(_, s)| s)
        .collect();
    let identity = FileIdentity::stat(path)?;
    let file = crate::io::StorageFile::open(path, std::sync::Arc::new(Default::default()))?;
    crate::metadata::global_cache()
        .get(&file, false)
        .map_err(refused)?;
    let mut columns: Vec<&str> = specs.iter().map(|s| s.column.as_str()).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut out = Vec::new();
    for column in columns {
        let defs: Vec<&IndexSpec> = specs
            .iter()
            .copied()
            .filter(|s| s.column == column)
            .collect();
        let mut builders: Vec<Box<dyn IndexBuilder>> =
            defs.iter().map(|s| s.kind.builder(&s.settings)).collect();
        for_each_page(path, column, &mut |p| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            for b in &mut builders {
                b.page(p);
            }
            Ok(())
        })?;
        for (spec, b) in defs.into_iter().zip(builders) {
            out.push(NewIndex {
                kind: spec.kind.info(),
                columns: vec![spec.column.clone()],
                granularity: spec.stored_granularity(),
                payload: b.finish(),
            });
        }
    }
    Ok((identity, out))
}

/// Build `specs` over `path` and embed them, replacing indexes of the same identity. The
/// file must not change between the build and the rewrite.
pub fn add_indexes(path: &str, specs: &[IndexSpec]) -> Result<AppendReport> {
    add_indexes_with(path, specs, RewriteMode::Copy, &AtomicBool::new(false))
}

/// `add_indexes`, by copy or in place (local files only), until `cancel` is set.
pub fn add_indexes_with(
    path: &str,
    specs: &[IndexSpec],
    mode: RewriteMode,
    cancel: &AtomicBool,
) -> Result<AppendReport> {
    if crate::io::object::is_remote(path) {
        in_place_is_local(path, mode)?;
        let obj = crate::io::object::locate(path)?;
        return obj.rewrite(|local| {
            let (identity, new) = build_indexes_until(local, specs, cancel).map_err(refused)?;
            rewrite_indexes_with(local, new, &|_| false, Some(&identity), mode, cancel)
                .map(|r| r.named(local, path))
        });
    }
    let _lock = writer_lock::lock(path, cancel)?;
    let (identity, new) = build_indexes_until(path, specs, cancel).map_err(refused)?;
    rewrite_indexes_with(path, new, &|_| false, Some(&identity), mode, cancel)
}

/// An encrypted file cannot take embedded indexes: its footer would have to be encrypted
/// again, with keys the writer does not hold.
fn refused(e: Error) -> Error {
    match e {
        Error::Encrypted { path, .. } => Error::unsupported(format!(
            "{path}: embedded indexes cannot be added to an encrypted file (its footer would \
             have to be encrypted again)"
        )),
        other => other,
    }
}

/// Remove the indexes for which `drop` is true.
pub fn drop_indexes(path: &str, drop: &dyn Fn(&Locator) -> bool) -> Result<AppendReport> {
    drop_indexes_with(path, drop, RewriteMode::Copy, &AtomicBool::new(false))
}

/// `drop_indexes`, by copy or in place (local files only), until `cancel` is set.
pub fn drop_indexes_with(
    path: &str,
    drop: &dyn Fn(&Locator) -> bool,
    mode: RewriteMode,
    cancel: &AtomicBool,
) -> Result<AppendReport> {
    if crate::io::object::is_remote(path) {
        in_place_is_local(path, mode)?;
        let obj = crate::io::object::locate(path)?;
        return obj.rewrite(|local| {
            rewrite_indexes_with(local, Vec::new(), drop, None, mode, cancel)
                .map(|r| r.named(local, path))
        });
    }
    let _lock = writer_lock::lock(path, cancel)?;
    rewrite_indexes_with(path, Vec::new(), drop, None, mode, cancel)
}

/// An object is always replaced whole: there is no in-place change of one.
fn in_place_is_local(path: &str, mode: RewriteMode) -> Result<()> {
    if mode == RewriteMode::InPlace {
        return Err(Error::unsupported(format!(
            "{path}: in-place index changes are for local files; an object is replaced whole"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use crate::index::locator::Granularity;
    use crate::index::rewrite::{list_indexes, rewrite_indexes};
    use crate::query::scan::Scan;
    use crate::testing::{self, int64s, scan_keys, strings, Layout};

    /// 20,000 rows; `u` is unsorted (a permutation), `s` nullable strings.
    fn write_file(dir: &Path) -> String {
        let n = 20_000i64;
        testing::write_file(
            dir,
            "t.parquet",
            vec![
                ("k", int64s(0..n)),
                ("u", int64s((0..n).map(|i| (i * 7919) % n))),
                (
                    "s",
                    strings((0..n).map(|i| (i % 3 != 0).then(|| format!("s{}", (i * 31) % 5000)))),
                ),
            ],
            Layout {
                row_group_size: 5000,
                page_rows: Some(500),
                ..Default::default()
            },
        )
    }

    fn scan(path: &str, predicate: &str) -> (Vec<i64>, Scan) {
        scan_keys(path, predicate)
    }

    fn metric(s: &Scan, key: &str) -> u64 {
        s.metric(key).unwrap()
    }

    fn spec(kind: &str, column: &str, granularity: Granularity) -> IndexSpec {
        IndexSpec::new(kind, column, Some(granularity), &[]).unwrap()
    }

    #[test]
    fn indexes_prune_unsorted_columns_and_keep_every_match() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let queries = [
            "u = 12345",
            "u IN (1, 2, 19999)",
            "u = 12345 OR k = 3",
            "u = 12345 AND k > 100",
            "s = 's17'",
            "s IN ('s17', 'nope')",
            "s = 'absent'",
            "u = -1",
            "s IS NULL AND u = 5",
            "NOT (u = 5)",
        ];
        let before: Vec<(Vec<i64>, u64)> = queries
            .iter()
            .map(|q| {
                let (rows, s) = scan(&path, q);
                (rows, metric(&s, "rows_selected"))
            })
            .collect();
        for granularity in [Granularity::File, Granularity::RowGroup, Granularity::Page] {
            let specs = [
                spec("distinct", "u", granularity),
                spec("bloom", "s", granularity),
            ];
            add_indexes(&path, &specs).unwrap();
            for (q, (rows, selected)) in queries.iter().zip(&before) {
                let (got, s) = scan(&path, q);
                assert_eq!(&got, rows, "{q} at {granularity:?}");
                assert!(metric(&s, "rows_selected") <= *selected, "{q}");
                assert_eq!(metric(&s, "indexes_skipped"), 0, "{q}");
            }
            // A needle on the unsorted column selects only what the granularity allows.
            let (_, s) = scan(&path, "u = 12345");
            let expected = match granularity {
                Granularity::File => 20_000,
                Granularity::RowGroup => 5_000,
                Granularity::Page => 500,
            };
            assert_eq!(metric(&s, "rows_selected"), expected, "{granularity:?}");
            // Within the statistics' bounds but absent: only the index can tell.
            let (rows, s) = scan(&path, "s = 's17x'");
            assert!(rows.is_empty());
            assert_eq!(metric(&s, "files_pruned_by_index"), 1, "{granularity:?}");
        }
        // Granularities coexist; re-adding one replaces it.
        let listed = list_indexes(&path).unwrap();
        assert_eq!(listed.len(), 6);
        add_indexes(&path, &[spec("distinct", "u", Granularity::Page)]).unwrap();
        assert_eq!(list_indexes(&path).unwrap().len(), 6);
    }

    #[test]
    fn damaged_indexes_are_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let r = add_indexes(
            &path,
            &[
                spec("distinct", "u", Granularity::Page),
                spec("bloom", "u", Granularity::Page),
            ],
        )
        .unwrap();
        let (expected, _) = scan(&path, "u = 12345 OR u = 7");
        let mut bytes = std::fs::read(&path).unwrap();
        for l in &r.indexes {
            // A byte of each block's unit table, which every lookup reads (the rest of a
            // lookup index is read, and checked, only where a lookup needs it).
            let at = l.offset as usize + 16 + 30;
            bytes[at] ^= 0x55;
        }
        std::fs::write(&path, &bytes).unwrap();
        let (rows, s) = scan(&path, "u = 12345 OR u = 7");
        assert_eq!(rows, expected);
        assert_eq!(rows.len(), 2);
        assert!(metric(&s, "indexes_skipped") >= 1, "{:?}", s.warnings);
        assert!(!s.warnings.is_empty());
    }

    #[test]
    fn an_index_from_another_file_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path());
        let specs = [spec("distinct", "u", Granularity::Page)];
        let (_, built) = build_indexes(&path, &specs).unwrap();
        // Rewrite the file with other row groups, then embed the stale index. `u` is
        // sparse, so that the index is worth asking about one of its values.
        let dir2 = tempfile::tempdir().unwrap();
        let other = testing::write_file(
            dir2.path(),
            "t.parquet",
            vec![
                ("k", int64s(0..30_000)),
                ("u", int64s((0..30_000).map(|i| i * 1000))),
                ("s", strings((0..30_000).map(|i| Some(format!("{i}"))))),
            ],
            Layout {
                row_group_size: 7000,
                page_rows: Some(700),
                ..Default::default()
            },
        );
        std::fs::rename(&other, &path).unwrap();
        rewrite_indexes(&path, built, &|_| false, None).unwrap();
        let (rows, s) = scan(&path, "u = 25000000");
        assert_eq!(rows, vec![25000]);
        assert_eq!(metric(&s, "indexes_skipped"), 1);
    }

    #[test]
    fn in_place_changes_give_the_same_file_as_copies() {
        let dir = tempfile::tempdir().unwrap();
        let copied = write_file(dir.path());
        let in_place = dir.path().join("in-place.parquet");
        std::fs::copy(&copied, &in_place).unwrap();
        let in_place = in_place.to_string_lossy().into_owned();
        let specs = [
            spec("distinct", "u", Granularity::Page),
            spec("bloom", "s", Granularity::RowGroup),
        ];
        add_indexes(&copied, &specs).unwrap();
        let never = AtomicBool::new(false);
        let r = add_indexes_with(&in_place, &specs, RewriteMode::InPlace, &never).unwrap();
        assert_eq!(r.indexes.len(), 2);
        assert_eq!(
            std::fs::read(&copied).unwrap(),
            std::fs::read(&in_place).unwrap()
        );
        assert!(!crate::index::journal::journal_path(Path::new(&in_place)).exists());
        // Dropping in place shrinks the file back to its Parquet bytes and footer.
        drop_indexes_with(
            &in_place,
            &|l| l.kind == "distinct",
            RewriteMode::InPlace,
            &never,
        )
        .unwrap();
        drop_indexes(&copied, &|l| l.kind == "distinct").unwrap();
        assert_eq!(
            std::fs::read(&copied).unwrap(),
            std::fs::read(&in_place).unwrap()
        );
        let (rows, _) = scan(&in_place, "u = 12345");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows, scan(&copied, "u = 12345").0);
    }
}
