//! Bloom-filter probing through `prune::bloom::leaf_may_match`: a scalar `=` (a hit and a
//! miss) and IN-lists of 10/100/1000 values that are all absent (so every value is
//! probed and the row group is pruned), on Int64 and Utf8 columns. The raw `Sbbf::check`
//! loop over the same values is the baseline.

use std::hint::black_box;
use std::time::Duration;

use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use pqindex_core::bench::leaf_may_match;
use pqindex_core::bench::{bind, sql, BindSchema, Predicate};

mod common;
use common::Rng;

/// Distinct values in the filter: one row group's worth.
const NDV: u64 = 100_000;
const FPP: f64 = 0.01;
const LIST_SIZES: [usize; 3] = [10, 100, 1000];

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ])
}

/// Parse and bind `sql` against the bench schema, as a scan does.
fn predicate(sql_text: &str) -> Predicate {
    let arrow = schema();
    let descr = ArrowSchemaConverter::new().convert(&arrow).unwrap();
    let ast = sql::parse(sql_text, 0).unwrap();
    bind(
        &ast,
        &BindSchema {
            arrow: &arrow,
            native: &arrow,
            parquet: &descr,
            partitions: &[],
        },
    )
    .unwrap()
}

fn key_string(v: u64) -> String {
    format!("Customer#{v:012}")
}

/// A column type under test: how its values are inserted, written in SQL and checked.
struct Case {
    name: &'static str,
    column: &'static str,
    physical: PhysicalType,
    sbbf: Sbbf,
    /// Values in the filter.
    present: Vec<u64>,
    /// Values the filter answers "absent" for (false positives removed).
    absent: Vec<u64>,
    literal: fn(u64) -> String,
    /// The plain encoding writers hash.
    encode: fn(u64) -> Vec<u8>,
}

impl Case {
    fn new(
        name: &'static str,
        column: &'static str,
        physical: PhysicalType,
        literal: fn(u64) -> String,
        encode: fn(u64) -> Vec<u8>,
    ) -> Self {
        let mut rng = Rng(7);
        let mut sbbf = Sbbf::new_with_ndv_fpp(NDV, FPP).unwrap();
        // Present values are even, candidates for absent ones odd.
        let present: Vec<u64> = (0..NDV).map(|_| (rng.next() >> 20) & !1).collect();
        for &v in &present {
            sbbf.insert(&encode(v)[..]);
        }
        let max = *LIST_SIZES.iter().max().unwrap();
        let absent: Vec<u64> = std::iter::repeat_with(|| (rng.next() >> 20) | 1)
            .filter(|&v| !sbbf.check(&encode(v)[..]))
            .take(max)
            .collect();
        Case {
            name,
            column,
            physical,
            sbbf,
            present,
            absent,
            literal,
            encode,
        }
    }

    fn eq(&self, v: u64) -> Predicate {
        predicate(&format!("{} = {}", self.column, (self.literal)(v)))
    }

    fn in_list(&self, values: &[u64]) -> Predicate {
        let items: Vec<String> = values.iter().map(|&v| (self.literal)(v)).collect();
        predicate(&format!("{} IN ({})", self.column, items.join(", ")))
    }

    fn may_match(&self, p: &Predicate) -> bool {
        leaf_may_match(p, &self.sbbf, self.physical, 0)
    }
}

fn bench_bloom(c: &mut Criterion) {
    let cases = [
        Case::new(
            "int64",
            "k",
            PhysicalType::INT64,
            |v| v.to_string(),
            |v| (v as i64).to_le_bytes().to_vec(),
        ),
        Case::new(
            "utf8",
            "s",
            PhysicalType::BYTE_ARRAY,
            |v| format!("'{}'", key_string(v)),
            |v| key_string(v).into_bytes(),
        ),
    ];
    for case in &cases {
        let mut g = c.benchmark_group(format!("bloom/{}", case.name));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));

        g.throughput(Throughput::Elements(1));
        let hit = case.eq(case.present[0]);
        assert!(case.may_match(&hit));
        g.bench_function("eq_hit", |b| b.iter(|| case.may_match(black_box(&hit))));
        let miss = case.eq(case.absent[0]);
        assert!(!case.may_match(&miss));
        g.bench_function("eq_miss", |b| b.iter(|| case.may_match(black_box(&miss))));

        for n in LIST_SIZES {
            let values = &case.absent[..n];
            let pred = case.in_list(values);
            assert!(matches!(&pred, Predicate::InList { values, .. } if values.len() == n));
            assert!(!case.may_match(&pred), "an all-absent IN list must prune");
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new("in_list_miss", n), &pred, |b, p| {
                b.iter(|| case.may_match(black_box(p)))
            });
            // Baseline: the same probes straight on the filter, values pre-encoded.
            let encoded: Vec<Vec<u8>> = values.iter().map(|&v| (case.encode)(v)).collect();
            g.bench_with_input(
                BenchmarkId::new("sbbf_check_baseline", n),
                &encoded,
                |b, vs| b.iter(|| black_box(vs).iter().any(|v| case.sbbf.check(&v[..]))),
            );
        }
        g.finish();
    }
}

criterion_group!(benches, bench_bloom);
criterion_main!(benches);
