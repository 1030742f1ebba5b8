//! Join keys as a predicate: the rows of a scan whose key is among a set of keys (a left
//! semi join; a NULL key matches nothing). Each key column becomes an IN list of its
//! distinct values, which every source of evidence prunes with; with several key columns,
//! a tuple leaf then keeps exactly the rows whose combination of values is a key.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_cast::{cast_with_options, CastOptions};

use crate::error::{Error, Result};
use crate::predicate::bind::{bind_column, BindSchema};
use crate::predicate::expr::{Column, Predicate};
use crate::predicate::key_tuples::KeyTuples;
use crate::predicate::value_set::distinct_values;

/// The keys of a semi join: the scan's key columns (`on`) and, for each, the keys' values
/// (arrays of one length: key `i` is row `i` of every array).
#[derive(Debug, Clone)]
pub struct KeySpec {
    pub on: Vec<String>,
    pub values: Vec<ArrayRef>,
}

/// The predicate a semi join on `spec` adds to a scan bound against `schema`.
pub fn bind_keys(spec: &KeySpec, schema: &BindSchema) -> Result<Predicate> {
    if spec.on.is_empty() || spec.on.len() != spec.values.len() {
        return Err(Error::InvalidArgument(format!(
            "keys need one array per key column: {} columns, {} arrays",
            spec.on.len(),
            spec.values.len()
        )));
    }
    let rows = spec.values[0].len();
    if spec.values.iter().any(|v| v.len() != rows) {
        return Err(Error::InvalidArgument(
            "the key arrays have different lengths".into(),
        ));
    }
    let mut cols: Vec<Column> = Vec::new();
    let mut cast: Vec<ArrayRef> = Vec::new();
    for (name, values) in spec.on.iter().zip(&spec.values) {
        let path: Vec<String> = name.split('.').map(str::to_string).collect();
        let col = bind_column(&path, schema)?;
        // A key the column cannot hold (out of range, not a number) matches nothing.
        let options = CastOptions {
            safe: true,
            ..Default::default()
        };
        let as_column = cast_with_options(values, &col.data_type, &options).map_err(|e| {
            Error::predicate(format!(
                "keys of type {} cannot be compared with column {} ({}): {e}",
                values.data_type(),
                col.name,
                col.data_type
            ))
        })?;
        if cols.iter().any(|c| c.path == col.path) {
            return Err(Error::InvalidArgument(format!(
                "key column {} is named twice",
                col.name
            )));
        }
        cols.push(col);
        cast.push(as_column);
    }
    let mut parts = Vec::new();
    for (col, values) in cols.iter().zip(&cast) {
        let distinct = distinct_values(values.as_ref()).map_err(Error::from)?;
        parts.push(if distinct.is_empty() {
            Predicate::NullOr {
                col: col.clone(),
                value: false,
            }
        } else {
            Predicate::InList {
                col: col.clone(),
                values: distinct,
                negated: false,
            }
        });
    }
    if cols.len() > 1 {
        if let Some(c) = cols.iter().find(|c| c.partition.is_some()) {
            return Err(Error::unsupported(format!(
                "keys on several columns cannot include the partition column {}",
                c.name
            )));
        }
        parts.push(Predicate::InKeys {
            keys: Arc::new(KeyTuples::new(
                &cols.iter().map(|c| c.data_type.clone()).collect::<Vec<_>>(),
                &cast,
            )?),
            cols,
            negated: false,
        });
    }
    Ok(Predicate::and(parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    use arrow_array::{Int32Array, StringArray};

    use crate::metadata::MetadataCache;
    use crate::query::scan::{Scan, ScanOptions};
    use crate::testing::{int64s, keys, strings, write_file, Layout};

    /// 10,000 rows: `k` sorted, `g` = k % 7, `s` = "s{k % 100}" (NULL every 97th row).
    fn file(dir: &std::path::Path) -> String {
        write_file(
            dir,
            "t.parquet",
            vec![
                ("k", int64s(0..10_000)),
                ("g", int64s((0..10_000).map(|k| k % 7))),
                (
                    "s",
                    strings((0..10_000).map(|k| (k % 97 != 0).then(|| format!("s{}", k % 100)))),
                ),
            ],
            Layout {
                row_group_size: 2_000,
                page_rows: Some(250),
                ..Default::default()
            },
        )
    }

    fn scan(
        path: &str,
        on: &[&str],
        values: Vec<ArrayRef>,
        predicate: Option<&str>,
    ) -> (Vec<i64>, Scan) {
        let opts = ScanOptions {
            predicate: predicate.map(Into::into),
            columns: Some(vec!["k".into()]),
            keys: Some(KeySpec {
                on: on.iter().map(|s| s.to_string()).collect(),
                values,
            }),
            ..Default::default()
        };
        let s = Scan::plan(
            &[path.to_string()],
            &opts,
            &MetadataCache::new(1 << 24),
            &AtomicBool::new(false),
        )
        .unwrap();
        let mut rows = keys(s.stream());
        rows.sort_unstable();
        (rows, s)
    }

    fn metric(s: &Scan, name: &str) -> u64 {
        s.metrics().into_iter().find(|(n, _)| *n == name).unwrap().1
    }

    #[test]
    fn keys_select_their_rows_and_prune_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        // Keys of another integer type, with duplicates, a NULL and one out of range.
        let values: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(17),
            Some(9_999),
            None,
            Some(17),
            Some(123_456),
            Some(4_000),
        ]));
        let (rows, s) = scan(&path, &["k"], vec![values.clone()], None);
        assert_eq!(rows, vec![17, 4_000, 9_999]);
        assert_eq!(metric(&s, "rows_selected"), 3 * 250);
        let (rows, _) = scan(&path, &["k"], vec![values], Some("k > 100"));
        assert_eq!(rows, vec![4_000, 9_999]);
        // Many keys: every third key of a range.
        let many: ArrayRef = int64s((5_000..7_000).step_by(3));
        let (rows, s) = scan(&path, &["K"], vec![many], None);
        assert_eq!(rows, (5_000..7_000).step_by(3).collect::<Vec<_>>());
        assert_eq!(metric(&s, "rows_selected"), 2_000);
        // No key: no row, nothing read.
        let (rows, s) = scan(&path, &["k"], vec![int64s([])], None);
        assert!(rows.is_empty());
        assert_eq!(metric(&s, "pages_read"), 0);
    }

    #[test]
    fn several_key_columns_match_as_tuples() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let k = int64s([100, 101, 194, 7]);
        let s: ArrayRef = Arc::new(StringArray::from(vec![
            Some("s0"),
            Some("s1"),
            Some("s94"),
            None,
        ]));
        // (100, "s0") and (101, "s1") are rows; (194, "s94") is not ("s94" is at 94, 194
        // holds NULL: 194 = 2 x 97); a NULL key matches nothing.
        let (rows, _) = scan(&path, &["k", "s"], vec![k, s], None);
        assert_eq!(rows, vec![100, 101]);
        let (rows, _) = scan(
            &path,
            &["g", "s"],
            vec![int64s([100 % 7]), strings([Some("s0")])],
            None,
        );
        let expected: Vec<i64> = (0..10_000)
            .filter(|k| k % 7 == 2 && k % 100 == 0 && k % 97 != 0)
            .collect();
        assert_eq!(rows, expected);
    }

    #[test]
    fn bad_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path());
        let opts = |on: Vec<String>, values: Vec<ArrayRef>| ScanOptions {
            keys: Some(KeySpec { on, values }),
            ..Default::default()
        };
        let plan = |o: ScanOptions| {
            Scan::plan(
                std::slice::from_ref(&path),
                &o,
                &MetadataCache::new(1 << 20),
                &AtomicBool::new(false),
            )
        };
        assert!(matches!(
            plan(opts(vec!["nope".into()], vec![int64s([1])])),
            Err(Error::Predicate(_))
        ));
        assert!(matches!(
            plan(opts(vec!["k".into(), "g".into()], vec![int64s([1])])),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            plan(opts(
                vec!["k".into(), "k".into()],
                vec![int64s([1]), int64s([1])]
            )),
            Err(Error::InvalidArgument(_))
        ));
    }
}
