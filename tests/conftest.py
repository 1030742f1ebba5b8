"""Shared pytest configuration: run sizes, markers, and the engines the tests compare against.

* ``--full`` (or ``PQINDEX_FULL=1``) switches the differential suite from its quick default
  (a few hundred cases) to the full run (thousands) and enables tests marked ``slow``.
* Tests marked ``spark`` need a local Spark (pyspark and Java). Starting Spark costs seconds,
  so they run only when asked for: ``-m spark``, ``--spark`` or ``PQINDEX_SPARK=1``.
* DuckDB is the referee; one in-memory connection per session, with ``TimeZone='UTC'`` so
  naive timestamp literals compared with time-zone-aware columns mean UTC, as the contract
  says, and without the optimizers that prune with Parquet statistics (see DUCKDB_SETUP).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # datagen / predicates import as plain modules


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pqindex")
    group.addoption(
        "--full",
        action="store_true",
        default=_env_flag("PQINDEX_FULL"),
        help="run the full differential suite (thousands of cases) and tests marked slow",
    )
    group.addoption(
        "--spark",
        action="store_true",
        default=_env_flag("PQINDEX_SPARK"),
        help="run tests marked spark (needs pyspark and Java); -m spark does the same",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "spark: needs a local Spark (pyspark + Java); run with -m spark or --spark",
    )
    config.addinivalue_line("markers", "slow: runs only with --full (or PQINDEX_FULL=1)")


def full_run(config: pytest.Config) -> bool:
    return bool(config.getoption("full"))


def _spark_requested(config: pytest.Config) -> bool:
    return bool(config.getoption("spark")) or "spark" in (config.getoption("markexpr") or "")


@pytest.hookimpl(trylast=True)  # after pytest has grouped tests by parametrised fixtures
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses the ``spark`` fixture is a spark test, marked or not; spark and slow
    tests are skipped unless asked for, so the default run stays quick.

    test_spark_cluster.py's tests run first: their session is a client of a standalone
    cluster, and a process holds one SparkContext at a time, so they must run before the
    ``spark`` fixture starts its local one (which lasts until the session ends)."""
    items.sort(key=lambda item: item.path.name != "test_spark_cluster.py")  # stable
    run_spark, run_slow = _spark_requested(config), full_run(config)
    for item in items:
        if (
            "spark" in getattr(item, "fixturenames", ())
            and item.get_closest_marker("spark") is None
        ):
            item.add_marker(pytest.mark.spark)
        if item.get_closest_marker("spark") is not None and not run_spark:
            item.add_marker(pytest.mark.skip(reason="Spark test: run with -m spark or --spark"))
        if item.get_closest_marker("slow") is not None and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow test: run with --full"))


@pytest.fixture(scope="session")
def full(request: pytest.FixtureRequest) -> bool:
    """True in the full run."""
    return full_run(request.config)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A fresh directory for one test's Parquet files."""
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for fixtures shared by the whole session (written once, read by many)."""
    return tmp_path_factory.mktemp("fixtures")


# How the referee is set up. Time zone UTC, as the contract says. And no filter pushdown
# or statistics propagation: DuckDB 2.0 prunes Parquet row groups with float statistics
# that leave NaN out, so with them on it answers ``"f32" = CAST('NaN' AS DOUBLE)`` and
# ``"f32" > 1`` with no rows although NaN rows match both under its own NaN semantics (the
# same bug the suite looks for in pqindex). Without them DuckDB evaluates every row.
DUCKDB_SETUP = (
    "SET TimeZone='UTC'",
    "SET disabled_optimizers='filter_pushdown,statistics_propagation'",
)


def duckdb_referee() -> Any:
    """A new DuckDB connection set up as the referee."""
    import duckdb

    con = duckdb.connect()
    for statement in DUCKDB_SETUP:
        con.execute(statement)
    return con


@pytest.fixture(scope="session")
def duckdb_con() -> Iterator[Any]:
    """The referee: one DuckDB connection for the session (see DUCKDB_SETUP)."""
    pytest.importorskip("duckdb")
    con = duckdb_referee()
    yield con
    con.close()


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is not None or bool(
        java_home and Path(java_home, "bin", "java").exists()
    )


#: Spark sessions every test in a ``test_spark_*`` module runs against; other modules'
#: Spark tests run on a classic session only.
SPARK_MODES = ("classic", "connect")
SPARK_CONFS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``spark`` is a classic session or a Spark Connect one; the session fixture is
    parametrised, so pytest runs every classic test first, then starts the Connect server
    once for the rest."""
    if "spark" in metafunc.fixturenames:
        module = metafunc.module.__name__.rsplit(".", 1)[-1]
        modes = SPARK_MODES if module.startswith("test_spark_") else SPARK_MODES[:1]
        metafunc.parametrize("spark", modes, indirect=True, scope="session")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def spark(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A small local SparkSession, started the first time a spark test asks for it: a
    classic one, or a client of a Spark Connect server started from the pyspark package.

    The server runs as ``SparkSession.builder.remote("local[2]")`` runs it (a local Spark
    with the Connect plugin, in this process), but on a free port rather than the fixed
    15002, so that test runs on a shared machine do not collide. PySpark's functions pick
    classic or Connect by ``SPARK_CONNECT_MODE_ENABLED``, so it is set while Connect tests
    run, and the classic session is stopped before the server starts."""
    pytest.importorskip("pyspark")
    if not _java_available():
        pytest.skip("no Java: Spark cannot start")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    mode = getattr(request, "param", "classic")
    # Python workers (and the Connect server's) must run this interpreter, the one with
    # pqindex installed, not whatever python3 comes first on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    warehouse = tmp_path_factory.mktemp(f"spark-warehouse-{mode}")
    builder = SparkSession.builder.master("local[2]").appName(f"pqindex-tests-{mode}")
    for key, value in {**SPARK_CONFS, "spark.sql.warehouse.dir": str(warehouse)}.items():
        builder = builder.config(key, value)
    if mode == "classic":
        session = builder.getOrCreate()
        SparkContext._active_spark_context.setLogLevel("ERROR")  # type: ignore[union-attr]
        yield session
        session.stop()
        return
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    port = _free_port()
    server = (
        builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(port))
        .config("spark.sql.artifact.isolation.enabled", "true")
        .config("spark.sql.artifact.isolation.alwaysApplyClassloader", "true")
        .getOrCreate()
    )
    SparkContext._active_spark_context.setLogLevel("ERROR")  # type: ignore[union-attr]
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        session = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        yield session
        session.stop()
    finally:
        del os.environ["SPARK_CONNECT_MODE_ENABLED"]
        server.stop()
