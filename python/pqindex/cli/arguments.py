"""Arguments several commands share: ``--json``, ``--storage-options``, column lists, and
the data files a list of paths names (listed by the native module, under Spark's rules)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pqindex import _native

if TYPE_CHECKING:
    from pqindex._native import StorageOptions


class CliError(Exception):
    """A command-line mistake found after parsing (no index asked for, no catalog)."""


def storage_option(text: str) -> tuple[str, str]:
    """``KEY=VALUE``, split at the first ``=`` so a value may hold one (a URL, a secret)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def storage_options(args: argparse.Namespace) -> StorageOptions | None:
    """The ``--storage-options`` given, as the API takes them (None when none were, so
    local paths are not refused for carrying options); a repeated key keeps its last value."""
    pairs: list[tuple[str, str]] | None = args.storage_options
    return dict(pairs) if pairs else None


def common_parser() -> argparse.ArgumentParser:
    """The options every command takes (as an argparse parent)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument(
        "--storage-options",
        type=storage_option,
        action="append",
        metavar="KEY=VALUE",
        help="an option of the object store that s3://, gs://, az:// or https:// paths name "
        "(endpoint, region, access_key_id, ...); repeat for several",
    )
    return common


def columns_arg(text: str) -> list[str]:
    """``a,b,c``; an empty string selects no columns (the rows are only counted)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def add_paths(parser: argparse.ArgumentParser) -> None:
    """The ``PATH...`` of the commands that work file by file."""
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="Parquet files or object URLs, or directories (prefixes) searched recursively; "
        "names starting with _ or . are skipped",
    )


def data_files(paths: Sequence[str], options: StorageOptions | None) -> list[str]:
    """The data files ``paths`` name, as every pqindex reader lists them: a missing path, a
    directory without data files or a Delta/Iceberg table stops the command."""
    return _native.list_files(list(paths), storage_options=options)


def source_arg(sources: Sequence[str]) -> str | list[str]:
    """One source as itself, several as a list (what ``scan`` and ``aggregate`` take)."""
    return sources[0] if len(sources) == 1 else list(sources)
