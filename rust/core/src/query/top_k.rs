//! `ORDER BY ... LIMIT k`: the first `k` rows in an order, reading only the units whose
//! statistics say they can hold one of them.
//!
//! Each unit is cut into its pages of the first order column where the page index has
//! them, and each piece gets the bound the statistics give that column (the page's, else
//! the row group's; the max when descending, the min when ascending; a hive partition
//! value is its own bound).
//! Units without a usable bound are read first, then the others best bound first: the
//! first alone, then a few at a time. Once `k` rows are held, a unit whose bound sorts after the `k`-th row cannot
//! improve them and is not read, nor is any unit after it, as DataFusion's dynamic TopK
//! filter prunes. NULLs sort last in both directions (DuckDB's default), so a unit of only
//! NULLs comes last. Float columns are read whole: statistics leave NaN out, and NaN sorts
//! above every number.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_cast::cast;
use arrow_ord::ord::make_comparator;
use arrow_ord::sort::{lexsort_to_indices, SortColumn, SortOptions};
use arrow_schema::{DataType, Schema};
use arrow_select::concat::concat_batches;
use arrow_select::take::take_record_batch;

use crate::error::{Error, Result};
use crate::io::IoStats;
use crate::plan::{Metrics, OutputShape, RowRanges, ScanUnit};
use crate::predicate::bind::{bind_column, BindSchema};
use crate::predicate::expr::Column;
use crate::predicate::value::{to_scalar_array, Domain, Value};
use crate::prune::page_index::page_stats;
use crate::prune::statistics::{row_group_stats, ChunkStats};
use crate::query::stream::ScanStream;

/// One column of an `ORDER BY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderKey {
    pub column: String,
    pub descending: bool,
}

/// What a unit's statistics say about its best value of the first order column.
#[derive(Debug, Clone)]
enum Bound {
    /// Nothing usable: read it.
    Unknown,
    /// No row sorts before this value.
    Value(Value),
    /// Only NULLs, which sort last.
    OnlyNull,
}

