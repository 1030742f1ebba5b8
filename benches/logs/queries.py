"""The log-search queries as data: what each asks, the pqindex call, and the SQL (or polars
expression) each peer runs.

Literals come from ``_literals.json`` beside the data (written by generate.py), so every
lookup finds what it should. Every query is ``SELECT *``: a log viewer shows whole rows.

The pqindex side goes through one adapter per feature (``token_predicate``, ``newest``,
``first``). Each answers the query as it was answered before the feature existed, and with
the feature when its flag in ``FEATURES`` is on (``run.py --pqindex-features``):

- ``has_token``: ``has_token(message, 'x')`` in ``where`` instead of
  ``regexp_matches(message, '\\bx\\b')``;
- ``top_k``: ``scan(..., order_by=[("ts", "desc")], limit=k)`` instead of scanning every
  match and sorting in Python;
- ``limit``: ``scan(..., limit=n)`` instead of stopping the Arrow stream after n rows.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

#: API not in pqindex yet; a flag turns its adapter over to it.
FEATURES: dict[str, bool] = {"has_token": False, "top_k": False, "limit": False}
#: The SQL dialects: "duckdb" is also what pqindex's ``where`` reads.
DIALECTS = ("duckdb", "datafusion", "chdb", "spark")
TIME_WINDOW = dt.timedelta(minutes=20)


@dataclass
class PqResult:
    """What a pqindex call returns: the rows and the scan's metrics."""

    table: Any
    metrics: dict[str, int]


# ---------------------------------------------------------------------------------------------
# pqindex adapters: the query without a feature, or with the one a flag switches on.


def select(source: str, where: str) -> PqResult:
    """``SELECT * WHERE where``."""
    import pqindex

    scan = pqindex.scan(source, where=where)
    table = scan.to_arrow()
    return PqResult(table, dict(scan.metrics()))


def token_predicate(column: str, token: str) -> str:
    """A whole-word match of ``token`` (a run of letters and digits) in ``column``."""
    if FEATURES["has_token"]:
        return f"has_token({column}, {quote(token)})"
    regex = r"\b" + token + r"\b"
    return f"regexp_matches({column}, {quote(regex)})"


def newest(source: str, where: str, column: str, k: int) -> PqResult:
    """``WHERE where ORDER BY column DESC LIMIT k``: top-k with ``top_k``, else every match
    read, then sorted in Python."""
    import pqindex

    if FEATURES["top_k"]:
        scan = pqindex.scan(source, where=where, order_by=[(column, "desc")], limit=k)
        return PqResult(scan.to_arrow(), dict(scan.metrics()))
    scan = pqindex.scan(source, where=where)
    table = scan.to_arrow()
    table = table.sort_by([(column, "descending")]).slice(0, k)
    return PqResult(table, dict(scan.metrics()))


#: Batch size of ``first``'s stream: a scan fetches pages as its batches need them, so
#: small batches stop the reading sooner (65,536 rows, the default, read 29 MB of a 1 M-row
#: row group for 10 rows; 1,024 read 4.5 MB).
FIRST_BATCH_ROWS = 1024


def first(source: str, where: str, n: int) -> PqResult:
    """``WHERE where LIMIT n``: ``limit=`` with ``limit``, else the Arrow stream, in small
    batches, read until it has n rows, then closed."""
    import pqindex

    if FEATURES["limit"]:
        scan = pqindex.scan(source, where=where, limit=n)
        return PqResult(scan.to_arrow(), dict(scan.metrics()))
    scan = pqindex.scan(source, where=where, batch_size=max(n, FIRST_BATCH_ROWS))
    reader = pa.RecordBatchReader.from_stream(scan)
    batches, rows = [], 0
    while rows < n:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        batches.append(batch)
        rows += batch.num_rows
    reader.close()
    table = pa.Table.from_batches(batches, reader.schema).slice(0, n)
    return PqResult(table, dict(scan.metrics()))


# ---------------------------------------------------------------------------------------------
# Queries


def quote(text: str) -> str:
    """A SQL string literal (standard SQL: quotes doubled, backslashes as they are)."""
    return "'" + text.replace("'", "''") + "'"


