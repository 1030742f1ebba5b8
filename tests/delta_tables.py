"""Delta tables for tests: written by ``deltalake`` (delta-rs), plus what no writer here
produces, added to the log by hand from the Delta protocol (each proven against
``deltalake``'s own reader in the tests that use it):

* deletion vectors (delta-rs 1.x deletes by rewriting files): inline (``i``), relative
  (``u``) and absolute (``p``) storage;
* renamed and dropped columns under column mapping (deltalake has no API for them);
* a protocol that asks for a reader feature nobody supports.
"""

from __future__ import annotations

import glob
import json
import os
import struct
import time
import uuid
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

# Writer features implied by legacy writer versions (PROTOCOL.md, "Table Features").
_LEGACY_WRITER = {
    2: ["appendOnly", "invariants"],
    3: ["appendOnly", "invariants", "checkConstraints"],
    4: ["appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"],
    5: [
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
    ],
    6: [
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "identityColumns",
    ],
}


def z85(data: bytes) -> str:
    """Z85 of ``data`` zero-padded to a multiple of 4 bytes, as Delta's Base85Codec does."""
    data = data + b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        v = struct.unpack(">I", data[i : i + 4])[0]
        chunk = []
        for _ in range(5):
            v, r = divmod(v, 85)
            chunk.append(_Z85[r])
        out.extend(reversed(chunk))
    return "".join(out)


def _dv_payload(rows: Iterable[int]) -> bytes:
    """Magic and the RoaringBitmapArray (portable) of ``rows``: what sizeInBytes counts."""
    from pyroaring import BitMap64

    return struct.pack("<I", MAGIC) + BitMap64(sorted(set(rows))).serialize()


class _VectorFile:
    """A file of deletion vectors: a version byte, then each vector's size, payload and
    CRC at its offset. Delta Spark packs the vectors of many data files into one."""

    def __init__(self, table: Path) -> None:
        self.uuid = uuid.uuid4()
        self.rel = f"dv/deletion_vector_{self.uuid}.bin"
        self.table = table
        self.data = bytearray(b"\x01")

    def add(self, payload: bytes) -> int:
        offset = len(self.data)
        self.data += struct.pack(">I", len(payload)) + payload
        self.data += struct.pack(">I", zlib.crc32(payload) & 0xFFFFFFFF)
        return offset

    def write(self) -> None:
        (self.table / "dv").mkdir(exist_ok=True)
        (self.table / self.rel).write_bytes(bytes(self.data))


def _descriptor(
    table: Path, rows: list[int], storage: str, packed: _VectorFile | None = None
) -> dict[str, Any]:
    payload = _dv_payload(rows)
    if storage == "i":
        return {
            "storageType": "i",
            "pathOrInlineDv": z85(payload),
            "sizeInBytes": len(payload),
            "cardinality": len(set(rows)),
        }
    file = packed or _VectorFile(table)
    offset = file.add(payload)
    if packed is None:
        file.write()
    if storage == "u":
        where = "dv" + z85(file.uuid.bytes)
    else:
        where = (table / file.rel).resolve().as_uri()
    return {
        "storageType": storage,
        "pathOrInlineDv": where,
        "offset": offset,
        "sizeInBytes": len(payload),
        "cardinality": len(set(rows)),
    }


def _log(table: Path) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """The latest version, live add actions, protocol and metadata, by replaying every JSON
    commit (small test tables without checkpoints in the way)."""
    commits = sorted(glob.glob(str(table / "_delta_log" / "*.json")))
    adds: dict[str, dict[str, Any]] = {}
    protocol: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for c in commits:
        for line in open(c):
            a = json.loads(line)
            if "add" in a:
                adds[a["add"]["path"]] = a["add"]
            elif "remove" in a:
                adds.pop(a["remove"]["path"], None)
            elif "protocol" in a:
                protocol = a["protocol"]
            elif "metaData" in a:
                meta = a["metaData"]
    return int(os.path.basename(commits[-1])[:20]), adds, protocol, meta


def _commit(table: Path, version: int, actions: list[dict[str, Any]]) -> int:
    with open(table / "_delta_log" / f"{version:020d}.json", "x") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    return version


