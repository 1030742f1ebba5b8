"""A fault-injecting HTTP proxy on loopback, in front of the S3 test server.

It reads each request whole and each answer whole (HTTP/1.1, keep-alive), so it can break
an answer the way networks and stores do:

* ``reset``: the connection is reset (RST) partway through the answer's body, or, for an
  answer without a body (a PUT's), after the store has acted on the request: the client
  never learns that its write landed.
* ``status_500``, ``status_503``, ``slowdown``: an error answer instead of the store's
  (503 ``SlowDown`` is S3's throttling).
* ``truncate``: the body stops short of its Content-Length, then the connection closes.
* ``short_length``: a Content-Length smaller than the body and only that many bytes: an
  answer that looks complete but is not (its Content-Range still claims the whole range).
* ``long_length``: a Content-Length larger than the body, then the connection closes.
* ``stall``: no answer for ``stall_seconds`` (past the client's timeout), then a close.
* ``replace``: the object is replaced (by ``on_replace``) just before a ranged read of it
  is forwarded: a read planned against one version meets another.

A seeded schedule decides per request. Its decision is a function of the seed and of the
request's identity (method, target, Range, and how many times that identity was seen), so
the same seed gives the same faults on the same requests whatever the order threads run
in. The proxy counts requests and faults by type, and requests repeated after a fault
(the client's retries as the store sees them).
"""

from __future__ import annotations

import hashlib
import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

#: Every fault the proxy can inject.
FAULTS = (
    "reset",
    "status_500",
    "status_503",
    "slowdown",
    "truncate",
    "short_length",
    "long_length",
    "stall",
    "replace",
)
#: Answers made up without asking the store.
_CANNED = {
    "status_500": (500, "Internal Server Error", "InternalError"),
    "status_503": (503, "Service Unavailable", "ServiceUnavailable"),
    "slowdown": (503, "Slow Down", "SlowDown"),
}
#: Faults that need an answer with a body to break.
_BODY_FAULTS = {"truncate", "short_length", "long_length"}


@dataclass
class Request:
    """One request as the client sent it."""

    method: str
    target: str
    headers: dict[str, str]
    raw: bytes

    @property
    def range(self) -> str | None:
        return self.headers.get("range")

    @property
    def key(self) -> str:
        """The bucket and key the target names (path-style), without the query."""
        return self.target.split("?", 1)[0].lstrip("/")

    @property
    def is_listing(self) -> bool:
        return self.method == "GET" and "list-type=" in self.target

    @property
    def identity(self) -> str:
        return f"{self.method} {self.target} {self.range or ''}"


def _applicable(fault: str, req: Request, has_replace: bool) -> bool:
    if fault == "replace":
        return has_replace and req.method == "GET" and req.range is not None
    if fault in _BODY_FAULTS:
        return req.method == "GET"
    return True


@dataclass
class Schedule:
    """Which requests get which fault: each request, with probability ``rate``, one of
    ``weights``' faults that applies to it, drawn by weight; only requests that
    ``select`` accepts (all by default) and only while the schedule is on."""

    seed: int = 0
    rate: float = 0.2
    weights: dict[str, float] = field(
        default_factory=lambda: {f: 1.0 for f in FAULTS if f != "replace"}
    )
    select: Callable[[Request], bool] | None = None
    #: At most this many faults in all (None: no limit).
    limit: int | None = None
    _seen: Counter[str] = field(default_factory=Counter)
    _given: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, req: Request, has_replace: bool) -> str | None:
        if self.select is not None and not self.select(req):
            return None
        with self._lock:
            nth = self._seen[req.identity]
            self._seen[req.identity] += 1
            if self.limit is not None and self._given >= self.limit:
                return None
        digest = hashlib.blake2b(f"{self.seed}|{req.identity}|{nth}".encode(), digest_size=8)
        rng = random.Random(int.from_bytes(digest.digest(), "big"))
        if rng.random() >= self.rate:
            return None
        kinds = [
            (f, w) for f, w in self.weights.items() if w > 0 and _applicable(f, req, has_replace)
        ]
        if not kinds:
            return None
        fault = rng.choices([f for f, _ in kinds], [w for _, w in kinds])[0]
        with self._lock:
            if self.limit is not None and self._given >= self.limit:
                return None
            self._given += 1
        return fault


