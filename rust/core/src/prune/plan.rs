//! The scan plan: for every file that survives partition pruning, the row groups that
//! survive statistics and bloom filters, and within them the row ranges the page index
//! leaves. Each (file, row group, rows) is a `ScanUnit` that a reader can fetch alone.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::catalog::{Catalog, Lookup};
use crate::error::{Error, Result};
use crate::index::probe::{FileIndexes, LeafVerdict};
use crate::io::{FileIdentity, IoStats, StorageFile};
use crate::metadata::MetadataCache;
use crate::predicate::expr::Predicate;
use crate::predicate::value::Value;
use crate::prune::row_ranges::RowRanges;
use crate::prune::{bloom, fetch, page, stats};

/// A file the scan will read, with what the reader needs to open it safely.
#[derive(Debug)]
pub struct PlannedFile {
    pub path: String,
    pub identity: FileIdentity,
    pub reader_metadata: ArrowReaderMetadata,
    /// The scan's predicate with this file's partition values folded in.
    pub predicate: Option<Predicate>,
    pub partition_values: Vec<Option<Value>>,
}

/// One row group of one file and the rows of it that may match.
#[derive(Debug, Clone)]
pub struct ScanUnit {
    pub file: Arc<PlannedFile>,
    pub row_group: usize,
    pub ranges: RowRanges,
    pub row_group_rows: u64,
}

/// What pruning did, summed over files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanMetrics {
    pub files: u64,
    pub files_pruned: u64,
    pub files_pruned_by_partition: u64,
    pub row_groups: u64,
    pub row_groups_pruned_by_stats: u64,
    pub row_groups_pruned_by_bloom: u64,
    pub row_groups_pruned_by_page_index: u64,
    pub pages: u64,
    pub pages_pruned: u64,
    pub footers_read: u64,
    pub footer_cache_hits: u64,
    pub page_indexes_read: u64,
    pub bloom_filters_read: u64,
    pub rows_selected: u64,
    pub files_pruned_by_index: u64,
    pub row_groups_pruned_by_index: u64,
    /// Rows the page index left that embedded page-level indexes ruled out.
    pub rows_pruned_by_index: u64,
    pub indexes_read: u64,
    pub indexes_skipped: u64,
    pub files_pruned_by_catalog: u64,
    /// Kept files whose footer came from the catalog.
    pub footers_from_catalog: u64,
    /// Files the catalog does not describe as they are now (added or changed since).
    pub files_not_in_catalog: u64,
}

impl PlanMetrics {
    pub fn add(&mut self, o: &PlanMetrics) {
        self.files += o.files;
        self.files_pruned += o.files_pruned;
        self.files_pruned_by_partition += o.files_pruned_by_partition;
        self.row_groups += o.row_groups;
        self.row_groups_pruned_by_stats += o.row_groups_pruned_by_stats;
        self.row_groups_pruned_by_bloom += o.row_groups_pruned_by_bloom;
        self.row_groups_pruned_by_page_index += o.row_groups_pruned_by_page_index;
        self.pages += o.pages;
        self.pages_pruned += o.pages_pruned;
        self.footers_read += o.footers_read;
        self.footer_cache_hits += o.footer_cache_hits;
        self.page_indexes_read += o.page_indexes_read;
        self.bloom_filters_read += o.bloom_filters_read;
        self.rows_selected += o.rows_selected;
        self.files_pruned_by_index += o.files_pruned_by_index;
        self.row_groups_pruned_by_index += o.row_groups_pruned_by_index;
        self.rows_pruned_by_index += o.rows_pruned_by_index;
        self.indexes_read += o.indexes_read;
        self.indexes_skipped += o.indexes_skipped;
        self.files_pruned_by_catalog += o.files_pruned_by_catalog;
        self.footers_from_catalog += o.footers_from_catalog;
        self.files_not_in_catalog += o.files_not_in_catalog;
    }
}

/// The plan of one file.
#[derive(Debug, Default)]
pub struct FilePlan {
    pub units: Vec<ScanUnit>,
    pub metrics: PlanMetrics,
    /// One line for `explain()`.
    pub summary: String,
    /// Embedded indexes that could not be used, and why.
    pub warnings: Vec<String>,
}

