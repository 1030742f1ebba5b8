"""Files that declare absurd sizes give a typed error or are read within a budget: never an
abort on a failed allocation, never the kernel's OOM killer.

Each file is written small and valid by pyarrow, then one Thrift field or length is
patched (a page header's sizes or value count, a list's declared length, a chunk's byte
range). Every read runs in a child process whose address space is limited to 2 GiB above
what it had after its imports, so an allocation sized from a hostile field fails there
(and aborts the child) instead of exhausting the machine; the child also reports how
much its resident set grew.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

MIB = 1 << 20
#: Address space a child may add to what it holds after its imports.
ADDRESS_LIMIT = 2 << 30
#: Resident memory a child may add: what the scan's stated budget allows for these files.
RSS_BUDGET = 512 * MIB
I32_MAX = (1 << 31) - 1

# --- Thrift compact protocol: enough to decode, patch and re-encode Parquet's structs ------

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


@dataclass
class Raw:
    """A value already encoded (a struct's bytes, repeated without encoding it again)."""

    data: bytes


@dataclass
class ThriftList:
    elem: int
    items: list[Any]
    #: A declared length to write instead of ``len(items)`` (a hostile list).
    declared: int | None = None


Struct = dict[int, tuple[int, Any]]


class Decoder:
    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf, self.pos = buf, pos

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, ttype: int) -> Any:
        if ttype in (TRUE, FALSE):
            return ttype == TRUE
        if ttype == BYTE:
            return self.byte()
        if ttype in (I16, I32, I64):
            return self.zigzag()
        if ttype == DOUBLE:
            self.pos += 8
            return struct.unpack("<d", self.buf[self.pos - 8 : self.pos])[0]
        if ttype == BINARY:
            n = self.varint()
            self.pos += n
            return self.buf[self.pos - n : self.pos]
        if ttype in (LIST, SET):
            head = self.byte()
            n, elem = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            if elem in (TRUE, FALSE):
                return ThriftList(elem, [self.byte() == 1 for _ in range(n)])
            return ThriftList(elem, [self.value(elem) for _ in range(n)])
        if ttype == STRUCT:
            return self.struct()
        raise ValueError(f"thrift type {ttype} not supported here")

    def struct(self) -> Struct:
        out: Struct = {}
        last = 0
        while True:
            head = self.byte()
            if head == STOP:
                return out
            delta, ttype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            out[fid] = (ttype, self.value(ttype))
            last = fid


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(v: int) -> bytes:
    return _varint((v << 1) ^ (v >> 63))


def _encode_value(ttype: int, v: Any) -> bytes:
    if isinstance(v, Raw):
        return v.data
    if ttype in (TRUE, FALSE):
        return b""
    if ttype == BYTE:
        return bytes([v & 0xFF])
    if ttype in (I16, I32, I64):
        return _zigzag(v)
    if ttype == DOUBLE:
        return struct.pack("<d", v)
    if ttype == BINARY:
        return _varint(len(v)) + bytes(v)
    if ttype in (LIST, SET):
        n = len(v.items) if v.declared is None else v.declared
        head = bytes([(n << 4) | v.elem]) if n < 15 else bytes([0xF0 | v.elem]) + _varint(n)
        if v.elem in (TRUE, FALSE):
            return head + bytes(1 if x else 2 for x in v.items)
        return head + b"".join(_encode_value(v.elem, x) for x in v.items)
    if ttype == STRUCT:
        return encode_struct(v)
    raise ValueError(f"thrift type {ttype} not supported here")


def encode_struct(s: Struct) -> bytes:
    out = bytearray()
    last = 0
    for fid in sorted(s):
        ttype, v = s[fid]
        if ttype in (TRUE, FALSE):
            ttype = TRUE if v else FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | ttype)
        else:
            out.append(ttype)
            out += _zigzag(fid)
        out += _encode_value(ttype, v)
        last = fid
    out.append(STOP)
    return bytes(out)


# --- Parquet field ids used below ---------------------------------------------------------

