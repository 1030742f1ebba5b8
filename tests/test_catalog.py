"""The dataset catalog: ``scan`` of a directory with a catalog returns DuckDB's rows, rules
out files by the catalog's bloom filters without reading them, and reads no footer of a
kept file; files added, rewritten or deleted after the catalog was built are still planned
correctly (and ``explain`` says so); ``refresh`` brings it up to date incrementally; the
pointer swings atomically; a damaged catalog is a typed error; DuckDB can read it.
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

FILES = 60
ROWS = 500


def part(i: int, marker: str = "") -> pa.Table:
    base = i * ROWS
    return pa.table(
        {
            "k": pa.array(range(base, base + ROWS), pa.int64()),
            "u": pa.array([(j * 7919 + i * 13) % 1_000_003 for j in range(ROWS)], pa.int64()),
            "s": [f"{marker}s{i}-{j % 40}" if j % 11 else None for j in range(ROWS)],
        }
    )


def write_part(root: Path, i: int, marker: str = "", name: str | None = None) -> Path:
    path = root / (name or f"part-{i:04d}.parquet")
    pq.write_table(part(i, marker), path, row_group_size=200, write_page_index=True)
    return path


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(FILES):
        write_part(root, i)
    return root


def duckdb_count(con: Any, root: Path, where: str) -> int:
    ((n,),) = con.sql(
        f"SELECT count(*) FROM read_parquet('{root}/**/*.parquet', hive_partitioning = false) "
        f"WHERE {where}"
    ).fetchall()
    return int(n)


def scan(root: Path, where: str, **kw: Any) -> tuple[pa.Table, dict[str, int], str]:
    pqindex.clear_metadata_cache()
    s = pqindex.scan(root, where=where, **kw)
    table = s.to_arrow()
    return table, s.metrics(), s.explain()


WHERES = (
    "s = 's17-3'",
    "s IN ('s3-1', 's44-7', 'nope')",
    "u = 7919",
    "k = 12345",
    "k BETWEEN 1000 AND 1600",
    "s = 's17-3' OR k = 7",
    "s IS NULL AND k < 600",
    "s = 'absent'",
)


def test_scans_with_a_catalog_equal_duckdb_and_read_no_footer(
    dataset: Path, duckdb_con: Any
) -> None:
    catalog = pqindex.Catalog.build(dataset, ["k", "u", "s"], bloom=["u", "s"])
    assert catalog.version == 1 and catalog.num_files == FILES
    assert (dataset / "_pqindex" / "CURRENT").read_text() == "catalog-00000001.parq"
    for where in WHERES:
        table, m, explain = scan(dataset, where)
        assert table.num_rows == duckdb_count(duckdb_con, dataset, where), where
        assert m["footers_read"] == 0, where
        assert m["page_indexes_read"] == 0, where
        assert m["files_not_in_catalog"] == 0, where
        assert "catalog:" in explain
    # A needle in one file: the others are ruled out by the catalog's blooms (a few false
    # positives at fpp 0.01), without a byte read from them.
    _, m, _ = scan(dataset, "s = 's17-3'")
    assert m["files_pruned_by_catalog"] >= FILES - 4
    # A key range: the others by the catalog's bounds.
    _, m, _ = scan(dataset, "k BETWEEN 1000 AND 1600")
    assert m["files_pruned_by_catalog"] == FILES - 2
    # A bloom asked for alone adds to the default columns; it does not replace them.
    with_bloom = pqindex.Catalog.build(dataset, bloom=["s"])
    assert with_bloom.columns == ["k", "u", "s"]
    assert with_bloom.bloom_columns == ["s"]
    _, plain, _ = scan(dataset, "s = 's17-3'", catalog=False)
    assert plain["files_pruned_by_catalog"] == 0 and plain["footers_read"] == FILES
    assert m["bytes_read"] < plain["bytes_read"] / 10


def test_a_catalog_built_without_columns_summarises_every_column(
    dataset: Path, duckdb_con: Any
) -> None:
    """With no columns named, every column statistics can bound is summarised (bounds and
    null counts, no blooms), so the default catalog rules files out by any of them."""
    catalog = pqindex.Catalog.build(dataset)
    assert catalog.columns == pqindex.Catalog.default_columns(dataset) == ["k", "u", "s"]
    assert catalog.bloom_columns == []
    for where in WHERES:
        table, m, _ = scan(dataset, where)
        assert table.num_rows == duckdb_count(duckdb_con, dataset, where), where
        assert m["footers_read"] == 0, where
    _, m, _ = scan(dataset, "k BETWEEN 1000 AND 1600")
    assert m["files_pruned_by_catalog"] == FILES - 2
    # A bloom asked for alone adds to the default columns; it does not replace them.
    with_bloom = pqindex.Catalog.build(dataset, bloom=["s"])
    assert with_bloom.columns == ["k", "u", "s"]
    assert with_bloom.bloom_columns == ["s"]


def test_files_added_rewritten_or_deleted_after_the_build_are_still_right(
    dataset: Path, duckdb_con: Any
) -> None:
    pqindex.Catalog.build(dataset, ["s"], bloom=["s"])
    write_part(dataset, 999, name="part-added.parquet")  # holds s999-*
    time.sleep(0.01)
    write_part(dataset, 5, marker="new-")  # rewritten: s5-* are now new-s5-*
    os.remove(dataset / "part-0009.parquet")
    for where in ("s = 's999-3'", "s = 'new-s5-3'", "s = 's5-3'", "s = 's9-3'", "k >= 0"):
        table, m, explain = scan(dataset, where)
        assert table.num_rows == duckdb_count(duckdb_con, dataset, where), where
        assert m["files_not_in_catalog"] == 2, where
        assert "2 files not in it or changed since" in explain
    table, _, _ = scan(dataset, "s = 's999-3'")
    assert table.num_rows > 0


def test_a_change_made_by_a_forked_child_reaches_the_parents_kept_listing(
    dataset: Path,
) -> None:
    """A directory's listing is kept while the kernel reports no change below it. A child
    forked from the scanning process (multiprocessing's default on Linux) inherits the
    report queue; it must not read the reports of its own change away from the parent."""
    pqindex.Catalog.build(dataset, ["k"])
    pqindex.clear_metadata_cache()

    def rows() -> int:
        return pqindex.scan(dataset, where="k = 2000").to_arrow().num_rows

    assert rows() == 1
    assert rows() == 1  # now from the kept listing
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 1
        try:
            time.sleep(0.01)
            pq.write_table(part(5), dataset / "part-0004.parquet", write_page_index=True)
            pqindex.scan(dataset, where="k = 2000").to_arrow()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # Part 4 (keys 2000-2499) now holds part 5's keys.
    assert rows() == 0
    assert pqindex.scan(dataset, where="k = 2600").to_arrow().num_rows == 2


def test_refresh_is_incremental(dataset: Path, duckdb_con: Any) -> None:
    first = pqindex.Catalog.build(dataset, ["s"], bloom=["s"])
    write_part(dataset, 999, name="part-added.parquet")
    write_part(dataset, 5, marker="new-")
    os.remove(dataset / "part-0009.parquet")
    second = first.refresh()
    assert second.version == 2
    report = second.report()
    assert report is not None
    assert (report["added"], report["changed"], report["removed"]) == (1, 1, 1)
    assert report["kept"] == FILES - 2
    _, m, _ = scan(dataset, "s = 'new-s5-3'")
    assert m["files_not_in_catalog"] == 0
    assert m["footers_read"] == 0
    assert (dataset / "_pqindex" / "CURRENT").read_text() == "catalog-00000002.parq"
    # The previous version stays for readers still reading it.
    assert (dataset / "_pqindex" / "catalog-00000001.parq").exists()
    opened = pqindex.Catalog.open(dataset)
    assert opened is not None and opened.version == 2 and opened.num_files == FILES


def test_the_catalog_is_parquet_that_duckdb_reads(dataset: Path, duckdb_con: Any) -> None:
    pqindex.Catalog.build(dataset, ["k", "s"], bloom=["s"])
    rows = duckdb_con.sql(
        f'SELECT path, num_rows, "min.k", "max.k", "null_count.s" FROM '
        f"read_parquet('{dataset}/_pqindex/catalog-00000001.parq') ORDER BY path LIMIT 2"
    ).fetchall()
    assert rows[0] == ("part-0000.parquet", ROWS, "0", str(ROWS - 1), 46)
    assert rows[1][2] == str(ROWS)


def test_a_damaged_catalog_is_a_typed_error_and_can_be_bypassed(dataset: Path) -> None:
    pqindex.Catalog.build(dataset, ["s"])
    (dataset / "_pqindex" / "CURRENT").write_text("../../etc/passwd")
    with pytest.raises(pqindex.SourceError):
        pqindex.scan(dataset, where="s = 's1-1'")
    table, _, _ = scan(dataset, "s = 's1-1'", catalog=False)
    assert table.num_rows > 0
    (dataset / "_pqindex" / "CURRENT").write_text("catalog-00000001.parq")
    (dataset / "_pqindex" / "catalog-00000001.parq").write_bytes(b"garbage")
    with pytest.raises(pqindex.PqindexError):
        pqindex.scan(dataset, where="s = 's1-1'")


def test_seeding_the_cache_spares_footer_reads(dataset: Path) -> None:
    catalog = pqindex.Catalog.build(dataset, [])
    pqindex.clear_metadata_cache()
    assert catalog.seed_metadata_cache() == FILES
    s = pqindex.scan(dataset, where="k = 3", catalog=False)
    s.to_arrow()
    assert s.metrics()["footers_read"] == 0


def test_hive_partitioned_dataset(tmp_path: Path, duckdb_con: Any) -> None:
    root = tmp_path / "hive"
    for i in range(6):
        d = root / f"day={i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        write_part(d, i)
    pqindex.Catalog.build(root, ["s"], bloom=["s"])
    table, m, _ = scan(root, "s = 's4-2' AND day = 1")
    assert table.num_rows == 12
    assert m["footers_read"] == 0
    shutil.rmtree(root / "day=2")
    table, m, _ = scan(root, "k >= 0")
    assert table.num_rows == 4 * ROWS


def test_a_catalog_needs_one_directory(dataset: Path) -> None:
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.Catalog.build([dataset, dataset], [])
    with pytest.raises(pqindex.SourceError):
        pqindex.Catalog.build(dataset / "part-0001.parquet", [])
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.Catalog.build(dataset, ["nope"])
    assert pqindex.Catalog.open(dataset) is None


def damage_catalog_footers(root: Path, damage: dict[int, bytes]) -> None:
    """Replace the footers of the catalog's rows `damage` names, keeping the rest."""
    version = root / "_pqindex" / "catalog-00000001.parq"
    rows = pq.read_table(version)
    footers = rows.column("footer").to_pylist()
    for i, footer in damage.items():
        footers[i] = footer
    rows = rows.set_column(rows.schema.get_field_index("footer"), "footer", pa.array(footers))
    meta = pq.read_metadata(version).metadata
    pq.write_table(rows.replace_schema_metadata(meta), version)


def test_a_damaged_footer_in_the_catalog_falls_back_to_the_file(
    dataset: Path, duckdb_con: Any
) -> None:
    pqindex.Catalog.build(dataset, ["s"], bloom=["s"])
    footers = pq.read_table(dataset / "_pqindex" / "catalog-00000001.parq").column("footer")
    damage_catalog_footers(dataset, {17: footers[17].as_py()[:100]})  # part-0017: s17-*
    where = "s = 's17-3'"
    with pytest.warns(pqindex.IndexWarning, match="footer is unusable") as caught:
        table, m, _ = scan(dataset, where)
    assert table.num_rows == duckdb_count(duckdb_con, dataset, where)
    assert m["files_not_in_catalog"] == 1
    (message,) = [str(w.message) for w in caught if "unusable" in str(w.message)]
    assert message.count("part-0017.parquet") == 1, message


def test_damaged_catalog_footers_are_read_from_their_files(dataset: Path, duckdb_con: Any) -> None:
    """The first file listed (whose footer is taken from the catalog before planning) and
    a footer whose schema claims two billion children: the scan, the cache seeding and a
    scan of planned units read those footers from the files and lose no row."""
    pqindex.Catalog.build(dataset, ["k"])
    footers = pq.read_table(dataset / "_pqindex" / "catalog-00000001.parq").column("footer")
    first = footers[0].as_py()
    hostile = bytearray(footers[5].as_py())
    at = hostile.index(b"schema") + len(b"schema")
    assert hostile[at : at + 2] == b"\x15\x06", hostile[at : at + 2]  # num_children: 3
    hostile[at + 1 : at + 2] = b"\xfe\xff\xff\xff\x0f"
    n = len(hostile)
    length = int.from_bytes(hostile[n - 8 : n - 4], "little") + 4
    hostile[n - 8 : n - 4] = length.to_bytes(4, "little")
    damage_catalog_footers(dataset, {0: first[: len(first) // 2], 5: bytes(hostile)})
    where = "k < 20 OR k BETWEEN 2600 AND 2610"
    with pytest.warns(pqindex.IndexWarning, match="footer is unusable"):
        table, m, _ = scan(dataset, where)
    assert table.num_rows == duckdb_count(duckdb_con, dataset, where) == 31
    assert m["files_not_in_catalog"] == 2
    pqindex.clear_metadata_cache()
    catalog = pqindex.Catalog.open(dataset)
    assert catalog is not None
    assert catalog.seed_metadata_cache() == FILES - 2


def test_refresh_mends_damaged_footer_copies_of_unchanged_files(
    dataset: Path, duckdb_con: Any
) -> None:
    """An unchanged file whose footer copy no longer decodes is summarised again by
    `refresh`, so later scans take its footer from the catalog with no warning."""
    pqindex.Catalog.build(dataset, ["k"])
    footers = pq.read_table(dataset / "_pqindex" / "catalog-00000001.parq").column("footer")
    damage_catalog_footers(dataset, {3: footers[3].as_py()[:100]})
    pqindex.clear_metadata_cache()
    catalog = pqindex.Catalog.open(dataset)
    assert catalog is not None
    report = catalog.refresh().report()
    assert report is not None
    assert (report["mended"], report["kept"], report["changed"]) == (1, FILES - 1, 0)
    pqindex.clear_metadata_cache()
    where = "k BETWEEN 1490 AND 1510"
    with warnings.catch_warnings():
        warnings.simplefilter("error", pqindex.IndexWarning)
        table, m, _ = scan(dataset, where)
    assert table.num_rows == duckdb_count(duckdb_con, dataset, where) > 0
    assert (m["files_not_in_catalog"], m["footers_read"]) == (0, 0)


def test_a_bad_false_positive_rate_is_refused(dataset: Path) -> None:
    for fpp in (0.0, 1.0, -1.0):
        with pytest.raises(pqindex.InvalidArgumentError, match="fpp"):
            pqindex.Catalog.build(dataset, ["s"], fpp=fpp)
    assert pqindex.Catalog.open(dataset) is None


def test_a_catalog_bloom_spares_the_parquet_bloom_of_a_one_row_group_file(
    tmp_path: Path, duckdb_con: Any
) -> None:
    """In a file of one row group, the file's own bloom filter of a column says no more
    than the catalog's: once the catalog's keeps the file, the file's is not read."""
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(6):
        pqindex.write(
            part(i), root / f"part-{i}.parquet", row_group_size=ROWS, bloom_filter_columns=["u"]
        )
    # `u` spans about the same range in every file: only a bloom filter tells them apart.
    where = "u = 7919"
    _, alone, _ = scan(root, where, catalog=False)
    assert alone["bloom_filters_read"] == 6
    assert alone["row_groups_pruned_by_bloom"] >= 4
    pqindex.Catalog.build(root, ["u"], bloom=["u"])
    table, m, _ = scan(root, where)
    assert table.num_rows == duckdb_count(duckdb_con, root, where) > 0
    assert m["files_pruned_by_catalog"] >= 4
    assert m["bloom_filters_read"] == 0
    # A catalog without a bloom of the column leaves the files' to be read.
    pqindex.Catalog.build(root, ["k"])
    table, m, _ = scan(root, where)
    assert table.num_rows == duckdb_count(duckdb_con, root, where)
    assert m["files_pruned_by_catalog"] == 0
    assert m["bloom_filters_read"] == 6
