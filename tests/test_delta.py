"""Delta Lake tables: pqindex.scan answers exactly as deltalake's own reader does (the
referee), whatever the table went through: appends, overwrites, deletes (rewritten files
and deletion vectors of every storage kind), checkpoints, time travel, added, renamed and
dropped columns under column mapping; it plans from the log and prunes with it."""

from __future__ import annotations

import datetime as dt
import random
import shutil
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyroaring")

from delta_tables import (  # noqa: E402
    add_deletion_vectors,
    add_paths,
    alter_columns,
    drop_stats,
    require_reader_feature,
)

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
WRITER = deltalake.WriterProperties(max_row_group_size=1_000, data_page_row_count_limit=200)


def batch(start: int, n: int, region: str | None = None, seed: int = 0) -> pa.Table:
    """``n`` rows with ids ``start..``: sorted ``id``, unsorted ``u``, strings with NULLs and
    multi-byte text, floats with NaN, dates, timestamps, decimals, and a partition column."""
    rng = random.Random(start * 31 + seed)
    ids = list(range(start, start + n))
    regions = ["north", "south", "ëast"]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "u": pa.array([rng.randrange(10_000) for _ in ids], pa.int64()),
            "s": pa.array([None if i % 11 == 0 else f"s{i % 97}-ü" for i in ids], pa.string()),
            "f": pa.array(
                [float("nan") if i % 13 == 0 else (i % 50) / 4 for i in ids], pa.float64()
            ),
            "day": pa.array(
                [dt.date(2024, 1, 1) + dt.timedelta(days=i % 60) for i in ids], pa.date32()
            ),
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i)
                    for i in ids
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": pa.array([Decimal(i % 1000) / 100 for i in ids], pa.decimal128(10, 2)),
            "region": pa.array([region or regions[i % 3] for i in ids], pa.string()),
        }
    )


def write(path: Path, data: pa.Table, **kw: Any) -> None:
    deltalake.write_deltalake(str(path), data, writer_properties=WRITER, **kw)


def referee(path: Path, version: int | None = None) -> pa.Table:
    """The table as deltalake reads it (its scan honours deletion vectors)."""
    t = deltalake.DeltaTable(str(path), version=version)
    return pa.table(t.scan())


def rows(
    table: Any, where: str | None = None, columns: list[str] | None = None
) -> list[tuple[Any, ...]]:
    """The rows of an Arrow table (filtered by DuckDB, the predicate referee, when ``where``
    is given) as sorted tuples; NaN made comparable."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.register("t", table)
    cols = ", ".join(f'"{c}"' for c in (columns or table.column_names))
    sql = f"SELECT {cols} FROM t" + (f" WHERE {where}" if where else "")
    out = con.execute(sql).fetchall()
    return sorted((tuple("NaN" if v != v else v for v in r) for r in out), key=repr)


def check(path: Path, where: str | None, version: int | None = None, **kw: Any) -> pqindex.Scan:
    """pqindex's rows for ``where`` are the referee's, as a multiset."""
    ref = referee(path, version)
    scan = pqindex.scan(str(path), where=where, version=version, **kw)
    got = scan.to_arrow()
    assert sorted(got.column_names) == sorted(ref.column_names)
    assert rows(got, None, ref.column_names) == rows(ref, where, ref.column_names), where
    return scan


WHERES = [
    None,
    "id = 1234",
    "id BETWEEN 990 AND 1010",
    "u < 100",
    "s = 's5-ü' OR s IS NULL",
    "s > 's9'",
    "f > 10",
    "f = CAST('NaN' AS DOUBLE)",
    "day = DATE '2024-01-07'",
    "ts >= TIMESTAMPTZ '2024-01-01 00:40:00+00:00' AND ts < TIMESTAMPTZ '2024-01-01 00:41:00Z'",
    "amount = 3.45",
    "region = 'ëast' AND id < 500",
    "region IN ('north', 'nowhere') AND u > 9000",
    "NOT (id > 10)",
]


@pytest.fixture(scope="module")
def evolving(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Partitioned; three appends, a delete (rewrites files), a replace of one partition,
    a checkpoint, then another append: versions 0..5."""
    path = tmp_path_factory.mktemp("delta") / "events"
    write(path, batch(0, 3000), partition_by=["region"])
    write(path, batch(3000, 2000), mode="append")
    write(path, batch(5000, 1000), mode="append")
    deltalake.DeltaTable(str(path)).delete("u < 500")
    write(path, batch(9000, 500, region="south"), mode="overwrite", predicate="region = 'south'")
    deltalake.DeltaTable(str(path)).create_checkpoint()
    write(path, batch(20_000, 700), mode="append")
    return path


