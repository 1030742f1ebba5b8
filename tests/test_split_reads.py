"""A row group cut in pieces for two threads reads each byte once.

The last unit of a scan is cut so that both threads finish together. A page that
straddles the cut is read by both pieces; for the predicate's column, read for every
selected row, that is a page read twice. The cut goes to one of its page starts.
"""

from __future__ import annotations

import random
from pathlib import Path

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

ROWS = 400_000  # two pieces of at least 131,072 rows


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)
    keys = list(range(ROWS))
    rng.shuffle(keys)
    table = pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            # Values of varying length: this column's pages start at other rows than k's.
            "payload": [f"{'x' * rng.randrange(1, 60)}{i}" for i in range(ROWS)],
            "n": pa.array([rng.randrange(1_000_000) for _ in range(ROWS)], pa.int32()),
        }
    )
    path = tmp_path_factory.mktemp("split") / "one_row_group.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=ROWS,
        data_page_size=16 * 1024,
        use_dictionary=False,
        write_page_index=True,
    )
    return path


def _read(path: Path, where: str, columns: list[str] | None, threads: int) -> tuple[list, int]:
    """The rows and the bytes read, with the footer and page index cached already."""
    pqindex.scan(str(path), where=where, columns=columns, threads=threads).to_arrow()
    scan = pqindex.scan(str(path), where=where, columns=columns, threads=threads)
    table = scan.to_arrow()
    return table.to_pylist(), scan.metrics()["bytes_read"]


@pytest.mark.parametrize("columns", [None, ["payload"], ["payload", "n"]])
@pytest.mark.parametrize("key", [0, 123_456, 399_999])
def test_two_threads_read_the_bytes_one_thread_reads(
    shuffled: Path, columns: list[str] | None, key: int
) -> None:
    where = f"k = {key}"
    one, one_bytes = _read(shuffled, where, columns, threads=1)
    two, two_bytes = _read(shuffled, where, columns, threads=2)
    assert len(one) == 1
    assert two == one
    assert two_bytes == one_bytes


def test_a_condition_on_a_column_not_returned_reads_its_pages_once(shuffled: Path) -> None:
    where = "n < 20000"  # about 2% of the rows, in most pages of every column
    one, one_bytes = _read(shuffled, where, ["payload"], threads=1)
    two, two_bytes = _read(shuffled, where, ["payload"], threads=2)
    assert sorted(r["payload"] for r in two) == sorted(r["payload"] for r in one)
    assert len(one) > 1000
    assert two_bytes == one_bytes


@pytest.mark.parametrize("columns", [None, ["payload", "n"]])
def test_scattered_matches_in_each_piece_are_the_rows_that_match(
    shuffled: Path, columns: list[str] | None
) -> None:
    # One match in about forty rows: runs of rows too short to read one by one within a
    # piece, though the rows a piece skips before and after it make them look long.
    where = "n < 25000"
    table = pq.read_table(shuffled)
    expected = table.filter(pc.less(table["n"], 25000))
    if columns is not None:
        expected = expected.select(columns)
    one, _ = _read(shuffled, where, columns, threads=1)
    two, _ = _read(shuffled, where, columns, threads=2)
    assert len(expected) > 5000
    assert two == one == expected.to_pylist()
