"""The schema ``spark.read.parquet`` gives a local dataset, from pqindex's own plan of it.

Asking Spark (``spark.read.parquet``) lists the files, reads a footer and analyses a plan:
the largest part of a selective read's time. pqindex has just read the same footers, so
where its reading of the columns maps to Spark's without doubt the schema is built here
instead: top-level columns of plain types, named without case clashes, in a dataset
without hive partition directories (Spark infers their types by rules of its own). For
anything else (nested, unsigned, nanosecond or INT96 timestamps, fixed-size binary, half
floats, partitions) ``None``: the caller asks Spark.

The mapping is Spark's Parquet reader's (``ParquetToSparkSchemaConverter``): INT8/16 as
BYTE/SHORT, a timestamp adjusted to UTC as TIMESTAMP and one that is not as TIMESTAMP_NTZ
(while ``spark.sql.parquet.inferTimestampNTZ.enabled``), binary as BINARY (unless
``spark.sql.parquet.binaryAsString``), every column nullable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pqindex import _native


def spark_schema(spark: Any, arrow: Any, paths: Sequence[str]) -> Any | None:
    """The Spark schema of the local dataset ``paths`` whose pqindex schema is ``arrow``,
    or ``None`` when only Spark can say."""
    from pyspark.sql import types as T

    if _partitioned(paths):
        return None
    names = [f.name.lower() for f in arrow]
    if len(set(names)) != len(names):
        return None
    confs: dict[str, bool] = {}

    def conf(key: str, default: bool) -> bool:
        if key not in confs:
            value = spark.conf.get(key, str(default).lower())
            confs[key] = str(value).strip().lower() == "true"
        return confs[key]

    fields = []
    for f in arrow:
        data_type = _spark_type(f.type, conf)
        if data_type is None:
            return None
        fields.append(T.StructField(f.name, data_type, True))
    return T.StructType(fields)


def _spark_type(arrow_type: Any, conf: Any) -> Any | None:
    import pyarrow as pa
    from pyspark.sql import types as T

    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    simple = {
        pa.bool_(): T.BooleanType(),
        pa.int8(): T.ByteType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.date32(): T.DateType(),
    }
    for arrow_simple, spark_type in simple.items():
        if t.equals(arrow_simple):
            return spark_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        binary_as_string = conf("spark.sql.parquet.binaryAsString", False)
        return None if binary_as_string else T.BinaryType()
    if pa.types.is_decimal128(t) and t.precision <= 38:
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us"):
        if t.tz is not None:
            return T.TimestampType()
        ntz = conf("spark.sql.parquet.inferTimestampNTZ.enabled", True)
        return T.TimestampNTZType() if ntz else None
    return None


def _partitioned(paths: Sequence[str]) -> bool:
    """Whether a data file lies under a ``key=value`` directory of a given directory."""
    roots = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    if not roots:
        return False
    for f in _native.list_files(list(paths)):
        f = os.path.abspath(f)
        for root in roots:
            if f.startswith(root + os.sep):
                if any("=" in part for part in f[len(root) + 1 :].split(os.sep)[:-1]):
                    return True
    return False