@pytest.mark.parametrize("where", WHERES)
def test_rows_equal_deltalakes(evolving: Path, where: str | None) -> None:
    check(evolving, where)


def test_every_version_reads_as_it_was(evolving: Path) -> None:
    history = deltalake.DeltaTable(str(evolving)).history()
    versions = sorted(h["version"] for h in history)
    assert versions == list(range(6))
    for v in versions:
        scan = check(evolving, "u > 5000", version=v)
        assert f"version {v}" in scan.explain()


def test_timestamps_pick_the_version_then_current(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, batch(0, 100))
    time.sleep(0.05)
    middle = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.05)
    write(path, batch(100, 100), mode="append")
    assert pqindex.scan(str(path), timestamp=middle).to_arrow().num_rows == 100
    assert pqindex.scan(str(path), timestamp=middle.isoformat()).to_arrow().num_rows == 100
    assert pqindex.scan(str(path)).to_arrow().num_rows == 200
    with pytest.raises(pqindex.InvalidArgumentError):
        pqindex.scan(str(path), version=0, timestamp=middle)


def test_the_log_prunes_files_unopened(evolving: Path) -> None:
    scan = pqindex.scan(str(evolving), where="id = 20123")
    assert scan.to_arrow().column("id").to_pylist() == [20123]
    m = scan.metrics()
    assert m["files_pruned_by_table_stats"] + m["files_pruned_by_partition"] >= m["files"] - 3
    # A partition predicate rules files out by the values the log holds.
    scan = pqindex.scan(str(evolving), where="region = 'nowhere'")
    assert scan.to_arrow().num_rows == 0
    assert scan.metrics()["footers_read"] == 0


def test_a_table_directory_is_no_longer_refused_but_its_files_are_not_listed(
    evolving: Path,
) -> None:
    # Files removed by the delete and the overwrite are still in the directory.
    on_disk = list(evolving.rglob("*.parquet"))
    live = referee(evolving).num_rows
    assert len(on_disk) > len(deltalake.DeltaTable(str(evolving)).file_uris())
    assert pqindex.scan(str(evolving)).to_arrow().num_rows == live


