"""What kind of Spark session pqindex was handed, and what it can tell about its cluster.

A Spark Connect session (``SparkSession.builder.remote(...)``) has no JVM gateway,
``sparkContext``, RDDs or accumulators; a classic one has all of them. Everything in
``pqindex.spark`` that needs the classic side asks ``is_connect`` first.

Connect objects are recognised without importing ``pyspark.sql.connect``: on an install
without the connect extras (``pqindex[spark]``, no grpcio) that import raises, and a
Connect session, DataFrame or Column can only exist once its module was imported.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any


def _connect_class(module: str, name: str) -> Any:
    """``pyspark.sql.connect.<module>.<name>`` if that module is loaded, else None (a leaf
    module: a failed import of the connect extras leaves ``pyspark.sql.connect`` itself
    half-loaded)."""
    loaded = sys.modules.get(f"pyspark.sql.connect.{module}")
    return getattr(loaded, name, None) if loaded is not None else None


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session."""
    cls = _connect_class("session", "SparkSession")
    return cls is not None and isinstance(spark, cls)


def is_connect_column(value: Any) -> bool:
    """Whether ``value`` is a Spark Connect ``Column``."""
    cls = _connect_class("column", "Column")
    return cls is not None and isinstance(value, cls)


def default_parallelism(spark: Any) -> int:
    """How many tasks the cluster runs at once: ``sparkContext.defaultParallelism`` on a
    classic session; on Connect, ``spark.default.parallelism`` when set, else
    ``spark.sql.shuffle.partitions`` (which Spark itself uses for shuffles)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    for key in ("spark.default.parallelism", "spark.sql.shuffle.partitions"):
        value = spark.conf.get(key, None)
        if value:
            try:
                return max(1, int(value))
            except ValueError:
                continue
    return 2


def functions(spark: Any) -> Any:
    """``pyspark.sql.functions`` for the kind of ``spark`` (the shared module picks one by
    an environment variable, which is wrong for the other kind in a process holding both)."""
    if is_connect(spark):
        from pyspark.sql.connect import functions as connect_functions

        return connect_functions
    from pyspark.sql import functions as classic_functions

    return classic_functions


def empty_frame(spark: Any, schema: Any) -> Any:
    """An empty DataFrame of ``schema``: the base conditions are analysed against, and the
    result of a read that matches nothing. On a classic session it is a local relation made
    in the JVM (``createDataFrame([], schema)`` there parallelises an empty RDD, several
    times the cost of the analyses it serves), kept per session and schema, since a
    DataFrame never changes and each costs several JVM calls; on Connect the client builds
    one anyway."""
    if is_connect(spark):
        return spark.createDataFrame([], schema)
    from pyspark.sql.classic.dataframe import DataFrame

    key = schema.json()
    kept = _EMPTY_FRAMES.get(spark)
    if kept is None:
        kept = _EMPTY_FRAMES.setdefault(spark, {})
    df = kept.get(key)
    if df is None:
        session = spark._jsparkSession
        rows = spark._jvm.java.util.ArrayList()
        jdf = session.createDataFrame(rows, session.parseDataType(key))
        df = DataFrame(jdf, spark)
        df._schema = schema
        if len(kept) >= _EMPTY_FRAMES_KEPT:
            kept.clear()
        kept[key] = df
    return df


#: Empty classic DataFrames by session (dropped with it) and schema (JSON).
_EMPTY_FRAMES: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
#: Schemas kept per session at most.
_EMPTY_FRAMES_KEPT = 64
