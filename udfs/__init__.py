"""DuckDB functions the package registers in every store it opens.

They are SQL macros (`udfs/*.sql`): native SQL runs inside DuckDB's vectorised engine,
where a Python scalar UDF is ~35x slower on the same work. The sketch queries use
`dpspin_fix` and `dpspin_clip`; `dpspin_sql.sketch.transpile` inlines them for engines that
have no such macros. Macros are persistent catalog entries: `store.connect` creates them
once, not on every connection (concurrent CREATE OR REPLACE conflicts in DuckDB).
"""
import re
from functools import cache
from importlib.resources import files

import duckdb

NAMES = ("dpspin_unit_hash", "dpspin_fix", "dpspin_clip")
_MACRO = re.compile(r"CREATE OR REPLACE MACRO (\w+)\(([^)]*)\)")


def probe(database: str) -> str:
    """A query that binds every macro of `database`'s main schema with its own arity (NULL
    arguments): it fails when one is missing or has another signature. Cheap where listing
    duckdb_functions() is not (~40 ms: it enumerates every built-in function). Qualified by
    the database, so that a TEMP macro of the same name does not pass for the store's."""
    quoted = '"' + database.replace('"', '""') + '"'
    return "SELECT " + ", ".join(f"{quoted}.main.{name}({', '.join(['NULL'] * arity)})" for name, arity in _arities())


@cache
def _arities() -> tuple[tuple[str, int], ...]:
    found = []
    for entry in sorted(files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            for name, params in _MACRO.findall(entry.read_text(encoding="utf-8")):
                found.append((name, len([p for p in params.split(",") if p.strip()])))
    if sorted(name for name, _ in found) != sorted(NAMES):
        raise AssertionError("udfs/*.sql and udfs.NAMES disagree")
    return tuple(found)


def register(con: duckdb.DuckDBPyConnection) -> None:
    for entry in sorted(files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            con.execute(entry.read_text(encoding="utf-8"))
