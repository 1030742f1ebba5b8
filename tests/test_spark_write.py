"""pqindex.spark.write: what Spark reads back is what was written, files carry a page index
and bloom filters, and neither a retried task nor a failed job leaves extra files."""

from __future__ import annotations

import datetime
import decimal
import os
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark


def _frame(spark: Any, n: int = 3000) -> Any:
    rows = [
        (
            i,
            i % 7 if i % 11 else None,
            f"name-{i % 13}",
            decimal.Decimal(i) / 100,
            datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 40),
            datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)
            + datetime.timedelta(seconds=i),
            float(i) / 3,
        )
        for i in range(n)
    ]
    schema = "k long, g int, s string, d decimal(12,2), day date, ts timestamp, f double"
    return spark.createDataFrame(rows, schema).repartition(3)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix == ".parquet")


def _rows(df: Any) -> list[str]:
    return sorted(map(str, df.select(*sorted(df.columns)).collect()))


def test_spark_reads_back_what_was_written(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark

    df = _frame(spark)
    out = tmp_path / "out"
    report = pqindex.spark.write(
        df,
        out,
        partition_by=["g"],
        sort_within_partitions=["k"],
        bloom_filter_columns=["s"],
        page_row_limit=100,
    )
    assert (out / "_SUCCESS").exists()
    assert sum(r["rows"] for r in report) == df.count()
    assert {Path(r["file"]) for r in report} == set(_files(out))
    # NULL partition values go to Hive's default partition, as Spark writes them.
    assert (out / "g=__HIVE_DEFAULT_PARTITION__").is_dir()
    back = spark.read.parquet(str(out))
    assert _rows(back) == _rows(df)

    columns = pqindex.read_metadata(_files(out)[0]).columns().to_pylist()
    assert all(c["has_page_index"] for c in columns)
    assert any(c["has_bloom_filter"] for c in columns if c["column"] == "s")
    pages = pqindex.read_metadata(_files(out)[0]).pages().column("row_count").to_pylist()
    assert max(pages) <= 100


def test_pqindex_read_uses_what_write_wrote(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark

    df = _frame(spark, 20_000)
    out = tmp_path / "out"
    pqindex.spark.write(df.coalesce(1), out, sort_within_partitions=["k"], page_row_limit=500)
    scan = pqindex.spark.plan(spark, str(out), "k = 12345", ["s"])
    assert [r.s for r in scan.to_df().collect()] == ["name-8"]
    m = scan.metrics()
    assert m["pages_pruned"] > 0 and m["pages_read"] <= 2 * 2, m


def test_a_retried_task_replaces_its_files(spark: Any, tmp_path: Path) -> None:
    """A second attempt of the same task writes the same names: files are replaced, not
    added, and no temporary file is left behind."""
    from pqindex.spark._write import _WriteTask

    table = pa.table({"g": [1, 1, 2, 2, 2], "x": [1, 2, 3, 4, 5]})
    task = _WriteTask(
        root=str(tmp_path),
        job="job123",
        partition_by=["g"],
        options={"page_row_limit": None, "row_group_size": 1000},
    )
    first = pa.Table.from_batches(list(task(iter(table.to_batches(max_chunksize=2)))))
    before = _files(tmp_path)
    second = pa.Table.from_batches(list(task(iter(table.to_batches(max_chunksize=3)))))
    assert _files(tmp_path) == before and len(before) == 2
    assert first.column("file").to_pylist() == second.column("file").to_pylist()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name.startswith(".")) == []
    assert sum(pqindex.read_metadata(p).num_rows for p in before) == len(table)


@pytest.mark.filterwarnings("ignore:Cannot infer the eval type")
def test_a_failed_job_leaves_no_files(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark
    from pyspark.sql import functions as F

    @F.udf("long")  # type: ignore[misc]
    def explode_at(k: int) -> int:
        if k == 2500:
            raise ValueError("boom")
        return k

    df = _frame(spark).withColumn("k", explode_at("k"))
    out = tmp_path / "out"
    with pytest.raises(Exception, match="boom"):
        pqindex.spark.write(df, out, sort_within_partitions=["k"])
    assert _files(out) == []
    assert not (out / "_SUCCESS").exists()


def test_existing_output_is_refused_unless_overwritten(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark

    out = tmp_path / "out"
    out.mkdir()
    (out / "old.parquet").write_bytes(b"x")
    df = _frame(spark, 10)
    with pytest.raises(pqindex.InvalidArgumentError, match="not empty"):
        pqindex.spark.write(df, out)
    assert (out / "old.parquet").exists()
    pqindex.spark.write(df, out, mode="overwrite")
    assert not (out / "old.parquet").exists()
    assert spark.read.parquet(str(out)).count() == 10
    assert os.path.exists(out / "_SUCCESS")


def test_cluster_by_keeps_every_column_tight(spark: Any, tmp_path: Path) -> None:
    """A Z-order over two independent columns narrows the page ranges of both, where a sort
    on one leaves the other spread over its whole range on every page."""
    import random

    import pqindex.spark

    rng = random.Random(7)
    rows = [(rng.randrange(1_000_000), rng.randrange(1_000_000)) for _ in range(40_000)]
    df = spark.createDataFrame(rows, "x long, y long").repartition(2)

    def mean_page_width(path: Path, column: str) -> float:
        widths = []
        for f in _files(path):
            for p in pqindex.read_metadata(f).pages().to_pylist():
                if p["column"] == column:
                    widths.append(int(p["max"]) - int(p["min"]))
        return sum(widths) / len(widths) / 1_000_000

    pqindex.spark.write(df, tmp_path / "z", cluster_by=["x", "y"], page_row_limit=500)
    pqindex.spark.write(df, tmp_path / "s", sort_within_partitions=["x"], page_row_limit=500)
    assert spark.read.parquet(str(tmp_path / "z")).count() == len(rows)
    z = mean_page_width(tmp_path / "z", "x"), mean_page_width(tmp_path / "z", "y")
    s = mean_page_width(tmp_path / "s", "x"), mean_page_width(tmp_path / "s", "y")
    assert s[1] > 0.9  # sorting by x leaves y spread over each page
    assert max(z) < 0.35, (z, s)
    with pytest.raises(pqindex.UnsupportedError):
        pqindex.spark.write(
            spark.createDataFrame([("a",)], "t string"), tmp_path / "bad", cluster_by=["t"]
        )


def test_written_files_carry_embedded_indexes(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark

    df = _frame(spark)
    out = tmp_path / "out"
    pqindex.spark.write(
        df,
        out,
        indexes=[pqindex.DistinctIndex("s"), pqindex.BloomIndex("k", granularity="page")],
        page_row_limit=100,
    )
    files = _files(out)
    assert files and not [p for p in out.iterdir() if p.name.startswith(".")]
    for f in files:
        kinds = sorted((ix["kind"], ix["columns"][0]) for ix in pqindex.list_indexes(f))
        assert kinds == [("bloom", "k"), ("distinct", "s")]
        assert all(v["ok"] for v in pqindex.verify(f))
    got = pqindex.spark.read(spark, str(out), where="s = 'name-5'")
    assert _rows(got) == _rows(df.where("s = 'name-5'"))


def test_build_indexes_indexes_every_file_once(spark: Any, tmp_path: Path) -> None:
    import pqindex.spark

    out = tmp_path / "plain"
    _frame(spark).write.partitionBy("g").parquet(str(out))
    # A file that is not Parquet fails alone; hidden files are not touched.
    (out / "g=1" / "broken.parquet").write_bytes(b"not parquet")
    (out / "g=1" / ".hidden.parquet").write_bytes(b"x")
    before = _rows(spark.read.parquet(str(out)).where("g = 2"))
    indexes = [pqindex.DistinctIndex("s", granularity="page"), pqindex.HllIndex("k")]
    report = {r["file"]: r for r in pqindex.spark.build_indexes(spark, out, indexes).collect()}
    data = [p for p in _files(out) if p.name != "broken.parquet" and not p.name.startswith(".")]
    assert set(report) == {str(p) for p in data} | {str(out / "g=1" / "broken.parquet")}
    assert report[str(out / "g=1" / "broken.parquet")]["error"].startswith("InvalidFileError")
    for p in data:
        r = report[str(p)]
        assert r["error"] is None and not r["skipped"] and r["bytes_added"] > 0
        assert {ix["kind"] for ix in pqindex.list_indexes(p)} == {"distinct", "hll"}
    # Running again skips every indexed file and changes nothing.
    sizes = {p: p.stat().st_size for p in data}
    again = pqindex.spark.build_indexes(spark, out, indexes).collect()
    assert all(r["skipped"] for r in again if r["error"] is None)
    assert {p: p.stat().st_size for p in data} == sizes
    (out / "g=1" / "broken.parquet").unlink()
    assert _rows(spark.read.parquet(str(out)).where("g = 2")) == before
    est = pqindex.approx_distinct(str(out), "k")
    assert est["files_read"] == 0
    assert abs(est["estimate"] - 3000) < 3000 * 3 * est["standard_error"]
