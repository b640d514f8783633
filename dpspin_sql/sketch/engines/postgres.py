"""The sketch on a PostgreSQL server, where a warehouse keeps the data.

The server holds `records`, `assignments` and `atoms` in the store's shape; the
enforced sketch query, transpiled to PostgreSQL from the same `queries/sketch_*.sql`,
runs there and only the m (atom_id, mass) rows come back. The release, the public
dictionary and the ledger stay in the curator's DuckDB store.

A WHERE filter that could raise on one record's value would make the query's success an
answer about that record. The audit already admits only total filters (sql/totality.py:
no comparison needs an implicit conversion, numbers are compared in DOUBLE PRECISION,
numeric literals are finite and within ±[1e-300, 1e300], string literals have no NUL);
this engine admits, on top of that, only filters that compare columns with literals —
no functions, casts, arithmetic, patterns or JSON, whose PostgreSQL behaviour differs
from DuckDB's (PostgreSQL's LIKE, regex and JSON functions raise on inputs DuckDB's
do not) — and anything else is refused before the server is touched. The rewrite's
`CAST(col AS DOUBLE PRECISION)` of an INTEGER column or numeric literal cannot fail.
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from dpspin_sql import queries
from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch, assemble, check_user_level, target_facts
from dpspin_sql.sketch.errors import refuse
from dpspin_sql.sketch.rewrite import SketchFilters
from dpspin_sql.sketch.transpile import sketch_sql

_SAFE_FILTER_NODES = (exp.And, exp.Or, exp.Not, exp.Paren, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
                      exp.Is, exp.Null, exp.Boolean, exp.Literal, exp.Column, exp.Identifier, exp.In,
                      exp.Between, exp.Neg)


def connect(dsn: str):
    """A psycopg connection (the `postgres` extra)."""
    from dpspin_sql.extras import require

    psycopg = require("psycopg")
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise BadInput(f"cannot connect to PostgreSQL ({type(exc).__name__})") from None


def check_filters(filters: SketchFilters | None) -> None:
    """Refuse filters that could raise on PostgreSQL (see the module docstring)."""
    for term in (filters.records, filters.assignments) if filters else ():
        for node in term.walk() if term is not None else ():
            if isinstance(node, exp.Neg) and not isinstance(node.this, exp.Literal):
                refuse("on the postgres engine a WHERE filter may only compare columns with literals "
                       "(negation of a column is arithmetic)", node)
            if not isinstance(node, _SAFE_FILTER_NODES):
                refuse(f"on the postgres engine a WHERE filter may only compare columns with literals "
                       f"({node.key.upper()} could fail on one record's value, and PostgreSQL has no TRY)", node)


class PostgresEngine:
    """The sketch on a PostgreSQL server (`pg` connection or `dsn`) that holds the tables."""

    name = "postgres"

    @staticmethod
    def admit(filters: SketchFilters | None) -> None:
        """`check_filters`: what this engine refuses of the audited filters."""
        check_filters(filters)

    def __init__(self, filters: SketchFilters | None = None, *, pg=None, dsn: str | None = None):
        self.admit(filters)
        self.filters, self.pg, self.dsn = filters, pg, dsn

    def details(self) -> dict:
        return {"engine": self.name}

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        import psycopg

        if bounds.unit == "user":  # the store's own aux side shaped the dictionary and scorer
            check_user_level(con, 0)
        if self.pg is None and not self.dsn:
            raise BadInput("the postgres engine needs --pg-dsn (or DPSPIN_PG_DSN)")
        pg = self.pg or connect(self.dsn)  # type: ignore[arg-type]  # dsn checked just above
        try:
            facts = target_facts(pg, bounds.unit)
            rows = pg.execute(sketch_sql(bounds, self.filters, "postgres", pretty=False)).fetchall()
        except psycopg.Error:
            raise BadInput("the sketch query failed on PostgreSQL") from None  # never the server's message
        return assemble(facts, rows, bounds)


def copy_store(con, pg) -> dict[str, int]:
    """Copy a store's records, assignments and atoms to a PostgreSQL server (replacing them),
    in one transaction: a failure leaves the server's tables as they were."""
    import psycopg

    counts = {}
    try:
        with pg.transaction():
            pg.execute(queries.load("pg_schema"))
            for table in ("records", "assignments", "atoms"):
                result = con.execute(queries.load(f"export_{table}"))
                n = 0
                with pg.cursor().copy(queries.load(f"pg_copy_{table}")) as copy:
                    while rows := result.fetchmany(10_000):
                        for row in rows:
                            copy.write_row(row)
                        n += len(rows)
                counts[table] = n
    except psycopg.Error as exc:
        raise BadInput(f"copying the store to PostgreSQL failed ({type(exc).__name__}); nothing was changed "
                       "there") from None
    return counts
