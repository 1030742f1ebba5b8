"""Files under Parquet modular encryption, written by pyarrow with its key tools and an
in-memory KMS, read with ``decryption=``: the rows pyarrow decrypts, statistics and page
index pruning with the keys, and a typed error without them."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import duckdb
import pqindex
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

MASTER_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}


class InMemoryKms(pe.KmsClient):  # type: ignore[misc]
    """Wraps a data key by XOR with a master key, as a test KMS does."""

    def __init__(self, config: Any = None) -> None:
        super().__init__()

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        master = MASTER_KEYS[master_key_identifier]
        return base64.b64encode(
            bytes(a ^ b for a, b in zip(key_bytes, master, strict=True))
        ).decode()

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        master = MASTER_KEYS[master_key_identifier]
        return bytes(a ^ b for a, b in zip(base64.b64decode(wrapped_key), master, strict=True))


def retriever(calls: list[bytes] | None = None) -> Any:
    """A key retriever reading pyarrow's key material (stored in the file) with the KMS."""

    def retrieve(key_metadata: bytes) -> bytes:
        if calls is not None:
            calls.append(key_metadata)
        material = json.loads(key_metadata)
        return InMemoryKms().unwrap_key(material["wrappedDEK"], material["masterKeyID"])

    return retrieve


def crypto() -> tuple[pe.CryptoFactory, pe.KmsConnectionConfig]:
    return pe.CryptoFactory(lambda config: InMemoryKms(config)), pe.KmsConnectionConfig()


def table(n: int = 4000, seed: int = 7) -> pa.Table:
    rng = random.Random(seed)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "amount": pa.array(
                [None if rng.random() < 0.1 else rng.uniform(-50, 50) for _ in range(n)],
                pa.float64(),
            ),
            "name": pa.array([None if i % 17 == 0 else f"name{i % 300:04d}" for i in range(n)]),
            "day": pa.array([i // 100 for i in range(n)], pa.int32()),
        }
    )


def write_encrypted(
    path: Path, data: pa.Table, *, plaintext_footer: bool = False, uniform: bool = False
) -> Path:
    factory, kms = crypto()
    config = pe.EncryptionConfiguration(
        footer_key="kf",
        column_keys={} if uniform else {"kc1": ["amount", "name"], "kc2": ["day"]},
        uniform_encryption=uniform,
        double_wrapping=False,
        plaintext_footer=plaintext_footer,
    )
    props = factory.file_encryption_properties(kms, config)
    pq.write_table(
        data,
        path,
        encryption_properties=props,
        row_group_size=500,
        data_page_size=512,
        write_batch_size=100,
        write_page_index=True,
    )
    return path


def pyarrow_rows(path: Path) -> pa.Table:
    factory, kms = crypto()
    props = factory.file_decryption_properties(kms, pe.DecryptionConfiguration())
    return pq.read_table(path, decryption_properties=props)


LAYOUTS = {
    "encrypted footer": {},
    "plaintext footer": {"plaintext_footer": True},
    "uniform": {"uniform": True},
}

PREDICATES = [
    None,
    "id = 1234",
    "id BETWEEN 100 AND 180",
    "amount > 45",
    "amount IS NULL",
    "name = 'name0042'",
    "name IN ('name0001', 'name0299') AND day >= 20",
    "day = 7 OR id < 3",
    "name LIKE '%0017%'",
]


def sort(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_are_pyarrows_and_duckdbs(tmp_path: Path, layout: str) -> None:
    data = table()
    path = write_encrypted(tmp_path / "e.parquet", data, **LAYOUTS[layout])
    assert pyarrow_rows(path).equals(data)
    con = duckdb.connect()
    con.register("t", data)
    for where in PREDICATES:
        got = pqindex.scan(path, where, decryption={"key_retriever": retriever()}).to_arrow()
        sql = "SELECT * FROM t" + (f" WHERE {where}" if where else "")
        assert sort(got) == sort(con.sql(sql).to_arrow_table()), where


def test_statistics_and_page_index_prune_with_the_keys(tmp_path: Path) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table())
    scan = pqindex.scan(path, "id = 1234", decryption={"key_retriever": retriever()})
    assert scan.to_arrow().column("id").to_pylist() == [1234]
    m = scan.metrics()
    assert m["row_groups_pruned_by_stats"] == 7
    assert m["page_indexes_read"] == 1
    assert m["pages_pruned"] > 0
    assert m["rows_scanned"] < 500, "the page index narrows the kept row group"


