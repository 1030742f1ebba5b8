"""Iceberg tables (a SQL catalog on SQLite, a local warehouse): pqindex.scan of a pyiceberg
Table answers exactly as pyiceberg's own reader does (the referee), through appends,
overwrites, copy-on-write deletes, position deletes, schema evolution (renamed, added and
dropped columns, int promoted to long) and time travel; equality deletes are refused."""

from __future__ import annotations

import datetime as dt
import random
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from iceberg_tables import add_data_file, add_equality_deletes, add_position_deletes, data_files
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import LongType, StringType


def batch(start: int, n: int, seed: int = 0) -> pa.Table:
    rng = random.Random(start + seed)
    ids = range(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "u": pa.array([rng.randrange(10_000) for _ in ids], pa.int64()),
            "s": pa.array([None if i % 11 == 0 else f"s{i % 97}-ü" for i in ids], pa.string()),
            "f": pa.array(
                [float("nan") if i % 13 == 0 else (i % 50) / 4 for i in ids], pa.float64()
            ),
            "day": pa.array(
                [dt.date(2024, 1, 1) + dt.timedelta(days=i % 60) for i in ids], pa.date32()
            ),
            "amount": pa.array([Decimal(i % 1000) / 100 for i in ids], pa.decimal128(10, 2)),
            "region": pa.array([["north", "south", "ëast"][i % 3] for i in ids], pa.string()),
        }
    )


def catalog(root: Path) -> SqlCatalog:
    c = SqlCatalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    c.create_namespace("db")
    return c


def rows(table: Any, where: str | None, columns: list[str]) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("t", table)
    cols = ", ".join(f'"{c}"' for c in columns)
    out = con.execute(f"SELECT {cols} FROM t" + (f" WHERE {where}" if where else "")).fetchall()
    return sorted((tuple("NaN" if v != v else v for v in r) for r in out), key=repr)


def check(table: Any, where: str | None, snapshot_id: int | None = None, **kw: Any) -> pqindex.Scan:
    ref = table.scan(snapshot_id=snapshot_id).to_arrow()
    scan = pqindex.scan(table, where=where, snapshot_id=snapshot_id, **kw)
    got = scan.to_arrow()
    assert got.column_names == ref.column_names
    assert rows(got, None, ref.column_names) == rows(ref, where, ref.column_names), where
    return scan


