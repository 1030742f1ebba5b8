"""Spark SQL over the data source: the example docs/spark.md shows ("Spark SQL") runs as
written on classic and Spark Connect sessions, and its queries return Spark's rows, the
view's ``where`` option applied as Spark's Parquet reader would apply the same condition."""

from __future__ import annotations

import datetime as dt
import re
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

DOCS = Path(__file__).resolve().parent.parent / "docs" / "spark.md"


def docs_example() -> str:
    """The Python block of docs/spark.md's "Spark SQL" section."""
    text = DOCS.read_text()
    section = text[text.index("### Spark SQL") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/spark.md: no example under Spark SQL"
    return found.group(1)


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("sql") / "events"
    root.mkdir()
    n = 20_000
    for part in range(4):
        ids = range(part * n // 4, (part + 1) * n // 4)
        table = pa.table(
            {
                "user_id": pa.array([i % 500 for i in ids], pa.int64()),
                "kind": pa.array([["click", "view", "buy"][i % 3] for i in ids]),
                "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i // 200) for i in ids]),
                "payload": pa.array([f"p{i}" for i in ids]),
            }
        )
        pq.write_table(table, root / f"part-{part}.parquet", row_group_size=1000)
    return str(root)


def rows(df: Any) -> list[str]:
    return sorted(map(str, df.collect()))


def test_the_docs_sql_example(spark: Any, events: str) -> None:
    scope: dict[str, Any] = {"spark": spark, "events_path": events}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-process note on PySpark 4
        exec(compile(docs_example(), str(DOCS), "exec"), scope)
    reference = spark.read.parquet(events).where("day >= DATE '2024-03-01'")
    reference.select("user_id", "kind", "day").createOrReplaceTempView("events_reference")
    try:
        query = (
            "SELECT user_id, count(*) AS clicks FROM {} "
            "WHERE kind = 'click' AND user_id < 100 GROUP BY user_id"
        )
        assert rows(scope["clicks"]) == rows(spark.sql(query.format("events_reference")))
        assert scope["clicks"].count() > 0
        # The view is one relation for the session: later queries on it are still Spark's.
        for query in (
            "SELECT * FROM {} WHERE user_id = 7",
            "SELECT count(*) FROM {}",
            "SELECT kind, min(day), max(day) FROM {} WHERE user_id = 7 OR user_id = 9 "
            "GROUP BY kind",
        ):
            assert rows(spark.sql(query.format("events"))) == rows(
                spark.sql(query.format("events_reference"))
            ), query
        assert spark.table("events").columns == ["user_id", "kind", "day"]
    finally:
        spark.catalog.dropTempView("events")
        spark.catalog.dropTempView("events_reference")
