//! The catalog as a source of evidence: a file it describes as the file is now can be
//! ruled out by the file-level bounds, null counts and bloom filters it keeps, and its
//! footer comes from the catalog instead of the file.

use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;

use crate::catalog::{Catalog, CatalogEntry, Lookup};
use crate::error::Result;
use crate::io::FileIdentity;
use crate::predicate::plain::is_probe;
use crate::predicate::Predicate;
use crate::prune::evidence::{Evidence, Source};
use crate::prune::planner::{DescribedFile, FileCatalog};

/// One file as the catalog describes it.
struct CatalogFile<'a> {
    catalog: &'a Catalog,
    entry: &'a CatalogEntry,
    schema: &'a SchemaDescriptor,
}

impl Evidence for CatalogFile<'_> {
    fn source(&self) -> Source {
        Source::Catalog
    }

    fn file(&mut self, leaf: &Predicate) -> Result<Option<bool>> {
        let Some(leaf_idx) = leaf.column().and_then(|c| c.leaf) else {
            return Ok(None);
        };
        let d = self.schema.column(leaf_idx);
        Ok(Some(
            self.catalog
                .bounds_may_match(self.entry, leaf, d.physical_type())
                && self.catalog.bloom_may_match(
                    self.entry,
                    leaf,
                    d.physical_type(),
                    d.type_length(),
                ),
        ))
    }

    fn answers(&self, leaf: &Predicate) -> bool {
        is_probe(leaf)
            && leaf
                .column()
                .is_some_and(|c| self.catalog.has_bloom(self.entry, &c.name))
    }
}

impl DescribedFile for CatalogFile<'_> {
    fn footer(&self) -> Option<Result<ParquetMetaData>> {
        Some(self.entry.metadata())
    }

    fn footer_unusable(&self) -> Option<String> {
        self.entry.unusable.get().cloned()
    }
}

impl FileCatalog for Catalog {
    fn describe<'a>(
        &'a self,
        path: &str,
        identity: &FileIdentity,
        schema: &'a SchemaDescriptor,
    ) -> Option<Box<dyn DescribedFile + 'a>> {
        match self.lookup(path, identity) {
            Lookup::Fresh(entry) => Some(Box::new(CatalogFile {
                catalog: self,
                entry,
                schema,
            })),
            Lookup::Changed | Lookup::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CatalogColumn;
    use crate::metadata::MetadataCache;
    use crate::predicate::value::Value;
    use crate::query::binding::Binding;
    use crate::testing::{int64s, strings, write_file, Layout};

    /// Three files of disjoint `k` ranges and disjoint `s` values, catalogued with bounds
    /// on `k` and a bloom filter on `s`.
    fn catalogued(dir: &std::path::Path) -> (Catalog, Vec<String>) {
        let paths: Vec<String> = (0..3)
            .map(|i| {
                let s = (0..100).map(|j| Some(format!("f{i}-{j}")));
                write_file(
                    dir,
                    &format!("part-{i}.parquet"),
                    vec![("k", int64s(i * 100..(i + 1) * 100)), ("s", strings(s))],
                    Layout::default(),
                )
            })
            .collect();
        let columns = [
            CatalogColumn {
                name: "k".into(),
                bloom: false,
                fpp: 0.01,
            },
            CatalogColumn {
                name: "s".into(),
                bloom: true,
                fpp: 0.01,
            },
        ];
        let cache = MetadataCache::new(1 << 20);
        let (catalog, _) =
            Catalog::build(&dir.to_string_lossy(), &columns, &cache, &|_, _| Ok(())).unwrap();
        (catalog, paths)
    }

    fn identity(path: &str) -> FileIdentity {
        FileIdentity::of_metadata(path, &std::fs::metadata(path).unwrap())
    }

    #[test]
    fn bounds_and_blooms_rule_files_out_and_footers_come_along() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, paths) = catalogued(dir.path());
        let cache = MetadataCache::new(1 << 20);
        let md = crate::metadata::read_metadata(&paths[0], true, &cache)
            .unwrap()
            .metadata;
        let binding = Binding::of(&md, &paths[0], Vec::new()).unwrap();
        let descr = md.file_metadata().schema_descr();
        let answers = |text: &str| -> Vec<Option<bool>> {
            let pred = binding.bind_where(Some(text), 0).unwrap().unwrap();
            paths
                .iter()
                .map(|p| {
                    let mut d = catalog.describe(p, &identity(p), descr).unwrap();
                    let footer = d.footer().expect("the catalog keeps footers").unwrap();
                    assert_eq!(footer.file_metadata().num_rows(), 100);
                    d.file(&pred).unwrap()
                })
                .collect()
        };
        assert_eq!(answers("k = 150"), [Some(false), Some(true), Some(false)]);
        assert_eq!(answers("k >= 200"), [Some(false), Some(false), Some(true)]);
        // Bounds of `s` overlap ("f0-..".."f2-.."); the bloom filters tell files apart.
        let s = answers("s = 'f1-42'");
        assert_eq!(s[1], Some(true));
        assert!(s[0] == Some(false) || s[2] == Some(false), "{s:?}");
    }

    #[test]
    fn a_catalog_bloom_is_probed_with_the_keys_within_the_files_bounds() {
        // File i holds the even keys i * 1000 ..= i * 1000 + 198.
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<String> = (0..3)
            .map(|i| {
                write_file(
                    dir.path(),
                    &format!("part-{i}.parquet"),
                    vec![("k", int64s((0..100).map(|j| i * 1000 + 2 * j)))],
                    Layout::default(),
                )
            })
            .collect();
        let columns = [CatalogColumn {
            name: "k".into(),
            bloom: true,
            fpp: 0.01,
        }];
        let cache = MetadataCache::new(1 << 20);
        let (catalog, _) =
            Catalog::build(&dir.path().to_string_lossy(), &columns, &cache, &|_, _| {
                Ok(())
            })
            .unwrap();
        let md = crate::metadata::read_metadata(&paths[0], true, &cache)
            .unwrap()
            .metadata;
        let binding = Binding::of(&md, &paths[0], Vec::new()).unwrap();
        let descr = md.file_metadata().schema_descr();
        let col = binding
            .bind_where(Some("k = 0"), 0)
            .unwrap()
            .unwrap()
            .column()
            .cloned()
            .unwrap();
        // Many keys beyond every file's bounds, one absent key inside file 1's bounds and
        // one present key of file 2.
        let mut keys: Vec<Value> = (10_000_000..10_200_000).map(Value::Int).collect();
        keys.extend([Value::Int(1001), Value::Int(2050)]);
        let pred = Predicate::in_list(col, keys, false);
        let answers: Vec<Option<bool>> = paths
            .iter()
            .map(|p| {
                let mut d = catalog.describe(p, &identity(p), descr).unwrap();
                d.file(&pred).unwrap()
            })
            .collect();
        assert_eq!(answers, [Some(false), Some(false), Some(true)]);
    }

    #[test]
    fn a_file_changed_since_the_build_is_not_described() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, paths) = catalogued(dir.path());
        let cache = MetadataCache::new(1 << 20);
        let md = crate::metadata::read_metadata(&paths[0], true, &cache)
            .unwrap()
            .metadata;
        let mut changed = identity(&paths[0]);
        changed.size += 1;
        let descr = md.file_metadata().schema_descr();
        assert!(catalog.describe(&paths[0], &changed, descr).is_none());
        assert!(catalog
            .describe(
                &dir.path().join("new.parquet").to_string_lossy(),
                &changed,
                descr
            )
            .is_none());
    }
}
