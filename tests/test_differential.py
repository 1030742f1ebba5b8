"""Differential tests: ``pqindex.scan`` must return exactly the rows DuckDB returns.

For every writer (pyarrow in four flavours, a hive-partitioned directory, arrow-rs through
``pqindex.write``, DuckDB, and Spark in the ``spark``-marked tests), several seeded tables and
many seeded predicates, the same SQL WHERE text goes to both engines, and the results are
compared as multisets of rows after canonicalisation (NaN equals NaN, -0.0 equals 0.0,
timestamps compare as instants, whatever their unit or time zone). Some cases project
columns, some of them leaving out every column the predicate reads.

Each test covers one (writer, seed) fixture and runs all its cases before failing, so one
report lists every disagreeing predicate of that fixture with the writer, the file, the
differing rows and a snippet that reproduces it. The first few failing predicates are
shrunk (sub-expressions dropped while the failure persists) to a minimal reproducer.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import datagen
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DUCKDB_SETUP, full_run
from datagen import Written
from predicates import Predicate, PredicateGenerator, literal_sql, shrink

try:
    import pqindex
except ImportError as error:  # the generator self-test still runs without the extension
    pqindex = None
    PQINDEX_IMPORT_ERROR: str | None = f"{type(error).__name__}: {error}"
else:
    PQINDEX_IMPORT_ERROR = None

# Run sizes: (seeds, cases per fixture). Default: 7 writers x 2 seeds x 22 = 308 cases.
# Full: 7 x 6 x 50 = 2,100 cases, plus Spark's when asked for.
DEFAULT_SIZE = (range(2), 22)
FULL_SIZE = (range(6), 50)
SPARK_DEFAULT_SIZE = (range(2), 30)
SPARK_FULL_SIZE = (range(4), 60)

METRIC_KEYS = (
    "files",
    "files_pruned",
    "row_groups",
    "row_groups_pruned_by_stats",
    "row_groups_pruned_by_bloom",
    "pages",
    "pages_pruned",
    "rows_scanned",
    "rows_matched",
    "bytes_read",
)
MAX_REPORTED_FAILURES = 6
MAX_REPORTED_ROWS = 5
SHRINK_BUDGET = 150  # scans spent shrinking one failing predicate

#: Whether units are read by the parquet crate's stock reader (``PQINDEX_DECODE=stock``):
#: rows are the same, but pqindex's probes and decoders do not run, so their counters stay 0.
STOCK_DECODING = os.environ.get("PQINDEX_DECODE") == "stock"


def require_pqindex() -> None:
    if pqindex is None:
        pytest.fail(
            f"pqindex is not importable ({PQINDEX_IMPORT_ERROR}); build and install the extension"
        )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """(writer, seed) pairs; how many seeds and cases depends on --full."""
    full = full_run(metafunc.config)
    if "writer_seed" in metafunc.fixturenames:
        seeds, _ = FULL_SIZE if full else DEFAULT_SIZE
        pairs = [(w, s) for w in datagen.WRITERS for s in seeds]
        metafunc.parametrize("writer_seed", pairs, ids=[f"{w}-seed{s}" for w, s in pairs])
    if "spark_writer_seed" in metafunc.fixturenames:
        seeds, _ = SPARK_FULL_SIZE if full else SPARK_DEFAULT_SIZE
        pairs = [(w, s) for w in datagen.SPARK_WRITERS for s in seeds]
        metafunc.parametrize("spark_writer_seed", pairs, ids=[f"{w}-seed{s}" for w, s in pairs])


# --------------------------------------------------------------------------------------------
# Canonical rows: what "the same row" means across engines
# --------------------------------------------------------------------------------------------

NAN = "NaN"  # stands for every NaN, so NaN rows match (NaN != NaN in Python)
NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


class Instant(NamedTuple):
    """A timestamp as nanoseconds since the epoch: equal instants compare equal whatever
    the unit or the time zone (naive values count as UTC)."""

    ns: int

    def __repr__(self) -> str:
        seconds, ns = divmod(self.ns, 1_000_000_000)
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
        return f"{moment.isoformat(sep=' ')}.{ns:09d}"


def canonical_python(value: Any) -> Any:
    """Hashable, engine-neutral form of one Python value from ``to_pylist``."""
    if isinstance(value, float):
        return NAN if math.isnan(value) else value + 0.0  # -0.0 + 0.0 is 0.0
    if isinstance(value, dict):
        return tuple((k, canonical_python(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(canonical_python(v) for v in value)
    return value


def canonical_column(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column's values in canonical form (dictionary-encoded columns decoded first)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_timestamp(array.type):
        factor = NS_PER_UNIT[array.type.unit]
        return [
            None if v is None else Instant(v * factor) for v in array.cast(pa.int64()).to_pylist()
        ]
    return [canonical_python(v) for v in array.to_pylist()]


def canonical_rows(table: pa.Table, names: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The multiset of rows of ``table`` over ``names``, in that column order."""
    columns = [canonical_column(table.column(name)) for name in names]
    if not columns:
        return Counter({(): table.num_rows})
    return Counter(zip(*columns, strict=True))


