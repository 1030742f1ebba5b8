"""The ``pqindex`` command: look inside Parquet files, manage their embedded indexes and run
scans from the shell.

``inspect`` summarises a footer, ``index add|drop|list|verify`` manage embedded indexes over
many files, ``scan`` prints the rows a predicate selects, ``aggregate`` computes one row of
aggregates, ``catalog build|refresh|show`` manage a dataset's catalog. Every command takes
``--json`` for one machine-readable document on stdout, and ``--storage-options KEY=VALUE``
for the object store that ``s3://`` (and other) URLs name.

One module per command (``inspect``, ``index``, ``scan``, ``aggregate``, ``catalog``), each
with a ``register`` that adds its parser; ``output`` prints; ``arguments`` holds what the
commands share. Files are listed, footers read and index locators parsed by the native
module, so the command sees files exactly as a scan does.

Exit status: 0 on success; 1 when a file of a multi-file command failed or an index is
damaged; 2 on a usage error or an error that stops the command (a missing or damaged file,
a bad predicate), reported as one ``pqindex: error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

import pqindex
from pqindex.cli import aggregate, catalog, index, inspect, scan
from pqindex.cli.arguments import CliError, common_parser
from pqindex.cli.output import FILE_ERRORS, error_message

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``pqindex`` argument parser with all its subcommands."""
    parser = argparse.ArgumentParser(
        prog="pqindex", description="Inspect Parquet files, manage embedded indexes, run scans."
    )
    parser.add_argument("--version", action="version", version=f"pqindex {pqindex.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_parser()
    for command in (inspect, index, scan, aggregate, catalog):
        command.register(commands, common)
    return parser


def _silence_stdout() -> None:
    """Points stdout at /dev/null after the reader went away (``| head``), so the final
    flush at exit does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Runs one command and returns its exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error or the help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.run(args))
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (CliError, *FILE_ERRORS) as exc:
        print(f"pqindex: error: {error_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
