"""read_metadata and the footer cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pqindex
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

N = 2000


def _table() -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(N), pa.int64()),
            "s": [f"s{i % 37:02d}" for i in range(N)],
            "li": pa.array([[i] * (i % 3) for i in range(N)], pa.list_(pa.int32())),
        }
    )


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    pqindex.clear_metadata_cache()
    capacity = pqindex.metadata_cache_info()["capacity"]
    yield
    pqindex.set_metadata_cache_capacity(capacity)
    pqindex.clear_metadata_cache()


@pytest.fixture
def paged(data_dir: Path) -> Path:
    path = data_dir / "paged.parquet"
    table = _table().replace_schema_metadata({"owner": "tests", "purpose": "metadata"})
    pq.write_table(
        table,
        path,
        write_page_index=True,
        data_page_size=256,
        write_batch_size=64,
        row_group_size=500,
    )
    return path


def test_file_level_fields(paged: Path) -> None:
    md = pqindex.read_metadata(paged)
    assert md.num_rows == N
    assert md.num_row_groups == 4
    assert md.created_by is not None and "parquet-cpp-arrow" in md.created_by
    assert md.path.endswith("paged.parquet")
    kv = md.key_value_metadata()
    assert isinstance(kv, dict)
    assert kv["owner"] == "tests"
    assert kv["purpose"] == "metadata"


def test_arrow_schema(paged: Path) -> None:
    schema = pa.schema(pqindex.read_metadata(paged))
    expected = pq.read_schema(paged)
    assert schema.names == ["k", "s", "li"]
    for name in schema.names:
        assert schema.field(name).type == expected.field(name).type


def test_row_groups_table(paged: Path) -> None:
    rgs = pqindex.read_metadata(paged).row_groups()
    assert isinstance(rgs, pa.Table)
    assert rgs["row_group"].to_pylist() == [0, 1, 2, 3]
    assert rgs["num_rows"].to_pylist() == [500] * 4
    assert pc.sum(rgs["num_rows"]).as_py() == N
    assert all(v > 0 for v in rgs["compressed_size"].to_pylist())
    offsets = rgs["file_offset"].to_pylist()
    assert offsets == sorted(offsets)


def test_columns_table(paged: Path) -> None:
    cols = pqindex.read_metadata(paged).columns()
    assert isinstance(cols, pa.Table)
    assert cols.num_rows == 4 * 3
    rows = cols.to_pylist()
    k = [r for r in rows if r["column"] == "k"]
    assert [r["row_group"] for r in k] == [0, 1, 2, 3]
    assert [r["physical_type"] for r in k] == ["INT64"] * 4
    assert [r["num_values"] for r in k] == [500] * 4
    assert [r["null_count"] for r in k] == [0] * 4
    assert [int(r["min"]) for r in k] == [0, 500, 1000, 1500]
    assert [int(r["max"]) for r in k] == [499, 999, 1499, 1999]
    assert all(r["has_page_index"] for r in rows)
    assert not any(r["has_bloom_filter"] for r in rows)
    s = next(r for r in rows if r["column"] == "s")
    assert s["physical_type"] == "BYTE_ARRAY"
    assert s["min"] == "s00" and s["max"] == "s36"


def test_pages_row_counts(paged: Path) -> None:
    pages = pqindex.read_metadata(paged).pages()
    assert isinstance(pages, pa.Table)
    assert pages.num_rows > 4 * 3  # several pages per chunk
    totals: dict[tuple[int, str], int] = {}
    firsts: dict[tuple[int, str], list[int]] = {}
    for p in pages.to_pylist():
        key = (p["row_group"], p["column"])
        totals[key] = totals.get(key, 0) + p["row_count"]
        firsts.setdefault(key, []).append(p["first_row"])
        assert p["compressed_size"] > 0
    assert len(totals) == 4 * 3
    assert set(totals.values()) == {500}
    for starts in firsts.values():
        assert starts[0] == 0 and starts == sorted(starts)


def test_footer_alone_leaves_the_page_index_unread(paged: Path) -> None:
    footer = pqindex.read_metadata(paged, page_index=False)
    assert footer.num_rows == N
    assert not footer.has_page_index
    assert footer.pages().num_rows == 0
    assert pa.schema(footer).names == ["k", "s", "li"]
    # Asking for the page index afterwards reads it, on top of the cached footer.
    full = pqindex.read_metadata(paged)
    assert full.has_page_index
    assert full.pages().num_rows > 4 * 3
    assert pqindex.metadata_cache_info()["hits"] == 1
    # Once held, a footer-only read is served the page index too, as a hit.
    assert pqindex.read_metadata(paged, page_index=False).has_page_index


def test_has_page_index_false_without_it(data_dir: Path) -> None:
    path = data_dir / "plain.parquet"
    pq.write_table(_table(), path, write_page_index=False, row_group_size=1000)
    md = pqindex.read_metadata(path)
    assert not md.has_page_index
    cols = md.columns()
    assert cols["has_page_index"].to_pylist() == [False] * cols.num_rows


def test_has_bloom_filter_for_written_columns(data_dir: Path) -> None:
    path = data_dir / "bloom.parquet"
    pqindex.write(_table(), path, bloom_filter_columns=["k"], row_group_size=1000)
    rows = pqindex.read_metadata(path).columns().to_pylist()
    for r in rows:
        if r["column"] == "k":
            assert r["has_bloom_filter"] is True
            assert r["bloom_filter_length"] > 0
        else:
            assert r["has_bloom_filter"] is False


# --- cache --------------------------------------------------------------------------------


def test_cache_hits_on_second_scan(paged: Path) -> None:
    pqindex.scan(paged, '"k" < 10').to_arrow()
    first = pqindex.metadata_cache_info()
    assert first["entries"] == 1
    assert first["misses"] >= 1
    scan = pqindex.scan(paged, '"k" < 10')
    scan.to_arrow()
    second = pqindex.metadata_cache_info()
    assert second["hits"] > first["hits"]
    assert second["misses"] == first["misses"]
    assert scan.metrics()["footer_cache_hits"] >= 1
    assert scan.metrics()["footers_read"] == 0


def _same_size_tables() -> tuple[pa.Table, pa.Table]:
    return (
        pa.table({"k": pa.array(range(1000), pa.int64())}),
        pa.table({"k": pa.array(range(1, 1001), pa.int64())}),
    )


_PLAIN = {"compression": "none", "use_dictionary": False}


def test_same_size_same_mtime_replace_not_stale(data_dir: Path) -> None:
    path = data_dir / "y.parquet"
    t1, t2 = _same_size_tables()
    pq.write_table(t1, path, **_PLAIN)
    st = os.stat(path)
    assert pqindex.scan(path).to_arrow()["k"][0].as_py() == 0
    tmp = data_dir / "y.tmp"
    pq.write_table(t2, tmp, **_PLAIN)
    assert os.path.getsize(tmp) == st.st_size
    os.replace(tmp, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert pqindex.scan(path).to_arrow().equals(t2)
    assert pqindex.scan(path, '"k" = 0').to_arrow().num_rows == 0
    assert pqindex.scan(path, '"k" = 1000').to_arrow().num_rows == 1


def test_same_size_same_mtime_in_place_not_stale(data_dir: Path) -> None:
    path = data_dir / "z.parquet"
    t1, t2 = _same_size_tables()
    pq.write_table(t1, path, **_PLAIN)
    st = os.stat(path)
    assert pqindex.scan(path).to_arrow().equals(t1)
    sink = pa.BufferOutputStream()
    pq.write_table(t2, sink, **_PLAIN)
    new = sink.getvalue().to_pybytes()
    assert len(new) == st.st_size
    with open(path, "r+b") as f:  # same inode
        f.write(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert pqindex.scan(path).to_arrow().equals(t2)
    assert pqindex.read_metadata(path).columns()["min"].to_pylist() == ["1"]


def test_capacity_zero_keeps_cache_empty(paged: Path) -> None:
    pqindex.set_metadata_cache_capacity(0)
    info = pqindex.metadata_cache_info()
    assert info["capacity"] == 0 and info["entries"] == 0
    assert pqindex.scan(paged, '"k" < 10').to_arrow().num_rows == 10
    info = pqindex.metadata_cache_info()
    assert info["entries"] == 0 and info["bytes"] == 0


def test_clear_metadata_cache(paged: Path) -> None:
    pqindex.scan(paged).to_arrow()
    assert pqindex.metadata_cache_info()["entries"] == 1
    assert pqindex.metadata_cache_info()["bytes"] > 0
    pqindex.clear_metadata_cache()
    info = pqindex.metadata_cache_info()
    assert info["entries"] == 0 and info["bytes"] == 0