def test_keys_are_asked_once_each(tmp_path: Path) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table())
    calls: list[bytes] = []
    pqindex.scan(path, decryption={"key_retriever": retriever(calls)}).to_arrow()
    # The footer's key and one data key per encrypted column, each asked once.
    assert len(calls) == len(set(calls)) == 4


def test_explicit_keys(tmp_path: Path) -> None:
    """A key given by value: the data key pyarrow generated for a uniformly encrypted file,
    unwrapped from the footer's key material. (Column keys by value are tested in the
    core, on files the parquet crate writes with them.)"""
    path = write_encrypted(tmp_path / "e.parquet", table(), uniform=True)
    calls: list[bytes] = []
    pqindex.read_metadata(path, decryption={"key_retriever": retriever(calls)})
    decryption = {"footer_key": retriever()(calls[0])}
    got = pqindex.scan(path, "day = 3", decryption=decryption).to_arrow()
    assert got.column("id").to_pylist() == list(range(300, 400))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_without_keys_a_typed_error_says_what_is_needed(tmp_path: Path, layout: str) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table(), **LAYOUTS[layout])
    for call in (lambda: pqindex.scan(path), lambda: pqindex.read_metadata(path)):
        with pytest.raises(pqindex.EncryptedFileError, match=r"encrypted.*decryption="):
            call()


def test_wrong_keys_are_a_typed_error(tmp_path: Path) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table())
    with pytest.raises(pqindex.EncryptedFileError, match="cannot decrypt"):
        pqindex.scan(path, decryption={"footer_key": b"x" * 16}).to_arrow()

    def failing(key_metadata: bytes) -> bytes:
        raise RuntimeError("the KMS is down")

    with pytest.raises(pqindex.EncryptedFileError, match="the KMS is down"):
        pqindex.scan(path, decryption={"key_retriever": failing}).to_arrow()


def test_decrypted_metadata_is_not_kept_for_callers_without_keys(tmp_path: Path) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table())
    md = pqindex.read_metadata(path, decryption={"key_retriever": retriever()})
    assert md.num_rows == 4000
    with pytest.raises(pqindex.EncryptedFileError):
        pqindex.read_metadata(path)
    with pytest.raises(pqindex.EncryptedFileError):
        pqindex.scan(path, "id = 1").to_arrow()


def test_no_embedded_index_is_added_to_an_encrypted_file(tmp_path: Path) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table())
    before = path.read_bytes()
    with pytest.raises(pqindex.UnsupportedError, match="encrypted"):
        pqindex.add_indexes(path, [pqindex.BloomIndex("id")])
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.parquet"]


@pytest.mark.parametrize(
    ("decryption", "error"),
    [
        ("key", TypeError),
        ({"footer_key": "text"}, TypeError),
        ({"column_keys": {"a": b"1" * 16}}, pqindex.InvalidArgumentError),
        ({"footer_key": b"1" * 16, "key_retriever": retriever()}, pqindex.InvalidArgumentError),
        ({"footer_key": b"1" * 16, "keys": {}}, pqindex.InvalidArgumentError),
        ({"key_retriever": 3}, TypeError),
    ],
)
def test_bad_decryption_arguments(tmp_path: Path, decryption: Any, error: type) -> None:
    path = write_encrypted(tmp_path / "e.parquet", table(100))
    with pytest.raises(error):
        pqindex.scan(path, decryption=decryption)


def test_plain_files_read_as_before_with_decryption_given(tmp_path: Path) -> None:
    data = table(300)
    pq.write_table(data, tmp_path / "p.parquet")
    got = pqindex.scan(tmp_path / "p.parquet", "id < 5", decryption={"footer_key": b"1" * 16})
    assert got.to_arrow().column("id").to_pylist() == [0, 1, 2, 3, 4]