# FileMetaData
FMD_SCHEMA, FMD_NUM_ROWS, FMD_ROW_GROUPS = 2, 3, 4
# SchemaElement
SE_NUM_CHILDREN = 5
# RowGroup
RG_COLUMNS, RG_NUM_ROWS = 1, 3
# ColumnChunk
CC_META, CC_OFFSET_INDEX_OFFSET, CC_OFFSET_INDEX_LENGTH = 3, 4, 5
CC_COLUMN_INDEX_OFFSET, CC_COLUMN_INDEX_LENGTH = 6, 7
# ColumnMetaData
CMD_CODEC, CMD_NUM_VALUES, CMD_TOTAL_UNCOMPRESSED, CMD_TOTAL_COMPRESSED = 4, 5, 6, 7
CMD_DATA_PAGE_OFFSET, CMD_DICTIONARY_PAGE_OFFSET = 9, 11
# PageHeader
PH_TYPE, PH_UNCOMPRESSED, PH_COMPRESSED = 1, 2, 3
PH_DATA, PH_DICTIONARY, PH_DATA_V2 = 5, 7, 8
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
# DataPageHeader, DictionaryPageHeader, DataPageHeaderV2: num_values is field 1 of each
NUM_VALUES = 1
V2_NUM_ROWS, V2_DEF_LEVELS_LENGTH = 3, 5


def footer(data: bytes) -> Struct:
    n = struct.unpack("<I", data[-8:-4])[0]
    return Decoder(data, len(data) - 8 - n).struct()


def with_footer(data: bytes, fmd: Struct) -> bytes:
    """``data`` with its footer replaced by ``fmd``."""
    n = struct.unpack("<I", data[-8:-4])[0]
    body = encode_struct(fmd)
    return data[: len(data) - 8 - n] + body + struct.pack("<I", len(body)) + b"PAR1"


def chunks(fmd: Struct) -> list[Struct]:
    """Every ColumnChunk's ColumnMetaData, row group by row group."""
    return [cc[CC_META][1] for rg in fmd[FMD_ROW_GROUPS][1].items for cc in rg[RG_COLUMNS][1].items]


def with_offset_index(data: bytes, column: int, edit: Callable[[list[Struct]], None]) -> bytes:
    """``data`` with the offset index of column ``column`` of the first row group edited
    (``edit`` gets its page locations) and written after the file's body, where its
    footer points to it."""
    fmd = footer(data)
    body_end = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    chunk = fmd[FMD_ROW_GROUPS][1].items[0][RG_COLUMNS][1].items[column]
    index = Decoder(data, chunk[CC_OFFSET_INDEX_OFFSET][1]).struct()
    edit(index[OI_PAGES][1].items)
    encoded = encode_struct(index)
    chunk[CC_OFFSET_INDEX_OFFSET] = (I64, body_end)
    chunk[CC_OFFSET_INDEX_LENGTH] = (I32, len(encoded))
    body = encode_struct(fmd)
    return data[:body_end] + encoded + body + struct.pack("<I", len(body)) + b"PAR1"


PageEdit = Callable[[int, Struct], None]


def rewrite_pages(data: bytes, edit: PageEdit) -> bytes:
    """The file with every page header passed through ``edit(chunk_no, header)`` and the
    chunks' offsets and sizes in the footer updated. The file must have no page index
    (its locations would go stale)."""
    fmd = footer(data)
    out = bytearray(b"PAR1")
    for no, meta in enumerate(chunks(fmd)):
        dict_at = meta.get(CMD_DICTIONARY_PAGE_OFFSET, (I64, None))[1]
        start = meta[CMD_DATA_PAGE_OFFSET][1] if dict_at is None else dict_at
        end = start + meta[CMD_TOTAL_COMPRESSED][1]
        new_start = len(out)
        pos = start
        new_data_at = None
        while pos < end:
            d = Decoder(data, pos)
            header = d.struct()
            body = data[d.pos : d.pos + header[PH_COMPRESSED][1]]
            pos = d.pos + len(body)
            if header[PH_TYPE][1] != DICTIONARY_PAGE and new_data_at is None:
                new_data_at = len(out)
            edit(no, header)
            out += encode_struct(header) + body
        meta[CMD_DATA_PAGE_OFFSET] = (I64, new_data_at)
        if dict_at is not None:
            meta[CMD_DICTIONARY_PAGE_OFFSET] = (I64, new_start)
        meta[CMD_TOTAL_COMPRESSED] = (I64, len(out) - new_start)
    for rg in fmd[FMD_ROW_GROUPS][1].items:
        for cc in rg[RG_COLUMNS][1].items:
            for f in (
                CC_OFFSET_INDEX_OFFSET,
                CC_OFFSET_INDEX_LENGTH,
                CC_COLUMN_INDEX_OFFSET,
                CC_COLUMN_INDEX_LENGTH,
            ):
                cc.pop(f, None)
    body = encode_struct(fmd)
    return bytes(out) + body + struct.pack("<I", len(body)) + b"PAR1"


