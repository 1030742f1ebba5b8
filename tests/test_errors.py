"""Bad input gives a typed pqindex exception with a clear message, never a crash."""

from __future__ import annotations

import datetime as dt
import os
import random
import struct
import time
from pathlib import Path

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pqindex import _native

N = 2000


def _table() -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(N), pa.int64()),
            "s": [f"s{i % 50:02d}" for i in range(N)],
            "d": pa.array(
                [dt.date(2020, 1, 1) + dt.timedelta(days=i % 300) for i in range(N)],
                pa.date32(),
            ),
            "li": pa.array([[i, i + 1] for i in range(N)], pa.list_(pa.int64())),
        }
    )


@pytest.fixture
def valid(data_dir: Path) -> Path:
    """A small valid file with several pages per column chunk and a page index."""
    path = data_dir / "valid.parquet"
    pq.write_table(
        _table(),
        path,
        write_page_index=True,
        use_dictionary=False,
        data_page_size=256,
        write_batch_size=50,
        row_group_size=1000,
    )
    return path


def _footer_len(data: bytes) -> int:
    return struct.unpack("<I", data[-8:-4])[0]


def _read(source: object, where: str | None = None) -> pa.Table:
    return pqindex.scan(source, where).to_arrow()  # type: ignore[arg-type]


# --- sources -----------------------------------------------------------------------------


def test_missing_path(data_dir: Path) -> None:
    path = data_dir / "nope.parquet"
    with pytest.raises(pqindex.NotFoundError, match=r"nope\.parquet") as info:
        pqindex.scan(path)
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        pqindex.read_metadata(path)


def test_directory_without_data_files(data_dir: Path) -> None:
    (data_dir / "_SUCCESS").write_text("")
    (data_dir / ".hidden").mkdir()
    with pytest.raises(pqindex.PqindexError, match="no data files"):
        pqindex.scan(data_dir)


def test_text_file_is_not_parquet(data_dir: Path) -> None:
    path = data_dir / "notes.parquet"
    path.write_text("hello, this is not parquet\n" * 20)
    for call in (lambda: pqindex.scan(path), lambda: pqindex.read_metadata(path)):
        with pytest.raises(pqindex.InvalidFileError, match="not a Parquet file") as info:
            call()
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("cut", ["empty", "4", "7", "12", "half", "minus1", "minus8", "in_footer"])
def test_truncated_file(valid: Path, cut: str) -> None:
    data = valid.read_bytes()
    flen = _footer_len(data)
    size = {
        "empty": 0,
        "4": 4,
        "7": 7,
        "12": 12,
        "half": len(data) // 2,
        "minus1": len(data) - 1,
        "minus8": len(data) - 8,
        "in_footer": len(data) - 8 - flen // 2,
    }[cut]
    valid.write_bytes(data[:size])
    with pytest.raises(pqindex.InvalidFileError, match=r"valid\.parquet"):
        _read(valid)
    with pytest.raises(ValueError):
        pqindex.read_metadata(valid)


