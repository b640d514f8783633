"""Rewrite an audited statement into the core's enforced sketch query.

There is one source of truth for the sketch: `queries/sketch_record.sql` and
`queries/sketch_user.sql`. The rewrite parses that file with sqlglot and injects the
statement's WHERE terms — records terms into the `target` CTE (which records are in
the sketch), assignments terms into the `cleaned` CTE (which assignment rows are read,
before the clip) — and nothing else: every bound the release relies on is still
imposed by the unchanged rest of the query.

Each injected filter is in its *total form* (`totality.total_form`): the audit has proved
that the filter cannot raise on any row (a query that fails or succeeds depending on
one record would be an error oracle answering per-record questions for free), and the
rewrite makes the arithmetic DOUBLE, divides by NULLIF(d, 0), writes LIKE patterns and
JSON paths canonically for the engine, and guards the JSON column with json_valid on
DuckDB. There is no TRY: a row that raised inside TRY made DuckDB re-run its chunk
row by row, which was visible in the running time, and some errors escape TRY.
"""
from __future__ import annotations

from functools import cache

import sqlglot
from sqlglot import exp

from dpspin_sql import queries
from dpspin_sql.sketch import sketch_params
from dpspin_sql.sql.audit import Audited
from dpspin_sql.sql.totality import total_form

BASE_DIALECT = "duckdb"


@cache
def _core(unit: str) -> exp.Select:
    tree = sqlglot.parse_one(queries.load(f"sketch_{unit}"), read=BASE_DIALECT)
    for node in tree.walk():
        node.comments = None
    return tree


def core_query(unit: str) -> exp.Select:
    """A fresh copy of the core sketch query for `unit` (placeholders and macros as written)."""
    return _core(unit).copy()


def _cte(tree: exp.Select, name: str) -> exp.Select:
    for cte in tree.args["with_"].expressions:
        if cte.alias_or_name == name:
            return cte.this
    raise AssertionError(f"the core sketch query has no CTE {name!r}")  # a broken core file


def rewrite(audited: Audited, dialect: str = BASE_DIALECT) -> exp.Select:
    """The enforced sketch query for this statement, in DuckDB SQL with $K/$scale/$bound placeholders
    (the filters in their total form for `dialect`, the engine the query will run on)."""
    tree = core_query(audited.unit)
    if audited.records_filter is not None:
        target = _cte(tree, "target")
        target.where(total_form(audited.records_filter, dialect), append=True, copy=False)
    if audited.assignments_filter is not None:
        cleaned = _cte(tree, "cleaned")
        alias = cleaned.args["from_"].this.alias_or_name
        term = total_form(audited.assignments_filter, dialect)
        for column in term.find_all(exp.Column):
            column.set("table", exp.to_identifier(alias))
        cleaned.where(term, append=True, copy=False)
    return tree


def params(audited: Audited) -> dict[str, int]:
    """The named parameters of the rewritten query ($K, $scale and, user level, $bound)."""
    return sketch_params(audited.unit, audited.K, audited.B)
