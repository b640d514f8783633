"""What DuckDB's own binder makes of a name: the relations a query scans, and the macros that
shadow built-in functions (docs/SQL.md, "Names").

A view's text is not what it reads. `dpspin.records` (two parts), `query_table('…')`,
`query('…')` and table macros all reach an attached catalog, and DuckDB binds an
unqualified name in a view first in the view's own catalog and schema, then on the
*querying* connection's search path — a view of the user's that names `assignments`
reads the store's table on a session whose search path starts with the store. So the
audit asks DuckDB: `scans(con, sql)` is the set of relations the unoptimised logical plan
of `sql` scans (EXPLAIN binds and plans, it does not execute), exactly as the connection
the release runs on would bind it.

A macro named like a built-in function shadows it for every query on the connection
(`CREATE MACRO least(a, b) AS …` in the user's catalog changes what the sketch's own
`least` computes on a session): `shadowing_macros` lists them, and a statement is refused
while one exists.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import cache

FILE_SCANS = frozenset({"READ_PARQUET", "READ_CSV", "READ_CSV_AUTO"})
# plan operators that read nothing but what the plan holds itself
_NO_DATA = frozenset({"CTE_SCAN", "DUMMY_SCAN", "EXPRESSION_GET", "CHUNK_GET", "EMPTY_RESULT", "DELIM_GET"})
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Scans:
    """The relations one bound query reads: tables as (catalog, schema, name), lower case;
    file reader and other table-function operators by their plan name."""

    tables: frozenset[tuple[str, str, str]]
    functions: frozenset[str]

    @property
    def other_functions(self) -> frozenset[str]:
        return self.functions - FILE_SCANS


def scans(con, sql: str) -> Scans:
    """The relations DuckDB's binder makes `sql` scan on `con` (its search path, its attached
    catalogs, its macros). Raises duckdb.Error when DuckDB cannot bind it."""
    with _explain_all(con):
        rows = con.execute(f"EXPLAIN (FORMAT json) {sql}").fetchall()
    plan = next((text for kind, text in rows if kind == "logical_plan"), None)
    if plan is None:
        raise AssertionError("DuckDB's EXPLAIN returned no unoptimised logical plan")
    tables: set[tuple[str, str, str]] = set()
    functions: set[str] = set()
    stack = list(json.loads(plan))
    while stack:
        node = stack.pop()
        stack.extend(node.get("children") or [])
        name = str(node.get("name", "")).upper()
        info = node.get("extra_info") or {}
        if name == "SEQ_SCAN" and isinstance(info, dict) and "Table" in info:
            tables.add(split_name(str(info["Table"])))
        elif name not in _NO_DATA and (name in FILE_SCANS or not node.get("children")):
            functions.add(name)   # a leaf that reads something: a file reader or another table function
    return Scans(frozenset(tables), frozenset(functions))


class _explain_all:
    """`SET explain_output = 'all'` for the block, then the connection's own value again (the
    unoptimised plan still has every scan; an optimised one drops scans of empty tables)."""

    def __init__(self, con):
        self.con = con

    def __enter__(self):
        _LOCK.acquire()
        try:
            self.before = self.con.execute("SELECT current_setting('explain_output')").fetchall()[0][0]
            self.con.execute("SET explain_output = 'all'")
        except Exception:
            _LOCK.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.con.execute(f"SET explain_output = '{str(self.before).lower()}'")
        finally:
            _LOCK.release()


def split_name(text: str) -> tuple[str, str, str]:
    """`"user".main.t` (how EXPLAIN prints a table) as ('user', 'main', 't'), lower case."""
    parts, cur, quoted, i = [], [], False, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                cur.append('"')
                i += 2
                continue
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    while len(parts) < 3:
        parts.insert(0, "")
    return tuple(p.lower() for p in parts[-3:])  # type: ignore[return-value]


# -- macros that shadow built-in functions ------------------------------------------------------

@cache
def builtin_functions() -> frozenset[str]:
    """The names of DuckDB's own functions (a pristine in-memory database's)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        return frozenset(r[0].lower() for r in con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions()").fetchall())
    finally:
        con.close()


def shadowing_macros(con, allowed: dict[str, set[str]] | None = None) -> list[str]:
    """`catalog.schema.name` of every macro on `con` named like a built-in function, except
    `allowed` ({catalog: {names}}: the store's own macros)."""
    builtin = builtin_functions()
    allowed = {k.lower(): {n.lower() for n in v} for k, v in (allowed or {}).items()}
    out = []
    for db, schema, name in con.execute(
            "SELECT database_name, schema_name, function_name FROM duckdb_functions() WHERE NOT internal "
            "ORDER BY ALL").fetchall():
        if name.lower() in builtin and name.lower() not in allowed.get(str(db).lower(), set()):
            out.append(f"{db}.{schema}.{name}")
    return sorted(set(out))


def search_path(con) -> list[tuple[str, str]]:
    """(catalog, schema) in the order DuckDB looks an unqualified name up on `con` (after a
    view's own catalog and schema): temp, the current catalog and schema, the search path."""
    current, schema, path = con.execute(
        "SELECT current_database(), current_schema(), current_setting('search_path')").fetchall()[0]
    out = [("temp", "main"), (current, schema)]
    for entry in str(path or "").split(","):
        if entry.strip():
            _, first, last = split_name(entry.strip())
            out += [(first, last)] if first else [(current, last), (last, "main")]
    seen, unique = set(), []
    for c, s in out:
        key = (c.lower(), s.lower())
        if key not in seen:
            seen.add(key)
            unique.append((c, s))
    return unique
