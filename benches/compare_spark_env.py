"""Spark for the peer comparison: a local session (optionally a Spark Connect server too, and
a client of it), the Spark-written layouts, and the bytes a Spark query read.

Bytes are the growth of ``rchar`` in the driver JVM's ``/proc/<pid>/io`` while the action runs
(local mode: the executors are threads of that JVM). Spark's own task input metrics
(``inputBytes`` of the action's stages, from the monitoring REST API) are recorded too, but
with parquet-mr 1.17 they count little more than the footers: column chunks are fetched with
Hadoop vectored reads on other threads, which the thread-local file-system statistics behind
``bytesRead`` do not see. With ``parquet.hadoop.vectored.io.enabled=false`` the two agree
within a few kB.

Spark Connect runs as ``SparkSession.builder.remote("local[2]")`` runs it and as the tests'
``spark`` fixture does: a local Spark with the Connect plugin in this process's JVM, on a free
port of the loopback interface, and a client of it. The Connect server's queries therefore run
in the same JVM as the classic session's, so the JVM's ``rchar`` counts their reads as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.ui.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The REST API must keep every stage of the run, not the default last 1,000.
    "spark.ui.retainedStages": "100000",
    "spark.ui.retainedJobs": "100000",
}


#: What makes the local Spark a Spark Connect server too (the port is added per run).
CONNECT_CONF = {
    "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.sql.artifact.isolation.enabled": "true",
    "spark.sql.artifact.isolation.alwaysApplyClassloader": "true",
}
#: PySpark's shared functions pick classic or Connect by this variable (see connect_mode).
CONNECT_ENV = "SPARK_CONNECT_MODE_ENABLED"


@dataclass
class Sessions:
    """The in-process Spark (``classic``; also the Connect server when ``connect_url`` is
    set) and a Spark Connect client of it."""

    classic: Any
    connect: Any = None
    connect_url: str | None = None

    def stop(self) -> None:
        if self.connect is not None:
            with connect_mode():
                self.connect.stop()
        self.classic.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_spark(
    driver_memory: str,
    warehouse: Path,
    *,
    connect_port: int | None = None,
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A local[2] session with Spark's defaults for Parquet (page index and bloom filters on),
    serving Spark Connect on ``connect_port`` when given."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("pqindex-compare")
    settings = {**SPARK_CONF, **(conf or {})}
    if connect_port is not None:
        settings |= {**CONNECT_CONF, "spark.connect.grpc.binding.port": str(connect_port)}
    for key, value in settings.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", driver_memory)
    builder = builder.config("spark.sql.warehouse.dir", str(warehouse))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def start_sessions(
    driver_memory: str,
    warehouse: Path,
    *,
    connect: bool,
    conf: Mapping[str, str] | None = None,
) -> Sessions:
    """The local Spark, and with ``connect`` a Connect server in it and a client of it."""
    if not connect:
        return Sessions(start_spark(driver_memory, warehouse, conf=conf))
    port = free_port()
    classic = start_spark(driver_memory, warehouse, connect_port=port, conf=conf)
    url = f"sc://127.0.0.1:{port}"
    return Sessions(classic, connect_client(url), url)


def connect_client(url: str) -> Any:
    """A Spark Connect session on the server at ``url``."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    with connect_mode():
        return ConnectSession.builder.remote(url).getOrCreate()


@contextlib.contextmanager
def connect_mode() -> Iterator[None]:
    """``SPARK_CONNECT_MODE_ENABLED`` set while a Connect client works, and as it was after,
    so that the classic session in the same process keeps PySpark's classic functions."""
    before = os.environ.get(CONNECT_ENV)
    os.environ[CONNECT_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONNECT_ENV, None)
        else:
            os.environ[CONNECT_ENV] = before