def only(
    fault: str, count: int | None = None, select: Callable[[Request], bool] | None = None
) -> Schedule:
    """Every selected request (the first ``count`` of them) gets ``fault``."""
    return Schedule(rate=1.0, weights={fault: 1.0}, select=select, limit=count)


def data_reads(req: Request) -> bool:
    """Ranged GETs of data files: reads of footers and pages, not listings, HEADs or a
    catalog's files."""
    return req.method == "GET" and req.range is not None and "/_pqindex/" not in req.target


def puts(req: Request) -> bool:
    return req.method == "PUT"


class _Closed(Exception):
    """The client closed its connection."""


def _read_request(conn: socket.socket, buf: bytearray) -> Request:
    while b"\r\n\r\n" not in buf:
        data = conn.recv(1 << 16)
        if not data:
            raise _Closed
        buf += data
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = bytearray(rest)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray(_read_chunked(conn, body))
        raw_body = bytes(body)
        del buf[:]
        # Forwarded with a length instead of chunks: the same bytes, framed simply.
        kept = [ln for ln in lines if not ln.lower().startswith("transfer-encoding")]
        kept.append(f"Content-Length: {len(raw_body)}")
        raw = ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1") + raw_body
        return Request(method, target, headers, raw)
    length = int(headers.get("content-length", "0") or 0)
    while len(body) < length:
        data = conn.recv(1 << 16)
        if not data:
            raise _Closed
        body += data
    del buf[:]
    buf += body[length:]
    raw = head + b"\r\n\r\n" + bytes(body[:length])
    return Request(method, target, headers, raw)


def _read_chunked(conn: socket.socket, body: bytearray) -> bytes:
    out = bytearray()
    while True:
        while b"\r\n" not in body:
            body += conn.recv(1 << 16) or b""
        size_line, _, rest = bytes(body).partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        body = bytearray(rest)
        while len(body) < size + 2:
            data = conn.recv(1 << 16)
            if not data:
                raise _Closed
            body += data
        out += body[:size]
        body = body[size + 2 :]
        if size == 0:
            return bytes(out)


