#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 60) and print the executions per target.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Each target
# starts from its committed seeds (fuzz/corpus/<target>/) and crash regressions
# (fuzz/regressions/<target>/); what it learns goes to fuzz/target/work/<target>/ (not
# committed), crashes to fuzz/artifacts/<target>/. A bug is a panic in pqindex's code or
# one that escapes, an abort, a run over 10 s (-timeout), more than 2 GiB resident
# (-rss_limit_mb) or one allocation over 512 MiB (-malloc_limit_mb): inputs are a few KB.
set -euo pipefail

secs=${1:-60}
shift || true
cd "$(dirname "$0")/../fuzz"
flags=(-O -a)
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo +nightly fuzz list); fi

cargo +nightly fuzz build "${flags[@]}" >/dev/null 2>&1
# Thread-local destructor lists of live pool threads are not leaks (see the file).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
printf '%-18s %12s %10s  %s\n' target execs exec/s result
for t in "${targets[@]}"; do
    work=target/work/$t
    mkdir -p "$work" "regressions/$t"
    log=target/work/$t.log
    result=ok
    cargo +nightly fuzz run "${flags[@]}" "$t" "$work" "corpus/$t" "regressions/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1 || result="CRASH (see $log, fuzz/artifacts/$t/)"
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
    rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log" | tail -1)
    printf '%-18s %12s %10s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$result"
done