def set_page(
    page_types: tuple[int, ...], field: int, value: int, sub: int | None = None
) -> PageEdit:
    """An edit setting ``field`` (or field ``sub`` of the nested header in ``field``) of
    pages of ``page_types``."""

    def edit(_chunk: int, header: Struct) -> None:
        if header[PH_TYPE][1] not in page_types:
            return
        if sub is None:
            header[field] = (I32, value)
        elif field in header:
            nested = header[field][1]
            nested[sub] = (I32, value)

    return edit


# --- files -------------------------------------------------------------------------------

ROWS = 5_000


def table() -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "s": [f"value-{i % 37:03d}" for i in range(ROWS)],
        }
    )


def write(path: Path, compression: str = "snappy", **kw: Any) -> bytes:
    pq.write_table(table(), path, compression=compression, **kw)
    return path.read_bytes()


# --- running a scan in a limited child ----------------------------------------------------

#: What every limited child starts with: ``status(field)`` reads its /proc/self/status in
#: bytes, and ``limit(extra)`` caps its address space at ``extra`` above what it holds now.
LIMITED = textwrap.dedent(
    """
    import json, resource, sys
    import pqindex, pyarrow

    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024

    def limit(extra):
        resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + extra, resource.RLIM_INFINITY))
    """
)

CHILD = LIMITED + textwrap.dedent(
    """
    import time

    path, where = sys.argv[1], sys.argv[2] or None
    limit(int(sys.argv[3]))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    out = {}
    start = time.perf_counter()
    try:
        out["rows"] = pqindex.scan(path, where).to_arrow().num_rows
    except pqindex.PqindexError as e:
        out["error"] = type(e).__name__
        out["message"] = str(e)
    except Exception as e:  # an untyped error: the test fails on it
        out["untyped"] = f"{type(e).__module__}.{type(e).__name__}: {e}"
    out["rss_added"] = status("VmHWM") - base
    out["seconds"] = time.perf_counter() - start
    print(json.dumps(out))
    """
)