@pytest.fixture(scope="module")
def with_dvs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three files, rows deleted from each by a deletion vector of each storage kind."""
    path = tmp_path_factory.mktemp("delta-dv") / "t"
    for i in range(3):
        write(path, batch(i * 5000, 5000), mode="append" if i else "error")
    # Each file by its first id: 0, 5000, 10000.
    files = sorted(add_paths(path), key=lambda f: pq.read_table(path / f).column("id")[0].as_py())
    rng = random.Random(7)
    add_deletion_vectors(
        path,
        {
            files[0]: [1, 2, 999, 1000, 4999],
            files[1]: sorted(rng.sample(range(5000), 1700)),
            # Every row of the first two row groups of the third file.
            files[2]: list(range(2000)),
        },
        {files[0]: "i", files[1]: "u", files[2]: "p"},
    )
    return path


@pytest.mark.parametrize("where", [None, "id < 2500", "id BETWEEN 10000 AND 11999", "u < 50"])
def test_deletion_vectors_remove_their_rows(with_dvs: Path, where: str | None) -> None:
    check(with_dvs, where)


def test_deleted_rows_are_never_read(with_dvs: Path) -> None:
    # The third file's first 2,000 rows are deleted: a lookup there reads nothing.
    scan = pqindex.scan(str(with_dvs), where="id BETWEEN 10000 AND 11999")
    assert scan.to_arrow().num_rows == 0
    m = scan.metrics()
    assert m["rows_deleted"] == 2000
    assert m["units"] == 0 and m["pages_read"] == 0
    scan = pqindex.scan(str(with_dvs), where="id = 1000")
    assert scan.to_arrow().num_rows == 0
    assert scan.metrics()["rows_deleted"] == 1


@pytest.mark.parametrize("fixture", ["evolving", "with_dvs", "mapped"])
def test_a_tables_count_comes_from_its_log(fixture: str, request: pytest.FixtureRequest) -> None:
    """``count(*)`` of a whole table is the log's record counts less the rows its deletion
    vectors remove, with no data file opened; a predicate or another aggregate reads."""
    path: Path = request.getfixturevalue(fixture)
    ref = referee(path)
    agg = pqindex.aggregate(str(path), "count(*), count(*) AS n")
    assert pa.table(agg).to_pylist() == [{"count(*)": ref.num_rows, "n": ref.num_rows}]
    m = agg.metrics()
    assert m["rows_from_metadata"] == ref.num_rows
    assert m["files_opened"] == 0 and m["bytes_read"] == 0
    assert "record counts of" in agg.explain()
    for select, where in [("count(*)", "id >= 100"), ("count(*), max(id)", None)]:
        read = pqindex.aggregate(str(path), select, where)
        assert read.metrics()["rows_from_metadata"] == 0
        assert pa.table(read).column(0)[0].as_py() == len(rows(ref, where, ["id"]))


def test_aggregates_read_the_version_asked(with_dvs: Path) -> None:
    """``aggregate`` at each version, from the log or by reading, is that version's rows;
    ``snapshot_id`` belongs to Iceberg."""
    latest = deltalake.DeltaTable(str(with_dvs)).version()
    for version in range(latest + 1):
        ref = referee(with_dvs, version)
        for where in (None, "u < 5000"):
            agg = pqindex.aggregate(str(with_dvs), "count(*), max(id)", where, version=version)
            want = rows(ref, where, ["id"])
            got = pa.table(agg).to_pylist()[0]
            assert got == {"count(*)": len(want), "max(id)": max(want)[0]}, (version, where)
    with pytest.raises(pqindex.InvalidArgumentError, match="Iceberg"):
        pqindex.aggregate(str(with_dvs), "count(*)", snapshot_id=1)


def test_a_file_without_a_record_count_is_counted_by_reading(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(2):
        write(path, batch(i * 1000, 1000), mode="append" if i else "error")
    add_deletion_vectors(path, {add_paths(path)[0]: [3, 4, 5]})
    drop_stats(path, add_paths(path)[1])
    agg = pqindex.aggregate(str(path), "count(*)")
    assert pa.table(agg).column(0)[0].as_py() == referee(path).num_rows == 1997
    assert agg.metrics()["rows_from_metadata"] == 0


@pytest.mark.parametrize("storage", ["u", "p"])
def test_vectors_packed_in_one_file_remove_each_files_rows(tmp_path: Path, storage: str) -> None:
    """As Delta Spark writes them: the vectors of several data files in one file, each at
    its own offset (the kernel reads that file whole; pqindex reads it once)."""
    path = tmp_path / "t"
    for i in range(6):
        write(path, batch(i * 700, 700), mode="append" if i else "error")
    files = sorted(add_paths(path), key=lambda f: pq.read_table(path / f).column("id")[0].as_py())
    rng = random.Random(11)
    deletes = {f: sorted(rng.sample(range(700), 50 * (i + 1))) for i, f in enumerate(files)}
    add_deletion_vectors(path, deletes, {f: storage for f in files}, packed=True)
    assert len(list((path / "dv").iterdir())) == 1
    for where in (None, "u < 3000", "id BETWEEN 650 AND 1500"):
        scan = check(path, where)
    assert referee(path).num_rows == 6 * 700 - sum(50 * (i + 1) for i in range(6))
    assert scan.metrics()["rows_deleted"] > 0


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Column mapping (name mode); a column added by a merge; then ``u`` renamed to
    ``score``, ``f`` dropped, and an append under the new schema."""
    path = tmp_path_factory.mktemp("delta-mapped") / "t"
    write(
        path,
        batch(0, 2000),
        partition_by=["region"],
        configuration={"delta.columnMapping.mode": "name"},
    )
    # deltalake adds no column under column mapping: added by a metadata commit.
    alter_columns(path, add=[("extra", "integer")])
    extra = batch(2000, 1000).append_column("extra", pa.array(range(1000), pa.int32()))
    write(path, extra, mode="append")
    alter_columns(path, rename={"u": "score"}, drop=["f"])
    later = (
        batch(3000, 500)
        .drop_columns(["f"])
        .rename_columns(["id", "score", "s", "day", "ts", "amount", "region"])
    )
    later = later.append_column("extra", pa.array([7] * 500, pa.int32()))
    write(path, later, mode="append")
    return path


@pytest.mark.parametrize(
    "where",
    [
        None,
        "score < 100",
        "score = 42 OR id = 2500",
        "extra IS NULL AND id > 1990",
        "extra = 7",
        "extra > 990",
        "region = 'south' AND score > 9000",
        "s = 's5-ü'",
    ],
)
def test_column_mapping_reads_the_tables_names(mapped: Path, where: str | None) -> None:
    check(mapped, where)
    names = pqindex.scan(str(mapped)).to_arrow().column_names
    assert "score" in names and "u" not in names and "f" not in names


