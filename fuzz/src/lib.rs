//! What every fuzz target shares: the fixtures, the bug check, and the structure-aware
//! mutator of Parquet files.

pub mod mutate;

/// The file the index, catalog, units and predicate targets build on
/// (`scripts/fuzz_seeds.py` writes it; the payload seeds were built over it).
pub const FIXTURE: &[u8] = include_bytes!("../fixtures/data.parquet");
/// The fixture with an index of every kind, for the locator target.
pub const INDEXED: &[u8] = include_bytes!("../fixtures/indexed.parquet");

/// Run target `name` on `data`, aborting (a crash the fuzzer saves) on a bug as
/// `pqindex_core::fuzzing::check` defines it.
pub fn run(name: &str, data: &[u8]) {
    let outcome = pqindex_core::fuzzing::check(|| {
        pqindex_core::fuzzing::run_target(name, data, FIXTURE, INDEXED)
            .unwrap_or_else(|| panic!("no fuzz target {name}"))
    });
    if let Err(bug) = outcome {
        eprintln!("{name}: {bug}");
        std::process::abort();
    }
}