def run_limited(path: Path, where: str | None = None) -> dict[str, Any]:
    """Scan ``path`` in a child limited to ``ADDRESS_LIMIT`` more address space."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), where or "", str(ADDRESS_LIMIT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    assert proc.returncode == 0, (
        f"the scan of {path.name} died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    )
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "untyped" not in out, out["untyped"]
    assert out["rss_added"] < RSS_BUDGET, f"{path.name}: resident set grew {out['rss_added']} B"
    return out


def assert_invalid(out: dict[str, Any], *needles: str) -> None:
    assert out.get("error") == "InvalidFileError", out
    for n in needles:
        assert n in out["message"], out["message"]


# --- page headers -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd", "gzip"])
def test_data_page_declaring_2gib_uncompressed(tmp_path: Path, codec: str) -> None:
    data = write(tmp_path / "ok.parquet", compression=codec, use_dictionary=False)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(rewrite_pages(data, set_page((DATA_PAGE,), PH_UNCOMPRESSED, I32_MAX)))
    out = run_limited(bad)
    if codec == "none":
        # Nothing is decompressed: the size is not used, the rows are read as they are.
        assert out.get("rows") == ROWS or out.get("error") == "InvalidFileError", out
    else:
        assert_invalid(out, "page")


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
def test_searched_pages_declaring_2gib_uncompressed(tmp_path: Path, codec: str) -> None:
    """The PLAIN pages an `=` on a string column searches for its bytes before the
    predicate pass are bounded as the pages read for rows are."""
    ok = tmp_path / "ok.parquet"
    data = write(
        ok,
        compression=codec,
        use_dictionary=False,
        write_page_index=True,
        data_page_size=1_024,
        write_batch_size=100,
    )
    where = "s = 'value-005'"
    searched = pqindex.scan(str(ok), where=where)
    assert searched.to_arrow().num_rows == len([i for i in range(ROWS) if i % 37 == 5])
    assert searched.metrics()["plain_pages_searched"] > 0
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(rewrite_pages(data, set_page((DATA_PAGE,), PH_UNCOMPRESSED, I32_MAX)))
    out = run_limited(bad, where)
    if codec == "none":
        assert out.get("rows") is not None or out.get("error") == "InvalidFileError", out
    else:
        assert_invalid(out, "page")


def test_searched_pages_shorter_in_the_offset_index_than_their_headers(tmp_path: Path) -> None:
    """The offset index gives each PLAIN page of `s` 10 bytes fewer than its header and
    data take: the page searched for a needle's bytes is refused as damaged, not read
    past its end."""
    data = write(
        tmp_path / "ok.parquet",
        use_dictionary=False,
        write_page_index=True,
        data_page_size=1_024,
        write_batch_size=100,
    )

    def shorter(pages: list[Struct]) -> None:
        for page in pages:
            page[PL_SIZE] = (I32, page[PL_SIZE][1] - 10)

    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_offset_index(data, 1, shorter))
    assert_invalid(run_limited(bad, "s = 'value-005'"), "bad.parquet", "page longer than its bytes")


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_data_page_declaring_2_pow_31_values(tmp_path: Path, version: str) -> None:
    data = write(tmp_path / "ok.parquet", use_dictionary=False, data_page_version=version)
    page_type, nested = (DATA_PAGE, PH_DATA) if version == "1.0" else (DATA_PAGE_V2, PH_DATA_V2)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(rewrite_pages(data, set_page((page_type,), nested, I32_MAX, NUM_VALUES)))
    out = run_limited(bad)
    assert out.get("error") == "InvalidFileError" or out.get("rows") == ROWS, out


#: A whole scan, and lookups that ask the chunks' dictionary pages before their data pages
#: (a string absent but within the chunk's bounds, a present integer).
DICTIONARY_READS = [None, "s = 'value-0005'", "k = 5"]


@pytest.mark.parametrize("where", DICTIONARY_READS)
@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
def test_dictionary_page_declaring_2_pow_31_values(
    tmp_path: Path, codec: str, where: str | None
) -> None:
    data = write(tmp_path / "ok.parquet", compression=codec)
    bad = tmp_path / "bad.parquet"
    edit = set_page((DICTIONARY_PAGE,), PH_DICTIONARY, I32_MAX, NUM_VALUES)
    bad.write_bytes(rewrite_pages(data, edit))
    assert_invalid(run_limited(bad, where), "dictionary")


@pytest.mark.parametrize("where", DICTIONARY_READS)
@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip"])
def test_dictionary_page_declaring_2gib(tmp_path: Path, codec: str, where: str | None) -> None:
    data = write(tmp_path / "ok.parquet", compression=codec)
    bad = tmp_path / "bad.parquet"

    def edit(_chunk: int, header: Struct) -> None:
        if header[PH_TYPE][1] == DICTIONARY_PAGE:
            header[PH_UNCOMPRESSED] = (I32, I32_MAX)
            header[PH_DICTIONARY][1][NUM_VALUES] = (I32, I32_MAX // 16)

    bad.write_bytes(rewrite_pages(data, edit))
    # The footer claims 4 GiB for the chunk too.
    fmd = footer(bad.read_bytes())
    for meta in chunks(fmd):
        meta[CMD_TOTAL_UNCOMPRESSED] = (I64, 4 << 30)
    bad.write_bytes(with_footer(bad.read_bytes(), fmd))
    assert_invalid(run_limited(bad, where), "page")


def test_page_larger_than_its_chunk(tmp_path: Path) -> None:
    data = write(tmp_path / "ok.parquet", use_dictionary=False)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(rewrite_pages(data, set_page((DATA_PAGE,), PH_COMPRESSED, I32_MAX)))
    # The page's bytes are the chunk's rest and the footer: a header cannot reach past.
    out = run_limited(bad)
    assert out.get("error") == "InvalidFileError", out


# --- the footer ---------------------------------------------------------------------------


def test_column_chunk_longer_than_the_file(tmp_path: Path) -> None:
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    for meta in chunks(fmd):
        meta[CMD_TOTAL_COMPRESSED] = (I64, 1 << 40)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad))


def test_column_chunk_starting_past_the_end(tmp_path: Path) -> None:
    data = write(tmp_path / "ok.parquet", use_dictionary=False)
    fmd = footer(data)
    for meta in chunks(fmd):
        meta[CMD_DATA_PAGE_OFFSET] = (I64, (1 << 62))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad))


@pytest.mark.parametrize("rows", [I32_MAX, 1 << 62])
def test_row_group_declaring_absurd_rows(tmp_path: Path, rows: int) -> None:
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    fmd[FMD_NUM_ROWS] = (I64, rows)
    for rg in fmd[FMD_ROW_GROUPS][1].items:
        rg[RG_NUM_ROWS] = (I64, rows)
        for cc in rg[RG_COLUMNS][1].items:
            cc[CC_META][1][CMD_NUM_VALUES] = (I64, rows)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    out = run_limited(bad)
    assert out.get("error") == "InvalidFileError", out


@pytest.mark.parametrize("which", ["row_groups", "schema", "columns"])
def test_footer_list_declaring_2_pow_31_entries(tmp_path: Path, which: str) -> None:
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    if which == "row_groups":
        fmd[FMD_ROW_GROUPS][1].declared = I32_MAX
    elif which == "schema":
        fmd[FMD_SCHEMA][1].declared = I32_MAX
    else:
        fmd[FMD_ROW_GROUPS][1].items[0][RG_COLUMNS][1].declared = I32_MAX
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad))


def test_schema_element_claiming_2_pow_31_children(tmp_path: Path) -> None:
    """A group's child count is a plain integer, which the parquet crate reserves a vector
    for before it reads the children: five bytes asking for 16 GiB."""
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    fmd[FMD_SCHEMA][1].items[0][SE_NUM_CHILDREN] = (I32, I32_MAX)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad), "children")


def test_a_schema_nested_to_the_limit_is_planned_and_deeper_is_refused(tmp_path: Path) -> None:
    """The parquet crate builds a schema's tree by recursion, a level a group: a chain of
    100,000 groups overflowed the stack (a segfault). 256 levels, root included, are
    accepted and planned (pyarrow itself refuses to read past 100)."""
    arr: pa.Array = pa.array(range(10), pa.int64())
    for _ in range(255):
        arr = pa.StructArray.from_arrays([arr], names=["x"])
    deep = tmp_path / "deep.parquet"
    pq.write_table(pa.table({"s": arr}), deep, store_schema=False)
    code = (
        "import pqindex, sys\n"
        "s = pqindex.scan(sys.argv[1], where='s' + '.x' * 255 + ' > 3')\n"
        "print(s.metrics()['rows_selected'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(deep)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == "10"

    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    root, k, _ = fmd[FMD_SCHEMA][1].items
    chain = [{4: (BINARY, b"g"), 3: (I32, 0), 5: (I32, 1)} for _ in range(100_000)]
    fmd[FMD_SCHEMA][1].items = [{**root, SE_NUM_CHILDREN: (I32, 1)}, *chain, k]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad), "nests deeper than 256")


def test_row_groups_declared_as_many_as_the_bytes_left(tmp_path: Path) -> None:
    """Forty million row groups, each an empty struct (one stop byte): the list fits the
    bytes left at a byte an element, yet the parquet crate would reserve forty million row
    groups (about 4 GB) before finding the first one lacks its required fields."""
    n = 40_000_000
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    fmd[FMD_ROW_GROUPS] = (LIST, ThriftList(STRUCT, [Raw(bytes(n))], declared=n))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad), "row groups")


def test_offset_index_declaring_as_many_pages_as_its_bytes(tmp_path: Path) -> None:
    """A chunk's OffsetIndex replaced by one of a hundred million empty page locations
    (a stop byte each): 2.4 GB reserved by the parquet crate, were the count not checked
    against the bytes a page location takes."""
    n = 100_000_000
    data = write(tmp_path / "ok.parquet", write_page_index=True)
    fmd = footer(data)
    body_end = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    index = encode_struct({1: (LIST, ThriftList(STRUCT, [Raw(bytes(n))], declared=n))})
    chunk = fmd[FMD_ROW_GROUPS][1].items[0][RG_COLUMNS][1].items[0]
    chunk[CC_OFFSET_INDEX_OFFSET] = (I64, body_end)
    chunk[CC_OFFSET_INDEX_LENGTH] = (I32, len(index))
    body = encode_struct(fmd)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(data[:body_end] + index + body + struct.pack("<I", len(body)) + b"PAR1")
    assert_invalid(run_limited(bad, "k = 77"), "page locations")


# OffsetIndex and PageLocation
OI_PAGES = 1
PL_OFFSET, PL_SIZE, PL_FIRST_ROW = 1, 2, 3


def _swapped(pages: list[Struct]) -> None:
    pages[1], pages[2] = pages[2], pages[1]


def _late_start(pages: list[Struct]) -> None:
    pages[0][PL_FIRST_ROW] = (I64, 1)


def _past_the_rows(pages: list[Struct]) -> None:
    pages[-1][PL_FIRST_ROW] = (I64, ROWS)


def _two_at_one_row(pages: list[Struct]) -> None:
    pages[2][PL_FIRST_ROW] = pages[1][PL_FIRST_ROW]


@pytest.mark.parametrize("edit", [_swapped, _late_start, _past_the_rows, _two_at_one_row])
def test_an_offset_index_out_of_row_order_is_refused(
    tmp_path: Path, edit: Callable[[list[Struct]], None]
) -> None:
    """Readers find a row's page by a binary search of the pages' first rows: an offset
    index whose pages do not start at rows in order, from row 0 and within the row group,
    could hide rows from a lookup, and is refused as corrupt."""
    data = write(
        tmp_path / "ok.parquet", write_page_index=True, data_page_size=1024, write_batch_size=500
    )

    def checked_edit(pages: list[Struct]) -> None:
        assert len(pages) >= 3 and pages[0][PL_FIRST_ROW][1] == 0
        edit(pages)

    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_offset_index(data, 0, checked_edit))
    assert_invalid(run_limited(bad, "k = 777"), "bad.parquet", "do not start at rows in order")
    # The file as written reads.
    assert run_limited(tmp_path / "ok.parquet", "k = 777").get("rows") == 1


MUTATIONS = LIMITED + textwrap.dedent(
    """
    import random

    src, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    limit(int(sys.argv[4]))
    data = open(src, "rb").read()
    footer = int.from_bytes(data[-8:-4], "little")
    # The footer and what precedes it: the page index, then the last data pages.
    start = max(4, len(data) - 8 - 3 * footer)
    rng = random.Random(20261127)
    out = {"read": 0, "refused": 0}
    for i in range(count):
        bad = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            bad[rng.randrange(start, len(data) - 8)] = rng.randrange(256)
        path = f"{work}/{i % 2}.parquet"
        with open(path, "wb") as f:
            f.write(bad)
        pqindex.clear_metadata_cache()
        try:
            pqindex.read_metadata(path)
            out["read"] += 1
        except pqindex.PqindexError:
            out["refused"] += 1
    print(json.dumps(out))
    """
)


def test_mutated_footers_and_page_indexes_are_read_or_refused(tmp_path: Path) -> None:
    """Bytes of a footer and page index changed at random, one to three at a time: each
    file's metadata is read or refused with a typed error, within the address-space
    limit (a child that dies, or raises anything else, fails the test)."""
    src = tmp_path / "ok.parquet"
    pq.write_table(table(), src, row_group_size=1_000, write_page_index=True)
    proc = subprocess.run(
        [sys.executable, "-c", MUTATIONS, str(src), str(tmp_path), "4000", str(ADDRESS_LIMIT)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["read"] + out["refused"] == 4000
    assert out["refused"] > 400 and out["read"] > 400, out


def test_footer_claiming_1gib_in_a_small_file(tmp_path: Path) -> None:
    data = bytearray(write(tmp_path / "ok.parquet"))
    data[-8:-4] = struct.pack("<I", 1 << 30)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    assert_invalid(run_limited(bad), "footer")


def test_footer_claiming_1gib_of_a_sparse_file(tmp_path: Path) -> None:
    """A 1 GiB hole before a footer that claims all of it: within the file, so the only
    bound is the stated one."""
    bad = tmp_path / "bad.parquet"
    with bad.open("wb") as f:
        f.write(b"PAR1")
        f.seek((1 << 30) + 4)
        f.write(struct.pack("<I", 1 << 30) + b"PAR1")
    assert_invalid(run_limited(bad), "footer")


# --- real files of many row groups and columns --------------------------------------------


def test_100k_row_groups_are_refused(tmp_path: Path) -> None:
    """Parquet numbers row groups with an i16: the parquet crate reads at most 32,767. The
    footer lists the file's one row group 100,000 times (about 10 MB of Thrift)."""
    data = write(tmp_path / "ok.parquet")
    fmd = footer(data)
    groups = fmd[FMD_ROW_GROUPS][1]
    one = Raw(encode_struct(groups.items[0]))
    groups.items = [one] * 100_000
    fmd[FMD_NUM_ROWS] = (I64, ROWS * 100_000)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(with_footer(data, fmd))
    assert_invalid(run_limited(bad, "k = 77"), "32768")


