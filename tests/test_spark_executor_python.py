"""Spark's Python workers running a Python without pqindex: every function fails with one
clear error naming that Python and saying how to install pqindex there, instead of a bare
``ModuleNotFoundError`` deep in a worker traceback.

The workers' Python is a real virtual environment that has pyspark's own dependencies
(pyarrow, pandas) but not pqindex, and the session runs in a child process whose Spark
(classic, then a Spark Connect server) is told to use it, as a cluster would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

# Run in a child process: argv = mode, pqindex's parent directory, the workers' Python, data.
SCRIPT = r"""
import json, socket, sys
pqindex_parent, data = sys.argv[1:3]
sys.path.insert(0, pqindex_parent)
from pyspark.sql import SparkSession
from pyspark.sql.connect.session import SparkSession as ConnectSession

import pqindex.spark


def failures(spark):
    calls = {
        "read": lambda: pqindex.spark.read(spark, data, "k < 10", driver_read_bytes=0).collect(),
        "write": lambda: pqindex.spark.write(spark.range(3), data + "-out"),
        "data source": lambda: (
            pqindex.spark.register(spark),
            spark.read.format("pqindex").load(data).collect(),
        ),
    }
    errors = {}
    for name, call in calls.items():
        try:
            call()
            errors[name] = None
        except Exception as error:
            errors[name] = str(error)
    return errors


# PYSPARK_PYTHON (set by the test) is the workers' Python, as spark-submit sets it from
# spark.pyspark.python.
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
classic = builder.getOrCreate()
result = {"classic": failures(classic)}
classic.stop()
# Then a Spark Connect server on a free port, and a client of it.
with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
server = builder.config("spark.connect.grpc.binding.port", str(port)).getOrCreate()
connect = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
result["connect"] = failures(connect)
connect.stop()
server.stop()
print("RESULT " + json.dumps(result))
"""


@pytest.fixture(scope="module")
def worker_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A virtual environment with this one's packages except pqindex."""
    root = tmp_path_factory.mktemp("workers")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    # This environment's packages, pqindex left out, on the new one's path.
    packages = root / "packages"
    packages.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith("pqindex") and entry.suffix != ".pth":
            (packages / entry.name).symlink_to(entry)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "shared.pth").write_text(str(packages) + "\n")
    check = subprocess.run(
        [str(python), "-c", "import pyarrow, pyspark\nimport pqindex"],
        capture_output=True,
        text=True,
        env=_env_without_pythonpath(),
    )
    assert "No module named 'pqindex'" in check.stderr, check.stderr
    return str(python)


def _env_without_pythonpath() -> dict[str, str]:
    """This environment without what points Python or PySpark elsewhere."""
    dropped = {"PYTHONPATH", "PYSPARK_PYTHON", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"}
    return {k: v for k, v in os.environ.items() if k not in dropped and "LOCAL_REMOTE" not in k}


def test_workers_without_pqindex_fail_clearly(worker_python: str, tmp_path: Path) -> None:
    """On a classic session and on Spark Connect: reads, writes and the data source."""
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    import pqindex
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"k": pa.array(range(100), pa.int64())}), data)
    pqindex_parent = str(Path(pqindex.__file__).parent.parent)
    # No PYTHONPATH, so that the workers see only their own environment.
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, pqindex_parent, str(data)],
        capture_output=True,
        text=True,
        env={**_env_without_pythonpath(), "PYSPARK_PYTHON": worker_python},
        timeout=600,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, result.stdout[-3000:] + result.stderr[-3000:]
    errors = json.loads(lines[0].removeprefix("RESULT "))
    assert set(errors) == {"classic", "connect"}
    expected = "cannot be imported by the Python that runs Spark's Python workers"
    for mode, calls in errors.items():
        for name, message in calls.items():
            assert message is not None, f"{name} ran without pqindex on the workers ({mode})"
            where = (mode, name, message[:3000])
            assert expected in message, where
            assert worker_python in message and "spark.archives" in message, where
            assert f"pqindex {pqindex.__version__} cannot" in message, where
