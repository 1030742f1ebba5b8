"""The engines: ``open`` once per layout, ``prepare`` once per query (work that is not
timed), then the returned callable runs the query once and is timed."""

from __future__ import annotations

import contextlib
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import compare_spark_env as spark_env
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from .meters import BENCHES, Meter, Run
from .predicates import to_polars, to_pyarrow
from .queries import Query


class Engine:
    name: ClassVar[str]
    needs_spark: ClassVar[bool] = False
    bytes_source: ClassVar[str]

    def unavailable(self) -> str | None:
        """Why this engine cannot run here, or None."""
        return None

    def open(self, path: Path, layout: str) -> None:
        self.path = path
        self.layout = layout

    def prepare(self, query: Query) -> Callable[[], Run]:
        raise NotImplementedError

    def cold_program(self, query: Query) -> str:
        """Python source for a fresh process: the imports and set-up the engine needs, then
        ``run(path)``, the query over the layout directory ``path`` as an Arrow table. A
        user's script as written, so the process imports only what this engine needs."""
        raise NotImplementedError

    def cold_env(self) -> dict[str, str]:
        """Environment variables the fresh process needs (None-valued: removed)."""
        return {}

    def cold_cleanup(self) -> str:
        """Source run after the timed part (stopping a session)."""
        return ""


class Pqindex(Engine):
    name = "pqindex"
    bytes_source = "Scan.metrics()['bytes_read'] (rchar kept in the JSON as a cross-check)"

    def prepare(self, query: Query) -> Callable[[], Run]:
        import pqindex

        where = query.sql_where()
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                scan = pqindex.scan(self.path, where=where, columns=columns)
                table = scan.to_arrow()
            metrics = scan.metrics()
            return Run(m.seconds, table, int(metrics["bytes_read"]), m.read, dict(metrics))

        return run

    def cold_program(self, query: Query) -> str:
        columns = list(query.columns) if query.columns else None
        return f"""
import pqindex

def run(path):
    return pqindex.scan(path, where={query.sql_where()!r}, columns={columns!r}).to_arrow()
"""


