"""A plan's units on their way to Spark tasks: grouped into partitions of about equal
fetched bytes (runs of consecutive units, so a file's units mostly share a task, which
then reads its footer once) and carried as Arrow IPC bytes."""

from __future__ import annotations

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
    ``total / partitions`` estimated bytes each: a unit goes to the share of the bytes its
    middle falls in, so no run exceeds its share by more than half a unit at either end
    (filling runs greedily up to the share leaves the excess of every run to the last)."""
    sizes = [max(1, int(b)) for b in units.column("selected_bytes").to_pylist()]
    if not sizes:
        return []
    parts = max(1, min(partitions, len(sizes)))
    total = sum(sizes)
    groups: list[list[int]] = [[] for _ in range(parts)]
    before = 0
    for i, size in enumerate(sizes):
        share = min(parts - 1, (2 * before + size) * parts // (2 * total))
        groups[share].append(i)
        before += size
    return [g for g in groups if g]


#: The read-ahead of a task's stream: Spark runs a task per core, each in its own Python
#: worker, so the process default (sized for one scan per process) is halved.
TASK_READ_AHEAD = 128 << 20


def task_read_ahead() -> int | None:
    """The read-ahead for a read in a Spark task: ``PQINDEX_READ_AHEAD`` when the
    executors' environment sets it (the native default then reads it), else
    ``TASK_READ_AHEAD``."""
    import os

    return None if os.environ.get("PQINDEX_READ_AHEAD") else TASK_READ_AHEAD