def test_32767_row_groups(tmp_path: Path) -> None:
    """The most row groups the parquet crate reads, each a unit of the scan."""
    path = tmp_path / "many.parquet"
    rows = 32_767
    pq.write_table(pa.table({"k": pa.array(range(rows), pa.int64())}), path, row_group_size=1)
    out = run_limited(path)
    assert out.get("rows") == rows, out


def test_10k_columns(tmp_path: Path) -> None:
    """Planned with the page index of every column, read whole where the predicate holds."""
    path = tmp_path / "wide.parquet"
    columns = {f"c{i}": pa.array(range(20), pa.int64()) for i in range(10_000)}
    pq.write_table(pa.table(columns), path, write_page_index=True)
    out = run_limited(path, "c0 = 7 OR c9999 = 8")
    assert out.get("rows") == 2, out


def test_the_child_can_fail() -> None:
    """The limit is real: an allocation past it kills the child (the harness would report
    an abort as a failure)."""
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))\n"
        "b = bytearray(2 << 30)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "MemoryError" in proc.stderr
    assert resource.RLIMIT_AS  # the platform has it


# --- the stream's read-ahead --------------------------------------------------------------


def test_read_ahead_setting_and_exact_rows(tmp_path: Path) -> None:
    import pqindex

    path = tmp_path / "rg.parquet"
    pq.write_table(table(), path, row_group_size=500)
    assert pqindex.read_ahead() == 256 << 20
    try:
        pqindex.set_read_ahead(0)
        assert pqindex.read_ahead() == 0
        # No room ahead: the stream reads one row group at a time, every row in order.
        got = pa.table(pqindex.scan(path, batch_size=100)).column("k").to_pylist()
        assert got == list(range(ROWS))
    finally:
        pqindex.set_read_ahead(256 << 20)
    for read_ahead in (0, 1 << 10, 1 << 30):
        scan = pqindex.scan(path, "k >= 777 AND k < 4321", batch_size=64, read_ahead=read_ahead)
        got = [k for b in pa.RecordBatchReader.from_stream(scan) for k in b.column(0).to_pylist()]
        assert got == list(range(777, 4321))
    with pytest.raises(OverflowError):
        pqindex.scan(path, read_ahead=-1)


