"""Text indexes on log messages: what each costs in bytes, and what it prunes, per alphabet.

    python benches/logs/text_index_sizes.py /tmp/logbench/2m [--work /tmp/logbench/sizes]
        [--runs 3] [--keep]

One data file of ``generate.py`` (the first ``*.parquet`` under the data directory) is
copied and its embedded indexes dropped (``pqindex.drop_indexes``: the Parquet bytes stay as
they are), which is the base. Each configuration then gets a copy of the base with one
index on ``message`` at page granularity: none, ``NgramIndex`` with n = 3, 4, 5, 6, and
``TokenIndex`` (alnum). The index's bytes are what ``pqindex.list_indexes`` says.

The searches are picked from the base's messages, so each has a known number of matching
rows: a whole 32-hex trace id, its first 12 hex digits, a payment UUID, an IPv4 address, a
rare word (a few rows, found as no part of a longer word), a common word (the word nearest
1 % of the rows), a phrase of two common words that occurs in a few rows, and a phrase of
two words that occur nowhere else (the rare template's). Each is
``message LIKE '%x%'``, and on the token index also ``has_token(message, 'x')``; the rows
pqindex returns are checked against DuckDB's count of the same predicate (``has_token`` as
DuckDB's regular expression). Every scan reads only ``message``: pages kept are the message
pages left after pruning, rows read the rows of those pages. Times are warm: the median of
``--runs`` runs after one warm-up.

A JSON report goes to ``<work>/_sizes.json``; the Markdown tables to stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

COLUMN = "message"
CONFIGS: dict[str, Any] = {
    "none": None,
    "NgramIndex n=3": pqindex.NgramIndex(COLUMN, n=3, granularity="page"),
    "NgramIndex n=4": pqindex.NgramIndex(COLUMN, n=4, granularity="page"),
    "NgramIndex n=5": pqindex.NgramIndex(COLUMN, n=5, granularity="page"),
    "NgramIndex n=6": pqindex.NgramIndex(COLUMN, n=6, granularity="page"),
    "TokenIndex alnum": pqindex.TokenIndex(COLUMN, tokenizer="alnum", granularity="page"),
}
#: Searches are taken from this row on (the middle of a 1 M-row file), not from its start.
FROM_ROW = 500_000
NOT_ALNUM = r"[^\pL\pN]"


@dataclass
class Search:
    name: str
    what: str
    text: str


@dataclass
class Measured:
    config: str
    search: str
    predicate: str  # "like" or "has_token"
    matches: int
    pages: int
    pages_kept: int
    rows_read: int
    rows_scanned: int
    bytes_read: int
    index_bytes_read: int
    ms: float


# ---------------------------------------------------------------------------------------------
# Picking the searches from the data


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def like(text: str) -> str:
    if any(c in text for c in "%_\\"):
        raise ValueError(f"LIKE wildcard in {text!r}")
    return f"{COLUMN} LIKE {quote('%' + text + '%')}"


def has_token(text: str) -> str:
    return f"has_token({COLUMN}, {quote(text)})"


def token_regex(text: str) -> str:
    """``has_token`` as a regular expression (RE2, as DuckDB and pyarrow read it)."""
    return f"(^|{NOT_ALNUM}){re.escape(text)}($|{NOT_ALNUM})"


def first_match(messages: pa.Array, pattern: str, start: int) -> str:
    """Group 1 of ``pattern`` in the first message from row ``start`` that matches it."""
    tail = messages.slice(start)
    hits = np.flatnonzero(pc.match_substring_regex(tail, pattern).to_numpy(zero_copy_only=False))
    if not len(hits):
        raise ValueError(f"no message matches {pattern!r}")
    found = re.search(pattern, tail[int(hits[0])].as_py())
    assert found is not None
    return found.group(1)


def count_rows(messages: pa.Array, text: str) -> int:
    return int(pc.sum(pc.match_substring(messages, text)).as_py() or 0)


def word_rows(messages: pa.Array) -> tuple[dict[str, int], dict[str, int]]:
    """Rows holding each space-separated lowercase word, and each pair of adjacent ones."""
    parts = pc.split_pattern(messages, " ")
    flat = pc.list_flatten(parts)
    row = pc.list_parent_indices(parts).to_numpy()
    alpha = pc.match_substring_regex(flat, "^[a-z]+$").to_numpy(zero_copy_only=False)

    def distinct_rows(rows: np.ndarray, keys: pa.Array) -> dict[str, int]:
        t = pa.table({"row": rows, "key": keys}).group_by(["row", "key"]).aggregate([])
        t = t.group_by("key").aggregate([("row", "count")])
        keys_, counts = t.column("key").to_pylist(), t.column("row_count").to_pylist()
        return dict(zip(keys_, counts, strict=True))

    words = distinct_rows(row[alpha], flat.filter(pa.array(alpha)))
    pair = np.flatnonzero((row[:-1] == row[1:]) & alpha[:-1] & alpha[1:])
    joined = pc.binary_join_element_wise(flat.take(pair), flat.take(pair + 1), " ")
    return words, distinct_rows(row[pair], joined)


def pick_searches(messages: pa.Array) -> list[Search]:
    """The searches, chosen by fixed rules from the messages."""
    rows = len(messages)
    start = min(FROM_ROW, rows // 2)
    trace = first_match(messages, r"trace[= ]([0-9a-f]{32})", start)
    uuid = first_match(
        messages, r"^payment ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) ", start
    )
    ip = first_match(
        messages, r" from ([1-9][0-9]{2}\.[0-9]{1,3}\.[0-9]{1,3}\.[1-9][0-9]{2})$", start
    )
    words, pairs = word_rows(messages)
    # A rare word: 5 rows, 9 letters or more, that no longer word holds (first by spelling).
    rare = next(
        w
        for w in sorted(w for w, n in words.items() if n == 5 and len(w) >= 9)
        if count_rows(messages, w) == 5
    )
    # A common word: 5 letters or more, in the number of rows nearest 1 % of them.
    common = min((w for w in words if len(w) >= 5), key=lambda w: (abs(words[w] - rows / 100), w))
    # A phrase of two common words (each in 2 % of the rows or more) that occurs in 5 to 20
    # rows: the one whose rarer word is the most common.
    phrase = max(
        (
            p
            for p, n in pairs.items()
            if 5 <= n <= 20
            and len(set(p.split(" "))) == 2
            and all(words.get(w, 0) >= rows / 50 for w in p.split(" "))
        ),
        key=lambda p: (min(words[w] for w in p.split(" ")), p),
    )
    # A phrase of two words each found only in it, in 3 to 20 rows: the most frequent.
    rare_phrase = max(
        (
            p
            for p, n in pairs.items()
            if 3 <= n <= 20
            and len(set(p.split(" "))) == 2
            and all(words[w] == n for w in p.split(" "))
        ),
        key=lambda p: (pairs[p], p),
    )
    return [
        Search("trace_id", "a whole 32-hex trace id", trace),
        Search("id_prefix", "its first 12 hex digits", trace[:12]),
        Search("uuid", "a payment UUID", uuid),
        Search("ipv4", "an IPv4 address", ip),
        Search("rare_word", "a rare word", rare),
        Search("common_word", "a common word", common),
        Search("phrase", "a phrase of two common words", phrase),
        Search("rare_phrase", "a phrase of two words found only together", rare_phrase),
    ]


# ---------------------------------------------------------------------------------------------
# Files and measurements


def make_base(data: Path, work: Path) -> Path:
    """A copy of the first data file under ``data`` without embedded indexes."""
    source = sorted(data.glob("*.parquet"))[0]
    work.mkdir(parents=True, exist_ok=True)
    base = work / "base.parquet"
    shutil.copyfile(source, base)
    if pqindex.list_indexes(base):
        pqindex.drop_indexes(base)
    if pqindex.list_indexes(base):
        raise RuntimeError(f"{base} still has embedded indexes")
    return base


def expected_counts(base: Path, searches: list[Search]) -> dict[tuple[str, str], int]:
    """DuckDB's count of rows of each (search, predicate)."""
    import duckdb

    exprs, keys = [], []
    for s in searches:
        regex = token_regex(s.text)
        for predicate, sql in (
            ("like", like(s.text)),
            ("has_token", f"regexp_matches({COLUMN}, {quote(regex)})"),
        ):
            exprs.append(f"count(*) FILTER (WHERE {sql})")
            keys.append((s.name, predicate))
    con = duckdb.connect()
    [row] = con.sql(f"SELECT {', '.join(exprs)} FROM read_parquet({quote(str(base))})").fetchall()
    return {k: int(v) for k, v in zip(keys, row, strict=True)}


