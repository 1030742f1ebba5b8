"""An S3-compatible server on loopback (moto's server mode), and a TCP proxy in front of it
that adds latency to every request, so tests and benchmarks see what request counts and
overlap cost on a real object store.

The proxy counts requests the way a store bills them: one per HTTP request, found as the
first bytes a client sends after the server last answered on that connection.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


@dataclass
class LatencyProxy:
    """Forwards loopback TCP to ``target``, sleeping ``delay`` seconds before each request.

    ``fault`` (when set) is called with the request's first bytes and may return raw bytes
    to answer with instead of forwarding (a 503, a truncated body), or ``None``.
    ``rewrite`` (when set) may change those first bytes before they are forwarded (to play
    a store that ignores a header, say).
    """

    target: tuple[str, int]
    delay: float = 0.0
    fault: Callable[[bytes], bytes | None] | None = None
    rewrite: Callable[[bytes], bytes] | None = None
    requests: int = 0
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: socket.socket | None = None

    def start(self) -> LatencyProxy:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(128)
        self.port = srv.getsockname()[1]
        self._server = srv
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        with self._lock:
            self.requests = 0

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        answered = threading.Event()
        answered.set()  # the next bytes from the client start a request

        def downstream() -> None:
            try:
                while data := upstream.recv(1 << 16):
                    answered.set()
                    client.sendall(data)
            except OSError:
                pass
            finally:
                client.close()

        threading.Thread(target=downstream, daemon=True).start()
        try:
            while data := client.recv(1 << 16):
                if answered.is_set():
                    answered.clear()
                    with self._lock:
                        self.requests += 1
                    if self.delay:
                        time.sleep(self.delay)
                    if self.fault is not None:
                        canned = self.fault(data)
                        if canned is not None:
                            client.sendall(canned)
                            answered.set()
                            continue
                    if self.rewrite is not None:
                        data = self.rewrite(data)
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()


@dataclass
class S3Server:
    """moto's S3 on loopback, reached directly or through a latency proxy."""

    endpoint: str
    proxy: LatencyProxy
    _moto: Any

    def options(self, *, through_proxy: bool = True, **extra: Any) -> dict[str, Any]:
        """``storage_options`` for pqindex (the object_store keys)."""
        return {
            "endpoint": self.proxy.endpoint if through_proxy else self.endpoint,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "region": REGION,
            **extra,
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )


@contextmanager
def s3_server(delay: float = 0.0) -> Iterator[S3Server]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    proxy = LatencyProxy((host, port), delay=delay).start()
    try:
        yield S3Server(endpoint=f"http://{host}:{port}", proxy=proxy, _moto=moto)
    finally:
        proxy.stop()
        moto.stop()