def first_rows(
    rows: Counter[tuple[Any, ...]],
    names: Sequence[str],
    show: Sequence[str] | None = None,
    limit: int = MAX_REPORTED_ROWS,
) -> list[str]:
    """The first few rows (in a stable order), restricted to the ``show`` columns."""
    keep = [i for i, n in enumerate(names) if show is None or n in show]
    ordered = sorted(rows.elements(), key=repr)[:limit]
    return ["{" + ", ".join(f"{names[i]}: {_short(row[i])}" for i in keep) + "}" for row in ordered]


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One comparison: a predicate and a projection over a written fixture, with scan options."""

    index: int
    written: Written
    predicate: Predicate
    columns: list[str] | None
    batch_size: int
    threads: int | None
    via_stream: bool  # consume through __arrow_c_stream__ instead of to_arrow()
    string_view: bool = False  # strings and binaries out as views

    def scan_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "where": self.predicate.sql,
            "columns": self.columns,
            "batch_size": self.batch_size,
        }
        if self.threads is not None:
            kwargs["threads"] = self.threads
        if self.string_view:
            kwargs["string_view"] = True
        return kwargs

    def duckdb_query(self, columns: Sequence[str] | None = None) -> str:
        columns = self.columns if columns is None else columns
        projection = "*" if columns is None else ", ".join(f'"{c}"' for c in columns)
        return (
            f"SELECT {projection} FROM {self.written.duckdb_relation()} WHERE {self.predicate.sql}"
        )

    def reproducer(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.scan_kwargs().items())
        lines = [
            "import pqindex, duckdb",
            f"got = pqindex.scan({self.written.source!r}, {args}).to_arrow()",
            "con = duckdb.connect()",
            *(f"con.execute({statement!r})" for statement in DUCKDB_SETUP),
            f"expected = con.sql({self.duckdb_query()!r}).to_arrow_table()",
        ]
        return "\n".join("    " + line for line in lines)


def choose_projection(
    rng: random.Random, names: Sequence[str], used: frozenset[str]
) -> list[str] | None:
    """All columns (None), a random subset, or a subset without any predicate column:
    the last checks that filtering on columns the caller did not ask for still works."""
    roll = rng.random()
    if roll < 0.4:
        return None
    if roll < 0.7:
        return rng.sample(list(names), rng.randint(1, min(6, len(names))))
    rest = [n for n in names if n not in used]
    return rng.sample(rest, rng.randint(1, min(4, len(rest)))) if rest else None


def make_cases(written: Written, seed: int, count: int) -> list[Case]:
    generator = PredicateGenerator(written.table, seed)
    rng = random.Random(seed * 7919 + 17)
    # Its own generator, so that the other choices stay those of earlier runs.
    views = random.Random(seed * 31 + 5)
    cases = []
    for index in range(count):
        predicate = generator.generate()
        cases.append(
            Case(
                index=index,
                written=written,
                predicate=predicate,
                columns=choose_projection(rng, written.table.column_names, predicate.columns),
                batch_size=rng.choice([65536, 65536, 1000, 97, 7]),
                threads=rng.choice([None, None, 1, 2]),
                via_stream=rng.random() < 0.3,
                string_view=views.random() < 0.25,
            )
        )
    return cases


# --------------------------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------------------------


def duckdb_table(con: Any, query: str) -> pa.Table:
    """The query's result as a pyarrow Table, across DuckDB API generations."""
    relation = con.sql(query)
    for method in ("to_arrow_table", "fetch_arrow_table"):
        if hasattr(relation, method):
            return getattr(relation, method)()
    return relation.arrow().read_all()


def run_pqindex(case: Case) -> tuple[pa.Table, dict[str, int], int]:
    """The scan's rows, its metrics, and the largest batch it produced (0 via to_arrow)."""
    scan = pqindex.scan(case.written.source, **case.scan_kwargs())
    if case.via_stream:
        reader = pa.RecordBatchReader.from_stream(scan)
        batches = list(reader)
        table = pa.Table.from_batches(batches, schema=reader.schema)
        largest = max((b.num_rows for b in batches), default=0)
    else:
        table = scan.to_arrow()
        largest = 0
    return table, scan.metrics(), largest


