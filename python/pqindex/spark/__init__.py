"""pqindex in PySpark jobs: reads that fetch only the pages that can match, planned on the
driver and read in the executors with ``mapInArrow``, and writes by the Rust writer inside
the tasks. Every function takes a classic ``SparkSession`` or a Spark Connect one
(``SparkSession.builder.remote(...)``); see docs/spark.md.

Needs ``pip install pqindex[spark]`` (PySpark 4.1 or later; ``pqindex[spark-connect]`` for a
Spark Connect client). ``import pqindex`` alone never imports pyspark.
"""

from typing import Any

from pqindex.spark._catalog import build_catalog
from pqindex.spark._indexes import build_indexes
from pqindex.spark._read import DRIVER_READ_BYTES, DRIVER_RESULT_BYTES, SparkScan, plan, read
from pqindex.spark._write import write


def register(spark: Any, *, filter_pushdown: bool | None = None) -> None:
    """Make ``spark.read.format("pqindex")`` available on this session, classic or Spark
    Connect (the Python Data Source API). Spark's pushed filters prune only on Spark 5.0
    and later, where each scan is planned for itself; on 4.1 to 4.3 the ``where`` option
    prunes instead (see ``pqindex.spark._datasource``). ``filter_pushdown=True`` forces
    pushdown on there, at the price of wrong rows when a loaded DataFrame is reused."""
    from pqindex.spark._datasource import register as _register

    _register(spark, filter_pushdown=filter_pushdown)


def explain_source(spark: Any, path: str | None = None, **options: Any) -> Any:
    """What ``spark.read.format("pqindex").options(**options).load(path)`` plans, planned
    on the driver: a ``SourcePlan`` with ``explain()``, ``metrics()`` and ``partitions``."""
    from pqindex.spark._source import explain_source as _explain

    return _explain(spark, path, **options)


def table_options(spark: Any, name: str, storage_options: Any = None) -> dict[str, str]:
    """The data source options that read the catalog table ``name``:
    ``spark.read.format("pqindex").options(**table_options(spark, "db.events")).load()``."""
    from pqindex.spark._source import table_options as _table_options

    return _table_options(spark, name, storage_options)


__all__ = [
    "DRIVER_READ_BYTES",
    "DRIVER_RESULT_BYTES",
    "SparkScan",
    "build_catalog",
    "build_indexes",
    "explain_source",
    "plan",
    "read",
    "register",
    "table_options",
    "write",
]
