"""The query sets: the standard eighteen and the ten of Impala's page-index study, and
the keys they look up (read from the data, so every lookup hits rows)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from .predicates import And, Between, Cmp, In, Or, Pred, to_sql


@dataclass(frozen=True)
class Query:
    name: str
    where: Pred | None
    columns: tuple[str, ...] | None  # None: SELECT *

    def select_list(self) -> str:
        return ", ".join(self.columns) if self.columns else "*"

    def sql_where(self) -> str | None:
        return to_sql(self.where) if self.where is not None else None


@dataclass(frozen=True)
class Keys:
    """Values read from the data, so every lookup hits existing rows."""

    orderkey_point: int
    partkey_point: int
    orderkey_range: int
    orderkey_in: tuple[int, ...]
    orderkey_and: int
    and_span: int
    orderkey_or: int
    partkey_or: int
    comment: str
    orderkey_mid: int
    suppkey_point: int


NARROW = ("l_orderkey", "l_partkey", "l_extendedprice")
WIDE_RANGE = (dt.date(1994, 1, 1), dt.date(1994, 8, 31))  # about 10% of lineitem
DATE_EQ = dt.date(1995, 3, 15)


def build_queries(keys: Keys) -> list[Query]:
    """Each predicate with SELECT * and a narrow projection, except where * adds nothing but
    bulk (the wide range and the full scan)."""
    k = keys
    preds: list[tuple[str, Pred | None, tuple[str, ...], bool]] = [
        ("point_sorted", Cmp("l_orderkey", "=", k.orderkey_point), NARROW, True),
        ("point_unsorted", Cmp("l_partkey", "=", k.partkey_point), NARROW, True),
        (
            "range_narrow",
            Between("l_orderkey", k.orderkey_range, k.orderkey_range + 100),
            NARROW,
            True,
        ),
        (
            "range_wide_date",
            Between("l_shipdate", *WIDE_RANGE),
            ("l_orderkey", "l_shipdate", "l_extendedprice"),
            False,
        ),
        ("in_list", In("l_orderkey", k.orderkey_in), NARROW, True),
        (
            "and_multi",
            And(
                (
                    Between("l_orderkey", k.orderkey_and, k.orderkey_and + k.and_span),
                    Cmp("l_quantity", "<", Decimal(5)),
                )
            ),
            ("l_orderkey", "l_quantity", "l_extendedprice"),
            True,
        ),
        (
            "or_two_columns",
            Or((Cmp("l_orderkey", "=", k.orderkey_or), Cmp("l_partkey", "=", k.partkey_or))),
            NARROW,
            True,
        ),
        ("string_needle", Cmp("l_comment", "=", k.comment), ("l_orderkey", "l_comment"), True),
        (
            "date_eq",
            Cmp("l_shipdate", "=", DATE_EQ),
            ("l_orderkey", "l_shipdate", "l_extendedprice"),
            True,
        ),
        ("full_scan", None, ("l_quantity", "l_extendedprice", "l_discount"), False),
    ]
    queries: list[Query] = []
    for name, pred, narrow, with_star in preds:
        if with_star:
            queries.append(Query(f"{name}.star", pred, None))
        queries.append(Query(f"{name}.narrow", pred, narrow))
    return queries


IMPALA_PRICE = (Decimal("50000.00"), Decimal("50010.00"))


def build_impala_queries(keys: Keys) -> list[Query]:
    """The ten page-index queries, after Impala's study of Parquet page indexes ("Speeding Up
    SELECT Queries with Parquet Page Indexes"): SELECT * with a point lookup or a narrow
    range on the sorted key (the page index narrows them to a page or two per file), and
    selective predicates on unsorted columns (the page index can rule out little; the
    readers differ in how they evaluate them and fetch the other columns)."""
    k = keys
    preds: list[tuple[str, Pred]] = [
        ("orderkey_first", Cmp("l_orderkey", "=", 1)),
        ("orderkey_mid", Cmp("l_orderkey", "=", k.orderkey_mid)),
        ("orderkey_lt_1000", Cmp("l_orderkey", "<", 1000)),
        ("orderkey_range", Between("l_orderkey", k.orderkey_range, k.orderkey_range + 100)),
        ("partkey_eq", Cmp("l_partkey", "=", k.partkey_point)),
        ("suppkey_eq", Cmp("l_suppkey", "=", k.suppkey_point)),
        ("shipdate_eq", Cmp("l_shipdate", "=", DATE_EQ)),
        ("extendedprice_range", Between("l_extendedprice", *IMPALA_PRICE)),
        ("quantity_eq_1", Cmp("l_quantity", "=", Decimal(1))),
        ("comment_eq", Cmp("l_comment", "=", k.comment)),
    ]
    return [Query(f"impala_{name}", pred, None) for name, pred in preds]


#: The query sets a layout can run, by name.
QUERY_SETS: dict[str, Callable[[Keys], list[Query]]] = {
    "standard": build_queries,
    "impala": build_impala_queries,
}
