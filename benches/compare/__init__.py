"""The peer benchmark: the same selective queries over TPC-H lineitem through pqindex and
its peers, rows checked, times and bytes reported. Run it with ``python benches/compare.py``
(``compare.cli`` says how).

- ``predicates``: the predicate IR and its renderings (SQL, pyarrow, polars);
- ``queries``: the standard and Impala query sets, and the keys they look up;
- ``data``: lineitem from tpchgen-cli and the layouts written from it;
- ``engines``: one class per engine (pqindex, pyarrow, DuckDB, DataFusion, polars, Spark,
  pqindex.spark; classic and Spark Connect);
- ``meters``: wall time, ``rchar``, the load, the machine and the versions;
- ``harness``: warm-up, timed runs round-robin, rows checked across engines;
- ``cold``: the cold figures, in fresh processes;
- ``report``, ``charts``, ``formatting``: the Markdown, JSON and PNG of a run;
- ``cli``: the command line.

The other benches (``catalog.py``, ``tables.py``, ``text_search.py``, ...) ``import compare``
for its layouts, engines and harness; the names below are what they use.
"""

import sys
from pathlib import Path

# compare_spark_env lives beside this package, in benches/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compare_spark_env as spark_env
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

from .cli import chosen, main
from .data import (
    DONE,
    LAYOUTS,
    Layout,
    batches,
    build_layout,
    data_files,
    generate_raw,
    pick_keys,
    plain_string_schema,
    pqindex_write,
)
from .engines import (
    ENGINES,
    Datafusion,
    Duckdb,
    Engine,
    Polars,
    Pqindex,
    PqindexSpark,
    Pyarrow,
    SparkEngine,
)
from .formatting import fmt_ms, human_bytes, plural
from .harness import (
    Cell,
    Trial,
    check_agreement,
    fingerprint,
    measure,
    normal,
    progress,
    run_all,
)
from .meters import Meter, Run, loadavg, machine, versions
from .predicates import And, Between, Cmp, In, Or, Pred, to_polars, to_pyarrow, to_sql
from .queries import NARROW, QUERY_SETS, Keys, Query, build_impala_queries, build_queries
from .report import Comparison, cell_text, compare, load_text, markdown, write_results

__all__ = [
    "DONE",
    "ENGINES",
    "LAYOUTS",
    "NARROW",
    "QUERY_SETS",
    "And",
    "Between",
    "Cell",
    "Cmp",
    "Comparison",
    "Datafusion",
    "Duckdb",
    "Engine",
    "In",
    "Keys",
    "Layout",
    "Meter",
    "Or",
    "Polars",
    "Pqindex",
    "PqindexSpark",
    "Pred",
    "Pyarrow",
    "Query",
    "Run",
    "SparkEngine",
    "Trial",
    "batches",
    "build_impala_queries",
    "build_layout",
    "build_queries",
    "cell_text",
    "check_agreement",
    "chosen",
    "compare",
    "data_files",
    "fingerprint",
    "fmt_ms",
    "generate_raw",
    "human_bytes",
    "load_text",
    "loadavg",
    "machine",
    "main",
    "markdown",
    "measure",
    "normal",
    "pick_keys",
    "plain_string_schema",
    "plural",
    "pq",
    "pqindex_write",
    "progress",
    "run_all",
    "spark_env",
    "to_polars",
    "to_pyarrow",
    "to_sql",
    "versions",
    "write_results",
]
