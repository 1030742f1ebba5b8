"""Fault injection for adding indexes: the process is killed at arbitrary points while it
rewrites a file, and the path must always hold either the old file or the new one, both
readable by pyarrow. Temporary files left by a killed process are hidden (Spark and pqindex
skip them) and never mistaken for data."""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.parquet as pq

_ADD = """
import sys, pqindex
indexes = [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", granularity="page")]
pqindex.add_indexes(sys.argv[1], indexes)
print("done", flush=True)
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_killed_rewrites_leave_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    n = 400_000
    rng = np.random.default_rng(7)
    table = pa.table(
        {
            "k": np.arange(n),
            "u": rng.permutation(n),
            "s": pa.array([f"value-{i % 50_000}" for i in range(n)]),
        }
    )
    original = tmp_path / "original.parquet"
    pq.write_table(table, original, row_group_size=100_000, data_page_size=64 * 1024)
    # The file every completed run produces (the rewrite is deterministic).
    finished = tmp_path / "finished.parquet"
    shutil.copyfile(original, finished)
    subprocess.run([sys.executable, "-c", _ADD, str(finished)], check=True)
    old, new = _digest(original), _digest(finished)
    assert old != new

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _ADD, str(tmp_path / "finished.parquet")], check=True)
    full = time.perf_counter() - start
    outcomes = {"old": 0, "new": 0}
    rng = np.random.default_rng(11)
    reach = 1.5  # kill up to this many times a full run's duration after the start
    for trial in range(40):
        if trial >= 16 and outcomes["old"] and outcomes["new"]:
            break
        if trial and trial % 8 == 0 and not outcomes["new"]:
            reach *= 2  # a busy machine runs slower than the timed run did
        target = tmp_path / f"t{trial}" / "data.parquet"
        target.parent.mkdir()
        shutil.copyfile(original, target)
        proc = subprocess.Popen(
            [sys.executable, "-c", _ADD, str(target)], stdout=subprocess.PIPE, text=True
        )
        # Kill anywhere from interpreter start to a while after the rewrite ends.
        time.sleep(float(rng.uniform(0.0, full * reach)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        digest = _digest(target)
        assert digest in (old, new), f"trial {trial}: the path holds a third file"
        outcomes["old" if digest == old else "new"] += 1
        assert pq.read_table(target).equals(table)
        # Whatever a killed run left beside the file is hidden from every reader.
        leftovers = [p.name for p in target.parent.iterdir() if p.name != "data.parquet"]
        assert all(name.startswith(".") for name in leftovers), leftovers
        assert pqindex.scan(target.parent, where="u = 5").to_arrow().num_rows == 1
    # The kills landed on both sides of the rename at least once.
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes


_ADD_IN_PLACE = """
import sys, pqindex
indexes = [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", granularity="page")]
pqindex.add_indexes(sys.argv[1], indexes, in_place=True)
print("done", flush=True)
"""


def test_killed_in_place_changes_recover_to_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    """``in_place=True`` rewrites only the tail under a journal: killed anywhere, the file
    is the old one, or ``pqindex.recover`` makes it the new one; pyarrow reads either."""
    n = 300_000
    rng = np.random.default_rng(5)
    table = pa.table({"u": rng.permutation(n), "s": [f"v{i % 40_000}" for i in range(n)]})
    original = tmp_path / "original.parquet"
    pq.write_table(table, original, row_group_size=100_000, data_page_size=64 * 1024)
    finished = tmp_path / "finished.parquet"
    shutil.copyfile(original, finished)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _ADD_IN_PLACE, str(finished)], check=True)
    full = time.perf_counter() - start
    old, new = _digest(original), _digest(finished)
    outcomes = {"old": 0, "new": 0, "recovered": 0}
    rng = np.random.default_rng(13)
    reach = 1.5
    for trial in range(40):
        if trial >= 16 and outcomes["old"] and outcomes["new"]:
            break
        if trial and trial % 8 == 0 and not outcomes["new"]:
            reach *= 2
        target = tmp_path / f"p{trial}" / "data.parquet"
        target.parent.mkdir()
        shutil.copyfile(original, target)
        proc = subprocess.Popen([sys.executable, "-c", _ADD_IN_PLACE, str(target)])
        time.sleep(float(rng.uniform(0.0, full * reach)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if pqindex.recover(target) == "completed":
            outcomes["recovered"] += 1
        digest = _digest(target)
        assert digest in (old, new), f"trial {trial}: the path holds a third file"
        outcomes["old" if digest == old else "new"] += 1
        assert pq.read_table(target).equals(table)
        assert [p.name for p in target.parent.iterdir()] == ["data.parquet"]
        assert pqindex.scan(target, where="u = 5").to_arrow().num_rows == 1
        assert pqindex.recover(target) == "nothing"
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
