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

import os as _os
import sys as _sys

__version__ = "0.1.0"

if _sys.argv and _os.path.basename(_sys.argv[0]) == "dpspin":
    # the console script: SIGINT/SIGTERM give one line from its first moment (dpspin_sql.interrupts)
    from dpspin_sql import interrupts as _interrupts

    _interrupts.install_early()

__all__ = ["__version__", "install", "session", "run_sql", "emit_sketch"]


def __getattr__(name: str):   # lazy: `import dpspin_sql` stays cheap (the CLI's --version)
    if name in ("install", "session"):
        from dpspin_sql import embed

        return getattr(embed, name)
    if name in ("run_sql", "emit_sketch"):
        from dpspin_sql.sql import run

        return getattr(run, name)
    raise AttributeError(f"module 'dpspin_sql' has no attribute {name!r}")
