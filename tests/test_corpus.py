"""Files in the wild: pqindex over a corpus written by every writer available here.

``corpus/writers.py`` writes small files with pyarrow (every encoding, codec, page version,
logical type, statistics and page index setting), DuckDB, polars, fastparquet (when
installed), the parquet crate through ``pqindex.write``, and crafted layouts older writers
produced. ``corpus/check.py`` reads each one whole against pyarrow (or the rows it was
written from), compares the footer, and runs a few predicates per column against DuckDB.

A typed refusal (``pqindex.PqindexError``) passes: it is a limitation, not a wrong answer.
A wrong value, wrong rows, an untyped error or a crash fails, unless it is in KNOWN, where
each open defect is listed with its reason. ``scripts/corpus.py`` runs the same check over
any directory (e.g. a checkout of apache/parquet-testing).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import check, writers

# The corpus sizes for this run: a few predicates per column keep it under ~90 s on 2 cores.
PER_COLUMN = 3
COMBOS = 3
JOBS = 2

#: Open defects: (file under the corpus root, outcome kind) -> why. Remove an entry when its
#: defect is fixed (the test prints the entries it no longer sees).
KNOWN: dict[tuple[str, str], str] = {}


def test_corpus_agrees_with_referees(tmp_path: Path) -> None:
    """Every file of the corpus, read whole, footer and predicates, against the referees."""
    pytest.importorskip("duckdb")
    import pqindex  # noqa: F401  (fails the test, as elsewhere, when the extension is missing)

    root = tmp_path / "corpus"
    corpus = writers.write_corpus(root)
    paths = check.find_parquet_files(root)
    assert len(paths) == len(corpus.files), "every written file is found"
    summary = check.check_paths(
        paths, root=str(root), jobs=JOBS, per_column=PER_COLUMN, combos=COMBOS
    )
    print(summary.table())
    print(summary.reasons())
    for skipped in corpus.skipped:
        print(f"skipped writer variant: {skipped}")

    seen: set[tuple[str, str]] = set()
    unexpected = []
    for outcome in summary.outcomes():
        if outcome.kind not in check.FAILING:
            continue
        key = (summary.relative(outcome.file), outcome.kind)
        if key in KNOWN:
            seen.add(key)
            continue
        unexpected.append(outcome)
    gone = sorted(set(KNOWN) - seen)
    if gone:
        print("KNOWN entries not seen in this run (fixed?):\n  " + "\n  ".join(map(str, gone)))
    if unexpected:
        shown = "\n".join(
            f"[{o.kind}] {summary.relative(o.file)} :: {o.operation}\n"
            f"    pqindex: {o.pqindex}\n    referee ({o.referee_name}): {o.referee}\n"
            f"    {o.detail}"
            for o in unexpected[:25]
        )
        pytest.fail(
            f"{len(unexpected)} outcomes are wrong values, wrong rows, untyped errors or "
            f"crashes not in KNOWN:\n{shown}",
            pytrace=False,
        )
