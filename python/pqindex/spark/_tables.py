"""Catalog tables by name: ``read(spark, "db.events")``, and ``table_options`` for the data
source (whose Python worker cannot ask the catalog), read the files Spark's catalog says
make up the table.

A string names a table only when it cannot be a path (no ``/``, ``\\`` or ``:``, and no
such file or directory exists) and ``spark.catalog.tableExists`` knows it; anything else is
a path, as before. ``DESCRIBE TABLE EXTENDED <name> AS JSON`` (one request, the same on
classic and Spark Connect sessions) gives the table's kind, provider and location:

- A Parquet table is read from its location, its columns typed as the table declares
  them, once the files Spark reads for the table (``inputFiles``) are the location's
  files: an external table over partition directories it has not registered (before
  ``MSCK REPAIR TABLE``) reads no rows in Spark, and a partition may live elsewhere, so
  such tables are refused rather than read differently from Spark.
- A Delta table is read from its location as pqindex reads a Delta directory (its log
  says which files make the table).
- Views, temporary views and other providers are refused with ``pqindex.SourceError``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import pqindex
from pqindex.spark._storage import is_remote, storage_options_for

#: The providers pqindex reads a catalog table of.
PROVIDERS = ("parquet", "delta")


@dataclass(frozen=True)
class CatalogTable:
    """What pqindex reads for a catalog table."""

    name: str
    provider: str
    #: A local path or an object store URL.
    location: str
    partition_columns: tuple[str, ...]
    #: The table's Spark schema (a Parquet table's; a Delta table's is in its log).
    schema: Any = None


def looks_like_name(source: Any) -> bool:
    """Whether ``source`` may name a table rather than a path."""
    if not isinstance(source, str) or not source.strip():
        return False
    if any(c in source for c in "/\\:"):
        return False
    return not os.path.exists(source)


def is_table(spark: Any, source: Any) -> bool:
    """Whether ``source`` names a table (or view) in the session's catalog."""
    if not looks_like_name(source):
        return False
    try:
        return bool(spark.catalog.tableExists(source))
    except Exception:  # not an identifier Spark parses: a path after all
        return False


def resolve(
    spark: Any, name: str, storage_options: Mapping[str, Any] | None = None
) -> CatalogTable:
    """The table ``name`` names, checked to be one pqindex reads as Spark does."""
    info = describe(spark, name)
    kind = str(info.get("type", "")).upper()
    if kind == "VIEW":
        temporary = info.get("catalog_name") == "system"
        raise pqindex.SourceError(
            f"{name} is a {'temporary ' if temporary else ''}view, not a table: pqindex "
            "reads a table's files; read the tables it selects from, or spark.table(...)"
        )
    provider = str(info.get("provider") or "").lower()
    if provider not in PROVIDERS:
        raise pqindex.SourceError(
            f"table {name} is stored as {provider or 'an unknown format'}; pqindex reads "
            f"catalog tables of the providers {', '.join(PROVIDERS)}"
        )
    location = info.get("location")
    if not location:
        raise pqindex.SourceError(f"table {name} has no location in the catalog")
    table = CatalogTable(
        name=name,
        provider=provider,
        location=local_location(str(location)),
        partition_columns=tuple(str(c) for c in info.get("partition_columns") or ()),
    )
    if provider == "delta":
        return table
    schema = spark.table(name).schema
    table = CatalogTable(**{**table.__dict__, "schema": schema})
    _check_files(spark, table, storage_options)
    return table


def describe(spark: Any, name: str) -> dict[str, Any]:
    """``DESCRIBE TABLE EXTENDED name AS JSON`` as a dict."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name} AS JSON").collect()
    if not rows:
        raise pqindex.SourceError(f"Spark describes no table {name}")
    described: dict[str, Any] = json.loads(rows[0][0])
    return described


def local_location(location: str) -> str:
    """A catalog location as pqindex names it: ``file:`` URIs as local paths."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return os.path.normpath(unquote(parsed.path))
    return location


def _check_files(
    spark: Any, table: CatalogTable, storage_options: Mapping[str, Any] | None
) -> None:
    """Refuse a table whose files in Spark are not the files under its location."""
    from pqindex._native import list_files

    spark_files = {local_location(f) for f in spark.table(table.name).inputFiles()}
    options = storage_options_for(spark, [table.location], storage_options)
    listed = list_files(table.location, storage_options=options)
    ours = {f if is_remote([f]) else os.path.normpath(f) for f in listed}
    if spark_files == ours:
        return
    missing, extra = sorted(ours - spark_files), sorted(spark_files - ours)
    hint = (
        f"; the catalog lists none of its partitions: run MSCK REPAIR TABLE {table.name}"
        if table.partition_columns and not spark_files
        else ""
    )
    raise pqindex.SourceError(
        f"table {table.name}: the files Spark reads for it are not the files under its "
        f"location {table.location} ({len(missing)} only under the location, e.g. "
        f"{missing[:2]}; {len(extra)} only in Spark, e.g. {extra[:2]}){hint}"
    )


def check_types(spark: Any, table: CatalogTable, typed: Any = None) -> None:
    """Refuse a Parquet table whose data columns are not typed as its files are (Spark's
    reader converts such files by rules pqindex does not follow). ``typed`` is the schema
    pqindex read the files as (Spark's reader's types), when it could tell."""
    from pyspark.sql import types as T

    partitions = {c.lower() for c in table.partition_columns}

    def data(schema: T.StructType) -> list[tuple[str, T.DataType]]:
        return [(f.name, f.dataType) for f in schema.fields if f.name.lower() not in partitions]

    if typed is not None and data(typed) == data(table.schema):
        return
    if typed is None and is_remote([table.location]):
        raise pqindex.SourceError(
            f"table {table.name}: pqindex cannot tell how Spark types the files under "
            f"{table.location}"
        )
    files = typed if typed is not None else spark.read.parquet(table.location).schema
    if data(files) != data(table.schema):
        raise pqindex.SourceError(
            f"table {table.name} declares columns {data(table.schema)} but its files hold "
            f"{data(files)}; pqindex reads tables whose files are typed as the table is"
        )
