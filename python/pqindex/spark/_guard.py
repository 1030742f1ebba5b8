"""One clear error when Spark's Python workers cannot import pqindex.

Spark ships the functions ``mapInArrow`` runs (and the Python data source) to its Python
workers with cloudpickle. A function from an importable module travels as a reference, so a
worker whose Python lacks pqindex dies while unpickling it, with a bare ``ModuleNotFoundError``
deep in a worker traceback. This module is pickled by value instead (see ``register``): the
worker rebuilds ``Guarded`` from its code, imports pqindex inside a ``try``, and says which
Python it runs and how to install pqindex there. The real task travels as bytes inside it and
is unpickled only once pqindex imports.

Nothing here may import pqindex at module level: by-value pickling carries this module's
globals along.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

INSTALL_HINT = (
    "install pqindex into that Python on every node: ship a packed virtual environment with "
    "spark.archives (and spark.pyspark.python pointing into it), install it as a cluster "
    "library, or pip install it into the Spark Connect server's Python; see docs/spark.md "
    "'Running on a cluster'"
)


class ExecutorImportError(ModuleNotFoundError):
    """pqindex cannot be imported by the Python that runs Spark's Python workers."""


def require_pqindex(driver_version: str | None = None) -> None:
    """Import pqindex or raise ``ExecutorImportError`` naming this Python."""
    try:
        import pqindex  # noqa: F401
    except ImportError as error:
        import platform
        import socket
        import sys

        wanted = f" {driver_version}" if driver_version else ""
        raise ExecutorImportError(
            f"pqindex{wanted} cannot be imported by the Python that runs Spark's Python "
            f"workers: {sys.executable} (Python {platform.python_version()}) on host "
            f"{socket.gethostname()} ({error}); {INSTALL_HINT}."
        ) from error


class Guarded:
    """``task`` behind the import check; what ``mapInArrow`` is given."""

    def __init__(self, task: Any, driver_version: str) -> None:
        from pyspark import cloudpickle

        self.payload: bytes = cloudpickle.dumps(task)  # type: ignore[no-untyped-call]
        self.driver_version = driver_version

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pickle

        require_pqindex(self.driver_version)
        task = pickle.loads(self.payload)
        yield from task(batches)


def guarded(task: Any) -> Guarded:
    """``task`` wrapped so that a worker without pqindex fails with a clear error."""
    import pqindex

    register()
    return Guarded(task, pqindex.__version__)


def register() -> None:
    """Make cloudpickle carry this module (and the data source, which Spark also unpickles
    in workers) by value rather than by reference."""
    import sys

    from pyspark import cloudpickle

    for name in (__name__, "pqindex.spark._datasource"):
        module = sys.modules.get(name)
        registered = cloudpickle.list_registry_pickle_by_value()  # type: ignore[no-untyped-call]
        if module is not None and name not in registered:
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
