"""The ``pqindex`` command line: inspect, index add/drop/list/verify, scan, and its errors."""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import io
import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pqindex import _native, cli
from pqindex._indexes import index_class

N = 3000
ROW_GROUP = 1000


def _table(n: int = N) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": [f"s{i % 37:02d}" for i in range(n)],
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 400) for i in range(n)]),
            "m": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(12, 2)),
            "b": [bytes([i % 256, 0xAB]) for i in range(n)],
            "f": [None if i % 11 == 0 else i / 8 for i in range(n)],
        }
    )


@pytest.fixture
def arrow_file(data_dir: Path) -> Path:
    """Written by pyarrow: three row groups, a page index, several pages per chunk."""
    path = data_dir / "arrow.parquet"
    pq.write_table(
        _table(),
        path,
        row_group_size=ROW_GROUP,
        write_page_index=True,
        data_page_size=1024,
        write_batch_size=100,
    )
    return path


@pytest.fixture
def plain_file(data_dir: Path) -> Path:
    """Written with pyarrow's defaults: no page index, no bloom filters."""
    path = data_dir / "plain.parquet"
    pq.write_table(_table(), path, row_group_size=ROW_GROUP)
    return path


@pytest.fixture
def pqindex_file(data_dir: Path) -> Path:
    """Written by pqindex: pages of 250 rows and a Parquet bloom filter on ``k``."""
    path = data_dir / "pqindex.parquet"
    pqindex.write(
        _table(), path, row_group_size=ROW_GROUP, page_row_limit=250, bloom_filter_columns=["k"]
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``main`` on ``argv``: exit status, stdout, stderr."""
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, Any]:
    """``main`` on ``argv`` plus ``--json``: exit status and the parsed document."""
    code, out, err = run(capsys, *argv, "--json")
    assert "Traceback" not in err
    return code, json.loads(out)


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pqindex: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


# --- inspect -------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["arrow_file", "plain_file", "pqindex_file"])
def test_inspect_json_matches_pyarrow(
    fixture: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    path: Path = request.getfixturevalue(fixture)
    code, doc = run_json(capsys, "inspect", path)
    assert code == 0
    md = pq.ParquetFile(path).metadata
    data = path.read_bytes()
    assert doc["num_rows"] == md.num_rows == N
    assert doc["num_row_groups"] == md.num_row_groups == N // ROW_GROUP
    assert doc["created_by"] == md.created_by
    assert doc["size_bytes"] == len(data)
    assert doc["footer_length"] == struct.unpack("<I", data[-8:-4])[0] == md.serialized_size
    for i, rg in enumerate(doc["row_groups"]):
        assert rg["num_rows"] == md.row_group(i).num_rows
        assert rg["total_byte_size"] == md.row_group(i).total_byte_size
    assert [c["column"] for c in doc["columns"]] == md.schema.names
    for j, col in enumerate(doc["columns"]):
        chunks = [md.row_group(i).column(j) for i in range(md.num_row_groups)]
        assert col["physical_type"] == chunks[0].physical_type
        assert col["compressed_size"] == sum(c.total_compressed_size for c in chunks)
        assert set(col["encodings"]) == {e for c in chunks for e in c.encodings}
        assert col["has_statistics"] == all(c.is_stats_set for c in chunks)
        assert col["has_page_index"] == all(c.has_offset_index for c in chunks)
        assert col["has_bloom_filter"] == all(c.bloom_filter_offset is not None for c in chunks)
        if col["has_bloom_filter"]:
            assert col["bloom_filter_length"] == sum(c.bloom_filter_length for c in chunks)
    assert doc["indexes"] == [] and doc["index_bytes"] == 0


def test_inspect_flags_per_file(
    arrow_file: Path, plain_file: Path, pqindex_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, arrow = run_json(capsys, "inspect", arrow_file)
    _, plain = run_json(capsys, "inspect", plain_file)
    _, ours = run_json(capsys, "inspect", pqindex_file)
    assert all(c["has_page_index"] and not c["has_bloom_filter"] for c in arrow["columns"])
    assert not any(c["has_page_index"] for c in plain["columns"])
    assert all(c["pages"] is None for c in plain["column_chunks"])
    bloom = {c["column"]: c["has_bloom_filter"] for c in ours["columns"]}
    assert bloom == {"k": True, "s": False, "d": False, "m": False, "b": False, "f": False}


def test_inspect_pages_per_chunk(pqindex_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(capsys, "inspect", pqindex_file)
    pages = pqindex.read_metadata(pqindex_file).pages().to_pylist()
    for chunk in doc["column_chunks"]:
        listed = [
            p
            for p in pages
            if (p["row_group"], p["column"]) == (chunk["row_group"], chunk["column"])
        ]
        assert chunk["pages"] == len(listed) == ROW_GROUP // 250
    code, out, _ = run(capsys, "inspect", pqindex_file)
    assert code == 0
    assert re.search(r"^page index \(pages per column chunk\)$", out, re.M)
    assert re.search(r"^k\s+3\s+12\s+4\s+4\.0\s+4$", out, re.M)


def test_inspect_text(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", arrow_file)
    assert code == 0 and err == ""
    md = pq.ParquetFile(arrow_file).metadata
    size = arrow_file.stat().st_size
    assert re.search(rf"^file\s+{re.escape(str(arrow_file))}$", out, re.M)
    assert re.search(rf"^size\s+{size} bytes \(", out, re.M)
    assert re.search(rf"^rows\s+{N}$", out, re.M)
    assert re.search(r"^row groups\s+3$", out, re.M)
    assert re.search(rf"^created by\s+{re.escape(md.created_by)}$", out, re.M)
    assert re.search(rf"^footer length\s+{md.serialized_size} bytes$", out, re.M)
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        assert re.search(rf"^\s*{i}\s+{rg.num_rows}\s+{rg.total_byte_size}\s+\d+$", out, re.M)
    k_size = sum(md.row_group(i).column(0).total_compressed_size for i in range(3))
    assert re.search(rf"^k\s+INT64\s+-\s+{k_size}\s+\S+\s+yes\s+yes\s+no\s+-$", out, re.M)
    assert re.search(r"^s\s+BYTE_ARRAY\s+STRING\s+\d+", out, re.M)
    assert "embedded indexes: none" in out


def test_inspect_without_statistics_or_page_index(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / "bare.parquet"
    pq.write_table(_table(), path, row_group_size=ROW_GROUP, write_statistics=False)
    code, out, _ = run(capsys, "inspect", path)
    assert code == 0
    assert re.search(r"^k\s+INT64\s+-\s+\d+\s+\S+\s+no\s+no\s+no\s+-$", out, re.M)
    assert "page index: none" in out
    _, doc = run_json(capsys, "inspect", path)
    assert not any(c["has_statistics"] for c in doc["columns"])


def test_inspect_reports_embedded_locators(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locators = [
        {"kind": "distinct", "columns": ["k"], "granularity": "page", "offset": 4, "length": 300},
        {"kind": "bloom", "columns": ["s"], "granularity": "row_group", "offset": 9, "length": 52},
    ]
    extra = {
        f"pqindex.index.{n}": json.dumps({**loc, "checksum": 7, "version": 1})
        for n, loc in zip((10, 2), locators, strict=True)
    }
    extra["pqindex.index.5"] = "not json"
    extra["pqindex.indexes"] = "ignored: not a locator key"
    path = data_dir / "located.parquet"
    pq.write_table(_table().replace_schema_metadata(extra), path, row_group_size=ROW_GROUP)
    size = path.stat().st_size

    code, doc = run_json(capsys, "inspect", path)
    assert code == 0
    assert [loc["key"] for loc in doc["indexes"]] == [
        "pqindex.index.2",
        "pqindex.index.5",
        "pqindex.index.10",
    ]
    assert {k: doc["indexes"][0][k] for k in locators[1]} == locators[1]
    assert "bad locator" in doc["indexes"][1]["error"]
    assert {k: doc["indexes"][2][k] for k in locators[0]} == locators[0]
    assert doc["index_bytes"] == 352
    assert doc["index_share"] == pytest.approx(352 / size)

    _, out, _ = run(capsys, "inspect", path)
    assert f"embedded indexes: 3, 352 bytes ({100 * 352 / size:.2f}% of the file)" in out
    assert re.search(r"^distinct\s+k\s+page\s+4\s+300\s+-$", out, re.M)
    assert re.search(r"^bloom\s+s\s+row_group\s+9\s+52\s+-$", out, re.M)


def test_inspect_reports_what_read_metadata_reports(
    arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sizes, row groups, types and index locators are read_metadata's, unchanged."""
    pqindex.add_indexes(arrow_file, [pqindex.DistinctIndex("k"), pqindex.BloomIndex("s")])
    code, doc = run_json(capsys, "inspect", arrow_file)
    assert code == 0
    md = pqindex.read_metadata(arrow_file)
    assert (doc["path"], doc["size_bytes"], doc["footer_length"]) == (
        md.path,
        md.size,
        md.footer_length,
    )
    assert (doc["num_rows"], doc["num_row_groups"], doc["created_by"]) == (
        md.num_rows,
        md.num_row_groups,
        md.created_by,
    )
    assert doc["row_groups"] == md.row_groups().to_pylist()
    assert doc["indexes"] == md.indexes() and len(doc["indexes"]) == 2
    assert doc["index_bytes"] == sum(loc["length"] for loc in md.indexes())
    chunks = md.columns().to_pylist()
    assert [(c["row_group"], c["column"]) for c in doc["column_chunks"]] == [
        (c["row_group"], c["column"]) for c in chunks
    ]
    types = {c["column"]: (c["physical_type"], c["logical_type"]) for c in chunks}
    assert {c["column"]: (c["physical_type"], c["logical_type"]) for c in doc["columns"]} == types


class _Altered:
    """A FileMetadata whose size, footer length and locators say something no file on disk
    could: what inspect prints must come from here, not from reading the file itself."""

    def __init__(self, md: pqindex.FileMetadata) -> None:
        self._md = md
        self.size = 10_000_000
        self.footer_length = 4321

    def __getattr__(self, name: str) -> Any:
        return getattr(self._md, name)

    def indexes(self) -> list[dict[str, Any]]:
        return [
            {"key": "pqindex.index.0", "kind": "hll", "columns": ["s"], "granularity": "row_group",
             "offset": 4, "length": 100_000, "checksum": 1, "version": 1},
            {"key": "pqindex.index.1", "error": "embedded index: bad locator: made up"},
        ]  # fmt: skip


def test_inspect_does_no_reading_of_its_own(
    arrow_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = pqindex.read_metadata
    monkeypatch.setattr(pqindex, "read_metadata", lambda *a, **kw: _Altered(real(*a, **kw)))
    code, doc = run_json(capsys, "inspect", arrow_file)
    assert code == 0
    assert (doc["size_bytes"], doc["footer_length"], doc["index_bytes"]) == (10**7, 4321, 10**5)
    assert doc["index_share"] == pytest.approx(0.01)
    assert [loc["key"] for loc in doc["indexes"]] == ["pqindex.index.0", "pqindex.index.1"]
    code, out, _ = run(capsys, "inspect", arrow_file)
    assert code == 0
    assert re.search(r"^size\s+10000000 bytes \(9\.5 MiB\)$", out, re.M)
    assert re.search(r"^footer length\s+4321 bytes$", out, re.M)
    assert "embedded indexes: 2, 100000 bytes (1.00% of the file)" in out
    assert re.search(r"^hll\s+s\s+row_group\s+4\s+100000\s+-$", out, re.M)
    assert re.search(r"^-\s+-\s+-\s+-\s+embedded index: bad locator: made up$", out, re.M)


def test_inspect_names_types_as_users_know_them(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / "types.parquet"
    table = pa.table(
        {
            "price": pa.array([decimal.Decimal("1.50")], pa.decimal128(15, 2)),
            "day": pa.array([dt.date(2020, 1, 1)]),
            "at": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us", tz="UTC")),
            "small": pa.array([1], pa.int8()),
            "name": ["x"],
            "raw": [b"x"],
        }
    )
    pq.write_table(table, path)
    code, out, _ = run(capsys, "inspect", path)
    assert code == 0
    for column, physical, logical in [
        ("price", "FIXED_LEN_BYTE_ARRAY", "DECIMAL(15,2)"),
        ("day", "INT32", "DATE"),
        ("at", "INT64", "TIMESTAMP(MICROS,true)"),
        ("small", "INT32", "INT(8,true)"),
        ("name", "BYTE_ARRAY", "STRING"),
        ("raw", "BYTE_ARRAY", "-"),
    ]:
        line = rf"^{column}\s+{physical}\s+{re.escape(logical)}\s+\d+\s"
        assert re.search(line, out, re.M), (column, out)
    assert "Decimal(" not in out and "{" not in out
    _, doc = run_json(capsys, "inspect", path)
    assert doc["columns"][0]["logical_type"] == "DECIMAL(15,2)"


# --- scan ----------------------------------------------------------------------------------

FILTERS = [
    ("k < 100 AND s = 's03'", (pc.field("k") < 100) & (pc.field("s") == "s03")),
    ("f IS NULL AND k >= 2500", pc.field("f").is_null() & (pc.field("k") >= 2500)),
    (
        "k IN (5, 1500, 2999) OR s = 's36'",
        pc.field("k").isin([5, 1500, 2999]) | (pc.field("s") == "s36"),
    ),
    (
        "d BETWEEN DATE '2020-02-01' AND DATE '2020-02-03'",
        (pc.field("d") >= dt.date(2020, 2, 1)) & (pc.field("d") <= dt.date(2020, 2, 3)),
    ),
    ("k > 100000", pc.field("k") > 100000),
]


@pytest.mark.parametrize(("where", "expr"), FILTERS, ids=[w for w, _ in FILTERS])
@pytest.mark.parametrize("fixture", ["arrow_file", "pqindex_file"])
def test_scan_rows_equal_pyarrow(
    where: str,
    expr: Any,
    fixture: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path: Path = request.getfixturevalue(fixture)
    code, doc = run_json(
        capsys, "scan", path, "--where", where, "--columns", "k,s,f", "--limit", "100000"
    )
    assert code == 0
    expected = (
        pq.read_table(path, columns=["k", "s", "f", "d"]).filter(expr).select(["k", "s", "f"])
    )
    assert doc["num_rows"] == expected.num_rows
    assert doc["rows"] == expected.to_pylist()
    assert doc["metrics"]["rows_matched"] == expected.num_rows
    assert doc["explain"].startswith("pqindex scan")


def test_scan_json_values_are_strings_where_json_has_no_type(
    arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = run_json(capsys, "scan", arrow_file, "--where", "k = 7")
    assert code == 0
    assert doc["rows"] == [
        {"k": 7, "s": "s07", "d": "2020-01-08", "m": "1.75", "b": "07ab", "f": 0.875}
    ]


def test_scan_json_non_finite_floats(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = data_dir / "floats.parquet"
    pq.write_table(pa.table({"x": [float("nan"), float("inf"), -float("inf"), 1.0]}), path)
    code, out, _ = run(capsys, "scan", path, "--json")
    assert code == 0
    assert [r["x"] for r in json.loads(out)["rows"]] == ["nan", "inf", "-inf", 1.0]


def test_scan_text_limit_and_count(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "scan", arrow_file, "--where", "k >= 10", "--columns", "k,s", "--limit", "5"
    )
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["k", "s"]
    assert [line.split() for line in lines[2:7]] == [
        [str(k), f"s{k % 37:02d}"] for k in range(10, 15)
    ]
    assert lines[7] == f"(first 5 of {N - 10} rows)"
    assert len(lines) == 8


def test_scan_text_default_limit_and_nulls(
    arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "scan", arrow_file, "--columns", "k,f")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 + 20 + 1
    assert lines[2].split() == ["0", "null"]
    assert lines[-1] == f"(first 20 of {N} rows)"


def test_scan_count_only(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "scan", arrow_file, "--where", "k < 1", "--columns", "")
    assert code == 0
    assert out == "(1 row)\n"


def test_scan_explain_before_rows_metrics_after(
    arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "scan", arrow_file, "--where", "k = 1234", "--explain", "--metrics")
    assert code == 0
    plan, rows, metrics = out.index("pqindex scan"), out.index("(1 row)"), out.index("metric")
    assert plan < rows < metrics
    assert "where:       k = 1234" in out
    assert re.search(r"^rows_matched\s+1$", out, re.M)
    assert re.search(r"^row_groups_pruned_by_stats\s+2$", out, re.M)


def test_scan_columns_order(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "scan", arrow_file, "--where", "k = 3", "--columns", "s, k")
    assert code == 0
    assert [list(r.items()) for r in doc["rows"]] == [[("s", "s03"), ("k", 3)]]


def test_scan_directory_skips_hidden(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _table(100)
    pq.write_table(table, data_dir / "a.parquet")
    (data_dir / "sub").mkdir()
    pq.write_table(table, data_dir / "sub" / "b.parquet")
    pq.write_table(table, data_dir / "_ignored.parquet")
    (data_dir / "_SUCCESS").write_text("")
    code, doc = run_json(capsys, "scan", data_dir, "--where", "k < 10", "--limit", "0")
    assert code == 0
    assert doc["rows"] == []
    assert doc["num_rows"] == 20
    assert doc["metrics"]["files"] == 2


# --- errors --------------------------------------------------------------------------------


@pytest.fixture
def truncated(arrow_file: Path, data_dir: Path) -> Path:
    path = data_dir / "truncated.parquet"
    data = arrow_file.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize("command", [["inspect"], ["scan"], ["scan", "--json"]])
def test_missing_file(
    command: list[str], data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *command, data_dir / "nope.parquet")
    assert_one_line_error(code, out, err, "nope.parquet")


@pytest.mark.parametrize("command", [["inspect"], ["scan"], ["inspect", "--json"]])
def test_truncated_file(
    command: list[str], truncated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *command, truncated)
    assert_one_line_error(code, out, err, "truncated.parquet", "not a Parquet file")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--where", "k <<< 3"], "cannot parse predicate"),
        (["--where", "nope = 1"], "unknown column nope"),
        (["--where", "s = 1 +"], "cannot parse predicate"),
        (["--columns", "k,nope"], "nope"),
    ],
)
def test_bad_scan_arguments(
    args: list[str], fragment: str, arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "scan", arrow_file, *args)
    assert_one_line_error(code, out, err, fragment)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["scan", "x.parquet", "--limit", "-1"], "must be 0 or more"),
        (["index", "add", "x.parquet", "--bloom", "k:bogus"], "granularity must be one of"),
        (["index", "add", "x.parquet", "--bloom", "k:page:2"], "fpp must be between 0 and 1"),
        (["index", "add", "x.parquet", "--distinct", "k:page:0.1"], "expected COL[:GRAN]"),
        (["index", "drop", "x.parquet", "--kind", "nope"], "invalid choice"),
        (["index"], "required"),
        ([], "required"),
    ],
)
def test_usage_errors_return_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert fragment in err and "Traceback" not in err


def test_index_add_needs_an_index(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "index", "add", arrow_file)
    assert_one_line_error(code, out, err, "at least one of --distinct, --bloom, --hll")


def test_help_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "scan", "--help")
    assert code == 0
    assert "--where SQL" in out


def test_module_entry_point(arrow_file: Path, data_dir: Path) -> None:
    command = [sys.executable, "-m", "pqindex.cli", "inspect"]
    ok = subprocess.run([*command, str(arrow_file), "--json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["num_rows"] == N
    missing = subprocess.run(
        [*command, str(data_dir / "nope.parquet")], capture_output=True, text=True
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith("pqindex: error: ") and missing.stderr.count("\n") == 1


# --- helpers -------------------------------------------------------------------------------


def _flag_parser(flag: str) -> argparse.Action:
    """The ``index add`` option ``flag`` of a freshly built parser."""
    add = _subparser(cli.build_parser(), "index", "add")
    return next(a for a in add._actions if flag in a.option_strings)


def _subparser(parser: argparse.ArgumentParser, *names: str) -> argparse.ArgumentParser:
    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def _expected_metavar(kind: dict[str, Any]) -> str:
    parts = ["GRAN"] if len(kind["granularities"]) > 1 else []
    parts += [p["name"].upper() for p in kind["params"]]
    return "COL" + "".join(f"[:{p}" for p in parts) + "]" * len(parts)


def test_index_add_flags_come_from_the_registry() -> None:
    """Every registered kind has its option, whatever the kind is called: the metavar shows
    a granularity only where there is a choice and one part per parameter, and parsing
    builds that kind's class with the registry's defaults."""
    kinds = _native.index_kinds()
    assert kinds
    for kind in kinds:
        option = f"--{kind['cli_flag']}"
        action = _flag_parser(option)
        assert action.metavar == _expected_metavar(kind)
        assert kind["doc"].split(" ")[0] in (action.help or "")
        index = action.type("c")
        assert isinstance(index, index_class(kind["name"]))
        assert index.identities() == [(kind["name"], "c", kind["granularities"][0])]
        for param in kind["params"]:
            assert getattr(index, param["name"]) == param["default"]
        if len(kind["granularities"]) > 1:
            for gran in kind["granularities"]:
                (identity,) = action.type(f"c:{gran}").identities()
                assert identity == (kind["name"], "c", gran)
        optional = len(kind["params"]) + (len(kind["granularities"]) > 1)
        too_many = "c" + ":x" * (optional + 1)
        with pytest.raises(argparse.ArgumentTypeError, match="expected COL"):
            action.type(too_many)
        with pytest.raises(argparse.ArgumentTypeError, match="expected COL"):
            action.type("")


def test_a_new_registry_kind_gets_its_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind the registry lists gets an ``index add`` option and a ``drop --kind`` choice
    with no change to the command's code."""
    new_kind = {
        "name": "zz_kind",
        "class_name": "ZzIndex",
        "cli_flag": "zz",
        "doc": "A made-up kind. Second sentence.",
        "multi_column": False,
        "granularities": ["file", "page"],
        "params": [
            {"name": "width", "doc": "bits", "type": "int", "default": 8, "min": 1, "max": 64},
            {"name": "mode", "doc": "how", "type": "choice", "default": "a", "choices": ["a"]},
        ],
    }
    real = _native.index_kinds()
    monkeypatch.setattr(_native, "index_kinds", lambda: [*real, new_kind])
    action = _flag_parser("--zz")
    assert action.metavar == "COL[:GRAN[:WIDTH[:MODE]]]"
    assert action.help == (
        "A made-up kind. GRAN: file, page (default file). WIDTH: bits (default 8). "
        "MODE: how (default a)."
    )
    with pytest.raises(argparse.ArgumentTypeError, match="WIDTH must be an integer"):
        action.type("c:page:wide")
    drop = _subparser(cli.build_parser(), "index", "drop")
    kind = next(a for a in drop._actions if "--kind" in a.option_strings)
    assert list(kind.choices or []) == [k["name"] for k in real] + ["zz_kind"]


def test_index_add_values() -> None:
    """What today's flags mean, spelled as the classes the registry made."""
    assert _flag_parser("--distinct").type("k") == pqindex.DistinctIndex("k", "page")
    cases = [
        ("--distinct", "a.b:file", pqindex.DistinctIndex("a.b", "file")),
        ("--bloom", "s", pqindex.BloomIndex("s", "row_group", 0.01)),
        ("--bloom", "s:page:0.001", pqindex.BloomIndex("s", "page", 0.001)),
        ("--bloom", "s::0.05", pqindex.BloomIndex("s", "row_group", 0.05)),
        ("--hll", "k", pqindex.HllIndex("k")),
        ("--minmax", "k", pqindex.MinMaxIndex("k")),
        ("--aggregates", "k", pqindex.AggregateIndex(["k"], "page")),
        ("--aggregates", "k:file", pqindex.AggregateIndex(["k"], "file")),
    ]
    for flag, text, expected in cases:
        assert _flag_parser(flag).type(text) == expected, (flag, text)
    for flag, text, message in [
        ("--hll", "k:page", "expected COL, got"),
        ("--distinct", ":page", "expected COL[:GRAN]"),
        ("--bloom", "s:page:x", "FPP must be a number"),
        ("--bloom", "s:page:0", "fpp must be between 0 and 1"),
        ("--distinct", "k:bogus", "granularity must be one of"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(message)):
            _flag_parser(flag).type(text)


def test_index_drop_kinds_come_from_the_registry() -> None:
    drop = _subparser(cli.build_parser(), "index", "drop")
    kind = next(a for a in drop._actions if "--kind" in a.option_strings)
    assert list(kind.choices or []) == [k["name"] for k in _native.index_kinds()]


def test_aggregate_from_indexes_equals_pyarrow(
    arrow_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agg.parquet"
    path.write_bytes(arrow_file.read_bytes())
    code, _, _ = run(capsys, "index", "add", path, "--aggregates", "k", "--minmax", "k")
    assert code == 0
    code, doc = run_json(
        capsys,
        "aggregate",
        path,
        "--select",
        "count(*) AS n, sum(k) AS s, max(k)",
        "--where",
        "k < 777",
    )
    assert code == 0
    k = pq.read_table(path, columns=["k"]).column("k").to_pylist()
    kept = [v for v in k if v is not None and v < 777]
    assert doc["row"]["n"] == len(kept)
    assert int(doc["row"]["s"]) == sum(kept)
    assert doc["row"]["max(k)"] == max(kept)
    assert doc["metrics"]["rows_from_index"] > 0
    code, out, _ = run(capsys, "aggregate", path, "--select", "count(*)", "--explain")
    assert code == 0 and "answered by" in out
    code, _, err = run(capsys, "aggregate", path, "--select", "sum(s)")
    assert code != 0 and "numeric" in err


def test_catalog_build_show_refresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(3):
        pq.write_table(_table(50).slice(0, 50), root / f"p{i}.parquet")
    code, doc = run_json(capsys, "catalog", "build", root, "--columns", "k,s", "--bloom", "s")
    assert code == 0
    assert (doc["version"], doc["files"], doc["bloom_columns"]) == (1, 3, ["s"])
    pq.write_table(_table(50), root / "p9.parquet")
    code, doc = run_json(capsys, "catalog", "show", root)
    assert code == 0 and doc["freshness"] == {"fresh": 3, "changed": 0, "added": 1, "removed": 0}
    code, doc = run_json(capsys, "catalog", "refresh", root)
    assert code == 0 and doc["version"] == 2 and doc["report"]["added"] == 1
    code, out, _ = run(capsys, "catalog", "show", root)
    assert code == 0 and "version" in out
    code, _, err = run(capsys, "catalog", "show", tmp_path)
    assert code != 0 and "no catalog" in err


def test_paths_are_listed_as_scans_list_them(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file commands list through the native listing (Spark's rules: names starting
    with _ or . are not data at any depth; every other file is), so they see what a scan
    sees; a non-Parquet file is that file's error."""
    for rel in [
        "a.parquet",
        "sub/b.parquet",
        "sub/deeper/c.parquet",
        "_tmp/x.parquet",
        ".hidden/y.parquet",
        "sub/_z.parquet",
        "sub/.w.parquet",
        "notes.txt",
    ]:
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_table(10), data_dir / rel)
    (data_dir / "notes.txt").write_text("not parquet\n")
    explicit = data_dir / "sub" / "_z.parquet"
    listed = cli.arguments.data_files([str(data_dir), str(explicit)], None)
    assert listed == _native.list_files([str(data_dir), str(explicit)])
    assert [os.path.relpath(p, data_dir) for p in listed] == [
        "a.parquet",
        "notes.txt",
        os.path.join("sub", "b.parquet"),
        os.path.join("sub", "deeper", "c.parquet"),
        os.path.join("sub", "_z.parquet"),
    ]
    code, doc = run_json(capsys, "index", "list", data_dir, explicit)
    assert code == 1 and doc["failed"] == 1
    assert [f["path"] for f in doc["files"]] == listed
    (bad,) = [f for f in doc["files"] if f["error"]]
    assert bad["path"].endswith("notes.txt") and "not a Parquet file" in bad["error"]

    code, out, err = run(capsys, "index", "list", data_dir / "missing")
    assert_one_line_error(code, out, err, "missing", "no such file")
    (data_dir / "empty" / "_tmp").mkdir(parents=True)
    (data_dir / "empty" / "_tmp" / "x.parquet").write_text("")
    code, out, err = run(capsys, "index", "verify", data_dir / "empty")
    assert_one_line_error(code, out, err, "no data files")
    (data_dir / "delta" / "_delta_log").mkdir(parents=True)
    pq.write_table(_table(10), data_dir / "delta" / "part-0.parquet")
    code, out, err = run(capsys, "index", "add", data_dir / "delta", "--hll", "k")
    assert_one_line_error(code, out, err, "Delta Lake table")
    assert pqindex.list_indexes(data_dir / "delta" / "part-0.parquet") == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal() -> None:
    stream = _Terminal()
    with cli.output.ProgressBar(4, stream, width=8) as bar:
        for done in range(1, 5):
            bar.update(done)
    assert stream.getvalue() == (
        "\r[........] 0/4 files\r[##......] 1/4 files\r[####....] 2/4 files"
        "\r[######..] 3/4 files\r[########] 4/4 files\n"
    )


def test_progress_bar_silent_off_terminal_or_for_one_file() -> None:
    for stream, total in [(io.StringIO(), 4), (_Terminal(), 1)]:
        with cli.output.ProgressBar(total, stream) as bar:
            bar.update(total)
        assert stream.getvalue() == ""


# --- index commands over a stand-in API (the per-file plumbing) ----------------------------


@pytest.fixture
def stand_in_api(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Replaces pqindex's index functions with ones that record their calls and fail on
    files named ``bad*``, to check how the commands report per-file results."""
    calls: dict[str, list[Any]] = {"add": [], "drop": []}
    stored: dict[str, list[dict[str, Any]]] = {}

    def check(path: str) -> None:
        if Path(path).name.startswith("bad"):
            raise pqindex.InvalidFileError(f"{path}: not a Parquet file:\nsecond line")

    def add_indexes(
        path: str, indexes: list[Any], *, storage_options: Any = None
    ) -> dict[str, Any]:
        check(path)
        calls["add"].append((path, indexes))
        stored[path] = [
            {"kind": kind, "columns": [col], "granularity": gran, "offset": 4, "length": 40}
            for index in indexes
            for kind, col, gran in index.identities()
        ]
        return {
            "path": path,
            "indexes": stored[path],
            "bytes_before": 100,
            "bytes_after": 180,
            "seconds": 0.25,
            "dropped_damaged": ["hll(k) row_group"],
        }

    def drop_indexes(path: str, **filters: Any) -> dict[str, Any]:
        check(path)
        calls["drop"].append((path, filters))
        stored[path] = [loc for loc in stored.get(path, []) if loc["kind"] != filters["kind"]]
        return {
            "path": path,
            "indexes": stored[path],
            "bytes_before": 180,
            "bytes_after": 140,
            "seconds": 0.5,
            "dropped_damaged": [],
        }

    def list_indexes(path: str, *, storage_options: Any = None) -> list[dict[str, Any]]:
        check(path)
        return list(stored.get(path, []))

    def verify(path: str, *, storage_options: Any = None) -> list[dict[str, Any]]:
        check(path)
        return [
            {
                **loc,
                "ok": loc["kind"] != "bloom",
                "error": None if loc["kind"] != "bloom" else "checksum mismatch",
            }
            for loc in stored.get(path, [])
        ]

    for name, func in [
        ("add_indexes", add_indexes),
        ("drop_indexes", drop_indexes),
        ("list_indexes", list_indexes),
        ("verify", verify),
    ]:
        monkeypatch.setattr(pqindex, name, func)
    return calls


@pytest.fixture
def three_files(data_dir: Path) -> list[Path]:
    paths = [data_dir / "a.parquet", data_dir / "bad.parquet", data_dir / "c.parquet"]
    for path in paths:
        path.write_text("")
    return paths


def test_add_continues_after_a_failed_file(
    stand_in_api: dict[str, list[Any]],
    three_files: list[Path],
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run_json(
        capsys, "index", "add", data_dir, "--distinct", "k", "--bloom", "s:page:0.05"
    )
    assert code == 1
    assert [p for p, _ in stand_in_api["add"]] == [str(three_files[0]), str(three_files[2])]
    assert stand_in_api["add"][0][1] == [
        pqindex.DistinctIndex("k", "page"),
        pqindex.BloomIndex("s", "page", 0.05),
    ]
    assert doc["failed"] == 1
    good, bad, _ = doc["files"]
    assert bad["error"] == f"{three_files[1]}: not a Parquet file: second line"
    assert good["error"] is None and len(good["added"]) == 2
    assert (good["bytes_before"], good["bytes_after"]) == (100, 180)

    code, out, err = run(capsys, "index", "add", three_files[0], "--hll", "k")
    assert code == 0 and err == ""
    assert re.search(r"a\.parquet\s+hll\(k\) row_group\s+1\s+100\s+180\s+0\.25\s+-$", out, re.M)
    assert "note: " in out and "dropped a damaged index: hll(k) row_group" in out


def test_drop_reports_what_went(
    stand_in_api: dict[str, list[Any]], three_files: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "index", "add", three_files[0], "--distinct", "k", "--bloom", "s")
    code, doc = run_json(
        capsys, "index", "drop", three_files[0], "--kind", "bloom", "--column", "s"
    )
    assert code == 0
    assert stand_in_api["drop"] == [
        (
            str(three_files[0]),
            {"kind": "bloom", "columns": ["s"], "granularity": None, "storage_options": None},
        )
    ]
    (result,) = doc["files"]
    assert [d["kind"] for d in result["dropped"]] == ["bloom"]
    assert [i["kind"] for i in result["indexes"]] == ["distinct"]


def test_list_and_verify_over_files(
    stand_in_api: dict[str, list[Any]],
    three_files: list[Path],
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys, "index", "add", three_files[0], "--distinct", "k")
    code, out, _ = run(capsys, "index", "list", data_dir)
    assert code == 1
    assert re.search(r"a\.parquet\s+distinct\s+k\s+page\s+4\s+40\s+-$", out, re.M)
    assert re.search(r"bad\.parquet\s+-(\s+-){4}\s+.*not a Parquet file", out, re.M)
    assert re.search(r"c\.parquet\s+\(none\)", out, re.M)

    code, out, _ = run(capsys, "index", "verify", three_files[0])
    assert code == 0 and "1 indexes in 1 files: 0 damaged" in out
    run(capsys, "index", "add", three_files[2], "--bloom", "s")
    code, doc = run_json(capsys, "index", "verify", three_files[0], three_files[2])
    assert code == 1
    assert (doc["damaged"], doc["failed"], doc["ok"]) == (1, 0, False)
    code, out, _ = run(capsys, "index", "verify", three_files[2])
    assert code == 1
    assert re.search(r"bloom\s+s\s+row_group\s+4\s+40\s+DAMAGED\s+checksum mismatch$", out, re.M)


# --- index commands against the real API ---------------------------------------------------

QUERIES = ["k = 1234", "s = 's07' AND k > 2000", "s IN ('s01', 's02') AND k < 300", "k > 5000"]


def _scan_results(capsys: pytest.CaptureFixture[str], path: Path) -> list[Any]:
    results = []
    for where in QUERIES:
        code, doc = run_json(capsys, "scan", path, "--where", where, "--limit", "100000")
        assert code == 0
        results.append(doc["rows"])
    return results


def _flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_index_lifecycle(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = _scan_results(capsys, arrow_file)
    assert [len(rows) for rows in baseline] == [1, 27, 18, 0]
    size_before = arrow_file.stat().st_size

    code, doc = run_json(capsys, "index", "add", arrow_file, "--distinct", "k", "--bloom", "s")
    assert code == 0, doc
    (added,) = doc["files"]
    assert added["error"] is None
    assert added["bytes_before"] == size_before
    assert added["bytes_after"] == arrow_file.stat().st_size > size_before
    kinds = {(loc["kind"], tuple(loc["columns"]), loc["granularity"]) for loc in added["added"]}
    assert kinds == {("distinct", ("k",), "page"), ("bloom", ("s",), "row_group")}
    assert _scan_results(capsys, arrow_file) == baseline

    code, listed = run_json(capsys, "index", "list", arrow_file)
    assert code == 0
    (entry,) = listed["files"]
    assert len(entry["indexes"]) == 2
    _, inspected = run_json(capsys, "inspect", arrow_file)
    in_footer = [{k: v for k, v in loc.items() if k != "key"} for loc in inspected["indexes"]]
    assert sorted(in_footer, key=lambda loc: loc["offset"]) == sorted(
        entry["indexes"], key=lambda loc: loc["offset"]
    )
    assert inspected["index_bytes"] == sum(loc["length"] for loc in entry["indexes"])

    code, checked = run_json(capsys, "index", "verify", arrow_file)
    assert code == 0 and checked["ok"] and checked["damaged"] == 0
    assert all(loc["ok"] for loc in checked["files"][0]["indexes"])

    distinct = next(loc for loc in entry["indexes"] if loc["kind"] == "distinct")
    _flip_byte(arrow_file, distinct["offset"] + 20)
    code, checked = run_json(capsys, "index", "verify", arrow_file)
    assert code == 1 and checked["damaged"] == 1 and not checked["ok"]
    status = {loc["kind"]: (loc["ok"], loc["error"]) for loc in checked["files"][0]["indexes"]}
    assert status["bloom"] == (True, None)
    assert status["distinct"][0] is False and status["distinct"][1]
    code, out, _ = run(capsys, "index", "verify", arrow_file)
    assert code == 1
    assert re.search(r"distinct\s+k\s+page\s+\d+\s+\d+\s+DAMAGED", out)
    with pytest.warns(pqindex.IndexWarning, match="distinct index on k skipped"):
        assert _scan_results(capsys, arrow_file) == baseline

    code, dropped = run_json(capsys, "index", "drop", arrow_file)
    assert code == 0
    assert dropped["files"][0]["indexes"] == []
    code, listed = run_json(capsys, "index", "list", arrow_file)
    assert code == 0 and listed["files"][0]["indexes"] == []
    assert _scan_results(capsys, arrow_file) == baseline


def test_index_drop_with_filters(arrow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(
        capsys,
        "index",
        "add",
        arrow_file,
        "--distinct",
        "k",
        "--distinct",
        "s:row_group",
        "--bloom",
        "s",
    )
    assert code == 0
    code, doc = run_json(capsys, "index", "drop", arrow_file, "--kind", "bloom")
    assert code == 0
    assert [d["kind"] for d in doc["files"][0]["dropped"]] == ["bloom"]
    code, doc = run_json(capsys, "index", "drop", arrow_file, "--column", "s")
    assert code == 0
    assert [(d["kind"], d["columns"]) for d in doc["files"][0]["dropped"]] == [("distinct", ["s"])]
    remaining = pqindex.list_indexes(arrow_file)
    assert [(loc["kind"], loc["columns"], loc["granularity"]) for loc in remaining] == [
        ("distinct", ["k"], "page")
    ]


def test_index_add_directory_with_a_bad_file(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ["a.parquet", "c.parquet"]:
        pq.write_table(_table(500), data_dir / name, write_page_index=True, row_group_size=250)
    (data_dir / "b.parquet").write_text("not parquet at all\n" * 10)
    (data_dir / "_SUCCESS").write_text("")
    code, out, err = run(capsys, "index", "add", data_dir, "--distinct", "k", "--hll", "s")
    assert code == 1
    assert "1 of 3 files failed" in err and "Traceback" not in err
    rows = {Path(line.split()[0]).name: line for line in out.splitlines()[2:]}
    for good in ["a.parquet", "c.parquet"]:
        assert "distinct(k) page" in rows[good] and "hll(s)" in rows[good]
        assert re.search(r"\s2\s+\d+\s+\d+\s+\d+\.\d\d\s+-$", rows[good])
    assert re.search(r"^\S+(\s+-){5}\s+\S", rows["b.parquet"])
    code, listed = run_json(capsys, "index", "list", data_dir / "a.parquet", data_dir / "c.parquet")
    assert code == 0
    assert [len(f["indexes"]) for f in listed["files"]] == [2, 2]


# --- storage options and object stores -----------------------------------------------------

EVERY_COMMAND = [
    ["inspect", "x.parquet"],
    ["index", "add", "x.parquet", "--hll", "k"],
    ["index", "drop", "x.parquet"],
    ["index", "list", "x.parquet"],
    ["index", "verify", "x.parquet"],
    ["scan", "x.parquet"],
    ["aggregate", "x.parquet", "--select", "count(*)"],
    ["catalog", "build", "ds"],
    ["catalog", "refresh", "ds"],
    ["catalog", "show", "ds"],
]


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=[" ".join(a[:2]) for a in EVERY_COMMAND])
def test_storage_options_on_every_command(argv: list[str]) -> None:
    parser = cli.build_parser()
    args = parser.parse_args(argv)
    assert cli.arguments.storage_options(args) is None
    given = ["--storage-options", "region=eu-west-1", "--storage-options=endpoint=http://h:9/?a=b"]
    args = parser.parse_args([*argv, *given, "--storage-options", "region=us-east-1"])
    assert cli.arguments.storage_options(args) == {
        "region": "us-east-1",
        "endpoint": "http://h:9/?a=b",
    }


@pytest.mark.parametrize("text", ["endpoint", "=value", " =value"])
def test_storage_option_needs_key_and_value(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "scan", "x.parquet", "--storage-options", text)
    assert code == 2 and out == ""
    assert "expected KEY=VALUE" in err and "Traceback" not in err
    assert cli.arguments.storage_option("token=") == ("token", "")


def test_storage_options_for_local_files_are_refused(
    arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in [["inspect", arrow_file], ["scan", arrow_file], ["index", "list", arrow_file]]:
        code, out, err = run(capsys, *argv, "--storage-options", "region=x")
        assert_one_line_error(code, out, err, "object-store URLs")


S3_BUCKET = "cli"


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    pytest.importorskip("moto.server")
    from s3server import s3_server

    with s3_server() as server:
        server.client().create_bucket(Bucket=S3_BUCKET)
        yield server


def test_commands_over_an_object_store(
    s3: Any, arrow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """s3:// URLs work wherever paths do, configured by --storage-options."""
    client = s3.client()
    for name in ["a.parquet", "b.parquet"]:
        client.upload_file(str(arrow_file), S3_BUCKET, f"t/{name}")
    client.put_object(Bucket=S3_BUCKET, Key="t/_SUCCESS", Body=b"")
    options = [f"--storage-options={k}={v}" for k, v in s3.options().items()]
    prefix, url = f"s3://{S3_BUCKET}/t/", f"s3://{S3_BUCKET}/t/a.parquet"

    code, doc = run_json(capsys, "inspect", url, *options)
    assert code == 0
    assert (doc["path"], doc["size_bytes"]) == (url, arrow_file.stat().st_size)
    assert doc["footer_length"] == pq.ParquetFile(arrow_file).metadata.serialized_size

    code, doc = run_json(capsys, "index", "add", prefix, "--distinct", "k", *options)
    assert code == 0, doc
    assert [f["path"] for f in doc["files"]] == [url, f"s3://{S3_BUCKET}/t/b.parquet"]
    assert all(len(f["added"]) == 1 for f in doc["files"])
    code, doc = run_json(capsys, "index", "verify", prefix, *options)
    assert code == 0 and doc["ok"] and doc["damaged"] == 0
    code, doc = run_json(capsys, "scan", prefix, "--where", "k = 7", *options)
    assert code == 0 and doc["num_rows"] == 2
    code, doc = run_json(capsys, "aggregate", url, "--select", "count(*) AS n", *options)
    assert code == 0 and doc["row"]["n"] == N
    code, doc = run_json(capsys, "index", "drop", url, *options)
    assert code == 0 and [d["kind"] for d in doc["files"][0]["dropped"]] == ["distinct"]
    code, doc = run_json(capsys, "index", "list", prefix, *options)
    assert code == 0
    assert [len(f["indexes"]) for f in doc["files"]] == [0, 1]
    code, doc = run_json(capsys, "catalog", "build", prefix, "--columns", "k", *options)
    assert code == 0 and doc["files"] == 2
    code, out, _ = run(capsys, "catalog", "show", prefix, *options)
    assert code == 0
    assert re.search(rf"^catalog\s+s3://{S3_BUCKET}/t/_pqindex$", out, re.M)