STREAM_CHILD = textwrap.dedent(
    """
    import json, sys, time
    import pqindex, pyarrow as pa

    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024

    path, read_ahead = sys.argv[1], int(sys.argv[2])
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    scan = pqindex.scan(path, batch_size=8192, threads=2, read_ahead=read_ahead)
    rows = 0
    for batch in pa.RecordBatchReader.from_stream(scan):
        rows += batch.num_rows
        time.sleep(0.002)  # a slow consumer: the workers get ahead as far as allowed
    print(json.dumps({"rows": rows, "rss_added": status("VmHWM") - base}))
    """
)


def test_a_slow_consumer_holds_what_read_ahead_allows(tmp_path: Path) -> None:
    """48 MB in 12 row groups, consumed slowly: with no read-ahead the stream holds about
    one row group's read at a time, far less than the file; with room, more."""
    import numpy as np

    path = tmp_path / "big.parquet"
    n = 1_200_000
    rng = np.random.default_rng(7)
    data = pa.table({f"c{i}": rng.integers(0, 1 << 60, n) for i in range(5)})
    pq.write_table(data, path, row_group_size=100_000, compression="none")

    def peak(read_ahead: int) -> int:
        proc = subprocess.run(
            [sys.executable, "-c", STREAM_CHILD, str(path), str(read_ahead)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["rows"] == n
        return int(out["rss_added"])

    held, ahead = peak(0), peak(1 << 30)
    # A row group is 4 MB on disk and decoded; with its batches, pages and the
    # allocator's slack, well under the file, and under half of what room lets through.
    assert held < 40 * MIB and held * 2 < ahead, (held, ahead)
