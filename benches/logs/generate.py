"""Synthetic service logs as Parquet: what a log pipeline lands in object storage, built so
that the searches a log viewer runs have something real to find.

    python benches/logs/generate.py --rows 10_000_000 --out /tmp/logbench/10m
        [--rows-per-file 1_000_000] [--seed 7] [--page-rows N] [--sort-by service,ts]
        [--no-parquet-bloom]

Rows are time-ordered (``ts`` strictly increasing, microseconds, UTC) with a daily-looking
rate swing. Levels are skewed (INFO most, FATAL rarest); twelve services of skewed weight,
each with its own pods as hosts; rows of one trace lie close together and share its
``trace_id`` (32 hex), ``request_id`` (UUID) and ``user_id`` (Zipf over a million users,
a few anonymous: null); ``span_id`` is per row. ``path`` and ``message`` come from templates
filled with ids (hex, UUIDs, IPv4s, paths, numbers, user ids, words of a Zipf vocabulary),
``payload`` is the request as JSON text. Every value is a function of the seed.

Each file is written by ``pqindex.write`` from a stream of 128 Ki-row batches built with
numpy and pyarrow kernels (no Python object per row), one row group per file, a page index,
the writer's default pages (at most 1 MiB of encoded values and 20,000 rows) unless
``--page-rows`` is given, and Parquet bloom filters on ``trace_id`` and ``request_id``, as a
careful writer for the other engines would add them. ``_literals.json`` beside the files
records values the queries look for (a trace id that is there, one that is not, a UUID
that occurs in one message, ...), found while the rows were generated.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

BATCH_ROWS = 1 << 17
LITERALS = "_literals.json"  # "_" first: Spark and pqindex skip it; globs of *.parquet too
START = dt.datetime(2025, 3, 3, tzinfo=dt.timezone.utc)
MEAN_GAP_US = 4_000  # 10 M rows span about 11 hours
USERS = 1_000_000
ANONYMOUS = 0.04  # share of traces with no user (null user_id)
ROWS_PER_TRACE = 6

SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("us", tz="UTC")),
        ("level", pa.string()),
        ("service", pa.string()),
        ("host", pa.string()),
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("request_id", pa.string()),
        ("user_id", pa.int64()),
        ("status", pa.int32()),
        ("latency_ms", pa.float64()),
        ("path", pa.string()),
        ("message", pa.string()),
        ("payload", pa.string()),
    ]
)

LEVELS = ["INFO", "DEBUG", "WARN", "ERROR", "FATAL"]
LEVEL_WEIGHTS = [0.82, 0.12, 0.045, 0.014, 0.001]
SERVICES = [
    "api-gateway",
    "frontend",
    "users",
    "orders",
    "search",
    "payments",
    "inventory",
    "auth",
    "recommendations",
    "notifications",
    "shipping",
    "billing",
]
STATUS_BY_LEVEL = {  # (codes, weights) per level
    "ok": ([200, 201, 204, 301, 304], [0.86, 0.05, 0.04, 0.02, 0.03]),
    "WARN": ([400, 401, 403, 404, 409, 429], [0.25, 0.15, 0.1, 0.3, 0.05, 0.15]),
    "bad": ([500, 502, 503, 504], [0.55, 0.15, 0.2, 0.1]),
}
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]
METHOD_WEIGHTS = [0.7, 0.18, 0.06, 0.03, 0.03]
DB_HOSTS = ["pg-main-0", "pg-main-1", "pg-replica-2", "redis-cache-0", "kafka-broker-3"]
EXCEPTIONS = [
    "NullPointerException",
    "TimeoutError",
    "IllegalStateException",
    "KeyError",
    "ConnectionResetError",
    "ValueError",
    "OutOfMemoryError",
]
HANDLERS = ["CheckoutHandler", "LoginController", "OrderWorker", "SearchResolver", "CartService"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY"]
USER_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4)",
    "okhttp/4.12.0",
    "python-requests/2.32.3",
    "curl/8.7.1",
]
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"]

#: Words a log says often, most frequent first; pseudo-words fill the vocabulary's tail.
COMMON_WORDS = (
    "the to of and in for on request user with from failed completed started connection "
    "timeout retry error cache session token order payment item cart checkout search query "
    "response service client server upstream downstream database queue message event job "
    "worker task batch record update create delete read write commit rollback lock unlock "
    "ready pending active closed open invalid valid expired refreshed denied granted missing "
    "found loaded saved sent received accepted rejected skipped processed scheduled "
    "throttled degraded healthy unhealthy slow fast new old primary replica shard node "
    "cluster region zone config flag feature version build deploy release metric counter "
    "gauge histogram trace span context header body payload field value key index table "
    "row column page file disk memory cpu thread pool socket stream buffer limit quota"
).split()
VOCABULARY = 30_000
WORD_ZIPF = 1.1
#: The whole-token search looks for the word at this rank; the word at TOKEN_RANK // 40 is
#: it with an "s" after it, forty-odd times as frequent, so a substring search finds many
#: more rows than the token does.
TOKEN_RANK = 21_000
RARE_PHRASE = "fell behind leader by"
RARE_SHARE = 2.5e-6  # share of rows with the rare template


# ---------------------------------------------------------------------------------------------
# Vectorised building blocks


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 that scatters nearby integers."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def hashed(x: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit hash of each integer of ``x``, one stream per salt."""
    return mix64(mix64(x.astype(np.uint64) ^ np.uint64((salt * 0x2545F4914F6CDD1D) % (1 << 64))))


HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex_chars(words: list[np.ndarray], digits: int) -> np.ndarray:
    """The lowest ``digits`` hex digits of the concatenated big-endian ``words`` of each row,
    as an (n, digits) uint8 matrix of ASCII."""
    raw = np.stack([w.astype(">u8") for w in words], axis=1).view(np.uint8)
    raw = raw.reshape(len(words[0]), 8 * len(words))
    nibbles = np.empty((raw.shape[0], raw.shape[1] * 2), dtype=np.uint8)
    nibbles[:, 0::2] = raw >> 4
    nibbles[:, 1::2] = raw & 15
    return HEX[nibbles[:, -digits:]]


def fixed_strings(chars: np.ndarray) -> pa.Array:
    """A string array from an (n, width) matrix of ASCII bytes."""
    n, width = chars.shape
    offsets = np.arange(n + 1, dtype=np.int32) * width
    data = np.ascontiguousarray(chars).tobytes()
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def hex_ids(keys: np.ndarray, salt: int, digits: int) -> pa.Array:
    """``digits`` hex digits (up to 32) hashed from each key."""
    words = [hashed(keys, salt), hashed(keys, salt + 1)] if digits > 16 else [hashed(keys, salt)]
    return fixed_strings(hex_chars(words, digits))


def uuids(keys: np.ndarray, salt: int) -> pa.Array:
    """Version-4-shaped UUID text (8-4-4-4-12) hashed from each key."""
    h = hex_chars([hashed(keys, salt), hashed(keys, salt + 1)], 32)
    h[:, 12] = ord("4")
    h[:, 16] = np.frombuffer(b"89ab", dtype=np.uint8)[h[:, 16] % 4]
    out = np.full((len(keys), 36), ord("-"), dtype=np.uint8)
    for start, end, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        out[:, at : at + end - start] = h[:, start:end]
    return fixed_strings(out)


def num(values: np.ndarray) -> pa.Array:
    """Decimal text of integers (or floats, shortest round-trip form)."""
    return pc.cast(pa.array(values), pa.string())


def pick(rng: np.random.Generator, choices: list[str], n: int, p: Any = None) -> pa.Array:
    """``n`` strings drawn from ``choices`` (dictionary-decoded, so plain strings)."""
    codes = rng.choice(len(choices), size=n, p=p)
    return pa.array(choices).take(pa.array(codes))


def cat(*parts: Any) -> pa.Array:
    """Row-wise concatenation of string arrays and literal strings."""
    return pc.binary_join_element_wise(*parts, "")


