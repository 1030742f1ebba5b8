"""pqindex's Arrow output in the exact Arrow types Spark expects for a schema.

pqindex returns what the Parquet file holds (unsigned integers, nanosecond timestamps,
INT96 as naive nanoseconds, large strings); Spark's Parquet reader maps those to its own
types (UINT64 to DECIMAL(20,0), timestamps to microseconds, ...). Casting each batch to
the Arrow form of the schema Spark derived for the same files makes both readers agree.
"""

from __future__ import annotations

from typing import Any


def arrow_schema(spark_schema: Any) -> Any:
    """The Arrow schema ``mapInArrow`` and ``createDataFrame`` expect for ``spark_schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")


def conform(batch: Any, schema: Any) -> Any:
    """``batch`` with its columns (matched by position) cast to ``schema``'s types.

    Casts are unchecked only where Spark's own reader also drops precision (nanoseconds to
    microseconds); everything else must fit.
    """
    import pyarrow as pa

    columns = []
    for column, field in zip(batch.columns, schema, strict=True):
        columns.append(_cast(column, field.type, pa))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _cast(array: Any, target: Any, pa: Any) -> Any:
    if array.type.equals(target):
        return array
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target):
        # Spark keeps microseconds and truncates finer units, as its own reader does.
        return array.cast(target, safe=False)
    return array.cast(target)