def case_problems(case: Case, con: Any) -> list[str]:
    """What is wrong with pqindex's answer to this case: nothing if it agrees with DuckDB."""
    expected = duckdb_table(con, case.duckdb_query())
    try:
        got, metrics, largest_batch = run_pqindex(case)
    except Exception as error:  # any exception is a finding: the SQL is valid
        return [f"pqindex raised {type(error).__name__}: {str(error)[:2000]}"]
    problems = compare_tables(case, expected, got)
    problems += check_types(case, expected.schema, got.schema)
    problems += check_metrics(case, metrics, got.num_rows)
    if largest_batch > case.batch_size:
        problems.append(f"a batch of {largest_batch} rows > batch_size={case.batch_size}")
    return problems


def shrunk(case: Case, con: Any) -> Case:
    """The case with its predicate shrunk to a smallest one that still fails."""
    minimal = shrink(
        case.predicate,
        lambda p: bool(case_problems(replace(case, predicate=p), con)),
        budget=SHRINK_BUDGET,
    )
    return replace(case, predicate=minimal)


def report_failure(case: Case, problems: list[str], con: Any) -> str:
    """The failing case, then its shrunk version in full, with context and a reproducer."""
    small = shrunk(case, con)
    if small.predicate.sql == case.predicate.sql:
        return describe(case, problems + full_row_context(case, con))
    original = f"case {case.index} (writer={case.written.writer}) where: {case.predicate.sql}"
    summary = f"  first problem: {problems[0]}"
    detail = describe(small, case_problems(small, con) + full_row_context(small, con))
    return f"{original}\n{summary}\n  shrunk to:\n{detail}"


def compare_tables(
    case: Case, expected: pa.Table, got: pa.Table, show: Sequence[str] | None = None
) -> list[str]:
    """Column names and row multisets; differing rows are shown over the ``show`` columns."""
    problems = []
    if case.columns is not None and got.column_names != case.columns:
        problems.append(f"columns: asked for {case.columns}, got {got.column_names}")
    elif set(got.column_names) != set(expected.column_names):
        problems.append(
            f"columns: DuckDB has {sorted(expected.column_names)}, "
            f"pqindex {sorted(got.column_names)}"
        )
    names = [n for n in expected.column_names if n in got.column_names]
    want, have = canonical_rows(expected, names), canonical_rows(got, names)
    if want != have:
        missing, extra = want - have, have - want
        problems.append(f"rows: DuckDB returned {expected.num_rows}, pqindex {got.num_rows}")
        for label, rows in (
            ("missing from pqindex", missing),
            ("extra in pqindex", extra),
        ):
            if rows:
                problems.append(f"  {label} ({sum(rows.values())} rows), first ones:")
                problems += ["    " + r for r in first_rows(rows, names, show)]
    return problems


def check_types(case: Case, expected: pa.Schema, got: pa.Schema) -> list[str]:
    """With ``string_view``, every top-level string or binary column comes out as a view;
    without it, none does (the fixtures hold no views)."""
    problems = []
    for field in got:
        t = field.type
        viewed = pa.types.is_string_view(t) or pa.types.is_binary_view(t)
        plain = any(
            check(t)
            for check in (
                pa.types.is_string,
                pa.types.is_large_string,
                pa.types.is_binary,
                pa.types.is_large_binary,
            )
        )
        if (case.string_view and plain) or (not case.string_view and viewed):
            problems.append(f"type: {field.name} is {t} with string_view={case.string_view}")
    return problems


def check_metrics(case: Case, metrics: dict[str, int], rows: int) -> list[str]:
    """The metrics must add up: rows_matched is what came back, pruned counts fit in totals,
    and every data file (and nothing else in a directory) was considered."""
    missing = [k for k in METRIC_KEYS if k not in metrics]
    if missing:
        return [f"metrics: keys {missing} missing from {sorted(metrics)}"]
    m = metrics
    problems = []
    if m["rows_matched"] != rows:
        problems.append(f"metrics: rows_matched={m['rows_matched']} but {rows} rows returned")
    if m["row_groups_pruned_by_stats"] + m["row_groups_pruned_by_bloom"] > m["row_groups"]:
        problems.append(f"metrics: more row groups pruned than exist: {m}")
    if m["pages_pruned"] > m["pages"] or m["files_pruned"] > m["files"]:
        problems.append(f"metrics: pruned counts exceed totals: {m}")
    if m["rows_scanned"] < m["rows_matched"]:
        problems.append(f"metrics: rows_scanned < rows_matched: {m}")
    if m["files"] != len(case.written.files):
        problems.append(
            f"metrics: files={m['files']} but the source has {len(case.written.files)} data files"
        )
    return problems