@pytest.mark.parametrize("fixture", ["evolving", "with_dvs", "mapped"])
@pytest.mark.parametrize(
    "where", [None, "s = 's5-ü' OR s IS NULL", "region = 'south' AND id < 2100"]
)
def test_string_views_read_the_tables_rows(
    fixture: str, where: str | None, request: pytest.FixtureRequest
) -> None:
    """With ``string_view``, a table's string columns (partition values too) come out as
    views, holding the rows the table holds."""
    path: Path = request.getfixturevalue(fixture)
    check(path, where, string_view=True)
    schema = pa.schema(pqindex.scan(str(path), where=where, string_view=True))
    assert schema.field("s").type == pa.string_view()
    assert schema.field("region").type == pa.string_view()
    assert schema.field("id").type == pa.schema(pqindex.scan(str(path))).field("id").type


def test_id_mode_resolves_columns_by_field_id(tmp_path: Path) -> None:
    """In id mode (the protocol's "Column Mapping") a file's column is the one carrying the
    table column's field id, whatever its name: a file rewritten under other column names
    reads the same, and a renamed column keeps its values. deltalake's own reader returns
    NULLs for id-mode tables, so the referee is the data written, filtered by DuckDB."""
    import json

    import pyarrow.parquet as pq

    path = tmp_path / "t"
    data = batch(0, 500).drop_columns(["region"])
    write(path, data, configuration={"delta.columnMapping.mode": "id"})
    assert rows(pqindex.scan(str(path)).to_arrow()) == rows(data)
    # The same values under other names, with each column's field id.
    (file,) = path.rglob("*.parquet")
    stored = pq.read_table(file)
    renamed = stored.rename_columns([f"other_{i}" for i in range(stored.num_columns)])
    renamed = pa.table(
        renamed.columns,
        schema=pa.schema(
            [f.with_metadata(stored.schema.field(i).metadata) for i, f in enumerate(renamed.schema)]
        ),
    )
    pq.write_table(renamed, file)
    log = path / "_delta_log" / f"{0:020}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for a in actions:
        if "add" in a:
            a["add"]["size"] = file.stat().st_size
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for where in (None, "u < 300", "id BETWEEN 10 AND 20 OR s IS NULL"):
        got = pqindex.scan(str(path), where=where).to_arrow()
        assert rows(got) == rows(data, where), where
    alter_columns(path, rename={"u": "score"})
    got = pqindex.scan(str(path), where="score < 300").to_arrow()
    assert rows(got) == rows(
        data.rename_columns(["score" if c == "u" else c for c in data.column_names]), "score < 300"
    )


def test_type_widening_reads_files_in_the_tables_types(tmp_path: Path) -> None:
    """The typeWidening reader feature: a commit widens ``int`` to ``long`` and ``float`` to
    ``double``; files written before keep their narrow types and read as the table's, and
    their statistics still prune. deltalake refuses the feature, so the referee is the data
    written, widened, filtered by DuckDB."""
    import json

    path = tmp_path / "t"
    data = pa.table(
        {
            "id": pa.array(range(2000), pa.int32()),
            "v": pa.array([i / 4 for i in range(2000)], pa.float32()),
        }
    )
    write(path, data)
    log = path / "_delta_log"
    actions = [json.loads(line) for line in (log / f"{0:020}.json").read_text().splitlines()]
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    schema = json.loads(meta["schemaString"])
    for f, (old, new) in zip(
        schema["fields"], [("integer", "long"), ("float", "double")], strict=True
    ):
        f["type"] = new
        f["metadata"] = {"delta.typeChanges": [{"fromType": old, "toType": new}]}
    meta = dict(
        meta,
        schemaString=json.dumps(schema),
        configuration={"delta.enableTypeWidening": "true"},
    )
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["typeWidening"],
        "writerFeatures": ["typeWidening"],
    }
    commit = [
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "CHANGE COLUMN"}},
        {"protocol": protocol},
        {"metaData": meta},
    ]
    (log / f"{1:020}.json").write_text("\n".join(json.dumps(a) for a in commit) + "\n")
    wide = data.cast(pa.schema([("id", pa.int64()), ("v", pa.float64())]))
    for where in (None, "id BETWEEN 1500 AND 1510", "v > 499.5", "id = 5000000000"):
        scan = pqindex.scan(str(path), where=where)
        got = scan.to_arrow()
        assert got.schema == wide.schema
        assert rows(got) == rows(wide, where), where
    pruned = pqindex.scan(str(path), where="id = 5000000000")
    assert pruned.to_arrow().num_rows == 0
    assert pruned.metrics()["files_pruned_by_table_stats"] == 1


