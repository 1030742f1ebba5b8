"""pqindex.spark on a real Spark standalone cluster: a master and two one-core workers on
loopback (tests/support/spark_cluster.py), so executors are JVMs of their own with their own
Python workers and working directories, and see nothing of the driver's memory, as on any
cluster. Reads (with join keys, indexes, a catalog), writes, index and catalog builds and
the data source return the rows Spark's own Parquet reader returns; an executor SIGKILLed in
the middle of ``build_indexes``, ``build_catalog`` or ``write`` leaves every data file whole
(the old one or the new one), no temporary file but those its own processes were writing
(which a completed ``write`` removes), and a job that completed on the
surviving executor or failed clearly, and that completes when run again.

Runs with ``--spark``. Starting the cluster and its application takes 30-60 s on a busy
two-core machine; the module's cluster is the only one up while it runs, and is stopped
(every process it started checked gone) when the module ends. When a test fails, the
cluster's logs and work dirs are kept and their path printed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import SPARK_CONFS
from support.spark_cluster import (
    ExecutorKiller,
    Kill,
    StandaloneCluster,
    temp_pid,
    wait_for_executors,
)

pytestmark = pytest.mark.spark

#: JIT and GC settings for every JVM of the cluster: on two busy cores,
#: start-up (C2 compiling, parallel GC threads) costs more than the jobs themselves.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

FILES, ROWS_PER_FILE = 6, 50_000
BIG_FILES, BIG_ROWS_PER_FILE = 12, 250_000
WRITE_TASKS, WRITE_ROWS = 8, 480_000
#: A value of ``g`` (see ``_table``): the rows 61,700 .. 61,749.
G = (1234 * 7919) % 100_003


# --- the cluster -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[StandaloneCluster]:
    """The module's cluster: kept on disk (and its path printed) if any test here failed,
    removed otherwise."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java: Spark cannot start")
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        # One SparkContext per process: a local session of conftest's is up.
        pytest.skip(
            "another SparkContext is active in this process (conftest's local session); "
            "run tests/test_spark_cluster.py on its own or before the other Spark tests"
        )
    root = Path(tempfile.mkdtemp(prefix="pqindex-spark-cluster-"))
    failed_before = request.session.testsfailed
    cluster = StandaloneCluster(root, workers=2, cores=1, memory="1g", java_options=JAVA_OPTIONS)
    cluster.start(timeout=90)
    try:
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            if request.session.testsfailed > failed_before:
                _say(request, f"Spark cluster logs and work dirs kept in {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)


def _say(request: pytest.FixtureRequest, line: str) -> None:
    """A line on the terminal, past pytest's capture of the fixture's output (which shows
    only when the test whose teardown this is failed)."""
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if capture is None or reporter is None:
        print(line, file=sys.stderr)
        return
    with capture.global_and_fixture_disabled():
        reporter.ensure_newline()
        reporter.write_line(line)


@pytest.fixture(scope="module")
def cluster_spark(cluster: StandaloneCluster) -> Iterator[Any]:
    """A classic session of the cluster: two executors of one core, tasks retried up to
    four times (so a lost executor's tasks rerun on the other)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    confs = {
        **SPARK_CONFS,
        **cluster.app_confs(),
        # The driver's JVM keeps SPARK_CONFS' options: PySpark keeps it for later sessions
        # of this process (other modules' tests).
        "spark.executor.extraJavaOptions": f"-Duser.timezone=UTC {JAVA_OPTIONS}",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.executor.memory": "768m",
        "spark.task.maxFailures": "4",
        # (conftest's sessions set their own)
        "spark.sql.warehouse.dir": str(cluster.root / "warehouse"),
    }
    builder = SparkSession.builder.appName("pqindex-cluster-tests")
    for key, value in confs.items():
        builder = builder.config(key, value)
    with pytest.MonkeyPatch.context() as env:
        # PySpark gives executors the driver's PYSPARK_PYTHON (spark.pyspark.python is read
        # by spark-submit only); without it they would run the first python3 on PATH. The
        # driver's JVM binds to loopback like the rest of the cluster.
        env.setenv("PYSPARK_PYTHON", cluster.python)
        env.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        session = builder.getOrCreate()
        try:
            SparkContext._active_spark_context.setLogLevel("ERROR")  # type: ignore[union-attr]
            wait_for_executors(cluster, session, 2)
            yield session
        finally:
            session.stop()


@pytest.fixture(autouse=True)
def _two_executors(
    request: pytest.FixtureRequest, cluster: StandaloneCluster, cluster_spark: Any
) -> None:
    """Each test starts with both executors up (one killed by an earlier test is replaced
    by the master on its worker; a fault test's second run does not wait for that), and
    a failing test's report says where the cluster's logs are."""
    request.node.add_report_section("setup", "spark cluster", f"logs and work dirs: {cluster.root}")
    wait_for_executors(cluster, cluster_spark, 2)


# --- data ------------------------------------------------------------------------------------


def _table(first: int, rows: int) -> pa.Table:
    """Rows ``first`` .. ``first + rows - 1``: ``k`` sorted; ``g`` in runs of 50 equal values
    scattered over 0..100002, so statistics cannot prune it but a distinct index can; ``u``
    a permutation (high cardinality); ``s`` strings; ``x`` doubles in [0, 1); ``d`` dates."""
    k = np.arange(first, first + rows, dtype=np.int64)
    rng = np.random.default_rng(first)
    u = rng.permutation(rows).astype(np.int64) + first
    return pa.table(
        {
            "k": k,
            "g": ((k // 50) * 7919) % 100_003,
            "u": u,
            "s": pc.binary_join_element_wise("s-", pc.cast(pa.array(k % 97), pa.string()), ""),
            "x": ((k * 2_654_435_761) % 1_000_003) / 1_000_003,
            "d": pa.array(np.datetime64("2020-01-01", "D") + (k % 366).astype("timedelta64[D]")),
        }
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six files of 50,000 rows written by pqindex (page index, pages of 2,000 rows)."""
    root = tmp_path_factory.mktemp("cluster-data") / "ds"
    root.mkdir()
    for i in range(FILES):
        pqindex.write(
            _table(i * ROWS_PER_FILE, ROWS_PER_FILE),
            root / f"part-{i:05d}.parquet",
            page_row_limit=2000,
            row_group_size=25_000,
        )
    return root


@pytest.fixture(scope="module")
def big_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve files of 250,000 rows (pyarrow, page index on): enough work per task that an
    executor can be killed while others are still to run. Tests work on copies."""
    root = tmp_path_factory.mktemp("cluster-big") / "ds"
    root.mkdir()
    for i in range(BIG_FILES):
        pq.write_table(
            _table(i * BIG_ROWS_PER_FILE, BIG_ROWS_PER_FILE),
            root / f"part-{i:05d}.parquet",
            row_group_size=50_000,
            write_page_index=True,
        )
    return root


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


# --- comparing rows --------------------------------------------------------------------------


def _sorted_arrow(df: Any) -> pa.Table:
    """A DataFrame's rows as Arrow, columns by name, rows sorted by every column, fields
    nullable: what two results must share to hold the same rows."""
    table = df.toArrow()
    names = sorted(table.column_names)
    table = pa.Table.from_arrays([table.column(n) for n in names], names=names)
    return table.sort_by([(n, "ascending") for n in names]).combine_chunks()


def assert_same_rows(got: Any, expected: Any, what: str = "", *, empty: bool = False) -> None:
    """``got`` holds exactly ``expected``'s rows (as multisets), and some unless ``empty``."""
    a, b = _sorted_arrow(got), _sorted_arrow(expected)
    assert a.schema == b.schema, f"{what}: schemas differ\n{a.schema}\n{b.schema}"
    assert empty or b.num_rows > 0, f"{what}: the reference has no rows, a vacuous test"
    assert a.num_rows == b.num_rows, f"{what}: {a.num_rows} rows, Spark's reader {b.num_rows}"
    if not a.equals(b):
        diff = next(i for i in range(a.num_rows) if a.slice(i, 1) != b.slice(i, 1))
        raise AssertionError(
            f"{what}: rows differ from row {diff}: "
            f"{a.slice(diff, 1).to_pylist()} != {b.slice(diff, 1).to_pylist()}"
        )


def _spark_rows(spark: Any, path: Path, where: str | None = None) -> Any:
    df = spark.read.parquet(str(path))
    return df if where is None else df.where(where)


# --- what faults may leave -------------------------------------------------------------------


def temp_files(*roots: Path) -> list[str]:
    """Files pqindex makes while writing, wherever one would be left by a killed writer:
    ``.<name>.<pid>-<n>.pqindex-tmp`` (the Rust writer and index rewrites), ``.<name>
    .pqindex-<pid>-<hex>`` (``pqindex.write`` with indexes), ``.<name>.pqindex-journal``
    (in-place index changes), ``.<name>.<pid>-<n>.tmp`` (catalog versions) and
    ``pqindex-write-*``/``pqindex-task-*`` scratch directories in the workers' TMPDIR."""
    found = []
    for root in roots:
        for directory, dirs, names in os.walk(root):
            for name in [*names, *dirs]:
                hidden_temp = name.startswith(".") and (
                    ".pqindex-" in name or name.endswith((".tmp", ".pqindex-tmp"))
                )
                if hidden_temp or name.startswith(("pqindex-write-", "pqindex-task-")):
                    found.append(os.path.join(directory, name))
    return sorted(found)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data_files(root: Path) -> list[Path]:
    """Data files as Spark lists them: no name starting with ``_`` or ``.`` on the way."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)
    )


def _run(job: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """The job's result, or the error it failed with."""
    try:
        return job(), None
    except Exception as error:
        return None, error


def _assert_clear_failure(error: BaseException) -> None:
    """A job that failed after losing an executor says so (Spark's task failures name the
    lost executor), rather than failing with something unrelated."""
    text = str(error)
    assert any(word in text for word in ("ExecutorLostFailure", "exited", "lost", "Job aborted")), (
        text[:3000]
    )


def _killed(request: pytest.FixtureRequest, killer: ExecutorKiller, error: Any) -> Kill:
    """The executor was killed mid-job; the report (``-rA``) says which, when, and how the
    job ended."""
    assert killer.error is None, f"the killer failed: {killer.error!r}"
    assert killer.kill is not None, (
        "the job ended before an executor could be killed mid-job: make it longer"
    )
    outcome = "completed" if error is None else f"failed: {str(error)[:2000]}"
    request.node.add_report_section("call", "fault", f"{killer.kill}\njob {outcome}")
    return killer.kill


def _leftovers(request: pytest.FixtureRequest, kill: Kill, *roots: Path) -> list[str]:
    """pqindex's temporary files under ``roots``; any not written by a process of the
    killed executor (a surviving or finished writer's) fails the test here. Those of the
    killed processes are returned, and listed in the report."""
    found = temp_files(*roots)
    stray = [f for f in found if temp_pid(os.path.basename(f)) not in kill.under]
    assert not stray, f"temporary files not of the killed executor's processes: {stray}"
    if found:
        request.node.add_report_section("call", "left by the killed executor", "\n".join(found))
    return found


# --- the tests -------------------------------------------------------------------------------


def test_executors_are_processes_of_their_own(
    cluster: StandaloneCluster, cluster_spark: Any
) -> None:
    """Tasks run in Python workers of executor JVMs on the workers: not this process, in
    each executor's working directory under its worker's SPARK_WORKER_DIR, with the venv's
    Python (the one that has pqindex)."""

    def where_am_i(_: int) -> tuple[int, str, str, str]:
        import os
        import sys

        import pqindex

        return os.getpid(), os.getcwd(), sys.executable, pqindex.__version__

    seen = cluster_spark.sparkContext.parallelize(range(8), 8).map(where_am_i).collect()
    assert all(pid != os.getpid() for pid, _, _, _ in seen)
    work = [str(w) for w in cluster.work_dirs]
    assert all(any(cwd.startswith(w) for w in work) for _, cwd, _, _ in seen), seen
    assert {exe for _, _, exe, _ in seen} == {cluster.python}
    assert {version for _, _, _, version in seen} == {pqindex.__version__}
    assert len(cluster.executor_pids(cluster_spark.sparkContext.applicationId)) == 2


EXECUTOR_PREDICATES = [
    "k BETWEEN 1000 AND 1500",
    f"g = {G} OR k > 299990",
    "s IN ('s-3', 's-5') AND k < 20000",
    "d = DATE '2020-03-01' AND x < 0.5",
    "k % 1000 = 7 AND k < 60000",
]


@pytest.mark.parametrize("where", EXECUTOR_PREDICATES)
def test_executor_reads(cluster_spark: Any, dataset: Path, where: str) -> None:
    """With driver reads and Spark's reader off, the executors read the selected pages."""
    import pqindex.spark as pqs

    scan = pqs.plan(cluster_spark, str(dataset), where, driver_read_bytes=0, spark_reader=False)
    df = scan.to_df()
    assert scan.read_by == "executors", scan.explain()
    assert_same_rows(df, _spark_rows(cluster_spark, dataset, where), where)
    assert scan.executor_metrics().get("bytes_read", 0) > 0, scan.explain()


def test_keyed_reads(cluster_spark: Any, dataset: Path) -> None:
    """Join keys from a Spark DataFrame prune on the driver and travel with the tasks; the
    executors return exactly the semi join's rows."""
    import pqindex.spark as pqs

    spark = cluster_spark
    table = pq.read_table(dataset / "part-00002.parquet", columns=["g", "s"])
    values = sorted({int(v) for v in table.column("g").to_pylist()[::5000]})
    keys = spark.createDataFrame([(v,) for v in [*values, 100_002, None]], "g long")
    source = _spark_rows(spark, dataset)
    scan = pqs.plan(spark, str(dataset), keys=keys, on="g", driver_read_bytes=0)
    got = scan.to_df()
    assert scan.read_by == "executors", scan.explain()
    assert_same_rows(got, source.join(keys, on="g", how="left_semi"), "keys on g")

    got = pqs.read(
        spark, str(dataset), "k < 150000", ["k", "s"], keys=keys, on="g", driver_read_bytes=0
    )
    expected = source.where("k < 150000").join(keys, on="g", how="left_semi").select("k", "s")
    assert_same_rows(got, expected, "keys on g, a condition and columns")

    pairs = table.slice(0, 40_000).to_pylist()[::4000]
    pair_keys = spark.createDataFrame(
        [(r["g"], r["s"]) for r in pairs] + [(pairs[0]["g"], "s-none")], "g long, s string"
    )
    got = pqs.read(spark, str(dataset), keys=pair_keys, on=["g", "s"], driver_read_bytes=0)
    expected = source.join(pair_keys, on=["g", "s"], how="left_semi")
    assert_same_rows(got, expected, "keys on (g, s)")


def test_build_indexes_then_an_indexed_read(
    cluster_spark: Any, dataset: Path, tmp_path: Path
) -> None:
    """Executors index every file; a read planned with the indexes prunes row groups
    statistics cannot, and returns Spark's rows."""
    import pqindex.spark as pqs

    spark = cluster_spark
    root = _copy(dataset, tmp_path / "indexed")
    report = pqs.build_indexes(spark, str(root), [pqindex.DistinctIndex("g")]).collect()
    assert sorted(Path(r["file"]).name for r in report) == [p.name for p in _data_files(root)]
    assert all(r["error"] is None and not r["skipped"] for r in report), report
    for path in _data_files(root):
        kinds = {(ix["kind"], ix["columns"][0]) for ix in pqindex.list_indexes(str(path))}
        assert ("distinct", "g") in kinds, (path, kinds)
    pqindex.clear_metadata_cache()
    value = int(pq.read_table(root / "part-00004.parquet", columns=["g"]).column("g")[1234])
    where = f"g = {value}"
    scan = pqs.plan(spark, str(root), where, driver_read_bytes=0, spark_reader=False)
    got = scan.to_df()
    assert scan.read_by == "executors", scan.explain()
    assert_same_rows(got, _spark_rows(spark, root, where), where)
    m = scan.metrics()
    assert m["row_groups_pruned_by_index"] > 0 and m["rows_pruned_by_index"] > 0, m
    again = pqs.build_indexes(spark, str(root), [pqindex.DistinctIndex("g")]).collect()
    assert all(r["skipped"] and r["error"] is None for r in again), again


def test_build_catalog_then_a_read(cluster_spark: Any, dataset: Path, tmp_path: Path) -> None:
    """Executors summarise the files, the driver writes the catalog, and a read planned
    from it rules files out without reading their footers."""
    import pqindex.spark as pqs

    spark = cluster_spark
    root = _copy(dataset, tmp_path / "cataloged")
    catalog = pqs.build_catalog(spark, str(root), ["k", "g", "s"], bloom=["s"], parallelism=3)
    assert catalog.num_files == FILES
    pqindex.clear_metadata_cache()
    where = "k BETWEEN 120000 AND 120010 OR k = 299999"
    scan = pqs.plan(spark, str(root), where, driver_read_bytes=0, spark_reader=False)
    got = scan.to_df()
    assert scan.read_by == "executors", scan.explain()
    assert_same_rows(got, _spark_rows(spark, root, where), where)
    m = scan.metrics()
    assert m["files_pruned_by_catalog"] == FILES - 2, m


def _frame(spark: Any, rows: int, partitions: int) -> Any:
    """Rows made by Spark itself (deterministic, so a rerun task makes the same ones)."""
    return spark.range(0, rows, numPartitions=partitions).selectExpr(
        "id AS k",
        "CAST(id % 3 AS INT) AS p",
        "((id DIV 50) * 7919) % 100003 AS g",
        "xxhash64(id) AS u",
        "concat('s-', CAST(id % 97 AS STRING)) AS s",
    )


def test_write_then_sparks_reader(cluster_spark: Any, tmp_path: Path) -> None:
    """Tasks write hive partitions with embedded indexes; Spark's reader reads back the
    DataFrame's rows."""
    import pqindex.spark as pqs

    spark = cluster_spark
    out = tmp_path / "written"
    df = _frame(spark, 120_000, 4)
    report = pqs.write(
        df, str(out), partition_by=["p"], indexes=[pqindex.DistinctIndex("g")], page_row_limit=5000
    )
    assert sum(r["rows"] for r in report) == 120_000
    assert sorted(r["file"] for r in report) == [str(p) for p in _data_files(out)]
    assert (out / "_SUCCESS").exists()
    for r in report:
        assert any(ix["kind"] == "distinct" for ix in pqindex.list_indexes(r["file"])), r
    assert_same_rows(_spark_rows(spark, out), df, "written")
    assert not temp_files(out)


def test_data_source_and_sql(cluster_spark: Any, dataset: Path) -> None:
    """``spark.read.format("pqindex")`` and a SQL view ``USING pqindex``: planned in the
    driver's Python workers, read in the executors'."""
    import pqindex.spark as pqs

    spark = cluster_spark
    pqs.register(spark)
    for where in (f"k BETWEEN 2000 AND 2100 OR g = {G}", "s = 's-7' AND k >= 290000"):
        got = spark.read.format("pqindex").load(str(dataset)).where(where)
        assert_same_rows(got, _spark_rows(spark, dataset, where), f"format('pqindex'): {where}")
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW cluster_pq USING pqindex OPTIONS (path '{dataset}')"
    )
    try:
        where = f"g IN ({G}, 7919) OR k < 10"
        query = f"SELECT k, s, d FROM cluster_pq WHERE {where}"
        expected = _spark_rows(spark, dataset, where).select("k", "s", "d")
        assert_same_rows(spark.sql(query), expected, query)
    finally:
        spark.sql("DROP VIEW IF EXISTS cluster_pq")


# --- an executor SIGKILLed mid-job -------------------------------------------------------------
#
# The executor JVM is killed while a stage runs tasks on both executors; its Python workers
# see their sockets close and are hung up by their daemon at once. A worker killed between
# creating a temporary file and renaming it leaves that (hidden) file behind, which Spark's
# and pqindex's listings skip: whether it does depends on where the kill lands, so these
# tests allow leftovers written by the killed executor's own processes (and report them),
# and nothing else. The ``container`` case of the write test makes the leftover certain
# (worker and JVM killed together, while a file is being written): a completed write
# removes it.


def test_executor_killed_during_build_indexes(
    request: pytest.FixtureRequest,
    cluster: StandaloneCluster,
    cluster_spark: Any,
    big_dataset: Path,
    tmp_path: Path,
) -> None:
    """Every file is the old one or the indexed one, with the same rows; running the build
    again indexes what is missing, and reads use the indexes."""
    import pqindex.spark as pqs

    spark = cluster_spark
    root = _copy(big_dataset, tmp_path / "ds")
    old = {p.name: _digest(p) for p in _data_files(root)}
    indexes = [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", granularity="page")]

    def build() -> list[Any]:
        return pqs.build_indexes(spark, str(root), indexes, parallelism=BIG_FILES).collect()

    with ExecutorKiller(cluster, spark, tasks=BIG_FILES) as killer:
        report, error = _run(build)
    kill = _killed(request, killer, error)
    if error is not None:
        _assert_clear_failure(error)
    else:
        assert sorted(Path(r["file"]).name for r in report) == sorted(old), report
        assert all(r["error"] is None for r in report), report

    def check_files(all_indexed: bool) -> None:
        assert [p.name for p in _data_files(root)] == sorted(old)
        for path in _data_files(root):
            assert pq.read_table(path).equals(pq.read_table(big_dataset / path.name)), path
            present = {(ix["kind"], ix["columns"][0]) for ix in pqindex.list_indexes(str(path))}
            indexed = {("distinct", "u"), ("bloom", "s")} <= present
            unchanged = not all_indexed and _digest(path) == old[path.name]
            assert indexed or unchanged, (path, present)

    check_files(all_indexed=error is None)
    _leftovers(request, kill, root, cluster.tmp_dir)

    again = build()
    assert all(r["error"] is None for r in again), again
    if error is None:
        assert all(r["skipped"] for r in again), again
    check_files(all_indexed=True)
    _leftovers(request, kill, root, cluster.tmp_dir)
    pqindex.clear_metadata_cache()
    value = int(pq.read_table(root / "part-00007.parquet", columns=["u"]).column("u")[99])
    where = f"u = {value} OR u = -1"
    scan = pqs.plan(spark, str(root), where, driver_read_bytes=0, spark_reader=False)
    assert_same_rows(scan.to_df(), _spark_rows(spark, root, where), where)
    assert scan.metrics()["row_groups_pruned_by_index"] > 0, scan.metrics()


def test_executor_killed_during_build_catalog(
    request: pytest.FixtureRequest,
    cluster: StandaloneCluster,
    cluster_spark: Any,
    big_dataset: Path,
    tmp_path: Path,
) -> None:
    """The data files are untouched, nothing temporary is left (tasks only read; the driver
    writes the catalog), and the catalog is written (by the job, its tasks retried, or by
    running it again) and prunes a read."""
    import pqindex.spark as pqs

    spark = cluster_spark
    root = _copy(big_dataset, tmp_path / "ds")
    old = {p.name: _digest(p) for p in _data_files(root)}

    def build() -> Any:
        return pqs.build_catalog(
            spark, str(root), ["k", "u", "s"], bloom=["s"], parallelism=BIG_FILES
        )

    with ExecutorKiller(cluster, spark, tasks=BIG_FILES) as killer:
        catalog, error = _run(build)
    _killed(request, killer, error)
    if error is not None:
        _assert_clear_failure(error)
        assert pqindex.Catalog.open(str(root)) is None
    else:
        assert catalog.num_files == BIG_FILES
    assert {p.name: _digest(p) for p in _data_files(root)} == old
    assert not temp_files(root, cluster.tmp_dir)

    catalog = build()
    assert catalog.num_files == BIG_FILES
    assert not temp_files(root, cluster.tmp_dir)
    pqindex.clear_metadata_cache()
    where = f"k BETWEEN {5 * BIG_ROWS_PER_FILE + 10} AND {5 * BIG_ROWS_PER_FILE + 20}"
    scan = pqs.plan(spark, str(root), where, driver_read_bytes=0, spark_reader=False)
    assert_same_rows(scan.to_df(), _spark_rows(spark, root, where), where)
    assert scan.metrics()["files_pruned_by_catalog"] == BIG_FILES - 1, scan.metrics()


@pytest.mark.parametrize(
    "lost",
    [
        "executor",
        "container",
    ],
)
def test_executor_killed_during_write(
    request: pytest.FixtureRequest,
    cluster: StandaloneCluster,
    cluster_spark: Any,
    tmp_path: Path,
    lost: str,
) -> None:
    """Killed while one of its Python workers writes a file (the JVM alone, or with its
    Python workers as a whole container goes): every file that appears is whole, a retried
    task replacing its files under the same names; the job completes on the surviving
    executor or fails clearly having removed its files; writing again gives the
    DataFrame's rows. With the container lost, no temporary file may be left either."""
    import pqindex.spark as pqs

    spark = cluster_spark
    out = tmp_path / "out"
    df = _frame(spark, WRITE_ROWS, WRITE_TASKS)

    def write(mode: str) -> list[dict[str, Any]]:
        return pqs.write(
            df,
            str(out),
            mode=mode,
            partition_by=["p"],
            indexes=[pqindex.DistinctIndex("g")],
            page_row_limit=10_000,
        )

    container = lost == "container"
    with ExecutorKiller(
        cluster, spark, tasks=WRITE_TASKS, writing_in=out, python_workers=container
    ) as killer:
        report, error = _run(lambda: write("error"))
    kill = _killed(request, killer, error)
    files = _data_files(out)
    for path in files:
        pq.read_table(path)  # whole: footer and every page readable
    if error is not None:
        _assert_clear_failure(error)
        assert files == [] and not (out / "_SUCCESS").exists(), files
    else:
        assert sorted(r["file"] for r in report) == [str(p) for p in files]
        assert (out / "_SUCCESS").exists()
        assert_same_rows(_spark_rows(spark, out), df, "written with an executor lost")
    # A completed write removes what its killed attempts were writing.
    left = _leftovers(request, kill, out, cluster.tmp_dir)
    if error is None:
        assert not temp_files(out), f"left after the job completed: {left}"

    report = write("overwrite")
    assert sorted(r["file"] for r in report) == [str(p) for p in _data_files(out)]
    assert_same_rows(_spark_rows(spark, out), df, "written again")
    assert not temp_files(out, cluster.tmp_dir)