/// The output columns the keys sort, checked when the scan is planned.
pub(crate) fn key_columns(schema: &Schema, keys: &[OrderKey]) -> Result<Vec<usize>> {
    keys.iter()
        .map(|k| {
            let i = schema.index_of(&k.column).map_err(|_| {
                Error::InvalidArgument(format!(
                    "order_by column {} is not among the columns read ({})",
                    k.column,
                    schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            let t = schema.field(i).data_type();
            if t.is_nested() {
                return Err(Error::InvalidArgument(format!(
                    "order_by column {} is {t}, which has no order",
                    k.column
                )));
            }
            Ok(i)
        })
        .collect()
}

/// A top-`k` read, ready to run: units in the order they are read, with their bounds.
pub(crate) struct TopK {
    units: Vec<(ScanUnit, Bound)>,
    /// The first order column as predicates bind it, for comparing bounds with rows.
    column: Option<Column>,
    keys: Vec<(usize, SortOptions)>,
    k: usize,
    shape: OutputShape,
    io: Arc<IoStats>,
    metrics: Arc<Metrics>,
    threads: usize,
    budget: usize,
}

impl TopK {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        units: Vec<ScanUnit>,
        order: &[OrderKey],
        k: u64,
        schema: &BindSchema,
        shape: OutputShape,
        io: Arc<IoStats>,
        metrics: Arc<Metrics>,
        threads: usize,
        budget: usize,
    ) -> Result<TopK> {
        let indices = key_columns(&shape.schema, order)?;
        let keys: Vec<(usize, SortOptions)> = indices
            .into_iter()
            .zip(order)
            .map(|(i, o)| {
                (
                    i,
                    SortOptions {
                        descending: o.descending,
                        nulls_first: false,
                    },
                )
            })
            .collect();
        let first = &order[0];
        let column = bind_column(std::slice::from_ref(&first.column), schema)
            .ok()
            .filter(|c| c.prunable && !matches!(c.domain, Domain::Float32 | Domain::Float64));
        let mut units: Vec<(ScanUnit, Bound)> = units
            .into_iter()
            .flat_map(|u| match &column {
                Some(c) => pieces(u, c, first.descending),
                None => vec![(u, Bound::Unknown)],
            })
            .collect();
        // Stable: units of one rank keep plan order.
        units.sort_by(|(_, a), (_, b)| rank(a, b, first.descending));
        Ok(TopK {
            units,
            column,
            keys,
            k: usize::try_from(k).unwrap_or(usize::MAX),
            shape,
            io,
            metrics,
            threads,
            budget,
        })
    }

    /// The stream of the top rows: they are found when it is first read.
    pub(crate) fn stream(self) -> ScanStream {
        let schema = self.shape.schema.clone();
        ScanStream::deferred(schema, Box::new(move || self.run()))
    }

    fn run(mut self) -> Result<Vec<RecordBatch>> {
        let mut best = RecordBatch::new_empty(self.shape.schema.clone());
        if self.k == 0 {
            return Ok(Vec::new());
        }
        // The best unit alone first (it often holds all k rows), then more at a time.
        let widest = self.threads.max(1) * 2;
        let mut wave = 1;
        let mut units = std::mem::take(&mut self.units).into_iter().peekable();
        while units.peek().is_some() {
            let mut batch_units = Vec::new();
            while batch_units.len() < wave {
                let Some((unit, bound)) = units.next() else {
                    break;
                };
                if !self.may_improve(&best, &bound) {
                    // Units come best bound first: none after this one can improve either.
                    units = Vec::new().into_iter().peekable();
                    break;
                }
                batch_units.push(unit);
            }
            if batch_units.is_empty() {
                break;
            }
            wave = (wave * 2).min(widest);
            let stream = ScanStream::start(
                batch_units,
                self.shape.clone(),
                self.io.clone(),
                self.metrics.clone(),
                self.threads,
                self.budget,
                true,
            );
            for batch in stream {
                let batch = batch.map_err(Error::from)?;
                if batch.num_rows() > 0 {
                    best = self.merge(&best, &batch)?;
                }
            }
        }
        let size = self.shape.batch_size.max(1);
        Ok((0..best.num_rows())
            .step_by(size)
            .map(|at| best.slice(at, size.min(best.num_rows() - at)))
            .collect())
    }

    /// The first `k` rows of `best` and `batch` together, in order.
    fn merge(&self, best: &RecordBatch, batch: &RecordBatch) -> Result<RecordBatch> {
        let both = concat_batches(&best.schema(), [best, batch])?;
        let columns: Vec<SortColumn> = self
            .keys
            .iter()
            .map(|(i, options)| SortColumn {
                values: both.column(*i).clone(),
                options: Some(*options),
            })
            .collect();
        let order = lexsort_to_indices(&columns, Some(self.k))?;
        Ok(take_record_batch(&both, &order)?)
    }

    /// Whether a unit with `bound` may hold a row sorting before the `k`-th of `best`.
    fn may_improve(&self, best: &RecordBatch, bound: &Bound) -> bool {
        if best.num_rows() < self.k {
            return true;
        }
        let (i, options) = self.keys[0];
        let kth = best.column(i).slice(self.k - 1, 1);
        if kth.is_null(0) {
            return true;
        }
        let value = match bound {
            Bound::Unknown => return true,
            Bound::OnlyNull => return false,
            Bound::Value(v) => v,
        };
        let Some(column) = &self.column else {
            return true;
        };
        match compare(value, &column.data_type, &kth, options) {
            Some(Ordering::Greater) => false,
            // Rows equal on the first key may still sort first by the next ones.
            Some(Ordering::Equal) => self.keys.len() > 1,
            _ => true,
        }
    }
}

/// How `value` (of a column of `data_type`) sorts against the one value of `row`; `None`
/// when they cannot be compared.
fn compare(
    value: &Value,
    data_type: &DataType,
    row: &ArrayRef,
    options: SortOptions,
) -> Option<Ordering> {
    let bound = to_scalar_array(value, data_type).ok()?;
    let row = if row.data_type() == bound.data_type() {
        row.clone()
    } else {
        cast(row, bound.data_type()).ok()?
    };
    let cmp = make_comparator(bound.as_ref(), row.as_ref(), options).ok()?;
    Some(cmp(0, 0))
}

/// `unit` cut into its pages of `column`, each with its bound, where the page index has
/// them; else the unit whole with its row group's bound.
fn pieces(unit: ScanUnit, column: &Column, descending: bool) -> Vec<(ScanUnit, Bound)> {
    let md = unit.file.reader_metadata.metadata();
    let pages = match (column.leaf, &unit.file.columns) {
        (Some(_), None) => page_stats(md, unit.row_group, column),
        _ => None,
    };
    let Some(pages) = pages else {
        let b = bound(&unit, column, descending);
        return vec![(unit, b)];
    };
    pages
        .into_iter()
        .filter_map(|(rows, stats)| {
            let ranges = unit.ranges.intersect(&RowRanges::from_ranges(vec![rows]));
            (!ranges.is_empty()).then(|| {
                let piece = ScanUnit {
                    ranges,
                    conjunct_rows: Vec::new(),
                    ..unit.clone()
                };
                (piece, stats_bound(stats, descending))
            })
        })
        .collect()
}

/// The bound `stats` give: the best value a row they describe can hold.
fn stats_bound(stats: ChunkStats, descending: bool) -> Bound {
    if stats.all_null || (stats.rows > 0 && stats.null_count == Some(stats.rows)) {
        return Bound::OnlyNull;
    }
    match if descending { stats.max } else { stats.min } {
        Some(v) => Bound::Value(v),
        None => Bound::Unknown,
    }
}

/// The bound of `unit` for `column`: the best value a row of its row group can hold.
fn bound(unit: &ScanUnit, column: &Column, descending: bool) -> Bound {
    if let Some(p) = column.partition {
        return match unit.file.partition_values.get(p) {
            Some(Some(v)) => Bound::Value(v.clone()),
            Some(None) => Bound::OnlyNull,
            None => Bound::Unknown,
        };
    }
    // A table's file may store the column under another leaf.
    if unit.file.columns.is_some() {
        return Bound::Unknown;
    }
    let md = unit.file.reader_metadata.metadata();
    match row_group_stats(md, unit.row_group, column) {
        Some(stats) => stats_bound(stats, descending),
        None => Bound::Unknown,
    }
}

/// The read order of two bounds: unknown first, then best value first, NULLs last.
fn rank(a: &Bound, b: &Bound, descending: bool) -> Ordering {
    let class = |x: &Bound| match x {
        Bound::Unknown => 0,
        Bound::Value(_) => 1,
        Bound::OnlyNull => 2,
    };
    match (a, b) {
        (Bound::Value(x), Bound::Value(y)) => {
            let o = x.sql_cmp(y);
            if descending {
                o.reverse()
            } else {
                o
            }
        }
        _ => class(a).cmp(&class(b)),
    }
}