def test_footer_half_cut_keeps_tail(valid: Path) -> None:
    """Half the footer removed but the length + magic kept: the length no longer fits."""
    data = valid.read_bytes()
    flen = _footer_len(data)
    valid.write_bytes(data[: -8 - flen // 2] + data[-8:])
    with pytest.raises(pqindex.InvalidFileError):
        _read(valid)


@pytest.mark.parametrize("length", [0x7FFFFFFF, 0xFFFFFFFF, 10**9])
def test_footer_length_huge(valid: Path, length: int) -> None:
    data = bytearray(valid.read_bytes())
    data[-8:-4] = struct.pack("<I", length)
    valid.write_bytes(bytes(data))
    with pytest.raises(pqindex.InvalidFileError, match="footer"):
        _read(valid)


def test_footer_length_too_small(valid: Path) -> None:
    data = bytearray(valid.read_bytes())
    data[-8:-4] = struct.pack("<I", _footer_len(bytes(data)) // 2)
    valid.write_bytes(bytes(data))
    with pytest.raises(pqindex.InvalidFileError):
        _read(valid)


@pytest.mark.parametrize("flips", [1, 8])
@pytest.mark.parametrize("seed", range(12))
def test_footer_bit_flips(valid: Path, seed: int, flips: int) -> None:
    """Any outcome but a crash is acceptable; an exception must be a PqindexError."""
    data = bytearray(valid.read_bytes())
    flen = _footer_len(bytes(data))
    rnd = random.Random(seed)
    for _ in range(flips):
        i = rnd.randrange(len(data) - 8 - flen, len(data) - 8)
        data[i] ^= 1 << rnd.randrange(8)
    valid.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    for where in (None, '"k" > 1500', '"k" = 10'):
        try:
            _read(valid, where)
        except pqindex.PqindexError as exc:
            assert str(exc)
    try:
        pqindex.read_metadata(valid).pages()
    except pqindex.PqindexError as exc:
        assert str(exc)


def _page_index_region(path: Path) -> tuple[int, int]:
    """[start, end) of the page indexes pyarrow writes between the column chunks and the footer."""
    data = path.read_bytes()
    md = pq.ParquetFile(path).metadata
    end_of_chunks = 0
    for r in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(r).column(c)
            start = col.dictionary_page_offset or col.data_page_offset
            end_of_chunks = max(end_of_chunks, start + col.total_compressed_size)
    footer_start = len(data) - 8 - _footer_len(data)
    assert end_of_chunks < footer_start
    return end_of_chunks, footer_start


@pytest.mark.parametrize("part", ["column_index", "offset_index"])
def test_corrupt_page_index(valid: Path, part: str) -> None:
    assert pq.ParquetFile(valid).metadata.row_group(0).column(0).has_column_index
    start, end = _page_index_region(valid)
    mid = (start + end) // 2  # column indexes come first, offset indexes after
    lo, hi = (start, mid) if part == "column_index" else (mid, end)
    data = bytearray(valid.read_bytes())
    data[lo:hi] = b"\xff" * (hi - lo)
    valid.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match="page index") as info:
        _read(valid, '"k" = 10')
    assert isinstance(info.value, ValueError)
    # A full scan does not need the page index.
    assert _read(valid).num_rows == N


def test_corrupt_bloom_filter(data_dir: Path) -> None:
    path = data_dir / "bloom.parquet"
    # `u` scatters over a wide range, so its filters are worth reading for a lookup.
    table = _table().append_column("u", pa.array([i * 7919 % N * 1_000_003 for i in range(N)]))
    pqindex.write(table, path, bloom_filter_columns=["u"], row_group_size=500)
    cols = pqindex.read_metadata(path).columns().to_pylist()
    assert any(c["column"] == "u" and c["has_bloom_filter"] for c in cols)
    md = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for r in range(md.num_row_groups):
        offset = md.row_group(r).column(4).bloom_filter_offset
        assert offset is not None
        data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    # A damaged filter is no evidence: it is ignored with a warning, and the rows come
    # from the data.
    with pytest.warns(pqindex.IndexWarning, match="bloom filter"):
        assert _read(path, f'"u" = {1000 * 1_000_003}').num_rows == 1
    assert _read(path, '"k" > 10').num_rows == N - 11


def _shrink_bloom_headers(path: Path, column: int) -> None:
    """Halve the bitset length each bloom filter header of ``column`` declares, leaving
    the bitset and the footer's ``bloom_filter_length`` as written: a header that says
    less than the filter holds (seen in files from other writers)."""
    md = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for r in range(md.num_row_groups):
        offset = md.row_group(r).column(column).bloom_filter_offset
        assert data[offset] == 0x15  # field 1, i32: numBytes, a zigzag varint
        value, shift, at = 0, 0, offset + 1
        while True:
            byte = data[at]
            value |= (byte & 0x7F) << shift
            at += 1
            shift += 7
            if not byte & 0x80:
                break
        num_bytes = value >> 1
        smaller = (num_bytes // 2) << 1
        encoded = bytearray()
        while True:
            encoded.append((smaller & 0x7F) | (0x80 if smaller > 0x7F else 0))
            smaller >>= 7
            if not smaller:
                break
        assert len(encoded) == at - offset - 1, "the test needs a varint of the same length"
        data[offset + 1 : at] = encoded
    path.write_bytes(bytes(data))


def test_bloom_filter_header_declaring_less_than_the_filter_holds(data_dir: Path) -> None:
    """Probing such a filter maps values to other blocks than the writer did, so a value
    the column holds may look absent: the filter must not prune."""
    path = data_dir / "short_header.parquet"
    values = [i * 7919 % N * 1_000_003 for i in range(N)]
    table = _table().append_column("u", pa.array(values))
    pqindex.write(table, path, bloom_filter_columns=["u"], row_group_size=500)
    _shrink_bloom_headers(path, 4)
    pqindex.clear_metadata_cache()
    for value in values[:: N // 20]:
        with pytest.warns(pqindex.IndexWarning, match="declares a bitset"):
            assert _read(path, f'"u" = {value}').num_rows == 1


@pytest.mark.parametrize("seed", range(12))
def test_damaged_data_pages_fail_or_read_whole(data_dir: Path, seed: int) -> None:
    """Bytes damaged inside compressed data pages: the scan raises a pqindex error or
    returns every row, never a silently shorter result (a decoder panic on one thread
    must reach the consumer as an error, not as the end of that thread's rows)."""
    path = data_dir / "pages.parquet"
    n = 200_000
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "v": [f"v{i % 997}" for i in range(n)],
            "w": pa.array(range(0, 3 * n, 3), pa.int64()),
        }
    )
    pq.write_table(table, path, compression="zstd", use_dictionary=False, row_group_size=50_000)
    md = pq.ParquetFile(path).metadata
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for r in range(md.num_row_groups):
        chunk = md.row_group(r).column(rng.randrange(2))
        start = chunk.data_page_offset
        at = start + 32 + rng.randrange(chunk.total_compressed_size - 64)
        data[at : at + 8] = rng.randbytes(8)
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    # Without a predicate, and with one whose columns are in the output (decoded once, for
    # the filter and the output); it matches every row. With eight threads for four row
    # groups, spare threads read "v" and "w" after the predicate pass.
    for where, threads in ((None, 2), ('"k" >= 0', 2), ('"k" >= 0', 8)):
        scan = pqindex.scan(path, where, threads=threads, batch_size=4096)
        try:
            rows = scan.to_arrow().num_rows
        except pqindex.PqindexError as e:
            assert "pages.parquet" in str(e)
        else:
            assert rows == n
            assert (scan.metrics()["column_groups_read"] > 0) == (threads == 8)


@pytest.mark.parametrize("where", [None, '"k" >= 0'])
def test_a_damaged_zstandard_frame_is_an_invalid_file(data_dir: Path, where: str | None) -> None:
    """A data page whose Zstandard frame is damaged (pqindex decompresses Zstandard pages
    itself, with a context per thread) raises InvalidFileError naming the file, read
    unfiltered or through the predicate pass."""
    path = data_dir / "zstd.parquet"
    n = 50_000
    table = pa.table({"k": pa.array(range(n), pa.int64()), "v": [f"v{i}" for i in range(n)]})
    pq.write_table(table, path, compression="zstd", use_dictionary=False, data_page_size=64 << 10)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start, end = chunk.data_page_offset, chunk.data_page_offset + chunk.total_compressed_size
    data = bytearray(path.read_bytes())
    frames = [i for i in range(start, end - 4) if data[i : i + 4] == b"\x28\xb5\x2f\xfd"]
    assert len(frames) > 1, frames
    data[frames[1] : frames[1] + 4] = b"\x00" * 4
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match="Zstandard") as info:
        _read(path, where)
    assert "zstd.parquet" in str(info.value)


@pytest.mark.parametrize("where", [None, '"k" >= 0'])
def test_a_damaged_snappy_page_is_an_invalid_file(data_dir: Path, where: str | None) -> None:
    """A data page whose Snappy stream is damaged (pqindex decompresses Snappy pages itself,
    into reused buffers) raises InvalidFileError naming the file, read unfiltered or
    through the predicate pass."""
    path = data_dir / "snappy.parquet"
    n = 50_000
    table = pa.table({"k": pa.array(range(n), pa.int64()), "v": [f"v{i}" for i in range(n)]})
    pq.write_table(table, path, compression="snappy", use_dictionary=False, data_page_size=64 << 10)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert chunk.compression == "SNAPPY"
    assert chunk.total_compressed_size > 4_000
    # Inside the first page's stream, well past its header: copies reaching 4 GiB back.
    at = chunk.data_page_offset + 1_000
    data = bytearray(path.read_bytes())
    data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    pqindex.clear_metadata_cache()
    with pytest.raises(pqindex.InvalidFileError, match="Snappy") as info:
        _read(path, where)
    assert "snappy.parquet" in str(info.value)


# --- predicates ----------------------------------------------------------------------------


def test_unknown_column_in_predicate(valid: Path) -> None:
    with pytest.raises(pqindex.PredicateError, match="zz") as info:
        pqindex.scan(valid, '"zz" = 1')
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("where", ['"k" = ', "k >>> 3", '"k" = 1 AND', "(("])
def test_syntax_error(valid: Path, where: str) -> None:
    with pytest.raises(pqindex.PredicateError, match="parse"):
        pqindex.scan(valid, where)


@pytest.mark.parametrize(
    ("where", "needle"),
    [('"s" = 5', "s"), ("\"k\" = 'abc'", "abc"), ("\"d\" = 'not a date'", "not a date")],
)
def test_wrong_literal_type(valid: Path, where: str, needle: str) -> None:
    with pytest.raises(pqindex.PredicateError, match=needle) as info:
        pqindex.scan(valid, where)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("where", ['foo("k") = 1', "upper(\"s\") = 'A'"])
def test_unsupported_function(valid: Path, where: str) -> None:
    with pytest.raises(pqindex.UnsupportedError, match="not supported") as info:
        pqindex.scan(valid, where)
    assert isinstance(info.value, NotImplementedError)


def test_predicate_on_list_column(valid: Path) -> None:
    with pytest.raises(pqindex.UnsupportedError, match="li") as info:
        pqindex.scan(valid, '"li" = 1')
    assert isinstance(info.value, NotImplementedError)


# --- arguments -----------------------------------------------------------------------------
# There is no InvalidArgumentError in pqindex._errors; a bad argument should at least be a
# PqindexError that is also a ValueError.


def test_unknown_name_in_columns(valid: Path) -> None:
    with pytest.raises(pqindex.PqindexError, match="nope") as info:
        pqindex.scan(valid, columns=["nope"])
    assert isinstance(info.value, ValueError)


def test_batch_size_zero(valid: Path) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        pqindex.scan(valid, batch_size=0)


def test_empty_source_list() -> None:
    with pytest.raises(pqindex.SourceError):
        pqindex.scan([])


# --- sources that are not loose Parquet, changed files, consumed scans ---------------------


def test_delta_table_directory(valid: Path, data_dir: Path) -> None:
    table = data_dir / "delta"
    (table / "_delta_log").mkdir(parents=True)
    (table / "_delta_log" / "00000000000000000000.json").write_text("{}")
    os.replace(valid, table / "part-0.parquet")
    with pytest.raises(pqindex.SourceError, match="Delta") as info:
        pqindex.scan(table)
    assert isinstance(info.value, ValueError)


def test_a_scan_reads_the_file_it_planned(data_dir: Path) -> None:
    """A file replaced by rename after planning (as add_indexes and drop_indexes replace
    files) does not abort the scan: it reads the version it planned."""
    path = data_dir / "x.parquet"
    pq.write_table(pa.table({"k": pa.array(range(1000), pa.int64())}), path)
    scan = pqindex.scan(path, '"k" >= 990')
    tmp = data_dir / "x.tmp"
    pq.write_table(pa.table({"k": pa.array(range(5000, 7000), pa.int64())}), tmp)
    os.replace(tmp, path)
    assert scan.to_arrow().column("k").to_pylist() == list(range(990, 1000))


def test_a_file_written_over_in_place_after_planning_is_refused(data_dir: Path) -> None:
    """A file truncated and written again under the same inode after planning has lost the
    bytes the plan points at: the read fails with FileChangedError instead of decoding the
    new bytes with the old footer."""
    path = data_dir / "x.parquet"
    pq.write_table(pa.table({"k": pa.array(range(1000), pa.int64())}), path)
    scan = pqindex.scan(path, '"k" >= 990')
    time.sleep(0.01)
    pq.write_table(pa.table({"k": pa.array(range(5000, 7000), pa.int64())}), path)
    with pytest.raises(pqindex.FileChangedError, match="changed"):
        scan.to_arrow()


def test_units_of_a_replaced_file_are_refused(data_dir: Path) -> None:
    """Units read in another process (Spark executors) name the file they planned; a file
    replaced since fails the read instead of mixing versions."""
    path = data_dir / "x.parquet"
    pq.write_table(pa.table({"k": pa.array(range(1000), pa.int64())}), path)
    scan = pqindex.scan(path, '"k" >= 990')
    units = scan.units()
    tmp = data_dir / "x.tmp"
    pq.write_table(pa.table({"k": pa.array(range(5000, 7000), pa.int64())}), tmp)
    os.replace(tmp, path)
    with pytest.raises(pqindex.FileChangedError, match="changed"):
        _native.read_units(units, now_ns=scan.now_ns, where='"k" >= 990').to_arrow()


def test_scan_consumed_twice(valid: Path) -> None:
    scan = pqindex.scan(valid, '"k" < 5')
    assert scan.to_arrow().num_rows == 5
    with pytest.raises(pqindex.ScanConsumedError):
        scan.to_arrow()
    with pytest.raises(pqindex.ScanConsumedError):
        pa.table(scan)
    # explain and metrics still work after consumption.
    assert "pqindex scan" in scan.explain()
    assert scan.metrics()["rows_matched"] == 5


def test_scan_consumed_via_stream(valid: Path) -> None:
    scan = pqindex.scan(valid)
    assert pa.table(scan).num_rows == N
    with pytest.raises(pqindex.ScanConsumedError):
        scan.to_arrow()


def test_files_with_different_schemas(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": [1, 2]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": ["x", "y"]}), tmp_path / "b.parquet")
    with pytest.raises(pqindex.SourceError, match=r"b\.parquet.*schema differs") as info:
        pqindex.scan(tmp_path, where="k IS NOT NULL")
    assert isinstance(info.value, ValueError)


