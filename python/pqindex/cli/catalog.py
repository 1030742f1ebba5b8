"""``pqindex catalog build|refresh|show DATASET``: the dataset catalog that lets a scan
rule files out without opening them."""

from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING, Any

import pqindex
from pqindex import _native
from pqindex.cli.arguments import CliError, columns_arg, storage_options
from pqindex.cli.output import Json, LazyProgress, format_table, print_json

if TYPE_CHECKING:
    from pqindex._native import StorageOptions


def _fpp_arg(text: str) -> float:
    try:
        fpp = float(text)
    except ValueError:
        fpp = math.nan
    if not 0.0 < fpp < 1.0:
        raise argparse.ArgumentTypeError(f"false positive rate must be in (0, 1), got {text!r}")
    return fpp


def _catalog_dir(root: str) -> str:
    """Where the catalog lives: ``<root>/_pqindex``, with ``/`` inside an object URL."""
    if _native.is_object_url(root):
        return root.rstrip("/") + "/_pqindex"
    return os.path.join(root, "_pqindex")


def _catalog_doc(catalog: pqindex.Catalog) -> Json:
    return {
        "root": catalog.root,
        "version": catalog.version,
        "files": catalog.num_files,
        "columns": catalog.columns,
        "bloom_columns": catalog.bloom_columns,
        "report": catalog.report(),
    }


def _print_catalog(doc: Json, as_json: bool) -> None:
    if as_json:
        print_json(doc)
        return
    rows: list[list[object]] = [
        ["catalog", _catalog_dir(doc["root"])],
        ["version", doc["version"]],
        ["files", doc["files"]],
        ["columns", ", ".join(doc["columns"]) or "-"],
        ["bloom filters", ", ".join(doc["bloom_columns"]) or "-"],
    ]
    for key, value in (doc.get("report") or {}).items():
        if key not in ("version", "files"):
            rows.append([key, value])
    for key, value in (doc.get("freshness") or {}).items():
        rows.append([key, value])
    print(format_table(["", ""], rows))


def run_build(args: argparse.Namespace) -> int:
    """``pqindex catalog build DATASET --columns a,b --bloom a``."""
    progress = LazyProgress()
    try:
        catalog = pqindex.Catalog.build(
            args.dataset,
            args.columns or [],
            bloom=args.bloom,
            fpp=args.fpp,
            progress=progress,
            storage_options=storage_options(args),
        )
    finally:
        progress.close()
    _print_catalog(_catalog_doc(catalog), args.json)
    return 0


def _open_catalog(dataset: str, options: StorageOptions | None) -> pqindex.Catalog:
    catalog = pqindex.Catalog.open(dataset, storage_options=options)
    if catalog is None:
        raise CliError(f"{dataset}: no catalog (build one with `pqindex catalog build`)")
    return catalog


def run_refresh(args: argparse.Namespace) -> int:
    """``pqindex catalog refresh DATASET``: a new version for what changed."""
    progress = LazyProgress()
    try:
        catalog = _open_catalog(args.dataset, storage_options(args)).refresh(progress=progress)
    finally:
        progress.close()
    _print_catalog(_catalog_doc(catalog), args.json)
    return 0


def run_show(args: argparse.Namespace) -> int:
    """``pqindex catalog show DATASET``: the current version and how fresh it is."""
    catalog = _open_catalog(args.dataset, storage_options(args))
    doc = _catalog_doc(catalog)
    doc["freshness"] = catalog.freshness()
    _print_catalog(doc, args.json)
    return 0


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``catalog`` and its subcommands to the command parsers."""
    catalog = commands.add_parser("catalog", help="build, refresh or show a dataset's catalog")
    sub = catalog.add_subparsers(dest="catalog_command", metavar="COMMAND", required=True)
    dataset_help = "the dataset directory (or object URL prefix)"
    build = sub.add_parser("build", parents=[common], help="build the catalog of a dataset")
    build.add_argument("dataset", metavar="DATASET", help=dataset_help)
    build.add_argument(
        "--columns",
        type=columns_arg,
        metavar="a,b",
        help="columns to summarise (min/max; default: every column statistics can bound)",
    )
    build.add_argument(
        "--bloom",
        type=columns_arg,
        metavar="a,b",
        help="columns with a per-file bloom filter (default: the --columns)",
    )
    build.add_argument("--fpp", type=_fpp_arg, default=0.01, help="bloom false positive rate")
    build.set_defaults(run=run_build)
    refresh = sub.add_parser("refresh", parents=[common], help="update it for changed files")
    refresh.add_argument("dataset", metavar="DATASET", help=dataset_help)
    refresh.set_defaults(run=run_refresh)
    show = sub.add_parser("show", parents=[common], help="its version, columns and freshness")
    show.add_argument("dataset", metavar="DATASET", help=dataset_help)
    show.set_defaults(run=run_show)
