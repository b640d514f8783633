"""Rewrite an audited statement into the core's enforced sketch query.

There is one source of truth for the sketch: `queries/sketch_record.sql` and
`queries/sketch_user.sql`. The rewrite parses that file with sqlglot and injects the
statement's WHERE terms — records terms into the `target` CTE (which records are in
the sketch), assignments terms into the `cleaned` CTE (which assignment rows are read,
before the clip) — and nothing else: every bound the release relies on is still
imposed by the unchanged rest of the query.

Each injected filter is guarded as COALESCE(TRY(filter), FALSE): a row on which it
raises (a failed CAST, a bad regex, an overflow) simply does not match. Otherwise a
query that fails or succeeds depending on one record's text would be an error oracle
that answers any per-record question without spending budget.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sqlglot
from sqlglot import exp

from dpspin_sql import queries

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


def guarded(term: exp.Expression) -> exp.Expression:
    """A filter that cannot raise (see the module docstring)."""
    return exp.func("COALESCE", exp.Try(this=term), exp.false())


def rewrite(unit: str, filters: SketchFilters | None = None) -> exp.Select:
    """The enforced sketch query for `unit` with `filters` injected, in DuckDB SQL with
    $K/$scale/$bound placeholders. Without filters it is the core query as written."""
    tree = core_query(unit)
    if filters is not None and filters.records is not None:
        target = _cte(tree, "target")
        target.where(guarded(filters.records.copy()), append=True, copy=False)
    if filters is not None and filters.assignments is not None:
        cleaned = _cte(tree, "cleaned")
        alias = cleaned.args["from_"].this.alias_or_name
        term = filters.assignments.copy()
        for column in term.find_all(exp.Column):
            column.set("table", exp.to_identifier(alias))
        cleaned.where(guarded(term), append=True, copy=False)
    return tree