def test_files_whose_arrow_hints_differ_are_told_apart(tmp_path: Path) -> None:
    """The same Parquet schema (a UTF-8 byte array) read as different Arrow types: only the
    writer's ARROW:schema hint tells the files apart."""
    pq.write_table(pa.table({"k": pa.array(["a"], pa.string())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": pa.array(["b"], pa.large_string())}), tmp_path / "b.parquet")
    with pytest.raises(pqindex.SourceError, match=r"b\.parquet.*schema differs"):
        pqindex.scan(tmp_path, where="k IS NOT NULL").to_arrow()
    # Files of one schema whose footers differ only in other key/value entries agree.
    (tmp_path / "b.parquet").unlink()
    other = pa.table({"k": pa.array(["c"], pa.string())}).replace_schema_metadata({"x": "y"})
    pq.write_table(other, tmp_path / "c.parquet")
    got = pqindex.scan(tmp_path, where="k IS NOT NULL").to_arrow()
    assert sorted(got.column("k").to_pylist()) == ["a", "c"]


def test_inconsistent_partition_directories(tmp_path: Path) -> None:
    for sub in ("year=2024", "year=2025/month=1"):
        (tmp_path / sub).mkdir(parents=True)
        pq.write_table(pa.table({"k": [1]}), tmp_path / sub / "part.parquet")
    with pytest.raises(pqindex.SourceError, match="inconsistent partition directories"):
        pqindex.scan(tmp_path)


# --- units tables read in another process --------------------------------------------------


def test_units_table_damage_is_refused(valid: Path) -> None:
    """read_units refuses tables that are not a plan's units, naming what is wrong, and a
    plan for a file that has since changed."""
    from pqindex._native import read_units

    scan = pqindex.scan(valid, '"k" BETWEEN 10 AND 20')
    units = scan.units()
    now = scan.now_ns
    with pytest.raises(pqindex.UnsupportedError, match="units table version"):
        read_units(pa.table({"x": [1]}), now_ns=now)

    def with_column(name: str, values: pa.Array) -> pa.Table:
        i = units.schema.get_field_index(name)
        return units.set_column(i, name, values)

    n = units.num_rows
    empty_ranges = pa.array([[5]] * n, pa.list_(pa.uint64()))
    bad = with_column("range_ends", pa.array([[1]] * n, pa.list_(pa.uint64())))
    bad = bad.set_column(bad.schema.get_field_index("range_starts"), "range_starts", empty_ranges)
    with pytest.raises(pqindex.InvalidArgumentError, match="ranges"):
        read_units(bad, now_ns=now)
    with pytest.raises(pqindex.InvalidArgumentError, match="no column size"):
        read_units(units.drop_columns(["size"]), now_ns=now)
    with pytest.raises(pqindex.InvalidArgumentError, match="batch_size"):
        read_units(units, now_ns=now, batch_size=0)

    other_size = with_column("size", pa.array([1] * n, pa.uint64()))
    with pytest.raises(pqindex.FileChangedError, match="size"):
        read_units(other_size, now_ns=now)
    assert read_units(units, now_ns=now, where='"k" BETWEEN 10 AND 20').to_arrow().num_rows == 11