def test_unknown_reader_features_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, batch(0, 10))
    require_reader_feature(path, "fooBarFeature")
    with pytest.raises(pqindex.UnsupportedError, match="fooBarFeature"):
        pqindex.scan(str(path))


def test_a_file_column_that_does_not_read_as_the_tables_is_refused(tmp_path: Path) -> None:
    """A log that declares a column ``long`` over files that store strings (no writer
    does this; a hand-edited or foreign log can): casting would turn every value into
    NULL, so the scan refuses, naming the table, the file and the column."""
    import json

    path = tmp_path / "t"
    write(path, batch(0, 10))
    commit = path / "_delta_log" / f"{0:020}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    for a in actions:
        if "metaData" in a:
            schema = json.loads(a["metaData"]["schemaString"])
            for f in schema["fields"]:
                if f["name"] == "s":
                    f["type"] = "long"
            a["metaData"]["schemaString"] = json.dumps(schema)
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    with pytest.raises(pqindex.UnsupportedError, match=r"stores column s as Utf8.*Int64"):
        pqindex.scan(str(path), where="id > 3").to_arrow()


def test_damaged_logs_and_missing_files_give_typed_errors(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, batch(0, 100))
    write(path, batch(100, 100), mode="append")
    # A data file the log names is gone.
    gone = tmp_path / "gone"
    shutil.copytree(path, gone)
    missing = next(f for f in gone.glob("*.parquet"))
    missing.unlink()
    with pytest.raises(pqindex.NotFoundError, match=f"table {gone}.*{missing.name}"):
        pqindex.scan(str(gone)).to_arrow()
    # A data file cut short.
    short = tmp_path / "short"
    shutil.copytree(path, short)
    damaged = next(f for f in short.glob("*.parquet"))
    damaged.write_bytes(damaged.read_bytes()[:300])
    with pytest.raises(pqindex.InvalidFileError, match=f"table {short}.*{damaged.name}"):
        pqindex.scan(str(short)).to_arrow()
    # A commit cut short.
    cut = tmp_path / "cut"
    shutil.copytree(path, cut)
    commit = sorted((cut / "_delta_log").glob("*.json"))[-1]
    commit.write_text(commit.read_text()[:40])
    with pytest.raises(pqindex.SourceError, match=str(cut)):
        pqindex.scan(str(cut))
    # A checkpoint cut short (the log's later commits are read on top of it).
    deltalake.DeltaTable(str(path)).create_checkpoint()
    write(path, batch(200, 10), mode="append")
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    checkpoint = next((broken / "_delta_log").glob("*.checkpoint.parquet"))
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    with pytest.raises(pqindex.PqindexError, match=str(broken)):
        pqindex.scan(str(broken)).to_arrow()
    # The log is gone altogether: not a table any more, and nothing left to list.
    bare = tmp_path / "bare"
    shutil.copytree(path, bare)
    shutil.rmtree(bare / "_delta_log")
    assert pqindex.scan(str(bare)).to_arrow().num_rows >= 200


def test_version_applies_to_tables_only(tmp_path: Path) -> None:
    pq.write_table(batch(0, 10), tmp_path / "f.parquet")
    with pytest.raises(pqindex.InvalidArgumentError, match="tables"):
        pqindex.scan(str(tmp_path / "f.parquet"), version=1)


