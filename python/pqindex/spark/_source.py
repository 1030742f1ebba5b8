"""The data source seen from the driver: what ``spark.read.format("pqindex")`` plans for a
set of options, and a catalog table turned into options.

Spark plans a Python data source in a Python worker of its own, whose plan a Spark Connect
client cannot see and which cannot ask Spark's catalog anything. Both are done here, in the
process holding the session, with the same code the worker runs (``_datasource``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pqindex.spark import _datasource, _tables
from pqindex.spark._session import default_parallelism
from pqindex.spark._storage import from_options, is_remote


def table_options(
    spark: Any, name: str, storage_options: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """The data source options that read the catalog table ``name`` as Spark reads it:
    ``spark.read.format("pqindex").options(**table_options(spark, "db.events")).load()``.

    Parquet tables (managed or external, partitioned or not) and Delta tables; a view,
    another provider, or a table whose files are not the files under its location (an
    external table whose partitions are not registered yet, say) is a
    ``pqindex.SourceError``."""
    table = _tables.resolve(spark, name, storage_options)
    options = {"path": table.location, "table": name}
    if table.schema is None:  # Delta: the log has the schema
        return options
    typed = None
    if is_remote([table.location]):
        # Spark may have no connector for the store: pqindex's reading of the files.
        typed = _datasource.schema_of(_datasource.settings({"path": table.location}))
    _tables.check_types(spark, table, typed)
    options["table_schema"] = table.schema.json()
    return options


class SourcePlan:
    """What the data source plans for a set of options, planned here: ``explain()`` and
    ``metrics()`` as a ``pqindex.Scan`` gives them, and the partitions Spark would read."""

    def __init__(self, settings: _datasource.Settings, planned: _datasource.Planned) -> None:
        self.settings = settings
        self.scan = planned.scan
        #: The condition pqindex plans and filters with (the ``where`` option).
        self.predicate = planned.where
        #: Units and selected bytes of each partition, in order.
        self.partitions = [
            {
                "units": len(group),
                "selected_bytes": int(
                    sum(planned.units.take(group).column("selected_bytes").to_pylist())
                ),
            }
            for group in planned.groups
        ]
        self._summary = planned.summary(settings)

    def explain(self) -> str:
        sizes = ", ".join(str(p["selected_bytes"]) for p in self.partitions) or "none"
        plan: str = self.scan.explain()
        return f"{self._summary}\n  partitions' selected bytes: {sizes}\n{plan}"

    def metrics(self) -> dict[str, int]:
        return dict(self.scan.metrics())


def explain_source(spark: Any, path: str | None = None, **options: Any) -> SourcePlan:
    """Plan, on the driver, what ``spark.read.format("pqindex").options(**options)
    .load(path)`` plans in Spark's worker (without Spark's pushed filters, which prune only
    on Spark 5.0 and later): works on Spark Connect, where the worker's plan is out of
    reach. ``table=`` names a catalog table, as ``table_options`` resolves it."""
    given = {k: str(v) for k, v in options.items() if v is not None}
    if path is not None:
        given["path"] = str(path)
    if given.get("table") and not given.get("path"):
        storage = from_options(given)
        given = {**table_options(spark, given["table"], storage), **given}
    s = _datasource.settings(given, max(1, 2 * default_parallelism(spark)))
    columns = _datasource.schema_of(s).fieldNames()
    return SourcePlan(s, _datasource.plan(s, columns))