class Pyarrow(Engine):
    name = "pyarrow"
    bytes_source = "rchar delta"

    def prepare(self, query: Query) -> Callable[[], Run]:
        filters = to_pyarrow(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                table = pq.read_table(self.path, filters=filters, columns=columns)
            return Run(m.seconds, table, m.read, m.read)

        return run

    def cold_program(self, query: Query) -> str:
        filters = to_pyarrow(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None
        return f"""
import pickle
import pyarrow.parquet as pq

FILTERS = pickle.loads({pickle.dumps(filters)!r})

def run(path):
    return pq.read_table(path, filters=FILTERS, columns={columns!r})
"""


class Duckdb(Engine):
    name = "duckdb"
    bytes_source = "rchar delta"

    def __init__(self) -> None:
        import duckdb

        self.con = duckdb.connect()

    @staticmethod
    def sql(path: Path | str, query: Query) -> str:
        sql = f"SELECT {query.select_list()} FROM read_parquet('{path}/*.parquet')"
        if query.where is not None:
            sql += f" WHERE {query.sql_where()}"
        return sql

    def cold_program(self, query: Query) -> str:
        head, tail = self.sql("\0", query).split("\0")
        return f"""
import duckdb

con = duckdb.connect()

def run(path):
    return con.sql({head!r} + path + {tail!r}).to_arrow_table()
"""

    def prepare(self, query: Query) -> Callable[[], Run]:
        sql = self.sql(self.path, query)

        def run() -> Run:
            with Meter() as m:
                table = self.con.sql(sql).to_arrow_table()
            return Run(m.seconds, table, m.read, m.read)

        return run


class Datafusion(Engine):
    name = "datafusion"
    bytes_source = "rchar delta"

    SETTINGS: ClassVar[dict[str, str]] = {
        "datafusion.execution.parquet.pushdown_filters": "true",
        "datafusion.execution.parquet.reorder_filters": "true",
    }

    def __init__(self) -> None:
        from datafusion import SessionConfig, SessionContext

        config = SessionConfig()
        for key, value in self.SETTINGS.items():
            config = config.set(key, value)
        self.ctx = SessionContext(config)

    def cold_program(self, query: Query) -> str:
        where = f" WHERE {query.sql_where()}" if query.where is not None else ""
        return f"""
from datafusion import SessionConfig, SessionContext

config = SessionConfig()
for key, value in {self.SETTINGS!r}.items():
    config = config.set(key, value)
ctx = SessionContext(config)
tables = []

def run(path):
    tables.append(f"lineitem_{{len(tables)}}")
    ctx.register_parquet(tables[-1], path)
    return ctx.sql(f"SELECT {query.select_list()} FROM {{tables[-1]}}{where}").to_arrow_table()
"""

    def open(self, path: Path, layout: str) -> None:
        super().open(path, layout)
        self.table = f"lineitem_{layout}"
        if not self.ctx.table_exist(self.table):
            self.ctx.register_parquet(self.table, str(path))

    def prepare(self, query: Query) -> Callable[[], Run]:
        sql = f"SELECT {query.select_list()} FROM {self.table}"
        if query.where is not None:
            sql += f" WHERE {query.sql_where()}"

        def run() -> Run:
            with Meter() as m:
                table = self.ctx.sql(sql).to_arrow_table()
            return Run(m.seconds, table, m.read, m.read)

        return run


class Polars(Engine):
    name = "polars"
    bytes_source = "rchar delta"

    def prepare(self, query: Query) -> Callable[[], Run]:
        import polars as pl

        glob = f"{self.path}/*.parquet"
        where = to_polars(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None

        def run() -> Run:
            with Meter() as m:
                frame = pl.scan_parquet(glob)
                if where is not None:
                    frame = frame.filter(where)
                if columns is not None:
                    frame = frame.select(columns)
                result = frame.collect()
            return Run(m.seconds, result.to_arrow(), m.read, m.read)

        return run

    def cold_program(self, query: Query) -> str:
        where = to_polars(query.where) if query.where is not None else None
        columns = list(query.columns) if query.columns else None
        return f"""
import pickle
import polars as pl

WHERE = pickle.loads({pickle.dumps(where)!r})

def run(path):
    frame = pl.scan_parquet(path + "/*.parquet")
    if WHERE is not None:
        frame = frame.filter(WHERE)
    if {columns!r} is not None:
        frame = frame.select({columns!r})
    return frame.collect().to_arrow()
"""


class SparkEngine(Engine):
    """Spark's own reader. Timed: building the DataFrame (file listing, schema, analysis) and
    ``toArrow()``; the JSON keeps the two parts apart (``dataframe_ms``, ``action_ms``).

    ``spark`` is the local Spark in this process (the Spark Connect server too, when one was
    started); the ``*_connect`` engines build their DataFrames through ``client``, a Spark
    Connect session on that server. Both run their jobs in the same JVM, whose ``rchar``
    growth stands for the bytes read either way."""

    name = "spark"
    needs_spark = True
    connect: ClassVar[bool] = False
    bytes_source = (
        "rchar delta of the driver JVM (Spark's task input metrics, which miss vectored "
        "reads, are in the JSON as input_bytes)"
    )
    spark: Any = None
    client: Any = None
    connect_url: str | None = None
    driver_memory = "6g"
    warehouse: Path | None = None
    runs = 0

    def unavailable(self) -> str | None:
        if self.spark is None:
            return "Spark not started (--no-spark)"
        if self.connect and self.client is None:
            return "no Spark Connect server (--spark-mode classic)"
        return None

    @property
    def session(self) -> Any:
        """The session DataFrames are built on: the Connect client or the classic one."""
        return self.client if self.connect else self.spark

    def dataframe(self, query: Query) -> tuple[Any, Any]:
        """The DataFrame, and the object that reports pqindex metrics (none here)."""
        df = self.session.read.parquet(str(self.path))
        if query.where is not None:
            df = df.where(query.sql_where())
        if query.columns:
            df = df.select(*query.columns)
        return df, None

    def prepare(self, query: Query) -> Callable[[], Run]:
        # Job groups are thread-local in the JVM: a Connect query runs on a server thread,
        # where a group set from here does not reach, so input_bytes is classic-only.
        meter = None if self.connect else spark_env.SparkInputBytes(self.spark)
        jvm = spark_env.jvm_pid(self.spark)

        def run() -> Run:
            SparkEngine.runs += 1
            group = f"compare-{SparkEngine.runs}"
            if meter is not None:
                meter.set_group(group)
            workers = spark_env.python_worker_rchar()
            jvm_before = spark_env.rchar_of(jvm)
            with spark_env.connect_mode() if self.connect else contextlib.nullcontext():
                start = time.perf_counter()
                df, scan = self.dataframe(query)
                built = time.perf_counter()
                table = df.toArrow()
                end = time.perf_counter()
                metrics: dict[str, Any] = {
                    "dataframe_ms": (built - start) * 1000,
                    "action_ms": (end - built) * 1000,
                    "jvm_rchar": spark_env.rchar_of(jvm) - jvm_before,
                    "worker_rchar": spark_env.worker_rchar_delta(
                        workers, spark_env.python_worker_rchar()
                    ),
                    "input_bytes": None if meter is None else meter.bytes_for_group(group),
                }
                if scan is not None:
                    metrics["pqindex"] = dict(scan.metrics())
                    metrics["on_driver"] = getattr(scan, "on_driver", None)
            return Run(end - start, table, self.bytes_of(metrics), None, metrics)

        return run

    def bytes_of(self, metrics: dict[str, Any]) -> int | None:
        """Which of the measured figures stands for the bytes this engine read."""
        return int(metrics["jvm_rchar"])

    # A fresh process starts its own local Spark (classic), or connects to this process's
    # Connect server (a new client session on a warm server, as a notebook reconnecting).

    def cold_program(self, query: Query) -> str:
        if self.connect:
            session = f"""
import os

os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
from pyspark.sql.connect.session import SparkSession

spark = SparkSession.builder.remote({self.connect_url!r}).getOrCreate()
"""
        else:
            session = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(BENCHES)!r})
import compare_spark_env

spark = compare_spark_env.start_spark({self.driver_memory!r}, Path({str(self.warehouse)!r}))
"""
        return session + self.cold_run_source(query)

    def cold_run_source(self, query: Query) -> str:
        return f"""
def run(path):
    df = spark.read.parquet(path)
    if {query.sql_where()!r} is not None:
        df = df.where({query.sql_where()!r})
    if {query.columns!r}:
        df = df.select(*{query.columns!r})
    return df.toArrow()
"""

    def cold_env(self) -> dict[str, str]:
        return {"PYSPARK_PYTHON": sys.executable}

    def cold_cleanup(self) -> str:
        return "spark.stop()"


# ----- pqindex via Spark ---------------------------------------------------------------------
# ``plan(spark, source, where=..., columns=...)`` plans on the driver (the Python process
# holding the session: on Spark Connect, the client) and reads there too when the selection
# is small; ``to_df()`` gives the DataFrame and ``metrics()["bytes_read"]`` what the driver and
# the executors fetched (on Spark Connect, the executors' share comes back as observed
# metrics of the first action). With only ``read(...)`` (a DataFrame), bytes fall back to the
# rchar growth of the PySpark Python workers, which misses reads on the driver.


class PqindexSpark(SparkEngine):
    name = "pqindex_spark"
    bytes_source = (
        "pqindex.spark plan metrics()['bytes_read'] (driver and executors; "
        "else rchar delta of the PySpark Python workers)"
    )

    def unavailable(self) -> str | None:
        try:
            import pqindex.spark  # type: ignore[import-not-found,unused-ignore]
        except ImportError as e:
            return f"pqindex.spark not importable ({e})"
        if not hasattr(pqindex.spark, "plan") and not hasattr(pqindex.spark, "read"):
            return "pqindex.spark has neither plan() nor read()"
        return super().unavailable()

    def dataframe(self, query: Query) -> tuple[Any, Any]:
        import pqindex.spark  # type: ignore[import-not-found,unused-ignore]

        columns = list(query.columns) if query.columns else None
        args = (self.session, str(self.path))
        if hasattr(pqindex.spark, "plan"):
            scan = pqindex.spark.plan(*args, where=query.sql_where(), columns=columns)
            return scan.to_df(), scan
        return pqindex.spark.read(*args, where=query.sql_where(), columns=columns), None

    def bytes_of(self, metrics: dict[str, Any]) -> int | None:
        if "pqindex" in metrics:
            return int(metrics["pqindex"]["bytes_read"])
        return int(metrics["worker_rchar"])

    def cold_run_source(self, query: Query) -> str:
        columns = list(query.columns) if query.columns else None
        return f"""
import pqindex.spark

def run(path):
    scan = pqindex.spark.plan(spark, path, where={query.sql_where()!r}, columns={columns!r})
    return scan.to_df().toArrow()
"""


class SparkConnect(SparkEngine):
    """Spark's own reader through a Spark Connect client."""

    name = "spark_connect"
    connect = True
    bytes_source = "rchar delta of the JVM serving Spark Connect (this process's local Spark)"


class PqindexSparkConnect(PqindexSpark):
    """pqindex.spark through a Spark Connect client."""

    name = "pqindex_spark_connect"
    connect = True
    bytes_source = (
        "pqindex.spark plan metrics()['bytes_read'] (the client's reads, and the executors' "
        "as observed metrics)"
    )


ENGINES: dict[str, type[Engine]] = {
    e.name: e
    for e in (
        Pqindex,
        Pyarrow,
        Duckdb,
        Datafusion,
        Polars,
        SparkEngine,
        PqindexSpark,
        SparkConnect,
        PqindexSparkConnect,
    )
}
PQINDEX_ENGINES = {"pqindex", "pqindex_spark", "pqindex_spark_connect"}
#: --spark-mode connect runs these in place of the classic engines; both runs both.
CONNECT_TWINS = {"spark": "spark_connect", "pqindex_spark": "pqindex_spark_connect"}
#: pqindex via Spark and the Spark reader it is held against, per mode.
SPARK_PAIRS = (("pqindex_spark", "spark"), ("pqindex_spark_connect", "spark_connect"))