def measure(path: Path, where: str, runs: int) -> tuple[int, dict[str, int], float]:
    """Rows, metrics and median milliseconds of ``where`` over ``path``, warm."""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        scan = pqindex.scan(str(path), where=where, columns=[COLUMN])
        table = scan.to_arrow()
        if i:
            times.append(time.perf_counter() - start)
    return table.num_rows, dict(scan.metrics()), 1000 * statistics.median(times)


def run(data: Path, work: Path, runs: int, keep: bool) -> dict[str, Any]:
    started = time.perf_counter()
    base = make_base(data, work)
    data_bytes = base.stat().st_size
    pages = pqindex.read_metadata(base).pages().to_pylist()
    message_bytes = sum(p["compressed_size"] for p in pages if p["column"] == COLUMN)
    messages = pq.read_table(base, columns=[COLUMN]).column(COLUMN).combine_chunks()
    searches = pick_searches(messages)
    expected = expected_counts(base, searches)
    for s in searches:
        print(f"  {s.name}: {s.text!r}, {expected[(s.name, 'like')]} rows", flush=True)
    built: list[dict[str, Any]] = []
    measured: list[Measured] = []
    for name, definition in CONFIGS.items():
        path = base
        index_bytes, seconds = 0, 0.0
        if definition is not None:
            path = work / (re.sub(r"[^a-z0-9]+", "-", name.lower()) + ".parquet")
            shutil.copyfile(base, path)
            seconds = pqindex.add_indexes(path, [definition])["seconds"]
            index_bytes = sum(int(ix["length"]) for ix in pqindex.list_indexes(path))
        built.append(
            {
                "config": name,
                "index_bytes": index_bytes,
                "percent_of_data": 100 * index_bytes / data_bytes,
                "percent_of_message": 100 * index_bytes / message_bytes,
                "file_growth": path.stat().st_size - data_bytes,
                "build_seconds": seconds,
            }
        )
        predicates = ["like"] + (
            ["has_token"] if definition is not None and definition.kind == "token" else []
        )
        for s in searches:
            for predicate in predicates:
                where = like(s.text) if predicate == "like" else has_token(s.text)
                rows, m, ms = measure(path, where, runs)
                want = expected[(s.name, predicate)]
                if rows != want:
                    raise AssertionError(f"{name}, {where}: {rows} rows, DuckDB counts {want}")
                measured.append(
                    Measured(
                        name,
                        s.name,
                        predicate,
                        rows,
                        m["pages"],
                        m["pages"] - m["pages_pruned"],
                        m["rows_selected"],
                        m["rows_scanned"],
                        m["bytes_read"],
                        m["index_bytes_read"],
                        ms,
                    )
                )
        print(f"  {name}: {index_bytes / 1e6:.2f} MB, built in {seconds:.1f} s", flush=True)
        if path != base and not keep:
            path.unlink()
    report = {
        "source": str(sorted(data.glob("*.parquet"))[0]),
        "rows": len(messages),
        "data_bytes": data_bytes,
        "message_bytes": message_bytes,
        "message_pages": measured[0].pages,
        "runs": runs,
        "searches": [
            {
                **asdict(s),
                "matches": expected[(s.name, "like")],
                "token_matches": expected[(s.name, "has_token")],
            }
            for s in searches
        ],
        "indexes": built,
        "measured": [asdict(m) for m in measured],
        "seconds": time.perf_counter() - started,
    }
    (work / "_sizes.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


# ---------------------------------------------------------------------------------------------
# Tables


def rows_label(config: str, predicate: str) -> str:
    return f"{config}, has_token" if predicate == "has_token" else config


def markdown(report: dict[str, Any]) -> str:
    """Pages kept / rows read per search beside each index's size; then the times."""
    searches = report["searches"]
    sizes = {b["config"]: b for b in report["indexes"]}
    cells: dict[tuple[str, str], dict[str, Measured]] = {}
    for m in report["measured"]:
        cells.setdefault((m["config"], m["predicate"]), {})[m["search"]] = Measured(**m)
    names = [f"{s['name']} ({s['matches']:,})" for s in searches]

    def table(head: list[str], first: Any, cell: Any) -> list[str]:
        head = ["index on `message`", *head, *names]
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for (config, predicate), by_search in cells.items():
            row = [rows_label(config, predicate), *first(sizes[config])]
            for s in searches:
                m = by_search[s["name"]]
                text = cell(m)
                if m.matches != s["matches"]:
                    text += f" [{m.matches:,}]"
                row.append(text)
            lines.append("| " + " | ".join(row) + " |")
        return lines

    def size(b: dict[str, Any]) -> list[str]:
        if not b["index_bytes"]:
            return ["-", "-", "-"]
        return [
            f"{b['index_bytes'] / 1e6:.2f} MB",
            f"{b['percent_of_data']:.2f} %",
            f"{b['percent_of_message']:.1f} %",
        ]

    def build(b: dict[str, Any]) -> list[str]:
        return [f"{b['build_seconds']:.1f}" if b["index_bytes"] else "-"]

    out = [
        f"{report['rows']:,} rows, {report['data_bytes'] / 1e6:.1f} MB of Parquet, `message`"
        f" {report['message_bytes'] / 1e6:.1f} MB in {report['message_pages']} pages.",
        "",
        "Message pages kept / rows read (matching rows after each search's name, in brackets"
        " where the predicate finds other rows):",
        "",
    ]
    out += table(
        ["index", "of the data", "of `message`"],
        size,
        lambda m: f"{m.pages_kept} / {m.rows_read:,}",
    )
    out += ["", f"Milliseconds (warm, median of {report['runs']}) / MB read:", ""]
    out += table(["build s"], build, lambda m: f"{m.ms:.1f} / {m.bytes_read / 1e6:.1f}")
    out += ["", "| search | text |", "|---|---|"]
    out += [f"| {s['name']} | `{s['text']}` ({s['what']}) |" for s in searches]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("data", type=Path, help="a generate.py data directory")
    p.add_argument("--work", type=Path, default=Path("/tmp/logbench/sizes"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--keep", action="store_true", help="keep each configuration's file")
    args = p.parse_args(argv)
    report = run(args.data, args.work, args.runs, args.keep)
    print(markdown(report))
    print(f"\n{report['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
