//! Replays every fuzz target's saved corpus (`fuzz/corpus/<target>/`) and every crash the
//! fuzzers found (`fuzz/regressions/<target>/`) through the entry points the targets use,
//! so a regression fails `cargo test` without a fuzzer. A bug is what the targets call one
//! (`pqindex_core::fuzzing::check`): a panic that escapes, or any panic in pqindex's own
//! code; a hang stalls the test.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pqindex_core::fuzzing::{check, run_target, TARGETS};

const FIXTURE: &[u8] = include_bytes!("../../../fuzz/fixtures/data.parquet");
const INDEXED: &[u8] = include_bytes!("../../../fuzz/fixtures/indexed.parquet");

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.retain(|f| f.is_file());
    files.sort();
    files
}

#[test]
fn every_saved_input_replays_without_a_bug() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut total = 0;
    // PQINDEX_FUZZ_VERBOSE=1 shows what each input gave (most seeds should be Ok).
    let verbose = std::env::var_os("PQINDEX_FUZZ_VERBOSE").is_some();
    for target in TARGETS {
        let files: Vec<PathBuf> = ["corpus", "regressions"]
            .iter()
            .flat_map(|d| inputs(&fuzz.join(d).join(target)))
            .collect();
        assert!(!files.is_empty(), "{target}: no saved inputs");
        for f in files {
            let data = std::fs::read(&f).expect("readable input");
            total += 1;
            match check(|| run_target(target, &data, FIXTURE, INDEXED)) {
                Err(bug) => failures.push(format!("{target} {}: {bug}", f.display())),
                Ok(outcome) if verbose => eprintln!("{target} {}: {outcome:?}", f.display()),
                Ok(_) => {}
            }
        }
    }
    eprintln!(
        "replayed {total} inputs of {} targets in {:.1} s",
        TARGETS.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