def add_deletion_vectors(
    table: Path,
    deletes: dict[str, list[int]],
    storage: dict[str, str] | None = None,
    packed: bool = False,
) -> int:
    """Delete rows by deletion vector: ``deletes`` maps a data file's path as the log
    names it to 0-based row positions in that file; ``storage`` picks ``i``, ``u`` or
    ``p`` per file (inline by default); ``packed`` puts every vector not inline into one
    file, each at its offset. Returns the new version."""
    shared = _VectorFile(table) if packed else None
    version, adds, proto, _ = _log(table)
    rv, wv = proto["minReaderVersion"], proto["minWriterVersion"]
    rf = set(proto.get("readerFeatures") or (["columnMapping"] if rv == 2 else []))
    wf = set(proto.get("writerFeatures") or _LEGACY_WRITER.get(wv, []))
    now = int(time.time() * 1000)
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"timestamp": now, "operation": "DELETE"}},
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": sorted(rf | {"deletionVectors"}),
                "writerFeatures": sorted(wf | {"deletionVectors"}),
            }
        },
    ]
    for path, rows in deletes.items():
        add = dict(adds[path])
        dv = _descriptor(table, rows, (storage or {}).get(path, "i"), shared)
        actions.append(
            {
                "remove": {
                    "path": path,
                    "deletionTimestamp": now,
                    "dataChange": True,
                    "extendedFileMetadata": True,
                    "partitionValues": add.get("partitionValues", {}),
                    "size": add["size"],
                }
            }
        )
        new_add = {k: v for k, v in add.items() if v is not None}
        new_add.update(modificationTime=now, dataChange=True, deletionVector=dv)
        if new_add.get("stats"):  # the stats now describe a superset of the live rows
            stats = json.loads(new_add["stats"])
            stats["tightBounds"] = False
            new_add["stats"] = json.dumps(stats)
        actions.append({"add": new_add})
    if shared is not None:
        shared.write()
    return _commit(table, version + 1, actions)


def alter_columns(
    table: Path,
    rename: dict[str, str] | None = None,
    drop: Iterable[str] = (),
    add: Iterable[tuple[str, str]] = (),
) -> int:
    """Rename, drop or add (name, Delta type) top-level columns of a column-mapped table,
    as a metadata commit."""
    version, _, _, meta = _log(table)
    config = dict(meta["configuration"])
    assert config.get("delta.columnMapping.mode") in ("name", "id")
    rename = rename or {}
    drop = set(drop)
    schema = json.loads(meta["schemaString"])
    schema["fields"] = [
        dict(f, name=rename.get(f["name"], f["name"]))
        for f in schema["fields"]
        if f["name"] not in drop
    ]
    for name, type_name in add:
        next_id = int(config.get("delta.columnMapping.maxColumnId", "0")) + 1
        config["delta.columnMapping.maxColumnId"] = str(next_id)
        schema["fields"].append(
            {
                "name": name,
                "type": type_name,
                "nullable": True,
                "metadata": {
                    "delta.columnMapping.id": next_id,
                    "delta.columnMapping.physicalName": f"col-{uuid.uuid4()}",
                },
            }
        )
    meta = dict(
        meta,
        configuration=config,
        schemaString=json.dumps(schema),
        partitionColumns=[rename.get(c, c) for c in meta["partitionColumns"]],
    )
    actions = [
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "CHANGE COLUMN"}},
        {"metaData": meta},
    ]
    return _commit(table, version + 1, actions)


def drop_stats(table: Path, path: str) -> int:
    """A commit that adds ``path`` again without its statistics, as writers that keep none
    leave it (the newest add of a path is the one that counts). Returns the new version."""
    version, adds, _, _ = _log(table)
    now = int(time.time() * 1000)
    add = {k: v for k, v in adds[path].items() if v is not None and k != "stats"}
    add.update(modificationTime=now, dataChange=False)
    actions = [
        {"commitInfo": {"timestamp": now, "operation": "DROP STATS"}},
        {"add": add},
    ]
    return _commit(table, version + 1, actions)


def require_reader_feature(table: Path, feature: str) -> int:
    """A commit whose protocol asks readers for ``feature``."""
    version, _, proto, _ = _log(table)
    wf = set(proto.get("writerFeatures") or _LEGACY_WRITER.get(proto["minWriterVersion"], []))
    actions = [
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET PROPERTIES"}},
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [feature],
                "writerFeatures": sorted(wf | {feature}),
            }
        },
    ]
    return _commit(table, version + 1, actions)


def add_paths(table: Path) -> list[str]:
    """The live data files' paths as the log names them, in name order."""
    return sorted(_log(table)[1])
