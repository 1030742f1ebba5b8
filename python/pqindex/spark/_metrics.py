"""Read counters from Spark's executors back to the driver.

Classic sessions use an accumulator: tasks add their counters, the driver reads the sum
after any action. Spark Connect has no accumulators, so there the read function appends one
extra row per group of units, holding its counters in a struct column (``METRICS_COLUMN``)
while every data column is NULL; ``DataFrame.observe`` sums that column as the rows stream
past, and a filter drops the extra rows before anything else sees them. The observation
reports the first action that runs the DataFrame, as Spark's observations do.
"""

from __future__ import annotations

import uuid
from typing import Any

from pqindex import _native

#: Counters executors report: what reading the units cost (named by the core).
EXECUTOR_KEYS: tuple[str, ...] = tuple(_native.READ_METRIC_NAMES)
METRICS_COLUMN = "__pqindex_metrics"


def accumulator(spark: Any) -> Any:
    """A classic session's accumulator of counter dicts."""
    from pyspark.accumulators import AccumulatorParam

    class DictSum(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: dict[str, int]) -> dict[str, int]:
            return {}

        def addInPlace(self, a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            for k, v in b.items():
                a[k] = a.get(k, 0) + v
            return a

    return spark.sparkContext.accumulator({}, DictSum())


def with_metrics_column(schema: Any) -> Any:
    """``schema`` (a Spark StructType) with its top-level columns nullable (the counter rows
    hold NULL there) and the counters' struct column appended."""
    from pyspark.sql import types as T

    fields = [T.StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields]
    counters = T.StructType([T.StructField(k, T.LongType(), True) for k in EXECUTOR_KEYS])
    return T.StructType([*fields, T.StructField(METRICS_COLUMN, counters, True)])


def counter_row(target: Any, counters: dict[str, int]) -> Any:
    """One Arrow row of ``target`` (with the counters' column last): NULL data, the
    counters."""
    import pyarrow as pa

    columns = [pa.nulls(1, f.type) for f in list(target)[:-1]]
    struct_type = target.field(len(target) - 1).type
    columns.append(pa.array([{k: int(counters.get(k, 0)) for k in EXECUTOR_KEYS}], struct_type))
    return pa.RecordBatch.from_arrays(columns, schema=target)


def with_null_counters(batch: Any, target: Any) -> Any:
    """A data batch with the counters' column (NULL) appended."""
    import pyarrow as pa

    struct_type = target.field(len(target) - 1).type
    return pa.RecordBatch.from_arrays(
        [*batch.columns, pa.nulls(batch.num_rows, struct_type)], schema=target
    )


class Observed:
    """The Spark Connect side: observes the counters of a DataFrame built by the read
    function, and gives the DataFrame without the counter rows."""

    def __init__(self) -> None:
        from pyspark.sql.connect.observation import Observation

        self.observation = Observation(f"pqindex-{uuid.uuid4().hex}")

    def attach(self, df: Any) -> Any:
        from pyspark.sql.connect import functions as F

        sums = [F.sum(F.col(METRICS_COLUMN).getField(k)).alias(k) for k in EXECUTOR_KEYS]
        observed = df.observe(self.observation, *sums)
        return observed.where(F.col(METRICS_COLUMN).isNull()).drop(METRICS_COLUMN)

    def value(self) -> dict[str, int]:
        """The counters of the first action that ran (empty before any)."""
        result = self.observation.get
        return {k: int(v) for k, v in result.items() if v is not None}
