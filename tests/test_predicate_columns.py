"""Scans whose output includes the columns the predicate reads.

The predicate columns are decoded once: their surviving rows go to the output, and the
other columns are read for those rows only. These cases check that the two meet row for
row: scattered matches over many pages and batches, NULLs, page pruning before the
predicate, a predicate on a leaf of a projected struct, and every column projected or
only some. With more threads than row groups, the spare threads read groups of the other
columns side by side; each case runs that way too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

N = 30_000


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    k = np.arange(N, dtype=np.int64)
    r = rng.integers(0, 100, N)
    table = pa.table(
        {
            "k": k,
            "r": pa.array(r, mask=r % 17 == 0),
            "s": pa.array([f"s{x % 53}" for x in r], mask=r % 11 == 0),
            "t": pa.StructArray.from_arrays(
                [pa.array(r % 7, pa.int32()), pa.array(k * 2)], names=["a", "b"]
            ),
            "f": rng.random(N),
        }
    )
    out = tmp_path_factory.mktemp("predicate-columns") / "t.parquet"
    pq.write_table(
        table,
        out,
        row_group_size=12_000,
        data_page_size=2_000,
        write_batch_size=500,
        write_page_index=True,
    )
    return out


CASES = [
    # (where, the rows it selects, columns)
    ("r < 10", lambda t: pc.less(t["r"], 10), None),
    ("r < 10", lambda t: pc.less(t["r"], 10), ["f", "r"]),
    ("r < 10", lambda t: pc.less(t["r"], 10), ["r"]),
    ("r < 10", lambda t: pc.less(t["r"], 10), ["k", "f"]),
    ("r < 10", lambda t: pc.less(t["r"], 10), ["t", "s", "k", "f"]),
    (
        "s = 's3' OR r > 95",
        lambda t: pc.or_kleene(pc.equal(t["s"], "s3"), pc.greater(t["r"], 95)),
        ["s", "k"],
    ),
    ("r IS NULL", lambda t: pc.is_null(t["r"]), ["r", "s"]),
    (
        "k BETWEEN 5000 AND 20000 AND r IN (0, 3, 6, 9)",
        lambda t: pc.and_kleene(
            pc.and_kleene(pc.greater_equal(t["k"], 5000), pc.less_equal(t["k"], 20000)),
            pc.is_in(t["r"], pa.array([0, 3, 6, 9])),
        ),
        ["k", "r", "f"],
    ),
    (
        "k >= 29990 AND r >= 0",
        lambda t: pc.and_kleene(pc.greater_equal(t["k"], 29990), pc.greater_equal(t["r"], 0)),
        None,
    ),
    ("t.a = 3", lambda t: pc.equal(pc.struct_field(t["t"], "a"), 3), ["t", "k"]),
    ("r = 1000", lambda t: pc.equal(t["r"], 1000), None),
]


@pytest.mark.parametrize("threads", [1, 8])
@pytest.mark.parametrize("batch_size", [777, 65_536])
@pytest.mark.parametrize(("where", "mask", "columns"), CASES)
def test_rows_of_predicate_columns_meet_the_others(
    path: Path,
    where: str,
    mask: Callable[[pa.Table], pa.ChunkedArray],
    columns: list[str] | None,
    batch_size: int,
    threads: int,
) -> None:
    table = pq.read_table(path)
    expected_rows = table.filter(mask(table))
    expected = expected_rows.select(columns) if columns else expected_rows
    scan = pqindex.scan(path, where, columns=columns, batch_size=batch_size, threads=threads)
    got = scan.to_arrow()
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()


def test_spare_threads_read_the_other_columns_of_a_small_selection(path: Path) -> None:
    # Row groups of 12,000 rows: one or three units, and eight threads to share out.
    one_unit = pqindex.scan(path, "k >= 29990 AND r >= 0", threads=8)
    assert one_unit.to_arrow().num_rows > 0
    assert one_unit.metrics()["units"] == 1
    # k and r come out of the predicate pass; s, t and f take a thread each.
    assert one_unit.metrics()["column_groups_read"] == 3
    three_units = pqindex.scan(path, "r < 10", columns=["k", "f"], threads=8)
    three_units.to_arrow()
    assert three_units.metrics()["column_groups_read"] == 3 * 2
    # One thread per unit, or one column besides the predicate's: one group each.
    single = pqindex.scan(path, "r < 10", threads=1)
    assert single.to_arrow().num_rows > 0
    assert single.metrics()["column_groups_read"] == 0
    lone = pqindex.scan(path, "r < 10", columns=["r", "f"], threads=8)
    lone.to_arrow()
    assert lone.metrics()["column_groups_read"] == 0
