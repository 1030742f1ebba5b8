//! The catalog as a source of evidence: a file it describes as the file is now can be
//! ruled out by the file-level bounds, null counts and bloom filters it keeps, and its
//! footer comes from the catalog instead of the file.

use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;

use crate::catalog::{Catalog, CatalogEntry, Lookup};
use crate::error::Result;
use crate::io::FileIdentity;
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
}

impl DescribedFile for CatalogFile<'_> {
    fn footer(&self) -> Option<Result<ParquetMetaData>> {
        Some(self.entry.metadata())
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
