"""dpspin-sql: differentially private semantic plans (DP-SPIN) over SQL.

store → atoms → assign → sketch → release → plan → decode → verify; see docs/ARCHITECTURE.md.

On a DuckDB connection you already have (docs/EMBEDDING.md):

    import duckdb, dpspin_sql
    con = duckdb.connect("analytics.duckdb")
    dpspin_sql.install(con, "dpspin_store.duckdb")      # the store is attached as catalog `dpspin`
    with dpspin_sql.session(con) as s: ...              # load records, atoms, assignments
    plan = dpspin_sql.run_sql(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) ...", "plan.json")
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "install", "session", "run_sql", "emit_sketch"]


def __getattr__(name: str):   # lazy: `import dpspin_sql` stays cheap (the CLI's --version)
    if name in ("install", "session"):
        from dpspin_sql import embed

        return getattr(embed, name)
    if name in ("run_sql", "emit_sketch"):
        from dpspin_sql.sql import run

        return getattr(run, name)
    raise AttributeError(f"module 'dpspin_sql' has no attribute {name!r}")