@dataclass
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def encode(self, length: int | None = None, head: bool = False) -> bytes:
        """The answer as bytes, its Content-Length set to ``length`` (the body's own by
        default); a HEAD answer keeps the length the store gave."""
        lines = [f"HTTP/1.1 {self.status} {self.reason}"]
        for name, value in self.headers:
            low = name.lower()
            if low in ("transfer-encoding", "connection") or (low == "content-length" and not head):
                continue
            lines.append(f"{name}: {value}")
        if not head:
            lines.append(f"Content-Length: {len(self.body) if length is None else length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _canned(fault: str) -> bytes:
    status, reason, code = _CANNED[fault]
    body = f"<Error><Code>{code}</Code><Message>{reason}</Message></Error>".encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def _reset(conn: socket.socket) -> None:
    """Close with a TCP reset rather than an orderly shutdown."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


@dataclass
class FaultProxy:
    """Forwards loopback HTTP to ``target`` (the S3 test server), breaking the answers
    ``schedule`` picks. ``on_replace(bucket_and_key)`` replaces an object in the store
    (the ``replace`` fault); ``stall_seconds`` is how long a stalled answer waits."""

    target: tuple[str, int]
    schedule: Schedule | None = None
    on_replace: Callable[[str], None] | None = None
    stall_seconds: float = 2.0
    requests: int = 0
    by_method: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    #: Requests for the method and target (Range aside: a resumed read asks for the rest)
    #: of a faulted request, after it, at most one per fault: the retries as the store
    #: sees them.
    repeats_after_fault: int = 0
    port: int = 0
    _faulted: Counter[tuple[str, str]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: socket.socket | None = None
    _clients: set[socket.socket] = field(default_factory=set)

    def start(self) -> FaultProxy:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(256)
        self.port = srv.getsockname()[1]
        self._server = srv
        threading.Thread(target=self._accept, daemon=True, name="fault-proxy").start()
        return self

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            try:
                c.close()
            except OSError:
                pass

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = 0
            self.by_method.clear()
            self.faults.clear()
            self.repeats_after_fault = 0
            self._faulted.clear()

    def counts(self) -> dict[str, object]:
        """Requests, faults by type and repeats after a fault, as plain values."""
        with self._lock:
            return {
                "requests": self.requests,
                "requests_by_method": dict(self.by_method),
                "faults": dict(self.faults),
                "faults_total": sum(self.faults.values()),
                "repeats_after_fault": self.repeats_after_fault,
            }

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                self._clients.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _upstream(self) -> socket.socket:
        s = socket.create_connection(self.target, timeout=60)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def _forward(self, up: socket.socket | None, req: Request) -> tuple[socket.socket, Answer]:
        """Send ``req`` upstream and read the whole answer; a kept-alive connection the
        store has closed meanwhile is replaced once."""
        for fresh in (up is None, True):
            if fresh:
                if up is not None:
                    up.close()
                up = self._upstream()
            assert up is not None
            try:
                up.sendall(req.raw)
                resp = http.client.HTTPResponse(up, method=req.method)
                resp.begin()
                body = resp.read()
                answer = Answer(resp.status, resp.reason, resp.getheaders(), body)
                if resp.will_close:
                    up.close()
                    up = self._upstream()
                return up, answer
            except (OSError, http.client.HTTPException):
                if fresh:
                    raise
        raise AssertionError("unreachable")

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        up: socket.socket | None = None
        try:
            while True:
                req = _read_request(conn, buf)
                fault = None
                if self.schedule is not None:
                    fault = self.schedule.decide(req, self.on_replace is not None)
                with self._lock:
                    self.requests += 1
                    self.by_method[req.method] += 1
                    if self._faulted[(req.method, req.target)] > 0:
                        self.repeats_after_fault += 1
                        self._faulted[(req.method, req.target)] -= 1
                    if fault is not None:
                        self.faults[fault] += 1
                        self._faulted[(req.method, req.target)] += 1
                if fault in _CANNED:
                    conn.sendall(_canned(fault))
                    continue
                if fault == "replace":
                    assert self.on_replace is not None
                    self.on_replace(req.key)
                up, answer = self._forward(up, req)
                head = req.method == "HEAD"
                if fault in (None, "replace") or (fault in _BODY_FAULTS and len(answer.body) < 2):
                    conn.sendall(answer.encode(head=head) + (b"" if head else answer.body))
                    if req.headers.get("connection", "").lower() == "close":
                        return
                    continue
                half = len(answer.body) // 2
                if fault == "reset":
                    if answer.body and not head:
                        conn.sendall(answer.encode() + answer.body[:half])
                    _reset(conn)
                    return
                if fault == "stall":
                    time.sleep(self.stall_seconds)
                    return
                if fault == "truncate":
                    conn.sendall(answer.encode() + answer.body[:half])
                    return
                if fault == "short_length":
                    conn.sendall(answer.encode(length=half) + answer.body[:half])
                    continue
                if fault == "long_length":
                    conn.sendall(answer.encode(length=len(answer.body) + 100) + answer.body)
                    return
                raise AssertionError(f"unknown fault {fault}")
        except (_Closed, OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            if up is not None:
                up.close()
            try:
                conn.close()
            except OSError:
                pass
            with self._lock:
                self._clients.discard(conn)