def ipv4(rng: np.random.Generator, n: int) -> pa.Array:
    octets = [num(rng.integers(lo, 255, n)) for lo in (1, 0, 0, 1)]
    return cat(octets[0], ".", octets[1], ".", octets[2], ".", octets[3])


# ---------------------------------------------------------------------------------------------
# Vocabulary


def vocabulary(seed: int) -> list[str]:
    """COMMON_WORDS then pseudo-words built from syllables, VOCABULARY words in rank order;
    the word at TOKEN_RANK // 40 is the one at TOKEN_RANK plus an ``s``."""
    rng = np.random.default_rng([seed, 1])
    onsets = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st str tr th sh ch".split()
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "", "n", "r", "l", "s", "t", "nd", "rk", "st", "ng", "x"]
    words = list(dict.fromkeys(COMMON_WORDS))
    seen = set(words)
    while len(words) < VOCABULARY:
        syllables = int(rng.integers(2, 4))
        w = "".join(
            onsets[rng.integers(len(onsets))]
            + vowels[rng.integers(len(vowels))]
            + codas[rng.integers(len(codas))]
            for _ in range(syllables)
        )
        if w not in seen and not w.endswith("s"):
            seen.add(w)
            words.append(w)
    token = words[TOKEN_RANK]
    plural = token + "s"
    if plural in seen:
        words.remove(plural)
        words.append("zq" + plural)  # keep the length
    words[TOKEN_RANK // 40] = plural
    return words


def user_of_rank(rank: Any) -> Any:
    """The user id of a popularity rank (0 = most active): ranks scattered over the ids."""
    return (rank * 2_654_435_761) % USERS + 1


def zipf_cdf(n: int, s: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    cdf: np.ndarray = np.cumsum(weights) / weights.sum()
    return cdf


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass
class Batch:
    """One batch's columns, and what each message template needs from them."""

    rng: np.random.Generator
    n: int
    first_row: int
    level: np.ndarray  # codes into LEVELS
    service: np.ndarray  # codes into SERVICES
    trace: np.ndarray  # trace number
    columns: dict[str, pa.Array]


class Generator:
    """Makes batches in order; a batch depends on the seed, its index and the timestamp the
    previous batch ended at."""

    def __init__(self, seed: int, total_rows: int) -> None:
        self.seed = seed
        self.total_rows = total_rows
        self.words = pa.array(vocabulary(seed))
        self.word_cdf = zipf_cdf(len(self.words), WORD_ZIPF)
        self.user_log_n = np.log(USERS)
        rng = np.random.default_rng([seed, 2])
        self.hosts = [
            [
                f"{svc}-{int(rng.integers(1 << 36)):09x}-{int(rng.integers(1 << 25)):05x}"
                for _ in range(int(rng.integers(4, 25)))
            ]
            for svc in SERVICES
        ]
        self.host_names = pa.array([h for hs in self.hosts for h in hs])
        self.host_count = np.array([len(h) for h in self.hosts])
        self.host_start = np.cumsum(self.host_count) - self.host_count
        self.service_p = 1.0 / np.arange(1, len(SERVICES) + 1) ** 0.8
        self.service_p /= self.service_p.sum()
        self.last_ts = int(START.timestamp() * 1_000_000)
        self.templates = TEMPLATES
        self.literals: dict[str, Any] = {}

    # -- column pieces --------------------------------------------------------------------

    def word_list(self, rng: np.random.Generator, n: int) -> pa.Array:
        return self.words.take(pa.array(np.searchsorted(self.word_cdf, rng.random(n))))

    def words_joined(self, rng: np.random.Generator, n: int, k: int) -> pa.Array:
        parts: list[Any] = []
        for i in range(k):
            if i:
                parts.append(" ")
            parts.append(self.word_list(rng, n))
        return cat(*parts)

    def timestamps(self, rng: np.random.Generator, first_row: int, n: int) -> np.ndarray:
        rows = first_row + np.arange(n)
        swing = 1.0 + 0.6 * np.sin(2 * np.pi * rows / max(self.total_rows, 1) * 1.5)
        gaps = 1 + rng.exponential(MEAN_GAP_US * swing).astype(np.int64)
        ts = self.last_ts + np.cumsum(gaps)
        self.last_ts = int(ts[-1])
        return ts

    def batch(self, index: int, first_row: int, n: int) -> pa.RecordBatch:
        rng = np.random.default_rng([self.seed, 1000 + index])
        rows = np.arange(first_row, first_row + n, dtype=np.int64)
        ts = self.timestamps(rng, first_row, n)
        level = rng.choice(len(LEVELS), size=n, p=LEVEL_WEIGHTS)
        service = rng.choice(len(SERVICES), size=n, p=self.service_p)
        pod = self.host_start[service] + rng.integers(0, 1 << 30, n) % self.host_count[service]
        host = self.host_names.take(pa.array(pod))
        trace = np.maximum(rows // ROWS_PER_TRACE + rng.integers(-40, 41, n), 0)
        u = (hashed(trace, 11) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
        rank = np.minimum(np.exp(u * self.user_log_n).astype(np.int64), USERS - 1)
        user = user_of_rank(rank)
        anonymous = (hashed(trace, 12) % np.uint64(10_000)) < ANONYMOUS * 10_000
        status = np.empty(n, dtype=np.int32)
        kind = np.where(level == 2, 1, np.where(level >= 3, 2, 0))
        for k, name in enumerate(("ok", "WARN", "bad")):
            mask = kind == k
            codes, weights = STATUS_BY_LEVEL[name]
            status[mask] = rng.choice(codes, size=int(mask.sum()), p=weights)
        latency = np.round(rng.lognormal(2.8 + 0.9 * (kind == 2), 0.9, n), 3)
        cols: dict[str, pa.Array] = {
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "level": pa.array(LEVELS).take(pa.array(level)),
            "service": pa.array(SERVICES).take(pa.array(service)),
            "host": host,
            "trace_id": hex_ids(trace, 21, 32),
            "span_id": hex_ids(rows, 23, 16),
            "request_id": uuids(trace, 25),
            "user_id": pa.array(user, mask=anonymous),
            "status": pa.array(status),
            "latency_ms": pa.array(latency),
        }
        b = Batch(rng, n, first_row, level, service, trace, cols)
        cols["path"] = self.paths(b)
        cols["message"] = self.messages(b)
        cols["payload"] = self.payloads(b)
        return pa.RecordBatch.from_arrays([cols[f.name] for f in SCHEMA], schema=SCHEMA)

    def paths(self, b: Batch) -> pa.Array:
        rng, n = b.rng, b.n
        user = pc.cast(pc.fill_null(b.columns["user_id"], 0), pa.string())
        choice = rng.choice(len(PATHS), size=n, p=PATH_WEIGHTS)
        return self.by_template(choice, [partial(f, self, b, user=user) for f in PATHS])

    def messages(self, b: Batch) -> pa.Array:
        rng, n = b.rng, b.n
        choice = np.empty(n, dtype=np.int64)
        for group, (members, weights) in TEMPLATE_GROUPS.items():
            mask = np.isin(b.level, LEVEL_GROUPS[group])
            choice[mask] = rng.choice(members, size=int(mask.sum()), p=weights)
        rare = rng.random(n) < RARE_SHARE
        choice[rare] = RARE_TEMPLATE
        out = self.by_template(choice, [partial(t.build, self, b) for t in self.templates])
        self.note_literals(b, choice, out)
        return out

    def payloads(self, b: Batch) -> pa.Array:
        rng, n = b.rng, b.n
        user = pc.if_else(
            pc.is_null(b.columns["user_id"]),
            "null",
            pc.cast(b.columns["user_id"], pa.string()),
        )
        return cat(
            '{"method":"',
            pick(rng, METHODS, n, METHOD_WEIGHTS),
            '","path":"',
            b.columns["path"],
            '","status":',
            pc.cast(b.columns["status"], pa.string()),
            ',"latency_ms":',
            pc.cast(b.columns["latency_ms"], pa.string()),
            ',"user_id":',
            user,
            ',"client":{"ip":"',
            ipv4(rng, n),
            '","ua":"',
            pick(rng, USER_AGENTS, n),
            '"},"bytes":',
            num(rng.integers(80, 250_000, n)),
            ',"region":"',
            pick(rng, REGIONS, n),
            '"}',
        )

    @staticmethod
    def by_template(choice: np.ndarray, builders: list[Callable[[np.ndarray], pa.Array]]) -> Any:
        """Each row's string from its template's builder: rows grouped by template, built
        a group at a time, then put back in row order."""
        order = np.argsort(choice, kind="stable")
        bounds = np.searchsorted(choice[order], np.arange(len(builders) + 1))
        parts = []
        for t, build in enumerate(builders):
            idx = order[bounds[t] : bounds[t + 1]]
            if len(idx):
                parts.append(pc.cast(build(idx), pa.string()))
        grouped = pa.concat_arrays(parts)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return grouped.take(pa.array(inverse))

    # -- literals the queries look for ----------------------------------------------------

    def note_literals(self, b: Batch, choice: np.ndarray, messages: pa.Array) -> None:
        """Record, from the first row at or after fixed fractions of the data, the values
        the queries search for."""
        wanted: list[tuple[str, float, Any]] = [
            ("trace_id", 0.37, None),
            ("time_from", 0.45, None),
            ("message_uuid", 0.61, UUID_TEMPLATES),
            ("message_trace", 0.83, TRACE_TEMPLATES),
        ]
        for name, fraction, templates in wanted:
            if name in self.literals:
                continue
            target = int(self.total_rows * fraction)
            if target >= b.first_row + b.n:
                continue
            start = max(target - b.first_row, 0)
            candidates = np.arange(start, b.n)
            if templates is not None:
                candidates = candidates[np.isin(choice[candidates], templates)]
            if not len(candidates):
                continue
            i = int(candidates[0])
            if name == "trace_id":
                self.literals[name] = b.columns["trace_id"][i].as_py()
            elif name == "time_from":
                self.literals[name] = b.columns["ts"][i].as_py().isoformat()
            elif name == "message_uuid":
                self.literals[name] = MESSAGE_UUID.search(messages[i].as_py())
            else:
                self.literals[name] = b.columns["trace_id"][i].as_py()
                self.literals["message_trace_message"] = messages[i].as_py()


class _UuidFinder:
    """The UUID in a message (text search, on the few rows literals come from)."""

    def search(self, text: str) -> str:
        import re

        found = re.search(
            r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", text
        )
        if found is None:
            raise ValueError(f"no UUID in {text!r}")
        return found.group(0)


MESSAGE_UUID = _UuidFinder()


# ---------------------------------------------------------------------------------------------
# Paths and message templates: each builds the strings of the rows ``idx`` of a batch.


def _take(b: Batch, column: str, idx: np.ndarray) -> pa.Array:
    return b.columns[column].take(pa.array(idx))


def _p_user(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v1/users/", user.take(pa.array(idx)))


def _p_user_orders(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v1/users/", user.take(pa.array(idx)), "/orders")


def _p_order(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v1/orders/", num(b.rng.integers(10_000_000, 99_999_999, len(idx))))


def _p_order_item(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    n = len(idx)
    return cat(
        "/api/v1/orders/",
        num(b.rng.integers(10_000_000, 99_999_999, n)),
        "/items/",
        num(b.rng.integers(1, 40, n)),
    )


def _p_product(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v2/products/SKU-", num(b.rng.integers(100_000, 999_999, len(idx))))


def _p_cart(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v1/cart/", uuids(b.rng.integers(0, 1 << 62, len(idx)), 31))


def _p_capture(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v1/payments/", uuids(b.rng.integers(0, 1 << 62, len(idx)), 33), "/capture")


def _p_search(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/api/v2/search?q=", g.word_list(b.rng, len(idx)))


def _p_static(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
    return cat("/static/js/app.", hex_ids(b.rng.integers(0, 64, len(idx)), 35, 8), ".js")


def _p_fixed(text: str) -> Callable[[Generator, Batch, np.ndarray, pa.Array], pa.Array]:
    def build(g: Generator, b: Batch, idx: np.ndarray, user: pa.Array) -> pa.Array:
        return pa.array([text] * len(idx))

    return build


PATHS = [
    _p_user,
    _p_user_orders,
    _p_order,
    _p_order_item,
    _p_product,
    _p_cart,
    _p_capture,
    _p_search,
    _p_static,
    _p_fixed("/health"),
    _p_fixed("/metrics"),
    _p_fixed("/api/v1/sessions"),
]
PATH_WEIGHTS = np.array([0.16, 0.06, 0.12, 0.05, 0.18, 0.06, 0.03, 0.1, 0.06, 0.08, 0.04, 0.06])
PATH_WEIGHTS = PATH_WEIGHTS / PATH_WEIGHTS.sum()


@dataclass(frozen=True)
class Template:
    name: str
    build: Callable[[Generator, Batch, np.ndarray], pa.Array]


def _user_text(b: Batch, idx: np.ndarray) -> pa.Array:
    return pc.fill_null(pc.cast(_take(b, "user_id", idx), pa.string()), "anonymous")


def _t_access(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    return cat(
        pick(b.rng, METHODS, len(idx), METHOD_WEIGHTS),
        " ",
        _take(b, "path", idx),
        " ",
        pc.cast(_take(b, "status", idx), pa.string()),
        " ",
        pc.cast(_take(b, "latency_ms", idx), pa.string()),
        "ms",
    )


def _t_completed(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    return cat(
        "request ",
        _take(b, "request_id", idx),
        " completed in ",
        pc.cast(_take(b, "latency_ms", idx), pa.string()),
        "ms user=",
        _user_text(b, idx),
    )


def _t_cache(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "cache ",
        pick(b.rng, ["hit", "miss"], n, [0.8, 0.2]),
        " for key user:",
        _user_text(b, idx),
        ":",
        g.word_list(b.rng, n),
        " shard=",
        num(b.rng.integers(0, 64, n)),
    )


def _t_payment(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "payment ",
        uuids(b.rng.integers(0, 1 << 62, n), 41),
        " authorized for order ",
        num(b.rng.integers(10_000_000, 99_999_999, n)),
        " amount=",
        num(np.round(b.rng.lognormal(3.5, 1.0, n), 2)),
        " ",
        pick(b.rng, CURRENCIES, n, [0.6, 0.25, 0.1, 0.05]),
    )


def _t_user_action(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    verbs = ["viewed", "updated", "created", "deleted", "shared", "exported"]
    return cat(
        "user ",
        _user_text(b, idx),
        " ",
        pick(b.rng, verbs, n),
        " ",
        g.words_joined(b.rng, n, 3),
    )


def _t_connected(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "connected to ",
        pick(b.rng, DB_HOSTS, n),
        ":",
        pick(b.rng, ["5432", "6379", "9092"], n),
        " from ",
        ipv4(b.rng, n),
        " in ",
        num(b.rng.integers(1, 900, n)),
        "ms",
    )


def _t_span(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    return cat(
        "span ",
        _take(b, "span_id", idx),
        " of trace ",
        _take(b, "trace_id", idx),
        " exported to collector ",
        _take(b, "host", idx),
    )


def _t_job(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "scheduled job ",
        g.word_list(b.rng, n),
        "-",
        g.word_list(b.rng, n),
        " finished: processed ",
        num(b.rng.integers(0, 100_000, n)),
        " records, ",
        num(b.rng.integers(0, 50, n)),
        " skipped",
    )


def _t_free(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(g.words_joined(b.rng, n, 5), " id=", hex_ids(b.rng.integers(0, 1 << 62, n), 43, 16))


def _t_session(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "session ",
        hex_ids(b.rng.integers(0, 1 << 62, n), 45, 16),
        " refreshed for user ",
        _user_text(b, idx),
        " from ",
        ipv4(b.rng, n),
    )


def _t_event(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "emitted event ",
        g.word_list(b.rng, n),
        ".",
        pick(b.rng, ["created", "updated", "deleted"], n),
        " key=",
        uuids(b.rng.integers(0, 1 << 62, n), 47),
        " partition=",
        num(b.rng.integers(0, 48, n)),
        " offset=",
        num(b.rng.integers(1_000_000, 9_000_000_000, n)),
    )


def _t_slow(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "upstream ",
        pick(b.rng, SERVICES, n),
        " slow: ",
        pc.cast(_take(b, "latency_ms", idx), pa.string()),
        "ms > ",
        pick(b.rng, ["250", "500", "1000"], n),
        "ms trace=",
        _take(b, "trace_id", idx),
    )


def _t_retry(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "retrying request ",
        _take(b, "request_id", idx),
        " to ",
        pick(b.rng, DB_HOSTS, n),
        " (attempt ",
        num(b.rng.integers(1, 6, n)),
        "/5) after ",
        g.words_joined(b.rng, n, 2),
    )


def _t_rate_limit(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    return cat(
        "rate limit exceeded for user ",
        _user_text(b, idx),
        " on ",
        _take(b, "path", idx),
        " from ",
        ipv4(b.rng, len(idx)),
    )


def _t_deprecated(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "deprecated API ",
        _take(b, "path", idx),
        " called by client ",
        g.word_list(b.rng, n),
        "/",
        num(b.rng.integers(1, 9, n)),
        ".",
        num(b.rng.integers(0, 30, n)),
        ".",
        num(b.rng.integers(0, 10, n)),
    )


def _t_exception(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "unhandled ",
        pick(b.rng, EXCEPTIONS, n),
        " in ",
        pick(b.rng, HANDLERS, n),
        ": ",
        g.words_joined(b.rng, n, 3),
        " (request_id=",
        _take(b, "request_id", idx),
        ")",
    )


def _t_db_timeout(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "connection to ",
        pick(b.rng, DB_HOSTS, n),
        ":",
        pick(b.rng, ["5432", "6379", "9092"], n),
        " timed out after ",
        num(b.rng.integers(1000, 30_000, n)),
        "ms trace=",
        _take(b, "trace_id", idx),
    )


def _t_declined(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "failed to charge payment ",
        uuids(b.rng.integers(0, 1 << 62, n), 49),
        ": card declined code=",
        pick(b.rng, ["05", "14", "51", "54", "61"], n),
    )


def _t_rare(g: Generator, b: Batch, idx: np.ndarray) -> pa.Array:
    n = len(idx)
    return cat(
        "replica ",
        _take(b, "host", idx),
        f" {RARE_PHRASE} ",
        num(b.rng.integers(2, 5_000, n)),
        " segments; triggering snapshot transfer",
    )


TEMPLATES = [
    Template("access", _t_access),
    Template("completed", _t_completed),
    Template("cache", _t_cache),
    Template("payment", _t_payment),
    Template("user_action", _t_user_action),
    Template("connected", _t_connected),
    Template("span", _t_span),
    Template("job", _t_job),
    Template("free", _t_free),
    Template("session", _t_session),
    Template("event", _t_event),
    Template("slow", _t_slow),
    Template("retry", _t_retry),
    Template("rate_limit", _t_rate_limit),
    Template("deprecated", _t_deprecated),
    Template("exception", _t_exception),
    Template("db_timeout", _t_db_timeout),
    Template("declined", _t_declined),
    Template("rare", _t_rare),
]
_T = {t.name: i for i, t in enumerate(TEMPLATES)}
RARE_TEMPLATE = _T["rare"]
UUID_TEMPLATES = [_T["payment"]]
TRACE_TEMPLATES = [_T["span"], _T["slow"], _T["db_timeout"]]
LEVEL_GROUPS = {"ok": [0, 1], "warn": [2], "bad": [3, 4]}


def _group(weights: dict[str, float]) -> tuple[list[int], np.ndarray]:
    p = np.array(list(weights.values()))
    return [_T[name] for name in weights], p / p.sum()


TEMPLATE_GROUPS = {
    "ok": _group(
        {
            "access": 0.3,
            "completed": 0.12,
            "cache": 0.1,
            "payment": 0.05,
            "user_action": 0.12,
            "connected": 0.05,
            "span": 0.04,
            "job": 0.04,
            "free": 0.08,
            "session": 0.05,
            "event": 0.05,
        }
    ),
    "warn": _group({"slow": 0.35, "retry": 0.25, "rate_limit": 0.25, "deprecated": 0.15}),
    "bad": _group({"exception": 0.45, "db_timeout": 0.35, "declined": 0.2}),
}


# ---------------------------------------------------------------------------------------------
# Files


def batches(gen: Generator, first_row: int, rows: int, index: int) -> Iterator[pa.RecordBatch]:
    done = 0
    while done < rows:
        n = min(BATCH_ROWS, rows - done)
        yield gen.batch(index, first_row + done, n)
        index += 1
        done += n


def generate(
    out: Path,
    rows: int,
    rows_per_file: int,
    seed: int,
    page_rows: int | None = None,
    sort_by: list[str] | None = None,
    parquet_bloom: bool = True,
) -> dict[str, Any]:
    """Write the files under ``out`` (replaced whole) and ``_literals.json``; return it."""
    import pqindex

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    gen = Generator(seed, rows)
    start = time.perf_counter()
    files = -(-rows // rows_per_file)
    batch_index = 0
    for f in range(files):
        first = f * rows_per_file
        n = min(rows_per_file, rows - first)
        reader = pa.RecordBatchReader.from_batches(SCHEMA, batches(gen, first, n, batch_index))
        batch_index += -(-n // BATCH_ROWS)
        pqindex.write(
            reader,
            tmp / f"part-{f:05d}.parquet",
            row_group_size=rows_per_file,
            page_row_limit=page_rows,
            sort_by=sort_by,
            bloom_filter_columns=["trace_id", "request_id"] if parquet_bloom else None,
        )
        print(f"  file {f + 1}/{files}: {time.perf_counter() - start:.0f} s", flush=True)
    vocab = vocabulary(seed)
    literals = {
        "rows": rows,
        "files": files,
        "seed": seed,
        "page_rows": page_rows,
        "sort_by": sort_by,
        "seconds": time.perf_counter() - start,
        **gen.literals,
        "absent_trace_id": hex_ids(np.array([rows * 10 + 12345]), 99, 32)[0].as_py(),
        # Zipf rank rows / 500: about 36 rows (six traces) at any size.
        "user_id": int(user_of_rank(max(rows // 500, 1))),
        "rare_phrase": RARE_PHRASE,
        "token": vocab[TOKEN_RANK],
        "token_variant": vocab[TOKEN_RANK // 40],
        "data_bytes": sum(p.stat().st_size for p in tmp.glob("*.parquet")),
    }
    (tmp / LITERALS).write_text(json.dumps(literals, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return literals


def parse_count(text: str) -> int:
    return int(text.replace("_", "").replace(",", ""))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=parse_count, default=1_000_000)
    p.add_argument("--rows-per-file", type=parse_count, default=1_000_000)
    p.add_argument("--out", type=Path, default=Path("/tmp/logbench/1m"))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--page-rows", type=parse_count, default=None, help="rows per page")
    p.add_argument("--sort-by", default=None, help="comma-separated columns to sort each file by")
    p.add_argument("--no-parquet-bloom", action="store_true")
    args = p.parse_args(argv)
    literals = generate(
        args.out,
        args.rows,
        args.rows_per_file,
        args.seed,
        args.page_rows,
        args.sort_by.split(",") if args.sort_by else None,
        not args.no_parquet_bloom,
    )
    print(json.dumps(literals, indent=2))


if __name__ == "__main__":
    main()
