"""pqindex in PySpark jobs: reads that fetch only the pages that can match, planned on the
driver and read in the executors with ``mapInArrow``, and writes by the Rust writer inside
the tasks. Every function takes a classic ``SparkSession`` or a Spark Connect one
(``SparkSession.builder.remote(...)``); see docs/spark.md.

Needs ``pip install pqindex[spark]`` (PySpark 4.1 or later; ``pqindex[spark-connect]`` for a
Spark Connect client). ``import pqindex`` alone never imports pyspark.
"""

from pqindex.spark._catalog import build_catalog
from pqindex.spark._indexes import build_indexes
from pqindex.spark._read import DRIVER_READ_BYTES, DRIVER_RESULT_BYTES, SparkScan, plan, read
from pqindex.spark._write import write


def register(spark: object, *, filter_pushdown: bool = False) -> None:
    """Make ``spark.read.format("pqindex")`` available on this session, classic or Spark
    Connect (the Python Data Source API); see ``pqindex.spark._datasource.register``."""
    from pqindex.spark._datasource import register as _register

    _register(spark, filter_pushdown=filter_pushdown)


__all__ = [
    "DRIVER_READ_BYTES",
    "DRIVER_RESULT_BYTES",
    "SparkScan",
    "build_catalog",
    "build_indexes",
    "plan",
    "read",
    "register",
    "write",
]
