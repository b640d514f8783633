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

from dataclasses import dataclass
from functools import cache

import sqlglot
from sqlglot import exp

from dpspin_sql import queries
from dpspin_sql.sql.totality import total_form

BASE_DIALECT = "duckdb"


@dataclass(frozen=True)
class SketchFilters:
    """An audited statement's WHERE terms: over `records` (which target records enter the
    sketch) and over `assignments` (which rows are read, before the clip). Columns are
    unqualified."""

    records: exp.Expression | None = None
    assignments: exp.Expression | None = None

    def __bool__(self) -> bool:
        return self.records is not None or self.assignments is not None


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


def rewrite(unit: str, filters: SketchFilters | None = None, dialect: str = BASE_DIALECT) -> exp.Select:
    """The enforced sketch query for `unit` with an audited statement's `filters` injected in
    their total form for `dialect` (the engine the query will run on), in DuckDB SQL with
    $K/$scale/$bound placeholders. Without filters it is the core query as written."""
    tree = core_query(unit)
    if filters is not None and filters.records is not None:
        target = _cte(tree, "target")
        target.where(total_form(filters.records, dialect), append=True, copy=False)
    if filters is not None and filters.assignments is not None:
        cleaned = _cte(tree, "cleaned")
        alias = cleaned.args["from_"].this.alias_or_name
        term = total_form(filters.assignments, dialect)
        for column in term.find_all(exp.Column):
            column.set("table", exp.to_identifier(alias))
        cleaned.where(term, append=True, copy=False)
    return tree