/// Everything planning needs besides the file itself.
pub struct PlanContext<'a> {
    pub predicate: Option<&'a Predicate>,
    /// The schema every file must produce.
    pub schema: &'a arrow_schema::Schema,
    /// Leaf columns the output needs (predicate leaves are added per file).
    pub projected_leaves: &'a [usize],
    pub cache: &'a MetadataCache,
    pub io: &'a Arc<IoStats>,
    /// The dataset's catalog, when planning uses one.
    pub catalog: Option<&'a Catalog>,
    /// The dataset's Parquet schema (physical types for catalog bloom probes).
    pub descr: &'a parquet::schema::types::SchemaDescriptor,
    /// A file already opened (the one the schema came from), with the bytes it fetched.
    pub opened: Option<&'a StorageFile>,
}

/// Plan one file: partition values, then row groups, then pages.
pub fn plan_file(
    path: &str,
    partition_values: &[Option<Value>],
    listed: &FileIdentity,
    ctx: &PlanContext,
) -> Result<FilePlan> {
    let mut m = PlanMetrics {
        files: 1,
        ..Default::default()
    };
    // Binding copies the predicate: only files with partition values need it.
    let predicate: Option<Cow<Predicate>> = ctx.predicate.map(|p| {
        if partition_values.is_empty() {
            Cow::Borrowed(p)
        } else {
            Cow::Owned(p.bind_partitions(partition_values))
        }
    });
    if matches!(
        predicate.as_deref(),
        Some(Predicate::Const(Some(false)) | Predicate::Const(None))
    ) {
        m.files_pruned = 1;
        m.files_pruned_by_partition = 1;
        return Ok(FilePlan {
            units: Vec::new(),
            metrics: m,
            summary: format!("{path}: pruned by partition values"),
            warnings: Vec::new(),
        });
    }
    let predicate = predicate.filter(|p| **p != Predicate::Const(Some(true)));
    let mut catalog_warning = None;
    if let Some(catalog) = ctx.catalog {
        match catalog.lookup(path, listed) {
            Lookup::Fresh(entry) => {
                if let Some(pred) = &predicate {
                    let mut by_bloom = |leaf: &Predicate| {
                        let Some(leaf_idx) = leaf.column().and_then(|c| c.leaf) else {
                            return true;
                        };
                        let d = ctx.descr.column(leaf_idx);
                        catalog.bounds_may_match(entry, leaf, d.physical_type())
                            && catalog.bloom_may_match(
                                entry,
                                leaf,
                                d.physical_type(),
                                d.type_length(),
                            )
                    };
                    if !stats::may_match(pred, &mut by_bloom) {
                        m.files_pruned = 1;
                        m.files_pruned_by_catalog = 1;
                        return Ok(FilePlan {
                            units: Vec::new(),
                            metrics: m,
                            summary: format!(
                                "{path}: pruned by the catalog's bounds and bloom filters"
                            ),
                            warnings: Vec::new(),
                        });
                    }
                }
                if ctx.cache.contains(listed) {
                    m.footers_from_catalog = 1;
                } else {
                    match entry.metadata() {
                        Ok(md) => {
                            ctx.cache.seed(listed.clone(), Arc::new(md), true);
                            m.footers_from_catalog = 1;
                        }
                        Err(e) => {
                            catalog_warning = Some(format!(
                                "{path}: the catalog's footer is unusable ({e}); read from the file"
                            ));
                            m.files_not_in_catalog = 1;
                        }
                    }
                }
            }
            Lookup::Changed | Lookup::Unknown => m.files_not_in_catalog = 1,
        }
    }
    let file = match ctx.opened {
        Some(f) if f.path() == path && f.identity().as_ref() == listed => f.clone(),
        _ => StorageFile::open_listed(path, listed, ctx.io.clone())?,
    };
    let (md, outcome) = ctx.cache.get(&file, false)?;
    if outcome.footer_hit {
        m.footer_cache_hits += 1;
    } else {
        m.footers_read += 1;
    }
    if outcome.page_index_loaded {
        m.page_indexes_read += 1;
    }
    check_schema(path, &md, ctx.schema)?;
    m.row_groups = md.num_row_groups() as u64;

    // Row groups: statistics first, then bloom filters and embedded indexes on what
    // statistics kept.
    let mut candidates = Vec::new();
    for rg in 0..md.num_row_groups() {
        if let Some(pred) = &predicate {
            let mut by_stats = |leaf: &Predicate| leaf_stats_may_match(&md, rg, leaf);
            if !stats::may_match(pred, &mut by_stats) {
                m.row_groups_pruned_by_stats += 1;
                continue;
            }
        }
        candidates.push(rg);
    }
    if let Some(pred) = predicate.as_ref().filter(|_| !candidates.is_empty()) {
        let leaves: Vec<usize> = pred.columns().iter().filter_map(|c| c.leaf).collect();
        let page_index = has_page_index(&md) && md.offset_index().is_none();
        fetch::prefetch_for_planning(&file, &md, &leaves, &candidates, page_index)?;
    }
    let mut indexes = FileIndexes::new(&file, &md);
    let mut verdicts: Vec<(*const Predicate, LeafVerdict)> = Vec::new();
    let mut index_kinds: Vec<&'static str> = Vec::new();
    if let Some(pred) = predicate.as_ref().filter(|_| !candidates.is_empty()) {
        if !indexes.is_empty() {
            for leaf in pred.leaves() {
                if let Some(v) = indexes.verdict(leaf) {
                    index_kinds.extend(v.kinds.iter().copied());
                    verdicts.push((leaf as *const Predicate, v));
                }
            }
        }
    }
    let verdict = |leaf: &Predicate| {
        verdicts
            .iter()
            .find(|(p, _)| std::ptr::eq(*p, leaf))
            .map(|(_, v)| v)
    };
    m.indexes_read = indexes.indexes_read;
    let mut warnings = std::mem::take(&mut indexes.warnings);
    m.indexes_skipped = warnings.len() as u64;
    warnings.extend(catalog_warning);
    index_kinds.sort_unstable();
    index_kinds.dedup();
    if let Some(pred) = &predicate {
        if !verdicts.is_empty()
            && !stats::may_match(pred, &mut |leaf| verdict(leaf).is_none_or(|v| v.any()))
        {
            m.files_pruned = 1;
            m.files_pruned_by_index = 1;
            m.row_groups_pruned_by_index = candidates.len() as u64;
            return Ok(FilePlan {
                units: Vec::new(),
                metrics: m,
                summary: format!(
                    "{path}: pruned by embedded {} index",
                    index_kinds.join(" and ")
                ),
                warnings,
            });
        }
    }

    let mut kept = Vec::new();
    let mut blooms: HashMap<(usize, usize), Option<parquet::bloom_filter::Sbbf>> = HashMap::new();
    for rg in candidates {
        let Some(pred) = &predicate else {
            kept.push(rg);
            continue;
        };
        let mut failure = None;
        let mut by_bloom = |leaf: &Predicate| {
            if !leaf_stats_may_match(&md, rg, leaf) {
                return false;
            }
            if !bloom::is_probe(leaf) {
                return true;
            }
            let Some(col) = leaf.column() else {
                return true;
            };
            let Some(leaf_idx) = col.leaf else {
                return true;
            };
            let chunk = md.row_group(rg).column(leaf_idx);
            let filter = blooms.entry((rg, leaf_idx)).or_insert_with(|| {
                chunk.bloom_filter_offset()?;
                m.bloom_filters_read += 1;
                match bloom::read_bloom(&file, chunk) {
                    Ok(f) => f,
                    Err(e) => {
                        failure.get_or_insert(e);
                        None
                    }
                }
            });
            match filter {
                Some(sbbf) => {
                    let descr = md.file_metadata().schema_descr().column(leaf_idx);
                    bloom::leaf_may_match(leaf, sbbf, descr.physical_type(), descr.type_length())
                }
                None => true,
            }
        };
        let survives = stats::may_match(pred, &mut by_bloom);
        if let Some(e) = failure {
            return Err(e);
        }
        if !survives {
            m.row_groups_pruned_by_bloom += 1;
            continue;
        }
        if !verdicts.is_empty() {
            let mut by_index = |leaf: &Predicate| {
                leaf_stats_may_match(&md, rg, leaf) && verdict(leaf).is_none_or(|v| v.row_group(rg))
            };
            if !stats::may_match(pred, &mut by_index) {
                m.row_groups_pruned_by_index += 1;
                continue;
            }
        }
        kept.push(rg);
    }

    // Pages: load the page index only when a row group is left to prune.
    let wants_index = predicate.is_some() && !kept.is_empty() && has_page_index(&md);
    let md = if wants_index {
        let (md, outcome) = ctx.cache.get(&file, true)?;
        if outcome.page_index_loaded {
            m.page_indexes_read += 1;
        }
        md
    } else {
        md
    };
    let mut needed: Vec<usize> = ctx.projected_leaves.to_vec();
    if let Some(p) = &predicate {
        needed.extend(p.columns().iter().filter_map(|c| c.leaf));
    }
    needed.sort_unstable();
    needed.dedup();

    let options =
        ArrowReaderOptions::new().with_page_index_policy(if md.offset_index().is_some() {
            PageIndexPolicy::Optional
        } else {
            PageIndexPolicy::Skip
        });
    let reader_metadata = ArrowReaderMetadata::try_new(md.clone(), options)
        .map_err(|e| Error::from(e).in_file(path))?;
    let planned = Arc::new(PlannedFile {
        path: path.to_string(),
        identity: file.identity().as_ref().clone(),
        reader_metadata,
        predicate: predicate.as_deref().cloned(),
        partition_values: partition_values.to_vec(),
    });
    let mut units = Vec::new();
    for rg in kept {
        let rows = md.row_group(rg).num_rows().max(0) as u64;
        let ranges = match &predicate {
            Some(p) if !verdicts.is_empty() => {
                let by_pages = page::row_ranges(&md, rg, p);
                let ranges = page::row_ranges_with(&md, rg, p, &mut |leaf| {
                    verdict(leaf).map(|v| v.ranges(rg))
                });
                m.rows_pruned_by_index += by_pages.row_count() - ranges.row_count();
                ranges
            }
            Some(p) if md.offset_index().is_some() => page::row_ranges(&md, rg, p),
            _ => RowRanges::full(rows),
        };
        for &leaf in &needed {
            if let Some(oi) = page::offset_index(&md, rg, leaf) {
                let bounds = page::page_boundaries(oi, rows);
                for w in bounds.windows(2) {
                    m.pages += 1;
                    if !ranges.overlaps(&(w[0]..w[1].max(w[0]))) {
                        m.pages_pruned += 1;
                    }
                }
            }
        }
        if ranges.is_empty() {
            m.row_groups_pruned_by_page_index += 1;
            continue;
        }
        m.rows_selected += ranges.row_count();
        units.push(ScanUnit {
            file: planned.clone(),
            row_group: rg,
            ranges,
            row_group_rows: rows,
        });
    }
    if units.is_empty() {
        m.files_pruned = 1;
    }
    let by_index = if index_kinds.is_empty() {
        String::new()
    } else {
        format!(
            ", {} by embedded {} index ({} rows ruled out within row groups)",
            m.row_groups_pruned_by_index,
            index_kinds.join(" and "),
            m.rows_pruned_by_index
        )
    };
    let summary = format!(
        "{path}: {} row groups, {} pruned by statistics, {} by bloom filters{by_index}, {} by page index; {} rows selected{}",
        m.row_groups,
        m.row_groups_pruned_by_stats,
        m.row_groups_pruned_by_bloom,
        m.row_groups_pruned_by_page_index,
        m.rows_selected,
        if predicate.is_some() && !has_page_index(&md) {
            " (no page index)"
        } else {
            ""
        }
    );
    Ok(FilePlan {
        units,
        metrics: m,
        summary,
        warnings,
    })
}