def full_row_context(case: Case, con: Any) -> list[str]:
    """For a mismatch under a projection, the differing rows over all columns, which show the
    values the predicate looked at; or a note that without the projection the rows agree."""
    if case.columns is None:
        return []
    try:
        unprojected = replace(case, columns=None)
        expected = duckdb_table(con, unprojected.duckdb_query())
        got, _, _ = run_pqindex(unprojected)
    except Exception as error:  # reported, not raised: the mismatch is the news
        return [f"(without the projection pqindex raised {type(error).__name__}: {error})"]
    show = ["id", "part", *sorted(case.predicate.columns)]  # identity + tested values
    problems = compare_tables(unprojected, expected, got, show)
    if not problems:
        return ["without the projection (columns=None) pqindex agrees with DuckDB"]
    return ["without the projection (id and predicate columns shown):"] + [
        "  " + p for p in problems
    ]


def describe(case: Case, problems: list[str]) -> str:
    w = case.written
    head = [
        f"case {case.index}: writer={w.writer} source={w.source!r}",
        f"  files: {w.files}",
        f"  where: {case.predicate.sql}",
        f"  columns={case.columns}",
        f"  batch_size={case.batch_size} threads={case.threads} via_stream={case.via_stream}"
        f" string_view={case.string_view}",
    ]
    return "\n".join(head + ["  " + p for p in problems] + ["  reproduce:", case.reproducer()])


def run_cases(cases: Sequence[Case], con: Any) -> list[str]:
    """Reports of the failing cases; the first few are shrunk, the rest only summarised."""
    reports = []
    for case in cases:
        problems = case_problems(case, con)
        if not problems:
            continue
        if len(reports) < MAX_REPORTED_FAILURES:
            reports.append(report_failure(case, problems, con))
        else:
            reports.append(f"case {case.index}: {case.predicate.sql}\n  {problems[0]}")
    return reports


def assert_all_agree(cases: Sequence[Case], failures: list[str], label: str) -> None:
    """Fails with the reports of the first failing cases and one line for each further one."""
    if failures:
        shown = "\n\n".join(failures[:MAX_REPORTED_FAILURES])
        rest = failures[MAX_REPORTED_FAILURES : MAX_REPORTED_FAILURES + 20]
        tail = "\n\nmore failing cases:\n" + "\n".join(rest) if rest else ""
        head = f"{len(failures)} of {len(cases)} cases disagree with DuckDB ({label})"
        pytest.fail(f"{head}:\n\n{shown}{tail}", pytrace=False)


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_duckdb_accepts_generated_predicates(data_dir: Path, duckdb_con: Any) -> None:
    """The generator's own check: every predicate is valid for the referee. (Runs without
    the pqindex extension, so the suite can be validated before the extension exists.)"""
    failures = []
    for writer in ("pyarrow", "pyarrow-hive", "duckdb"):
        written = datagen.write_fixture(writer, 11, str(data_dir / writer), duckdb_con=duckdb_con)
        generator = PredicateGenerator(written.table, 11)
        for _ in range(150):
            predicate = generator.generate()
            try:
                duckdb_table(
                    duckdb_con,
                    f"SELECT count(*) FROM {written.duckdb_relation()} WHERE {predicate.sql}",
                )
            except Exception as error:  # DuckDB's errors share no base class
                failures.append(f"{writer}: {predicate.sql}\n  {error}")
    assert not failures, "\n".join(failures[:10])


def test_scan_matches_duckdb(
    writer_seed: tuple[str, int], data_dir: Path, duckdb_con: Any, full: bool
) -> None:
    """The differential test proper, for the writers that need no Spark."""
    require_pqindex()
    writer, seed = writer_seed
    written = datagen.write_fixture(writer, seed, str(data_dir / writer), duckdb_con=duckdb_con)
    cases = make_cases(written, seed, (FULL_SIZE if full else DEFAULT_SIZE)[1])
    assert_all_agree(cases, run_cases(cases, duckdb_con), f"writer={writer} seed={seed}")


