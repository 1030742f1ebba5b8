"""pqindex in PySpark jobs: reads that fetch only the pages that can match, planned on the
driver and read in the executors with ``mapInArrow``, and writes by the Rust writer inside
the tasks.

Needs ``pip install pqindex[spark]`` (PySpark 4). ``import pqindex`` alone never imports
pyspark.
"""

from pqindex.spark._read import DRIVER_READ_BYTES, SparkScan, plan, read
from pqindex.spark._write import write

__all__ = ["DRIVER_READ_BYTES", "SparkScan", "plan", "read", "write"]