def test_indexes_of_a_table_live_beside_its_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(3):
        write(path, batch(i * 4000, 4000, seed=i), mode="append" if i else "error")
    data_files = {p: p.read_bytes() for p in path.rglob("*.parquet")}
    needle = batch(4000, 4000, seed=1).column("u")[1234].as_py()
    where = f"u = {needle}"
    plain = pqindex.scan(str(path), where=where)
    plain_rows = plain.to_arrow().num_rows

    report = pqindex.add_indexes(
        str(path), [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", "page")]
    )
    assert (report["files"], report["built"], report["kept"]) == (3, 6, 0)
    # The table's files are untouched; its own reader sees the same table.
    assert {p: p.read_bytes() for p in path.rglob("*.parquet")} == data_files
    assert referee(path).num_rows == 12_000
    indexed = check(path, where)
    assert indexed.metrics()["indexes_read"] >= 1
    assert indexed.metrics()["rows_selected"] < plain.metrics()["rows_selected"]
    assert plain_rows >= 1
    listed = pqindex.list_indexes(str(path))
    assert len(listed) == 6 and {i["kind"] for i in listed} == {"distinct", "bloom"}

    # VACUUM skips the index directory.
    deltalake.DeltaTable(str(path)).vacuum(
        retention_hours=0, dry_run=False, enforce_retention_duration=False
    )
    assert len(pqindex.list_indexes(str(path))) == 6

    # Adding another index keeps the first ones; files replaced since are not indexed.
    write(path, batch(0, 4000, seed=0), mode="overwrite")
    report = pqindex.add_indexes(str(path), [pqindex.BloomIndex("s", "row_group")])
    assert (report["files"], report["built"], report["kept"]) == (1, 1, 0)
    check(path, where)
    check(path, "s = 's5-ü'")


def test_indexes_follow_column_mapping(mapped: Path) -> None:
    import shutil as sh

    copy = mapped.parent / "indexed"
    sh.copytree(mapped, copy)
    pqindex.add_indexes(str(copy), [pqindex.DistinctIndex("score")])
    listed = pqindex.list_indexes(str(copy))
    # Indexed under each file's physical column name.
    assert listed and all(i["columns"][0].startswith("col-") for i in listed)
    for where in ("score = 42", "score IN (7, 9999)"):
        scan = check(copy, where)
        assert scan.metrics()["indexes_read"] >= 1


def test_dropping_and_cleaning_up_a_tables_indexes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(2):
        write(path, batch(i * 4000, 4000, seed=i), mode="append" if i else "error")
    pqindex.add_indexes(str(path), [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", "page")])
    assert len(pqindex.list_indexes(str(path))) == 4

    report = pqindex.drop_indexes(str(path), kind="bloom")
    assert (report["kept"], report["dropped"]) == (2, 2)
    assert {i["kind"] for i in pqindex.list_indexes(str(path))} == {"distinct"}
    assert len(list((path / "_pqindex" / "indexes").iterdir())) == 1
    check(path, "u = 17")

    # Compaction replaces both files: their entries are stale, ignored, then cleaned up.
    deltalake.DeltaTable(str(path)).optimize.compact()
    live = {str(Path(path, f)) for f in deltalake.DeltaTable(str(path)).file_uris()}
    listed = pqindex.list_indexes(str(path))
    assert listed and not {i["data_file"] for i in listed} & live
    scan = check(path, "u = 17")
    assert scan.metrics()["indexes_read"] == 0
    report = pqindex.drop_indexes(str(path), stale=True)
    assert (report["kept"], report["dropped"]) == (0, 0)
    assert pqindex.list_indexes(str(path)) == []

    pqindex.add_indexes(str(path), [pqindex.DistinctIndex("u")])
    assert pqindex.drop_indexes(str(path), stale=True)["kept"] == 1
    assert pqindex.drop_indexes(str(path), columns=["s"])["dropped"] == 0
    assert pqindex.drop_indexes(str(path), columns=["u"])["dropped"] == 1
    assert referee(path).num_rows == 8000
    with pytest.raises(pqindex.InvalidArgumentError, match="stale"):
        pqindex.drop_indexes(str(next(path.glob("*.parquet"))), stale=True)


@pytest.fixture(scope="module")
def indexed_dvs(with_dvs: Path) -> Path:
    """``with_dvs`` with page indexes of its files: evidence from Puffin blobs too."""
    path = with_dvs.parent / "indexed"
    shutil.copytree(with_dvs, path)
    pqindex.add_indexes(
        str(path),
        [pqindex.DistinctIndex("u"), pqindex.BloomIndex("s", "page"), pqindex.MinMaxIndex("f")],
    )
    return path


@pytest.mark.parametrize("fixture", ["evolving", "with_dvs", "indexed_dvs", "mapped"])
def test_random_predicates_match_deltalake(fixture: str, request: pytest.FixtureRequest) -> None:
    from predicates import PredicateGenerator

    path: Path = request.getfixturevalue(fixture)
    ref = referee(path)
    generator = PredicateGenerator(ref, seed=sum(map(ord, fixture)))
    for _ in range(40):
        where = generator.generate().sql
        got = pqindex.scan(str(path), where=where).to_arrow()
        assert rows(got, None, ref.column_names) == rows(ref, where, ref.column_names), where
