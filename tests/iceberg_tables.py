"""Iceberg delete files for tests. pyiceberg 0.12 writes none (its deletes rewrite files),
so these write the delete file with pyarrow and commit it through pyiceberg's snapshot
producer with a manifest whose content is ``deletes`` (Iceberg table spec, "Delete
Formats"); pyiceberg's own reader honours the position deletes, the tests check it.

Position delete file: columns file_path (field id 2147483546) and pos (2147483545), sorted;
it applies to data files of the same partition with a data sequence number at or below
its own. Equality delete file: the key columns with the table's field ids.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestWriterV2,
)
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles

POS_PATH_ID, POS_POS_ID = 2147483546, 2147483545


class _DeleteManifestWriterV2(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _AddDeleteFiles(_FastAppendFiles):
    """A fast append whose new manifest holds delete files."""

    def new_manifest_writer(self, spec: Any) -> Any:
        return _DeleteManifestWriterV2(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )


def _commit(table: Any, files: list[Any]) -> Any:
    with table.transaction() as tx:
        producer = _AddDeleteFiles(operation=Operation.DELETE, transaction=tx, io=table.io)
        for f in files:
            producer.append_data_file(f)
        producer.commit()
    return table.refresh()


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def data_files(table: Any) -> list[Any]:
    """The current snapshot's data files, in path order."""
    return sorted((t.file for t in table.scan().plan_files()), key=lambda f: f.file_path)


def add_position_deletes(table: Any, deletes: dict[str, list[int]]) -> Any:
    """Delete rows by position: ``deletes`` maps a data file's path (as in the manifest) to
    0-based row positions in it. One delete file per data file, one snapshot."""
    by_path = {f.file_path: f for f in data_files(table)}
    files = []
    for path, positions in deletes.items():
        data = by_path[path]
        positions = sorted(set(positions))
        schema = pa.schema(
            [
                pa.field(
                    "file_path",
                    pa.string(),
                    nullable=False,
                    metadata={"PARQUET:field_id": str(POS_PATH_ID)},
                ),
                pa.field(
                    "pos",
                    pa.int64(),
                    nullable=False,
                    metadata={"PARQUET:field_id": str(POS_POS_ID)},
                ),
            ]
        )
        out = f"{table.location()}/data/{uuid.uuid4()}-pos-deletes.parquet"
        pq.write_table(pa.table([[path] * len(positions), positions], schema=schema), _local(out))
        files.append(
            DataFile.from_args(
                content=DataFileContent.POSITION_DELETES,
                file_path=out,
                file_format=FileFormat.PARQUET,
                partition=data.partition,
                record_count=len(positions),
                file_size_in_bytes=os.path.getsize(_local(out)),
                lower_bounds={
                    POS_PATH_ID: path.encode(),
                    POS_POS_ID: positions[0].to_bytes(8, "little", signed=True),
                },
                upper_bounds={
                    POS_PATH_ID: path.encode(),
                    POS_POS_ID: positions[-1].to_bytes(8, "little", signed=True),
                },
                spec_id=data.spec_id,
            )
        )
    return _commit(table, files)


def add_equality_deletes(table: Any, keys: pa.Table) -> Any:
    """Delete the rows whose columns equal a row of ``keys`` (unpartitioned tables)."""
    from pyiceberg.typedef import Record

    schema = table.schema()
    fields = [schema.find_field(n) for n in keys.column_names]
    arrow = pa.schema(
        [
            pa.field(
                f.name,
                keys.schema.field(f.name).type,
                metadata={"PARQUET:field_id": str(f.field_id)},
            )
            for f in fields
        ]
    )
    out = f"{table.location()}/data/{uuid.uuid4()}-eq-deletes.parquet"
    pq.write_table(keys.cast(arrow), _local(out))
    file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=out,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=keys.num_rows,
        file_size_in_bytes=os.path.getsize(_local(out)),
        equality_ids=[f.field_id for f in fields],
        spec_id=table.spec().spec_id,
    )
    return _commit(table, [file])


def add_data_file(table: Any, data: pa.Table, partition: Any) -> Any:
    """Commit ``data`` (columns named as the table's, possibly missing some) as one data
    file in ``partition`` (a pyiceberg ``Record``), as a migration of Hive files that keep
    partition values only in their paths does."""
    schema = table.schema()
    arrow = pa.schema(
        [
            pa.field(
                n,
                data.schema.field(n).type,
                metadata={"PARQUET:field_id": str(schema.find_field(n).field_id)},
            )
            for n in data.column_names
        ]
    )
    out = f"{table.location()}/data/{uuid.uuid4()}-migrated.parquet"
    pq.write_table(data.cast(arrow), _local(out))
    file = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=out,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=data.num_rows,
        file_size_in_bytes=os.path.getsize(_local(out)),
        spec_id=table.spec().spec_id,
    )
    with table.transaction() as tx:
        producer = _FastAppendFiles(operation=Operation.APPEND, transaction=tx, io=table.io)
        producer.append_data_file(file)
        producer.commit()
    return table.refresh()