@pytest.mark.spark
def test_spark_scan_matches_duckdb(
    spark_writer_seed: tuple[str, int],
    data_dir: Path,
    duckdb_con: Any,
    spark: Any,
    full: bool,
) -> None:
    """The differential test over Spark-written directories (part files, _SUCCESS, .crc)."""
    require_pqindex()
    writer, seed = spark_writer_seed
    written = datagen.write_fixture(writer, seed, str(data_dir / writer), spark=spark)
    cases = make_cases(written, seed, (SPARK_FULL_SIZE if full else SPARK_DEFAULT_SIZE)[1])
    assert_all_agree(cases, run_cases(cases, duckdb_con), f"writer={writer} seed={seed}")


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["pyarrow", "arrow-rs"])
def test_scan_matches_duckdb_large_table(writer: str, data_dir: Path, duckdb_con: Any) -> None:
    """Bigger row groups and more pages per column chunk than the default fixtures."""
    require_pqindex()
    written = datagen.write_fixture(
        writer, 99, str(data_dir / writer), n_rows=30_000, duckdb_con=duckdb_con
    )
    cases = make_cases(written, 99, 80)
    assert_all_agree(cases, run_cases(cases, duckdb_con), f"writer={writer} seed=99 rows=30000")


# --- the edge table: one boundary per row group ------------------------------------------

X64, Y62 = "x" * 64, "y" * 62
EDGE_PREDICATES = [
    # -0.0 equals 0.0; NaN equals NaN (whatever its bits) and is above +inf.
    *(f'"f64" {op} 0.0' for op in ("=", "!=", "<", "<=", ">", ">=")),
    "\"f64\" = CAST('-0.0' AS DOUBLE)",
    '"f64" IN (-0.0)',
    '"f64" NOT IN (0.0, 1.0)',
    '"f64" BETWEEN -0.0 AND 0.0',
    *(f"\"f64\" {op} CAST('NaN' AS DOUBLE)" for op in ("=", "!=", "<", "<=", ">", ">=")),
    "\"f64\" IN (CAST('NaN' AS DOUBLE), 5.0)",
    "\"f64\" NOT IN (CAST('NaN' AS DOUBLE))",
    "\"f64\" > CAST('Infinity' AS DOUBLE)",
    "\"f64\" >= CAST('Infinity' AS DOUBLE)",
    '"f64" > 1e308',
    '"f64" > 4.0',
    '"f64" < -1e308',
    '"f64" = 5e-324',
    *(f'"f32" {op} 0.0' for op in ("=", "!=", "<", "<=", ">", ">=")),
    *(f"\"f32\" {op} CAST('NaN' AS FLOAT)" for op in ("=", "!=", "<", ">", ">=")),
    "\"f32\" IN (CAST('NaN' AS FLOAT), 2.5)",
    '"f32" = 0.1',
    '"f32" > 3e38',
    # IN lists past the length searched through a set rather than compared value by value.
    "\"f64\" IN (CAST('NaN' AS DOUBLE), -0.0, 5e-324, "
    + ", ".join(f"{i}.5" for i in range(40))
    + ")",
    '"f64" NOT IN (-0.0, 1e308, ' + ", ".join(f"{i}.25" for i in range(-20, 20)) + ")",
    "\"f32\" IN (CAST('NaN' AS FLOAT), 0.1, " + ", ".join(f"{i}.5" for i in range(40)) + ")",
    '"f32" = 16777217',
    # Unsigned values above the signed maximum (stored as negative INT32/INT64 bits).
    '"u64" = 18446744073709551615',
    '"u64" > 9223372036854775807',
    '"u64" >= 9223372036854775808',
    '"u64" < 9223372036854775808',
    '"u64" BETWEEN 9223372036854775807 AND 9223372036854775808',
    '"u64" IN (9223372036854775808, 1)',
    '"u64" != 0',
    '"u64" > -1',
    '"u32" > 2147483647',
    '"u32" = 4294967295',
    '"u32" < 2147483648',
    '"u32" = 3000000000',
    '"u8" > 127',
    '"u8" = 255',
    '"u8" < 128',
    # int64 extremes, and beyond double precision.
    '"i64" = -9223372036854775808',
    '"i64" > 9223372036854775806',
    '"i64" < -9223372036854775807',
    '"i64" = 9007199254740993',
    '"i64" >= 9007199254740992.5',
    # Negative decimals (two's complement, big-endian when FIXED_LEN_BYTE_ARRAY).
    '"dec7_2" < 0',
    '"dec7_2" = -0.01',
    '"dec7_2" > -0.01',
    '"dec7_2" = -99999.99',
    '"dec7_2" = 1.005',
    '"dec7_2" BETWEEN -1 AND 1',
    '"dec30_5" < 0',
    '"dec30_5" = -0.00001',
    '"dec30_5" > -1',
    '"dec30_5" = -9999999999999999999999999.99999',
    '"dec30_5" = 255',
    '"dec30_5" < -255',
    '"dec30_5" > 127.5',
    '"dec30_5" >= -128',
    # Strings: empty, equal in the first 64 bytes (statistics truncate there), UTF-8 order.
    "\"str\" = ''",
    "\"str\" > ''",
    f"\"str\" = '{X64}b'",
    f"\"str\" > '{X64}'",
    f"\"str\" < '{X64}a'",
    f"\"str\" >= '{X64}c'",
    f"\"str\" = '{Y62}日'",
    f"\"str\" > '{Y62}日本'",
    "\"str\" > 'é'",
    "\"str\" < '\x7f'",
    "\"str\" >= '\uffff'",
    "\"str\" = '\U0010ffff'",
    "\"str\" BETWEEN 'a' AND 'b'",
    "\"str\" = 'a\\b'",
    "\"str\" = 'O''Brien'",
    # Bytes compare unsigned: 0x80 is above 0x7f.
    "\"bin\" = CAST('\\x80' AS BLOB)",
    "\"bin\" > CAST('\\x7F' AS BLOB)",
    "\"bin\" < CAST('\\x80' AS BLOB)",
    "\"bin\" = CAST('' AS BLOB)",
    "\"bin\" >= CAST('\\xFF' AS BLOB)",
    '"bin" = CAST(\'' + "\\xAA" * 70 + "\\x02' AS BLOB)",
    '"bin" > CAST(\'' + "\\xAA" * 64 + "' AS BLOB)",
    # Dates and timestamps either side of the epoch, sub-microsecond nanoseconds.
    "\"date\" < DATE '1970-01-01'",
    "\"date\" = DATE '1969-12-31'",
    "\"date\" > DATE '2199-01-01'",
    "\"date\" >= TIMESTAMP '1969-12-31 12:00:00'",
    "\"ts_us_tz\" < TIMESTAMP '1970-01-01 00:00:00'",
    "\"ts_us_tz\" = TIMESTAMP '1969-12-31 23:59:59.999999'",
    "\"ts_us_tz\" = TIMESTAMP '1969-12-31 23:59:58.5'",
    "\"ts_us_tz\" > TIMESTAMP '2199-12-31 23:59:59.999999'",
    "\"ts_us_tz\" = DATE '2019-04-14'",
    "\"ts_us_tz\" BETWEEN TIMESTAMP '1970-01-01 00:00:01.499999' AND DATE '1970-01-02'",
    "\"ts_ns\" = TIMESTAMP '1970-01-01 00:00:00.000001'",
    "\"ts_ns\" > TIMESTAMP '1970-01-01 00:00:00'",
    "\"ts_ns\" < TIMESTAMP '1970-01-01 00:00:00'",
    "\"ts_ns\" = TIMESTAMP '1969-12-31 23:59:59.999999'",
    "\"ts_ns\" <= TIMESTAMP '1970-01-01 00:00:00.123456'",
]