WHERES = [
    None,
    "id = 1234",
    "id BETWEEN 990 AND 1010",
    "u < 100",
    "s = 's5-ü' OR s IS NULL",
    "f > 10",
    "f = CAST('NaN' AS DOUBLE)",
    "day = DATE '2024-01-07'",
    "amount = 3.45",
    "region = 'ëast' AND id < 500",
    "NOT (id > 10)",
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Three appends, a copy-on-write delete, a partial overwrite, position deletes."""
    c = catalog(tmp_path_factory.mktemp("iceberg"))
    t = c.create_table("db.plain", schema=batch(0, 1).schema)
    for start in (0, 3000, 6000):
        t.append(batch(start, 3000))
    t.delete("u < 300")
    t.overwrite(batch(100_000, 500), overwrite_filter="region = 'south' AND id < 2000")
    files = sorted(data_files(t), key=lambda f: -f.record_count)
    rng = random.Random(3)
    add_position_deletes(
        t,
        {
            files[0].file_path: rng.sample(range(files[0].record_count), 700),
            files[1].file_path: [0, 1, 2, 50],
        },
    )
    return c.load_table("db.plain")


@pytest.mark.parametrize("where", WHERES)
def test_rows_equal_pyicebergs(plain: Any, where: str | None) -> None:
    check(plain, where)


def test_position_deletes_are_left_out_before_reading(plain: Any) -> None:
    scan = pqindex.scan(plain)
    total = scan.to_arrow().num_rows
    assert total == plain.scan().to_arrow().num_rows
    assert scan.metrics()["rows_deleted"] == 704


def test_every_snapshot_reads_as_it_was(plain: Any) -> None:
    for snapshot in plain.snapshots():
        check(plain, "u > 5000 OR id < 30", snapshot_id=snapshot.snapshot_id)


def test_a_timestamp_picks_the_snapshot_then_current(tmp_path: Path) -> None:
    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    t.append(batch(0, 100))
    time.sleep(0.05)
    middle = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.05)
    t.append(batch(100, 100))
    assert pqindex.scan(t, timestamp=middle).to_arrow().num_rows == 100
    assert pqindex.scan(t).to_arrow().num_rows == 200


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Partitioned by region; id promoted int -> long, u renamed to score, s dropped, a
    column added; appends before and after."""
    c = catalog(tmp_path_factory.mktemp("iceberg-evolved"))
    schema = batch(0, 1).schema
    t = c.create_table("db.evolved", schema=schema)
    with t.update_spec() as spec:
        spec.add_identity("region")
    t = c.load_table("db.evolved")
    t.append(batch(0, 2000))
    t.append(batch(2000, 1000))
    with t.update_schema() as u:
        u.update_column("id", LongType())
        u.rename_column("u", "score")
        u.delete_column("s")
        u.add_column("extra", StringType())
    t = c.load_table("db.evolved")
    later = (
        batch(3000, 500)
        .drop_columns(["s"])
        .rename_columns(["id", "score", "f", "day", "amount", "region"])
    )
    later = later.set_column(0, "id", later.column("id").cast(pa.int64()))
    later = later.append_column("extra", pa.array(["x"] * 500, pa.large_string()))
    t.append(later.cast(t.schema().as_arrow()))
    return c.load_table("db.evolved")


@pytest.mark.parametrize(
    "where",
    [
        None,
        "score < 100",
        "id = 3001 OR id = 5",
        "id > 2147483647",
        "extra IS NULL AND id > 2990",
        "extra = 'x'",
        "region = 'south' AND score > 9000",
    ],
)
def test_schema_evolution_reads_the_tables_columns(evolved: Any, where: str | None) -> None:
    check(evolved, where)
    names = pqindex.scan(evolved).to_arrow().column_names
    assert "score" in names and "u" not in names and "s" not in names


@pytest.mark.parametrize("fixture", ["plain", "evolved"])
@pytest.mark.parametrize("where", [None, "region = 'south' AND id < 2100", "id = 3001 OR id = 5"])
def test_string_views_read_the_tables_rows(
    fixture: str, where: str | None, request: pytest.FixtureRequest
) -> None:
    """With ``string_view``, the table's strings (``large_string`` in its Arrow schema) come
    out as views, holding the rows the snapshot holds."""
    table = request.getfixturevalue(fixture)
    check(table, where, string_view=True)
    schema = pa.schema(pqindex.scan(table, where=where, string_view=True))
    assert schema.field("region").type == pa.string_view()
    assert pa.schema(pqindex.scan(table)).field("region").type == pa.large_string()


@pytest.mark.parametrize("fixture", ["plain", "evolved"])
@pytest.mark.parametrize(
    "where", [None, "id BETWEEN 990 AND 1010", "region = 'south' AND id < 2100", "id > 2990"]
)
def test_aggregates_count_the_snapshots_rows(
    fixture: str, where: str | None, request: pytest.FixtureRequest
) -> None:
    """``aggregate`` of a pyiceberg ``Table``: over the rows pyiceberg reads (position
    deletes left out, columns by their current names, ``id`` promoted to long midway)."""
    import duckdb

    table = request.getfixturevalue(fixture)
    renamed = fixture == "evolved"
    select = (
        f"count(*), count(amount), min(id), max(id), sum({'score' if renamed else 'u'}), "
        f"min(day), max(region), count({'extra' if renamed else 's'})"
    )
    got = pa.table(pqindex.aggregate(table, select, where)).to_pylist()
    con = duckdb.connect()
    con.register("t", table.scan().to_arrow())
    want = con.execute(f"SELECT {select} FROM t" + (f" WHERE {where}" if where else ""))
    assert list(got[0].values()) == list(want.fetchone()), where


@pytest.mark.parametrize("fixture", ["plain", "evolved"])
def test_a_snapshots_count_comes_from_its_manifests(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """``count(*)`` of a whole snapshot: its files' record counts less their position
    deletes, no data file opened."""
    table = request.getfixturevalue(fixture)
    agg = pqindex.aggregate(table, "count(*)")
    want = table.scan().to_arrow().num_rows
    assert pa.table(agg).to_pylist() == [{"count(*)": want}]
    assert agg.metrics()["rows_from_metadata"] == want
    assert agg.metrics()["files_opened"] == 0


def test_aggregates_read_the_snapshot_asked(plain: Any) -> None:
    for snapshot in plain.snapshots():
        ref = plain.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        for where in (None, "u > 5000 OR id < 30"):
            agg = pqindex.aggregate(
                plain, "count(*), sum(u)", where, snapshot_id=snapshot.snapshot_id
            )
            want = rows(ref, where, ["u"])
            got = pa.table(agg).to_pylist()[0]
            assert got == {"count(*)": len(want), "sum(u)": sum(r[0] for r in want) or None}
    with pytest.raises(pqindex.InvalidArgumentError, match="snapshot_id"):
        pqindex.aggregate(plain, "count(*)", version=1)


def test_aggregates_of_an_empty_table_count_nothing(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("db.t", schema=batch(0, 1).schema)
    got = pa.table(pqindex.aggregate(t, "count(*), min(id), sum(u)")).to_pylist()
    assert got == [{"count(*)": 0, "min(id)": None, "sum(u)": None}]


def test_equality_deletes_are_refused(tmp_path: Path) -> None:
    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    t.append(batch(0, 100))
    t = add_equality_deletes(t, pa.table({"id": pa.array([3, 4], pa.int32())}))
    with pytest.raises(pqindex.UnsupportedError, match="equality deletes"):
        pqindex.scan(t)


def test_a_file_without_its_identity_partition_column_is_refused(tmp_path: Path) -> None:
    """Iceberg readers take an identity-partitioned column that a data file lacks (one
    migrated from Hive) from the manifest's partition value. pqindex refuses such a file,
    naming it, rather than read the column as NULL; files that hold the column read as
    pyiceberg reads them."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record

    c = catalog(tmp_path)
    schema = c.create_table("db.probe", schema=batch(0, 1).schema).schema()
    region = schema.find_field("region").field_id
    spec = PartitionSpec(PartitionField(region, 1000, IdentityTransform(), "region"))
    t = c.create_table("db.t", schema=schema, partition_spec=spec)
    t.append(batch(0, 300))
    check(t, "region = 'north'")
    migrated = batch(5000, 40).drop_columns(["region"])
    t = add_data_file(t, migrated, Record("north"))
    ref = t.scan(row_filter="id >= 5000").to_arrow()
    assert ref.num_rows == 40 and set(ref.column("region").to_pylist()) == {"north"}
    with pytest.raises(pqindex.UnsupportedError, match="no column region"):
        pqindex.scan(t).to_arrow()


def test_damaged_metadata_and_missing_files_give_typed_errors(tmp_path: Path) -> None:
    """A manifest missing or cut short, a data file missing or cut short: a typed pqindex
    error naming the table (and, through pyiceberg's message or the core's, the file)."""
    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    t.append(batch(0, 100))
    t.append(batch(100, 100))
    location = Path(t.location().removeprefix("file://"))
    manifest = next(
        m for m in (location / "metadata").glob("*.avro") if not m.name.startswith("snap-")
    )
    saved = manifest.read_bytes()
    manifest.write_bytes(saved[: len(saved) // 2])
    with pytest.raises(pqindex.SourceError, match=r"db\.t"):
        pqindex.scan(c.load_table("db.t")).to_arrow()
    manifest.unlink()
    with pytest.raises(pqindex.NotFoundError, match=f"db.t.*{manifest.name}"):
        pqindex.scan(c.load_table("db.t")).to_arrow()
    manifest.write_bytes(saved)
    data = sorted((location / "data").glob("*.parquet"))
    data[0].write_bytes(data[0].read_bytes()[:300])
    with pytest.raises(pqindex.InvalidFileError, match=f"table .*{data[0].name}"):
        pqindex.scan(c.load_table("db.t")).to_arrow()
    data[0].unlink()
    with pytest.raises(pqindex.NotFoundError, match=f"table .*{data[0].name}"):
        pqindex.scan(c.load_table("db.t")).to_arrow()


def test_an_empty_table_scans_to_nothing(tmp_path: Path) -> None:
    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    got = pqindex.scan(t, where="id = 1").to_arrow()
    assert got.num_rows == 0 and "id" in got.column_names


def test_a_warehouse_directory_is_not_read_as_loose_files(plain: Any) -> None:
    location = plain.location().removeprefix("file://")
    with pytest.raises(pqindex.UnsupportedError, match="pyiceberg Table"):
        pqindex.scan(location)


def test_indexes_are_puffin_statistics_the_table_registers(tmp_path: Path) -> None:
    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    for i in range(3):
        t.append(batch(i * 4000, 4000, seed=i))
    data = {p: p.read_bytes() for p in tmp_path.rglob("*.parquet")}
    needle = batch(4000, 4000, seed=1).column("u")[1234].as_py()
    plain = pqindex.scan(t, where=f"u = {needle}")
    plain.to_arrow()

    report = pqindex.add_indexes(t, [pqindex.DistinctIndex("u")])
    assert (report["files"], report["built"]) == (3, 3)
    t = c.load_table("db.t")
    (stats,) = t.metadata.statistics
    assert stats.snapshot_id == t.current_snapshot().snapshot_id
    assert stats.statistics_path.endswith(".puffin")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.parquet")} == data
    indexed = check(t, f"u = {needle}")
    assert indexed.metrics()["indexes_read"] >= 1
    assert indexed.metrics()["rows_selected"] < plain.metrics()["rows_selected"]
    assert len(pqindex.list_indexes(t)) == 3

    # A rename keeps the index: columns are matched by field id.
    with t.update_schema() as u:
        u.rename_column("u", "score")
    t = c.load_table("db.t")
    renamed = check(t, f"score = {needle}")
    assert renamed.metrics()["indexes_read"] >= 1


def test_one_index_file_stays_registered_and_others_are_left_alone(tmp_path: Path) -> None:
    from pyiceberg.table.statistics import StatisticsFile

    c = catalog(tmp_path)
    t = c.create_table("db.t", schema=batch(0, 1).schema)
    t.append(batch(0, 4000))
    pqindex.add_indexes(t, [pqindex.DistinctIndex("u")])
    first = c.load_table("db.t").metadata.statistics[0].statistics_path
    t = c.load_table("db.t")
    t.append(batch(4000, 4000, seed=1))
    t = c.load_table("db.t")
    report = pqindex.add_indexes(t, [pqindex.BloomIndex("s", "page")])
    assert (report["built"], report["kept"]) == (2, 1)
    t = c.load_table("db.t")
    # The new file holds every index: the earlier one is unregistered and removed.
    (stats,) = t.metadata.statistics
    assert stats.snapshot_id == t.current_snapshot().snapshot_id
    assert not Path(first.removeprefix("file://")).exists()
    assert len(pqindex.list_indexes(t)) == 3
    check(t, "u = 17")

    report = pqindex.drop_indexes(c.load_table("db.t"), kind="distinct")
    assert (report["kept"], report["dropped"]) == (2, 1)
    t = c.load_table("db.t")
    assert {i["kind"] for i in pqindex.list_indexes(t)} == {"bloom"}
    assert len(t.metadata.statistics) == 1
    check(t, "s = 's5'")

    # Another writer's statistics file for the current snapshot is not replaced.
    t.append(batch(8000, 10, seed=2))
    t = c.load_table("db.t")
    foreign = tmp_path / "theta.stats"
    foreign.write_bytes(b"PFA1")
    with t.update_statistics() as u:
        u.set_statistics(
            StatisticsFile.model_validate(
                {
                    "snapshot-id": t.current_snapshot().snapshot_id,
                    "statistics-path": f"file://{foreign}",
                    "file-size-in-bytes": 4,
                    "file-footer-size-in-bytes": 4,
                    "blob-metadata": [],
                }
            )
        )
    t = c.load_table("db.t")
    with pytest.raises(pqindex.UnsupportedError, match=r"theta\.stats"):
        pqindex.add_indexes(t, [pqindex.DistinctIndex("u")])
    assert foreign.exists() and len(c.load_table("db.t").metadata.statistics) == 2
    check(t, "u = 17")


@pytest.mark.parametrize("fixture", ["plain", "evolved"])
def test_random_predicates_match_pyiceberg(fixture: str, request: pytest.FixtureRequest) -> None:
    from predicates import PredicateGenerator

    table = request.getfixturevalue(fixture)
    ref = table.scan().to_arrow()
    generator = PredicateGenerator(ref, seed=sum(map(ord, fixture)))
    for _ in range(40):
        where = generator.generate().sql
        got = pqindex.scan(table, where=where).to_arrow()
        assert rows(got, None, ref.column_names) == rows(ref, where, ref.column_names), where
