"""``pqindex index add|drop|list|verify PATH...``: embedded indexes over many files, one
result per file. The ``index add`` options are made from the Rust registry of index kinds,
so a kind added there gets its option here with no change to this file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pqindex
from pqindex import _native
from pqindex._indexes import GRANULARITIES, IndexDefinition, index_class
from pqindex.cli.arguments import CliError, add_paths, data_files, storage_options
from pqindex.cli.output import Json, failed_count, for_each_file, format_table, print_json

_NUMBERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "float": (float, "a number"),
    "int": (int, "an integer"),
}


@dataclass(frozen=True)
class IndexFlag:
    """The ``index add`` option of one registry kind: ``--<cli_flag> COL[:GRAN[:PARAM...]]``,
    the ``:GRAN`` part only when the kind has a choice of granularity, then one part per
    parameter in registry order; parts left out or empty take the kind's defaults."""

    info: dict[str, Any]

    @property
    def option(self) -> str:
        return "--" + str(self.info["cli_flag"])

    @property
    def parts(self) -> list[str]:
        """The names of the optional parts after ``COL``."""
        names = ["GRAN"] if len(self.info["granularities"]) > 1 else []
        return names + [str(p["name"]).upper() for p in self.info["params"]]

    @property
    def metavar(self) -> str:
        parts = self.parts
        return "COL" + "".join(f"[:{name}" for name in parts) + "]" * len(parts)

    @property
    def help(self) -> str:
        """The kind's first sentence and what each part means (``%`` doubled for argparse)."""
        doc = str(self.info["doc"])
        text = doc.split(". ")[0].rstrip(".") + "."
        granularities = self.info["granularities"]
        if len(granularities) > 1:
            text += f" GRAN: {', '.join(granularities)} (default {granularities[0]})."
        for p in self.info["params"]:
            text += f" {p['name'].upper()}: {p['doc']} (default {p['default']})."
        return text.replace("%", "%%")

    def parse(self, text: str) -> IndexDefinition:
        """The index ``text`` asks for, checked by constructing its class."""
        parts = text.split(":")
        if not parts[0] or len(parts) > 1 + len(self.parts):
            raise argparse.ArgumentTypeError(f"expected {self.metavar}, got {text!r}")
        column, given = parts[0], parts[1:]
        fields: dict[str, Any] = {}
        if len(self.info["granularities"]) > 1:
            gran, given = given[:1], given[1:]
            if gran and gran[0]:
                fields["granularity"] = gran[0]
        for param, value in zip(self.info["params"], given, strict=False):
            if value:
                fields[param["name"]] = _param_value(param, value)
        cls = index_class(self.info["name"])
        try:
            if self.info["multi_column"]:
                return cls(columns=[column], **fields)
            return cls(column=column, **fields)
        except pqindex.InvalidArgumentError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def _param_value(param: dict[str, Any], text: str) -> Any:
    """A parameter's text as its registry type (choices stay text, the class checks them)."""
    if param["type"] not in _NUMBERS:
        return text
    convert, noun = _NUMBERS[param["type"]]
    try:
        return convert(text)
    except ValueError:
        name = str(param["name"]).upper()
        raise argparse.ArgumentTypeError(
            f"{name} must be {noun} ({param['doc']}), got {text!r}"
        ) from None


def index_flags() -> list[IndexFlag]:
    """One ``index add`` option per registered index kind, in registry order."""
    return [IndexFlag(info) for info in _native.index_kinds()]


def describe_index(locator: Json) -> str:
    """``kind(col, ...) granularity``, the identity of an index in one short string."""
    columns = ", ".join(locator.get("columns") or [])
    return f"{locator.get('kind')}({columns}) {locator.get('granularity')}"


def _identity(locator: Json) -> tuple[object, ...]:
    return (locator.get("kind"), tuple(locator.get("columns") or []), locator.get("granularity"))