def quote_escaped(text: str) -> str:
    """A string literal for dialects that read backslash escapes (ClickHouse, Spark)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class LogQuery:
    """One query in every engine's terms.

    ``where`` holds the predicate per dialect (DIALECTS); ``order_by``/``limit`` are added
    by ``sql``. ``check`` says how results are compared across engines: ``"rows"`` (the
    same multiset of rows) or ``"limit"`` (``limit`` rows, each satisfying the predicate:
    which ones an engine returns is its choice)."""

    name: str
    description: str
    where: dict[str, str]
    pqindex: Callable[[str], PqResult]
    polars: Callable[[], Any]
    order_by: str | None = None  # column, descending
    limit: int | None = None
    check: str = "rows"
    notes: list[str] = field(default_factory=list)

    def sql(self, dialect: str, source: str) -> str:
        text = f"SELECT * FROM {source} WHERE {self.where[dialect]}"
        if self.order_by:
            text += f" ORDER BY {self.order_by} DESC"
        if self.limit is not None:
            text += f" LIMIT {self.limit}"
        return text


def load_literals(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "_literals.json").read_text()))


def same_everywhere(predicate: str) -> dict[str, str]:
    return dict.fromkeys(DIALECTS, predicate)


def build(literals: dict[str, Any]) -> list[LogQuery]:
    """The queries over data whose ``_literals.json`` is ``literals``."""
    import polars as pl

    lit = literals
    trace, absent = lit["trace_id"], lit["absent_trace_id"]
    uuid, partial = lit["message_uuid"], lit["message_trace"][:12]
    phrase, token = lit["rare_phrase"], lit["token"]
    user = int(lit["user_id"])
    t0 = dt.datetime.fromisoformat(lit["time_from"]).replace(microsecond=0)
    t1 = t0 + TIME_WINDOW
    naive = [t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") for t in (t0, t1)]
    col = pl.col
    message = col("message").str

    def like(needle: str) -> dict[str, str]:
        return same_everywhere(f"message LIKE {quote('%' + needle + '%')}")

    regex = rf"\b{token}\b"
    time_level = {
        "duckdb": f"ts >= TIMESTAMPTZ '{naive[0]}+00' AND ts < TIMESTAMPTZ '{naive[1]}+00' "
        "AND level = 'ERROR'",
        "datafusion": f"ts >= '{naive[0]}Z' AND ts < '{naive[1]}Z' AND level = 'ERROR'",
        "chdb": f"ts >= toDateTime64('{naive[0]}', 6, 'UTC') AND "
        f"ts < toDateTime64('{naive[1]}', 6, 'UTC') AND level = 'ERROR'",
        "spark": f"ts >= TIMESTAMP '{naive[0]}' AND ts < TIMESTAMP '{naive[1]}' "
        "AND level = 'ERROR'",
    }
    pq_time_level = (
        f"ts >= TIMESTAMP '{naive[0]}' AND ts < TIMESTAMP '{naive[1]}' AND level = 'ERROR'"
    )
    errors = "level = 'ERROR' AND service = 'payments'"
    token_sql = {
        "duckdb": f"regexp_matches(message, {quote(regex)})",
        "datafusion": f"message ~ {quote(regex)}",
        "chdb": f"match(message, {quote_escaped(regex)})",
        "spark": f"message RLIKE {quote_escaped(regex)}",
    }
    pq_token = token_predicate("message", token)

    return [
        LogQuery(
            "trace_lookup",
            "every row of one trace: `trace_id = '<32 hex>'` (a few rows, anywhere in time)",
            same_everywhere(f"trace_id = {quote(trace)}"),
            lambda s: select(s, f"trace_id = {quote(trace)}"),
            lambda: col("trace_id") == trace,
        ),
        LogQuery(
            "trace_absent",
            "a trace id that is in no file: `trace_id = '<32 hex>'`, no rows",
            same_everywhere(f"trace_id = {quote(absent)}"),
            lambda s: select(s, f"trace_id = {quote(absent)}"),
            lambda: col("trace_id") == absent,
        ),
        LogQuery(
            "time_level",
            f"errors in a {TIME_WINDOW.seconds // 60}-minute window: `ts >= t0 AND ts < t1 "
            "AND level = 'ERROR'`",
            time_level,
            lambda s: select(s, pq_time_level),
            lambda: (col("ts") >= t0) & (col("ts") < t1) & (col("level") == "ERROR"),
        ),
        LogQuery(
            "user_lookup",
            "one user's rows: `user_id = <id>` (a user of a few traces, among 1 M)",
            same_everywhere(f"user_id = {user}"),
            lambda s: select(s, f"user_id = {user}"),
            lambda: col("user_id") == user,
        ),
        LogQuery(
            "uuid_in_message",
            "a payment UUID inside the text: `message LIKE '%<uuid>%'` (one row)",
            like(uuid),
            lambda s: select(s, f"message LIKE {quote('%' + uuid + '%')}"),
            lambda: message.contains(uuid, literal=True),
        ),
        LogQuery(
            "partial_id",
            "the first 12 hex digits of a trace id quoted in messages: `message LIKE '%<12 hex>%'`",
            like(partial),
            lambda s: select(s, f"message LIKE {quote('%' + partial + '%')}"),
            lambda: message.contains(partial, literal=True),
        ),
        LogQuery(
            "rare_phrase",
            f"a rare phrase: `message LIKE '%{phrase}%'`",
            like(phrase),
            lambda s: select(s, f"message LIKE {quote('%' + phrase + '%')}"),
            lambda: message.contains(phrase, literal=True),
        ),
        LogQuery(
            "whole_token",
            f"a rare word as a whole word (`\\b{token}\\b`; its plural is common): "
            "`regexp_matches(message, '\\bword\\b')` and each peer's regex match",
            token_sql,
            lambda s: select(s, pq_token),
            lambda: message.contains(regex),
        ),
        LogQuery(
            "newest_errors",
            f"the newest 100 of a service's errors: `{errors} ORDER BY ts DESC LIMIT 100`",
            same_everywhere(errors),
            lambda s: newest(s, errors, "ts", 100),
            lambda: (col("level") == "ERROR") & (col("service") == "payments"),
            order_by="ts",
            limit=100,
        ),
        LogQuery(
            "first_ok",
            "any 10 rows of an unselective condition: `status = 200 LIMIT 10`",
            same_everywhere("status = 200"),
            lambda s: first(s, "status = 200", 10),
            lambda: col("status") == 200,
            limit=10,
            check="limit",
        ),
    ]
