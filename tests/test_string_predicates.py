"""String predicates against DuckDB: LIKE, NOT LIKE, ILIKE (with ESCAPE), starts_with /
prefix, ends_with / suffix, contains, regexp_matches and has_token (given to DuckDB as the
regular expression it means), over strings with multi-byte UTF-8,
case variants, empty strings, NULLs, literal ``%`` and ``_``, and long values whose page
statistics are truncated; with and without every index kind that answers string searches,
at every granularity.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_referee

WORDS = [
    "alpha",
    "Alpha",
    "ALPHA",
    "beta",
    "gamma",
    "école",
    "École",
    "naïve",
    "日本語",
    "東京",
    "İstanbul",
    "istanbul",
    "straße",
    "STRASSE",
    "ẞ",
    "Σίσυφος",
    "50%",
    "50%_off",
    "a_b",
    "back\\slash",
    "it's",
    "x-ray",
    "GET",
    "/api/v2",
    "?id=42",
    "error",
    "errors",
    "42",
]
# Long values share a prefix longer than the 64 bytes page statistics keep.
LONG = "p" * 62


def make_table(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)

    def value() -> str | None:
        r = rng.random()
        if r < 0.05:
            return None
        if r < 0.08:
            return ""
        if r < 0.2:
            return LONG + rng.choice(["", "a", "é", "zz", "p", "pq"]) + rng.choice(WORDS)
        sep = rng.choice([" ", " ", ", ", "/", "-", ""])
        return sep.join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))

    unsorted = [value() for _ in range(rows)]
    # A few rows carry words found nowhere else: what indexes are built to find.
    for i in range(11, rows, 997):
        unsorted[i] = "found the rare needle here"
    ordered = sorted(unsorted, key=lambda v: (v is None, (v or "").encode()))
    return pa.table(
        {
            "k": pa.array(range(rows), pa.int64()),
            "s": pa.array(unsorted, pa.string()),
            "sorted_s": pa.array(ordered, pa.string()),
        }
    )


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def regex_escape(text: str) -> str:
    return "".join("\\" + c if c in r"\.+*?()|[]{}^$" else c for c in text)


_ALNUM = r"[\pL\pN]"
_HAS_TOKEN = re.compile(r"has_token\(([\w\"]+), '((?:[^']|'')*)'\)")


def re2_literal(text: str) -> str:
    """``text`` as an RE2 pattern matching itself."""
    return "".join(c if c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


def for_duckdb(where: str) -> str:
    """``where`` with each ``has_token(col, 'text')`` written as DuckDB's regular expression
    for it: the text where nothing alphanumeric touches an alphanumeric end of it."""

    def rewrite(m: re.Match[str]) -> str:
        text = m.group(2).replace("''", "'")
        if not text:
            return f"CASE WHEN {m.group(1)} IS NULL THEN NULL ELSE false END"
        head = f"(^|[^{_ALNUM[1:-1]}])" if text[0].isalnum() else ""
        tail = f"($|[^{_ALNUM[1:-1]}])" if text[-1].isalnum() else ""
        return f"regexp_matches({m.group(1)}, {sql_string(head + re2_literal(text) + tail)})"

    return _HAS_TOKEN.sub(rewrite, where)


def token_run(value: str, rng: random.Random) -> str:
    """One to three consecutive tokens of ``value`` (alphanumeric runs) with what separates
    them, now and then cut short or with a separator kept at an end."""
    spans = [m.span() for m in re.finditer(r"[^\W_]+", value)]
    if not spans:
        return value
    i = rng.randrange(len(spans))
    j = min(len(spans), i + rng.randint(1, 3)) - 1
    a, b = spans[i][0], spans[j][1]
    r = rng.random()
    if r < 0.15 and b - a > 1:
        b -= 1  # a token cut short: found only where a token is that short
    elif r < 0.25 and a > 0:
        a -= 1  # starting with its separator
    return value[a:b]


class Generator:
    """Random string predicates built from pieces of the column's own values."""

    def __init__(self, table: pa.Table, seed: int) -> None:
        self.rng = random.Random(seed)
        self.values = [v for v in table.column("s").to_pylist() if v]

    def piece(self) -> str:
        v = self.rng.choice(self.values)
        a = self.rng.randrange(len(v))
        b = self.rng.randint(a, min(len(v), a + self.rng.randint(1, 12)))
        p = v[a:b]
        r = self.rng.random()
        if r < 0.15:
            return p.upper()
        if r < 0.2:
            return p + "q"  # most likely absent
        return p

    def like_pattern(self) -> tuple[str, str | None]:
        """A LIKE pattern (with the ESCAPE clause it needs, if any)."""
        p = self.piece()
        escape = None
        if any(c in p for c in "%_!") and self.rng.random() < 0.7:
            escape = "!"
            p = "".join("!" + c if c in "%_!" else c for c in p)
        if self.rng.random() < 0.2 and len(p) > 2 and escape is None:
            i = self.rng.randrange(1, len(p) - 1)
            p = p[:i] + "_" + p[i + 1 :]
        shape = self.rng.choice(["%p%", "p%", "%p", "p", "%p%q%", "%p_"])
        if shape == "%p%q%":
            q = self.piece()
            if escape:
                q = "".join("!" + c if c in "%_!" else c for c in q)
            elif any(c in q for c in "%_"):
                q = "x"
            return "%" + p + "%" + q + "%", escape
        return shape.replace("p", "\x00").replace("\x00", p), escape

    def atom(self) -> str:
        kind = self.rng.choice(
            ["like", "like", "ilike", "starts", "ends", "contains", "regex", "prefix", "token"]
        )
        col = self.rng.choice(['"s"', '"sorted_s"'])
        negated = self.rng.random() < 0.25
        if kind in ("like", "ilike"):
            pattern, escape = self.like_pattern()
            op = ("NOT " if negated else "") + ("ILIKE" if kind == "ilike" else "LIKE")
            text = f"{col} {op} {sql_string(pattern)}"
            return text + (f" ESCAPE {sql_string(escape)}" if escape else "")
        if kind == "prefix":
            # A prefix at the statistics' truncation boundary.
            v = self.rng.choice([v for v in self.values if v.startswith(LONG)] or self.values)
            n = self.rng.randint(55, 70)
            text = f"starts_with({col}, {sql_string(v[:n])})"
        elif kind == "regex":
            p = regex_escape(self.piece())
            if self.rng.random() < 0.3:
                p = "^" + p
            if self.rng.random() < 0.3:
                p = p + "[a-z]+"
            opts = ", 'i'" if self.rng.random() < 0.2 else ""
            text = f"regexp_matches({col}, {sql_string(p)}{opts})"
        elif kind == "token":
            text = (
                f"has_token({col}, {sql_string(token_run(self.rng.choice(self.values), self.rng))})"
            )
        else:
            fn = {
                "starts": self.rng.choice(["starts_with", "prefix"]),
                "ends": self.rng.choice(["ends_with", "suffix"]),
                "contains": "contains",
            }[kind]
            text = f"{fn}({col}, {sql_string(self.piece())})"
        return f"NOT {text}" if negated else text

    def predicate(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return self.atom()
        if r < 0.75:
            return f"{self.atom()} AND k < {self.rng.randrange(6000)}"
        if r < 0.9:
            return f"({self.atom()} OR {self.atom()})"
        return f"NOT ({self.atom()} AND {self.atom()})"


ROWS = 6000
INDEXES: dict[str, list[Any]] = {
    "none": [],
    "arrow-rs": [],
    "ngram-page": [pqindex.NgramIndex("s"), pqindex.NgramIndex("sorted_s", n=4)],
    "ngram-row_group": [pqindex.NgramIndex("s", granularity="row_group")],
    "ngram-file": [pqindex.NgramIndex("s", granularity="file", n=2)],
    "token-page": [pqindex.TokenIndex("s"), pqindex.TokenIndex("sorted_s")],
    "token-row_group": [pqindex.TokenIndex("s", granularity="row_group", tokenizer="whitespace")],
    "token-file": [pqindex.TokenIndex("s", granularity="file")],
    "lookups": [pqindex.BloomIndex("s", granularity="page"), pqindex.DistinctIndex("s")],
}


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return make_table(ROWS, seed=7)


@pytest.fixture(scope="module")
def files(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    base = tmp_path_factory.mktemp("strings")
    for name, indexes in INDEXES.items():
        path = str(base / f"{name}.parquet")
        if name == "none":
            pq.write_table(
                table,
                path,
                row_group_size=2000,
                data_page_size=1024,
                write_batch_size=50,
                max_rows_per_page=250,
                write_page_index=True,
            )
        else:
            # arrow-rs truncates page bounds to 64 bytes: the long values' prefixes cross it.
            pqindex.write(table, path, row_group_size=2000, page_row_limit=250)
        if indexes:
            pqindex.add_indexes(path, indexes)
        out[name] = path
    return out


def duckdb_keys(con: Any, path: str, where: str) -> list[int]:
    sql = f"SELECT k FROM read_parquet('{path}') WHERE {for_duckdb(where)}"
    rows = con.execute(sql).fetchall()
    return sorted(r[0] for r in rows)


def pqindex_keys(path: str, where: str) -> tuple[list[int], dict[str, int]]:
    scan = pqindex.scan(path, where=where, columns=["k"])
    return sorted(scan.to_arrow().column("k").to_pylist()), scan.metrics()


@pytest.mark.parametrize("layout", list(INDEXES))
def test_string_predicates_match_duckdb(
    layout: str, files: dict[str, str], table: pa.Table, full: bool
) -> None:
    con = duckdb_referee()
    gen = Generator(table, seed=hash(layout) % 1000)
    failures = []
    for _ in range(600 if full else 120):
        where = gen.predicate()
        expected = duckdb_keys(con, files["none"], where)
        got, _ = pqindex_keys(files[layout], where)
        if got != expected:
            failures.append(f"{where}: pqindex {len(got)} rows, DuckDB {len(expected)}")
    assert not failures, "\n".join(failures[:20])


def test_fixed_cases_match_duckdb(files: dict[str, str]) -> None:
    con = duckdb_referee()
    cases = [
        "s LIKE '50!%!_off' ESCAPE '!'",
        "s LIKE '50%_off'",
        "s LIKE 'back\\slash%'",
        "s ILIKE '%ÉCOLE%'",
        "s ILIKE '%istanbul%'",
        "s ILIKE '%STRASSE%'",
        "s ILIKE '%σίσυφος%'",
        "s NOT ILIKE '%a%'",
        "s LIKE ''",
        "s NOT LIKE ''",
        "s LIKE '%'",
        "s NOT LIKE '%'",
        "s LIKE NULL",
        "contains(s, '')",
        "contains(s, NULL)",
        "starts_with(sorted_s, 'pppp')",
        f"starts_with(sorted_s, '{LONG}pq')",
        f"sorted_s LIKE '{LONG}p%'",
        f"sorted_s NOT LIKE '{LONG}%'",
        "sorted_s NOT LIKE 'p%'",
        "regexp_matches(s, '^日本')",
        "regexp_matches(s, 'error[s]? 42')",
        "regexp_matches(s, 'ALPHA', 'i')",
        "NOT regexp_matches(s, 'a')",
        "s LIKE '%e_ror%'",
        "s LIKE '%x-ray%'",
        "has_token(s, 'alpha')",
        "has_token(s, 'Alpha beta')",
        "has_token(s, 'error')",
        "NOT has_token(s, 'errors')",
        "has_token(s, '/api/v2')",
        "has_token(s, '?id=42')",
        "has_token(s, '42')",
        "has_token(s, 'école')",
        "has_token(s, '日本語')",
        "has_token(s, 'rare needle')",
        "has_token(s, 'needl')",
        "has_token(s, '')",
        f"has_token(sorted_s, '{LONG}pq')",
    ]
    for layout, path in files.items():
        for where in cases:
            assert pqindex_keys(path, where)[0] == duckdb_keys(con, files["none"], where), (
                layout,
                where,
            )


def test_bad_string_predicates_are_typed_errors(files: dict[str, str]) -> None:
    path = files["none"]
    for where, error in [
        ("s LIKE 'a!' ESCAPE '!'", pqindex.PredicateError),
        ("s LIKE 'a' ESCAPE '!!'", pqindex.PredicateError),
        ("regexp_matches(s, 'a(')", pqindex.PredicateError),
        ("regexp_matches(s, 'a', 'g')", pqindex.UnsupportedError),
        ("k LIKE '1%'", pqindex.PredicateError),
        ("contains(s)", pqindex.PredicateError),
        ("s LIKE k", pqindex.UnsupportedError),
    ]:
        with pytest.raises(error):
            pqindex.scan(path, where=where).to_arrow()


def test_prefixes_prune_pages_of_a_sorted_column(files: dict[str, str]) -> None:
    _, m = pqindex_keys(files["none"], "starts_with(sorted_s, 'gamma')")
    assert m["pages_pruned"] > m["pages"] // 2, m
    _, m = pqindex_keys(files["none"], "sorted_s LIKE 'Σ%'")
    assert m["rows_selected"] < ROWS // 4, m


def test_text_indexes_prune_substring_searches(files: dict[str, str]) -> None:
    # The n-gram index rules out the pages without every n-gram of the searched text.
    where = "contains(s, 'rare needle')"
    expected = duckdb_keys(duckdb_referee(), files["none"], where)
    base_rows, base = pqindex_keys(files["none"], where)
    rows, m = pqindex_keys(files["ngram-page"], where)
    assert rows == base_rows == expected
    assert len(rows) == 7
    assert m["rows_selected"] <= 7 * 250, (m, base)
    assert base["rows_selected"] == ROWS
    # Whole words between delimiters are what the token index answers for.
    for where in ["contains(s, ' needle ')", "s LIKE '%the rare %'", "s LIKE 'found %'"]:
        rows, m = pqindex_keys(files["token-page"], where)
        assert rows == duckdb_keys(duckdb_referee(), files["none"], where)
        assert m["rows_selected"] <= 7 * 250, (where, m)
    # A word that may continue in the value ('needles') is not whole: no pruning.
    _, m = pqindex_keys(files["token-page"], "contains(s, 'needle')")
    assert m["rows_selected"] == ROWS
    # has_token asks for whole tokens: pruned by an alnum token index, not a whitespace one.
    where = "has_token(s, 'needle')"
    expected = duckdb_keys(duckdb_referee(), files["none"], where)
    rows, m = pqindex_keys(files["token-page"], where)
    assert rows == expected and len(rows) == 7
    assert m["rows_selected"] <= 7 * 250, m
    rows, m = pqindex_keys(files["token-row_group"], where)
    assert rows == expected
    assert m["rows_selected"] == ROWS, m
    # An equality is a search for every token of the value.
    where = "s = 'naïve/naïve/naïve'"
    rows, m = pqindex_keys(files["token-page"], where)
    assert rows == duckdb_keys(duckdb_referee(), files["none"], where)


def test_text_indexes_are_verified_and_listed(files: dict[str, str]) -> None:
    listed = pqindex.list_indexes(files["ngram-page"])
    assert {(i["kind"], i["granularity"]) for i in listed} == {("ngram", "page")}
    assert all(c["ok"] for c in pqindex.verify(files["token-page"]))


def test_a_damaged_text_index_is_skipped_with_a_warning(
    files: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "damaged.parquet"
    data = bytearray(Path(files["ngram-page"]).read_bytes())
    (index,) = [i for i in pqindex.list_indexes(files["ngram-page"]) if i["columns"] == ["s"]]
    # A byte of the header every lookup reads.
    data[index["offset"] + 16 + 30] ^= 0x55
    path.write_bytes(bytes(data))
    where = "contains(s, 'alpha beta')"
    with pytest.warns(pqindex.IndexWarning):
        rows, m = pqindex_keys(str(path), where)
    assert rows == duckdb_keys(duckdb_referee(), files["none"], where)
    assert m["indexes_skipped"] >= 1