pub(crate) fn leaf_stats_may_match(md: &ParquetMetaData, rg: usize, leaf: &Predicate) -> bool {
    match leaf
        .column()
        .and_then(|c| stats::row_group_stats(md, rg, c))
    {
        Some(s) => stats::leaf_may_match(leaf, &s),
        None => true,
    }
}

/// Whether any column chunk declares a page index.
pub(crate) fn has_page_index(md: &ParquetMetaData) -> bool {
    md.row_groups().iter().any(|rg| {
        rg.columns()
            .iter()
            .any(|c| c.offset_index_offset().is_some() && c.column_index_offset().is_some())
    })
}

/// Every file of a dataset must produce the dataset's schema: bound predicates refer to
/// leaf columns by position.
pub(crate) fn check_schema(
    path: &str,
    md: &ParquetMetaData,
    expected: &arrow_schema::Schema,
) -> Result<()> {
    let got = parquet::arrow::parquet_to_arrow_schema(
        md.file_metadata().schema_descr(),
        md.file_metadata().key_value_metadata(),
    )
    .map_err(|e| Error::from(e).in_file(path))?;
    let same = got.fields().len() == expected.fields().len()
        && got
            .fields()
            .iter()
            .zip(expected.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if !same {
        return Err(Error::Source(format!(
            "{path}: its schema differs from the first file's; every file of a source must have the same columns and types (got {:?}, expected {:?})",
            got.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>(),
            expected.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>(),
        )));
    }
    Ok(())
}