@pytest.mark.parametrize("writer", ["pyarrow", "pyarrow-nodict", "arrow-rs"])
def test_edge_table_matches_duckdb(writer: str, data_dir: Path, duckdb_con: Any) -> None:
    """Hand-picked boundaries (EDGE_PREDICATES) and random predicates over the edge table,
    whose row groups of 4 rows each isolate one awkward case for statistics and blooms."""
    require_pqindex()
    written = datagen.write_edge_fixture(writer, datagen.make_edge_table(), str(data_dir))
    generator = PredicateGenerator(written.table, 4242)
    predicates = [Predicate(sql, frozenset()) for sql in EDGE_PREDICATES]
    predicates += [generator.generate() for _ in range(200)]
    cases = [
        Case(i, written, p, columns=None, batch_size=65536, threads=None, via_stream=False)
        for i, p in enumerate(predicates)
    ]
    assert_all_agree(cases, run_cases(cases, duckdb_con), f"writer={written.writer}")


# --- pruning actually happens -----------------------------------------------------------------


def write_pruning_fixture(writer: str, table: pa.Table, directory: Path) -> str:
    """Row groups of 2,000 rows, pages of at most 100, bloom filters on ``h`` and ``payload``."""
    path = str(directory / f"{writer}.parquet")
    if writer == "arrow-rs":
        pqindex.write(
            table,
            path,
            row_group_size=2000,
            page_row_limit=100,
            bloom_filter_columns=["h", "payload"],
        )
    else:
        blooms = {c: {"ndv": table.num_rows, "fpp": 0.01} for c in ("h", "payload")}
        pq.write_table(
            table,
            path,
            row_group_size=2000,
            max_rows_per_page=100,
            write_batch_size=100,
            write_page_index=True,
            bloom_filter_options=blooms,
        )
    return path


