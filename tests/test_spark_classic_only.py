"""``pqindex[spark]`` without the Spark Connect extras: a classic session works although
``pyspark.sql.connect`` cannot be imported (it needs grpcio), because pqindex recognises
Connect objects only among modules already loaded and never imports them.

The child process blocks ``grpc`` (``None`` in ``sys.modules``), which makes every
``pyspark.sql.connect`` module fail to import as it does on an install without grpcio
(``PySparkImportError``). In a virtual environment that truly lacks grpcio the hook changes
nothing and the test runs the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SCRIPT = r"""
import json, sys

# None in sys.modules: "import grpc" raises ModuleNotFoundError and importlib's find_spec
# finds nothing, as without grpcio.
sys.modules["grpc"] = None
sys.modules["grpc_status"] = None
pqindex_parent, data, out = sys.argv[1:4]
sys.path.insert(0, pqindex_parent)

try:
    import pyspark.sql.connect.session  # noqa: F401
    raise SystemExit("pyspark.sql.connect imported although grpc is blocked")
except ImportError:
    pass
# The failed import leaves some connect modules half-loaded, as on a classic-only install.
before = {m for m in sys.modules if m.startswith("pyspark.sql.connect.")}

from pyspark.sql import SparkSession, functions as F
import pqindex.spark

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
result = {}
try:
    base = spark.read.parquet(data)
    for label, where in (
        ("column", (F.col("k") >= 10) & (F.col("k") < 20) & F.col("s").startswith("s-")),
        ("expr", F.expr("k IN (3, 999) OR s = 's-4'")),
        ("text", "k BETWEEN 5 AND 9"),
    ):
        for driver_read_bytes in (1 << 30, 0):
            scan = pqindex.spark.plan(spark, data, where, driver_read_bytes=driver_read_bytes)
            got = sorted(r.k for r in scan.to_df().collect())
            want = sorted(r.k for r in base.where(where).collect())
            result[f"{label}/{driver_read_bytes}"] = [got == want, len(got), scan.read_by]
    pqindex.spark.register(spark)
    df = spark.read.format("pqindex").option("where", "k < 100").load(data)
    result["data source"] = [df.where(F.col("k") > 90).count() == 9, 9, "source"]
    pqindex.spark.write(base.where("k < 50"), out)
    result["write"] = [spark.read.parquet(out).count() == 50, 50, "write"]
finally:
    spark.stop()
loaded = {m for m in sys.modules if m.startswith("pyspark.sql.connect.")}
result["connect modules"] = sorted(loaded - before)
print("RESULT " + json.dumps(result))
"""


def test_classic_session_without_connect_extras(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    import pqindex
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "t.parquet"
    n = 2000
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": pa.array([f"s-{i % 9}" for i in range(n)]),
        }
    )
    pq.write_table(table, data, row_group_size=200, write_page_index=True)
    pqindex_parent = str(Path(pqindex.__file__).parent.parent)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "PYTHONPATH")
    }
    env["PYSPARK_PYTHON"] = sys.executable
    # A script file, not ``-c``: PySpark takes a main module without a file for doctests.
    script = tmp_path / "classic_only.py"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), pqindex_parent, str(data), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, result.stdout[-3000:] + result.stderr[-5000:]
    outcome = json.loads(lines[0].removeprefix("RESULT "))
    assert outcome.pop("connect modules") == []
    assert len(outcome) == 8, outcome
    for label, (same, count, _) in outcome.items():
        assert same and count > 0, (label, outcome)