def write_spark_layout(
    spark: Any,
    raw: Path,
    out: Path,
    bloom_columns: Sequence[str] = (),
    *,
    files: int | None = None,
    sort_by: Sequence[str] = (),
    page_rows: int | None = None,
    row_group_bytes: int | None = None,
) -> None:
    """Rewrite ``raw`` as Spark writes it by default (parquet-mr, 128 MB row groups), with
    parquet-mr bloom filters at their default size on ``bloom_columns``.

    With ``files``, the rows are range-partitioned by the first of ``sort_by`` into that
    many files (an explicit partition count, which adaptive execution keeps; rows with one
    value stay in one file), each sorted by ``sort_by``;
    ``page_rows`` sets parquet-mr's ``parquet.page.row.count.limit`` and ``row_group_bytes``
    its ``parquet.block.size`` (large enough, one row group per file)."""
    df = spark.read.parquet(str(raw))
    if files is not None:
        df = df.repartitionByRange(files, sort_by[0]).sortWithinPartitions(*sort_by)
    writer = df.write.mode("overwrite")
    for column in bloom_columns:
        writer = writer.option(f"parquet.bloom.filter.enabled#{column}", "true")
    if page_rows is not None:
        writer = writer.option("parquet.page.row.count.limit", str(page_rows))
    if row_group_bytes is not None:
        writer = writer.option("parquet.block.size", str(row_group_bytes))
    writer.parquet(str(out))


def jvm_pid(spark: Any) -> int:
    """The driver JVM's process id (the executors of local mode run inside it)."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def rchar_of(pid: int) -> int:
    """Bytes process ``pid`` has read through read-type system calls so far."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/io has no rchar")


class SparkInputBytes:
    """Reads the input bytes of the jobs run under one job group from the REST API."""

    def __init__(self, spark: Any) -> None:
        self._sc = spark.sparkContext
        self._base = f"{self._sc.uiWebUrl}/api/v1/applications/{self._sc.applicationId}"

    def set_group(self, group: str) -> None:
        """Tag the jobs the current thread starts from now on."""
        self._sc.setJobGroup(group, group)

    def bytes_for_group(self, group: str, timeout: float = 10.0) -> int | None:
        """Sum ``inputBytes`` over every stage of the group's jobs, once the listener has seen
        them complete (the REST store is updated asynchronously)."""
        tracker = self._sc.statusTracker()
        stage_ids: list[int] = []
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stage_ids.extend(info.stageIds)
        total = 0
        deadline = time.monotonic() + timeout
        for stage_id in stage_ids:
            attempts = self._stage(stage_id, deadline)
            if attempts is None:
                return None
            total += sum(int(a.get("inputBytes", 0)) for a in attempts)
        return total

    def _stage(self, stage_id: int, deadline: float) -> list[dict[str, Any]] | None:
        """The attempts of one stage, waiting until none is still active; skipped stages
        (never run) count as zero bytes."""
        while True:
            try:
                with urllib.request.urlopen(f"{self._base}/stages/{stage_id}", timeout=5) as r:
                    attempts: list[dict[str, Any]] = json.load(r)
            except OSError:
                attempts = []
            statuses = {a.get("status") for a in attempts}
            if attempts and statuses <= {"COMPLETE", "FAILED", "SKIPPED"}:
                return attempts
            if time.monotonic() > deadline:
                return [] if not attempts or statuses <= {"PENDING"} else None
            time.sleep(0.05)


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; fields resume after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def python_worker_rchar() -> dict[int, int]:
    """``rchar`` of every PySpark Python worker below this process (pid -> bytes).

    pqindex-on-Spark reads Parquet inside these workers, where Spark's input metrics do not
    look; the difference of two snapshots is what the workers read (files, plus the small
    plan units and commands Spark sends them over a socket)."""
    tree = _children()
    found: dict[int, int] = {}
    stack = list(tree.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, []))
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            io = Path(f"/proc/{pid}/io").read_text()
        except OSError:
            continue
        if b"pyspark" in cmdline and b"java" not in cmdline:
            for line in io.splitlines():
                if line.startswith("rchar:"):
                    found[pid] = int(line.split()[1])
    return found


def worker_rchar_delta(before: dict[int, int], after: dict[int, int]) -> int:
    """Bytes read by workers between two snapshots (new workers count from zero)."""
    return sum(value - before.get(pid, 0) for pid, value in after.items())