def scan_and_compare(
    target: str | Written, where: str, con: Any, columns: list[str] | None = None
) -> dict[str, int]:
    """Scans a file (or a written fixture), checks the rows against DuckDB and rows_matched
    against the rows returned; returns the scan's metrics."""
    source = target.source if isinstance(target, Written) else target
    relation = (
        target.duckdb_relation() if isinstance(target, Written) else f"read_parquet('{target}')"
    )
    scan = pqindex.scan(source, where=where, columns=columns)
    got = scan.to_arrow()
    metrics = scan.metrics()
    projection = "*" if columns is None else ", ".join(f'"{c}"' for c in columns)
    expected = duckdb_table(con, f"SELECT {projection} FROM {relation} WHERE {where}")
    names = expected.column_names
    assert canonical_rows(got, names) == canonical_rows(expected, names), (
        f"rows differ for {where!r} on {source}"
    )
    assert metrics["rows_matched"] == got.num_rows, f"rows_matched for {where!r}: {metrics}"
    return metrics


SELECTIVE_ON_SORTED = [
    '"id" BETWEEN 4050 AND 4120',
    '"id" = 12345',
    '"id" < 150',
    '"id" >= 19950 OR "id" IN (5, 7)',
    'NOT ("id" >= 30) AND "payload" IS NOT NULL',
]


@pytest.mark.parametrize("writer", ["arrow-rs", "pyarrow"])
@pytest.mark.parametrize("where", SELECTIVE_ON_SORTED)
def test_pruning_fires_on_sorted_column(
    writer: str, where: str, data_dir: Path, duckdb_con: Any
) -> None:
    """A selective predicate on a sorted column must skip row groups by statistics and pages
    by the page index, read fewer rows than the file holds, and still return the right rows."""
    require_pqindex()
    table = datagen.make_pruning_table()
    path = write_pruning_fixture(writer, table, data_dir)
    metrics = scan_and_compare(path, where, duckdb_con, columns=["payload"])
    assert metrics["row_groups_pruned_by_stats"] > 0, metrics
    assert metrics["pages_pruned"] > 0, metrics
    assert metrics["rows_scanned"] < table.num_rows, metrics


