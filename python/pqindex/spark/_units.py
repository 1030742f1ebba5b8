"""A plan's units on their way to Spark tasks: grouped into partitions of about equal
fetched bytes (a file's units stay together, so a task reads each footer once) and carried
as Arrow IPC bytes."""

from __future__ import annotations

import math
from typing import Any


def ipc_bytes(table: Any) -> bytes:
    """``table`` as one Arrow IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def balanced_groups(units: Any, partitions: int) -> list[list[int]]:
    """Consecutive runs of unit indices (plan order keeps a file's units together) of about
    ``total / partitions`` estimated bytes each."""
    sizes = [max(1, int(b)) for b in units.column("selected_bytes").to_pylist()]
    if not sizes:
        return []
    parts = max(1, min(partitions, len(sizes)))
    target = math.ceil(sum(sizes) / parts)
    groups: list[list[int]] = [[]]
    filled = 0
    for i, size in enumerate(sizes):
        if groups[-1] and filled + size > target and len(groups) < parts:
            groups.append([])
            filled = 0
        groups[-1].append(i)
        filled += size
    return groups


#: The read-ahead of a task's stream: Spark runs a task per core, each in its own Python
#: worker, so the process default (sized for one scan per process) is halved.
TASK_READ_AHEAD = 128 << 20


def task_read_ahead() -> int | None:
    """The read-ahead for a read in a Spark task: ``PQINDEX_READ_AHEAD`` when the
    executors' environment sets it (the native default then reads it), else
    ``TASK_READ_AHEAD``."""
    import os

    return None if os.environ.get("PQINDEX_READ_AHEAD") else TASK_READ_AHEAD