def _rewrite_rows(results: list[Json], changed_key: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for r in results:
        changed = r.get(changed_key)
        rows.append(
            [
                r["path"],
                "; ".join(map(describe_index, changed)) if changed else None,
                len(r["indexes"]) if "indexes" in r else None,
                r.get("bytes_before"),
                r.get("bytes_after"),
                f"{r['seconds']:.2f}" if "seconds" in r else None,
                r["error"],
            ]
        )
    return rows


def _print_rewrites(results: list[Json], changed_key: str, as_json: bool) -> int:
    """The per-file table (or JSON) of ``index add`` and ``index drop``; 1 if a file failed."""
    failed = failed_count(results)
    if as_json:
        print_json({"files": results, "failed": failed})
        return 1 if failed else 0
    label = changed_key.replace("_", " ")
    headers = ["file", label, "in file", "bytes before", "bytes after", "seconds", "error"]
    print(format_table(headers, _rewrite_rows(results, changed_key)))
    for r in results:
        for damaged in r.get("dropped_damaged") or []:
            print(f"note: {r['path']}: dropped a damaged index: {damaged}")
    if failed:
        print(f"{failed} of {len(results)} files failed", file=sys.stderr)
    return 1 if failed else 0


def run_add(args: argparse.Namespace) -> int:
    """``pqindex index add PATH... --<kind> COL...``, the indexes in command-line order."""
    indexes: list[IndexDefinition] = args.indexes
    if not indexes:
        flags = ", ".join(flag.option for flag in index_flags())
        raise CliError(f"index add: give at least one of {flags}")
    options = storage_options(args)
    paths = data_files(args.paths, options)
    wanted = {
        (kind, (column,), gran) for index in indexes for kind, column, gran in index.identities()
    }

    def add(path: str) -> Json:
        result = dict(pqindex.add_indexes(path, indexes, storage_options=options))
        result["added"] = [loc for loc in result["indexes"] if _identity(loc) in wanted]
        return result

    return _print_rewrites(for_each_file(paths, add), "added", args.json)


def run_drop(args: argparse.Namespace) -> int:
    """``pqindex index drop PATH... [--kind] [--column] [--granularity]``; no filter drops
    every index."""
    options = storage_options(args)
    paths = data_files(args.paths, options)

    def drop(path: str) -> Json:
        before = list(pqindex.list_indexes(path, storage_options=options))
        result = dict(
            pqindex.drop_indexes(
                path,
                kind=args.kind,
                columns=args.column,
                granularity=args.granularity,
                storage_options=options,
            )
        )
        kept = {_identity(loc) for loc in result["indexes"]}
        result["dropped"] = [loc for loc in before if _identity(loc) not in kept]
        return result

    return _print_rewrites(for_each_file(paths, drop), "dropped", args.json)


def _locator_rows(results: list[Json], with_status: bool) -> list[list[object]]:
    """One row per index, and one per file without any (or whose reading failed)."""
    rows: list[list[object]] = []
    for r in results:
        indexes = r.get("indexes") or []
        status: list[object] = [None] if with_status else []
        if not indexes:
            kind = "(none)" if r["error"] is None else None
            rows.append([r["path"], kind, None, None, None, None, *status, r["error"]])
        for loc in indexes:
            status = ["ok" if loc.get("ok") else "DAMAGED"] if with_status else []
            rows.append(
                [
                    r["path"],
                    loc.get("kind"),
                    ", ".join(loc.get("columns") or []),
                    loc.get("granularity"),
                    loc.get("offset"),
                    loc.get("length"),
                    *status,
                    loc.get("error"),
                ]
            )
    return rows


def run_list(args: argparse.Namespace) -> int:
    """``pqindex index list PATH...``; 1 if a file could not be read."""
    options = storage_options(args)
    results = for_each_file(
        data_files(args.paths, options),
        lambda p: {"indexes": list(pqindex.list_indexes(p, storage_options=options))},
    )
    failed = failed_count(results)
    if args.json:
        print_json({"files": results, "failed": failed})
    else:
        headers = ["file", "kind", "columns", "granularity", "offset", "length", "error"]
        print(format_table(headers, _locator_rows(results, with_status=False)))
    return 1 if failed else 0


def run_verify(args: argparse.Namespace) -> int:
    """``pqindex index verify PATH...``; 1 if an index is damaged or a file unreadable."""
    options = storage_options(args)
    results = for_each_file(
        data_files(args.paths, options),
        lambda p: {"indexes": list(pqindex.verify(p, storage_options=options))},
    )
    failed = failed_count(results)
    checked = [loc for r in results for loc in r.get("indexes") or []]
    damaged = sum(1 for loc in checked if not loc.get("ok"))
    if args.json:
        ok = not (failed or damaged)
        print_json({"files": results, "failed": failed, "damaged": damaged, "ok": ok})
    else:
        headers = ["file", "kind", "columns", "granularity", "offset", "length", "status"]
        print(format_table([*headers, "error"], _locator_rows(results, with_status=True)))
        counts = f"{damaged} damaged, {failed} files unreadable"
        print(f"{len(checked)} indexes in {len(results)} files: {counts}")
    return 1 if failed or damaged else 0


def _add_add_command(sub: Any, common: argparse.ArgumentParser) -> None:
    add = sub.add_parser("add", parents=[common], help="add indexes to files")
    add_paths(add)
    for flag in index_flags():
        add.add_argument(
            flag.option,
            type=flag.parse,
            action="append",
            dest="indexes",
            metavar=flag.metavar,
            help=flag.help,
        )
    add.set_defaults(run=run_add, indexes=[])


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``index`` and its subcommands to the command parsers."""
    index = commands.add_parser("index", help="add, drop, list or verify embedded indexes")
    sub = index.add_subparsers(dest="index_command", metavar="COMMAND", required=True)
    _add_add_command(sub, common)

    drop = sub.add_parser("drop", parents=[common], help="drop indexes (all without a filter)")
    add_paths(drop)
    kinds = [info["name"] for info in _native.index_kinds()]
    drop.add_argument("--kind", choices=kinds, help="only indexes of this kind")
    drop.add_argument(
        "--column",
        action="append",
        metavar="C",
        help="only indexes on this column (repeat for a multi-column index)",
    )
    drop.add_argument("--granularity", choices=GRANULARITIES, help="only this granularity")
    drop.set_defaults(run=run_drop)

    listing = sub.add_parser("list", parents=[common], help="list the indexes in files")
    add_paths(listing)
    listing.set_defaults(run=run_list)

    verify = sub.add_parser("verify", parents=[common], help="check every index's checksum")
    add_paths(verify)
    verify.set_defaults(run=run_verify)