@pytest.mark.parametrize("writer", ["arrow-rs", "pyarrow"])
@pytest.mark.parametrize("column", sorted(datagen.SORTED_ASC | datagen.SORTED_DESC))
def test_pruning_fires_per_type(writer: str, column: str, data_dir: Path, duckdb_con: Any) -> None:
    """Equality on a value early in each sorted column of the generated table prunes row
    groups and pages, whatever the column's type (ints, float with NaN, decimal, string,
    date, timestamps): a writer/type combination that silently never prunes shows here."""
    require_pqindex()
    written = datagen.write_fixture(writer, 5, str(data_dir / writer), duckdb_con=duckdb_con)
    values = written.table.column(column).drop_null()
    value = _working_value(values[len(values) // 20])
    where = f'"{column}" = {literal_sql(values.type, value)}'
    metrics = scan_and_compare(written.files[0], where, duckdb_con, columns=sorted({"id", column}))
    assert metrics["rows_matched"] > 0, (where, metrics)
    assert metrics["row_groups_pruned_by_stats"] > 0, (where, metrics)
    assert metrics["pages_pruned"] > 0, (where, metrics)


def _working_value(scalar: pa.Scalar) -> Any:
    """A scalar in the predicate generator's working form (integers for dates and times)."""
    if pa.types.is_timestamp(scalar.type):
        return scalar.cast(pa.int64()).as_py()
    if pa.types.is_date32(scalar.type):
        return scalar.cast(pa.int32()).as_py()
    return scalar.as_py()


@pytest.mark.parametrize("writer", ["arrow-rs", "pyarrow"])
def test_bloom_filter_prunes_absent_values(writer: str, data_dir: Path, duckdb_con: Any) -> None:
    """An absent value inside every row group's min/max can only be ruled out by a bloom
    filter, or by the dictionary page of a chunk that is all dictionary encoded (asked
    instead where it is the smaller); a present one must still be found (no false
    negatives)."""
    require_pqindex()
    table = datagen.make_pruning_table()
    path = write_pruning_fixture(writer, table, data_dir)
    for where in ['"h" = 20001', '"h" IN (777, 1999)']:
        metrics = scan_and_compare(path, where, duckdb_con)
        assert metrics["rows_matched"] == 0
        ruled_out = metrics["row_groups_pruned_by_bloom"] + metrics["units_pruned_by_dictionary"]
        # The stock reader asks no dictionary page (it is one of pqindex's probes).
        assert ruled_out > 0 or STOCK_DECODING, (where, metrics)
    # payload is in row order: the page index leaves a few small pages of the row groups
    # statistics keep; a filter is read only where those cost more than it does.
    metrics = scan_and_compare(path, "\"payload\" = 'row-1234x'", duckdb_con)
    assert metrics["rows_matched"] == 0
    assert metrics["row_groups_pruned_by_bloom"] == metrics["bloom_filters_read"], metrics
    present = int(table.column("h")[4321].as_py())
    metrics = scan_and_compare(path, f'"h" = {present}', duckdb_con)
    assert metrics["rows_matched"] == 1, metrics


@pytest.mark.parametrize("tz", [None, "UTC"])
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_write_keeps_timestamp_types(unit: str, tz: str | None, data_dir: Path) -> None:
    """A timestamp column written by ``pqindex.write`` reads back as a timestamp in other
    readers (pyarrow here; DuckDB and Spark read the same logical type), not as a bare
    integer: Parquet has no seconds unit, so seconds must be stored as a unit it has."""
    require_pqindex()
    path = str(data_dir / "ts.parquet")
    table = pa.table({"t": pa.array([0, 1_700_000_000, None], pa.timestamp(unit, tz))})
    pqindex.write(table, path)
    logical = pq.ParquetFile(path).schema.column(0).logical_type
    assert logical.type == "TIMESTAMP", f"timestamp[{unit}, tz={tz}] written as {logical}"
    read_back = pq.read_table(path).column("t")
    assert pa.types.is_timestamp(read_back.type), read_back.type
    assert canonical_column(read_back) == canonical_column(table.column("t"))


@pytest.mark.spark
def test_spark_files_prune_with_statistics_and_blooms(
    data_dir: Path, duckdb_con: Any, spark: Any
) -> None:
    """parquet-mr's statistics, column index and bloom filters (Spark's writer) prune too."""
    require_pqindex()
    table = datagen.make_pruning_table()
    written = datagen.write_spark(
        table, str(data_dir / "spark"), spark, bloom_columns=["h", "payload"]
    )
    metrics = scan_and_compare(written, '"id" BETWEEN 4050 AND 4120', duckdb_con)
    assert metrics["row_groups_pruned_by_stats"] > 0, metrics
    assert metrics["pages_pruned"] > 0, metrics
    for where in ['"h" = 20001', "\"payload\" = 'row-1234x'"]:
        metrics = scan_and_compare(written, where, duckdb_con)
        assert metrics["row_groups_pruned_by_bloom"] > 0, (where, metrics)


def test_rows_matched_counts_rows_returned(data_dir: Path, duckdb_con: Any) -> None:
    """rows_matched is the number of rows the scan returned, with and without a predicate,
    through both ways of consuming a scan."""
    require_pqindex()
    table = datagen.make_pruning_table(n_rows=5000)
    path = write_pruning_fixture("pyarrow", table, data_dir)
    for where in [None, '"id" >= 0', '"id" < 0', "\"payload\" >= 'row-4'"]:
        scan = pqindex.scan(path, where=where)
        rows = pa.RecordBatchReader.from_stream(scan).read_all().num_rows
        assert scan.metrics()["rows_matched"] == rows, (where, scan.metrics())
        scan = pqindex.scan(path, where=where)
        assert scan.to_arrow().num_rows == scan.metrics()["rows_matched"]


def test_write_stores_string_views_as_strings(data_dir: Path) -> None:
    """String and binary views (tpchgen-cli writes them) are stored as plain strings and
    binaries, so every reader can filter the file."""
    require_pqindex()
    path = str(data_dir / "views.parquet")
    table = pa.table(
        {
            "s": pa.array(["a", None, "ccc"], pa.string_view()),
            "b": pa.array([b"x", b"yy", None], pa.binary_view()),
        }
    )
    pqindex.write(table, path)
    back = pq.read_table(path)
    assert back.schema.field("s").type == pa.string()
    assert back.schema.field("b").type == pa.binary()
    assert back.column("s").to_pylist() == ["a", None, "ccc"]
    assert pq.read_table(path, filters=[("s", "=", "ccc")]).num_rows == 1
    assert pqindex.scan(path, where="s = 'ccc'").to_arrow().num_rows == 1
