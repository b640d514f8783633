"""Rewrite an audited statement into the core's enforced sketch query.

There is one source of truth for the sketch: `queries/sketch_record.sql` and
`queries/sketch_user.sql` (the portable form every engine can run), and, for the DuckDB
engine on a store, `queries/sketch_store_record.sql` / `queries/sketch_store_user.sql`,
whose enforcement CTEs from `positive` on are the core's, verbatim
(tests/test_sketch_store.py checks it). The rewrite parses the file with sqlglot,
puts the sketch source's relations in place of `records` and `assignments`
(`dpspin_sql.source`), and injects the statement's WHERE terms — records terms into the
`target` CTE (which records are in the sketch), assignments terms into the `cleaned` CTE
(which assignment rows are read, before the clip) — and nothing else: every bound the
release relies on is still imposed by the unchanged rest of the query.

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
from dpspin_sql.sketch.totality import total_form

BASE_DIALECT = "duckdb"


@dataclass(frozen=True)
class SketchFilters:
    """An audited statement's WHERE terms: over `records` (which target records enter the
    sketch) and over `assignments` (which rows are read, before the clip). Columns are
    unqualified."""

    records: exp.Expr | None = None
    assignments: exp.Expr | None = None
    # the unqualified columns' types when the statement reads its own tables (sql/own.py):
    # ((name, type), ...); None: the store's columns
    types: tuple[tuple[str, str], ...] | None = None

    @property
    def names(self) -> dict | None:
        return dict(self.types) if self.types is not None else None

    def __bool__(self) -> bool:
        return self.records is not None or self.assignments is not None


@cache
def _parsed(name: str) -> exp.Select:
    tree = sqlglot.parse_one(queries.load(name), read=BASE_DIALECT).assert_is(exp.Select)
    for node in tree.walk():
        node.comments = None
    return tree


def core_query(unit: str) -> exp.Select:
    """A fresh copy of the core sketch query for `unit` (placeholders and macros as written)."""
    return _parsed(f"sketch_{unit}").copy()


def store_query(unit: str, *, fast: bool = False) -> exp.Select:
    """A fresh copy of the DuckDB store query for `unit` (sketch_store_<unit>.sql; with
    `fast`, sketch_store_<unit>_fast.sql, for a snapshot whose every record is fast)."""
    return _parsed(f"sketch_store_{unit}_fast" if fast else f"sketch_store_{unit}").copy()


def cte(tree: exp.Select, name: str) -> exp.Select:
    for item in tree.args["with_"].expressions:
        if item.alias_or_name == name:
            return item.this
    raise AssertionError(f"the core sketch query has no CTE {name!r}")  # a broken core file


_cte = cte


def rewrite(unit: str, filters: SketchFilters | None = None, dialect: str = BASE_DIALECT, source=None, *,
            store: bool = False, fast: bool = False) -> exp.Select:
    """The enforced sketch query for `unit` over `source` (default: the store's tables) with an
    audited statement's `filters` injected in their total form for `dialect` (the engine the
    query will run on), in DuckDB SQL with $K/$scale/$bound placeholders ($canonical and
    $keyed too with `store`, the DuckDB store query; its slow-branch-free form with `fast`).
    Without filters or a source it is the core query as written."""
    tree = store_query(unit, fast=fast) if store else core_query(unit)
    if fast and filters is not None and filters.assignments is not None:
        raise AssertionError("a filter on assignment columns needs the full store query")
    if source is not None and not source.store:
        tree = bind_source(tree, unit, source)
    if filters is not None and filters.records is not None:
        _and_where(cte(tree, "target"), total_form(filters.records, dialect, filters.names))
    if filters is not None and filters.assignments is not None:
        cleaned = cte(tree, "cleaned")
        alias = cleaned.args["from_"].this.alias_or_name
        term = total_form(filters.assignments, dialect, filters.names)
        for column in term.find_all(exp.Column):
            column.set("table", exp.to_identifier(alias))
        _and_where(cleaned, term)
    return tree


def _and_where(select: exp.Select, term: exp.Expr) -> None:
    """AND `term`'s conjuncts into `select`'s WHERE, leaving out those it already holds (the
    statement's `split = 'target'` beside the query's own): x AND x is x, NULL included."""
    where = select.args.get("where")
    held = list(_conjuncts(where.this)) if where is not None else []
    new: list[exp.Expr] = []
    for part in _conjuncts(term):
        if not any(part == h for h in held + new):
            new.append(part)
    if new:
        select.where(exp.and_(*new, copy=False) if len(new) > 1 else new[0], append=True, copy=False)


def _conjuncts(node: exp.Expr):
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def bind_source(tree: exp.Select, unit: str, source) -> exp.Select:
    """Put `source`'s relations where the core query reads `records` and `assignments`.
    Without a records relation the `target` and `cleaned` CTEs give way to the head of
    queries/sketch_rows_<unit>.sql (the rows carry their own user)."""
    if source.records is None:
        head = cte(_parsed(f"sketch_rows_{unit}").copy(), "cleaned")
        ctes = tree.args["with_"].expressions
        for item in ctes:
            if item.alias_or_name == "cleaned":
                item.set("this", head)
        tree.args["with_"].set("expressions", [c for c in ctes if c.alias_or_name != "target"])
    else:
        extra = {} if source.records.has("split") else {"split": exp.Literal.string("target")}
        _replace_table(cte(tree, "target"), "records", source.records.relation(extra))
    _replace_table(cte(tree, "cleaned"), "assignments", source.assignments.relation())
    return tree


def _replace_table(select: exp.Select, name: str, relation: exp.Expr) -> None:
    """Replace the table `name` read by `select` with `relation`, keeping its alias (or
    giving it the table's name, so unqualified and qualified columns resolve as before)."""
    for table in list(select.find_all(exp.Table)):
        if table.name == name and not table.args.get("db"):
            alias = table.alias or name
            table.replace(exp.alias_(relation.copy(), alias, table=True))
            return
    raise AssertionError(f"the sketch query reads no table {name!r}")
