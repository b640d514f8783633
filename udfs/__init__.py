"""DuckDB functions the package registers in every store it opens.

They are SQL macros (`udfs/*.sql`): native SQL runs inside DuckDB's vectorised engine,
where a Python scalar UDF is ~35x slower on the same work. The sketch queries use
`dpspin_fix` and `dpspin_clip`; `dpspin_sql.sql.transpile` inlines them for engines that
have no such macros. Macros are persistent catalog entries: `store.connect` creates them
once, not on every connection (concurrent CREATE OR REPLACE conflicts in DuckDB).
"""
from importlib.resources import files

import duckdb

NAMES = ("dpspin_unit_hash", "dpspin_fix", "dpspin_clip")


def register(con: duckdb.DuckDBPyConnection) -> None:
    for entry in sorted(files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".sql"):
            con.execute(entry.read_text(encoding="utf-8"))
