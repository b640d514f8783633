"""DuckDB functions the package registers on every connection it opens.

They are SQL macros (`udfs/*.sql`): native SQL runs inside DuckDB's vectorised engine,
where a Python scalar UDF is ~35x slower on the same work (../shared/NOTES.md). The
sketch queries use `dpspin_fix` and `dpspin_clip`; `dpspin_sql.sql.transpile` inlines
them for engines that have no such macros.
"""
from importlib.resources import files

import duckdb


def register(con: duckdb.DuckDBPyConnection) -> None:
    for entry in sorted(files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            con.execute(entry.read_text(encoding="utf-8"))
