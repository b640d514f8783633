"""dpspin-sql: differentially private semantic plans (DP-SPIN) over SQL.

store → atoms → assign → sketch → release → plan → decode → verify; see docs/ARCHITECTURE.md.

On a DuckDB connection you already have (docs/EMBEDDING.md):

    import duckdb, dpspin_sql
    con = duckdb.connect("analytics.duckdb")
    dpspin_sql.install(con, "dpspin_store.duckdb")      # the store is attached as catalog `dpspin`
    with dpspin_sql.session(con) as s: ...              # load records, atoms, assignments
    plan = dpspin_sql.run_sql(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) ...", "plan.json")

The release path and the verifier from Python (a store connection, `dpspin_sql.store.connect`):

    from dpspin_sql import Plan, ReleaseRequest, release, verify
    plan = release(con, ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="record"), out="plan.json")
    verdict = verify("The most common theme is refund delay.", plan.to_dict())
"""
from __future__ import annotations

import os as _os
import sys as _sys

__version__ = "0.1.0"

if _sys.argv and _os.path.basename(_sys.argv[0]) == "dpspin":
    # the console script: SIGINT/SIGTERM give one line from its first moment (dpspin_sql.interrupts)
    from dpspin_sql import interrupts as _interrupts

    _interrupts.install_early()

__all__ = ["__version__", "install", "session", "run_sql", "emit_sketch", "release", "ReleaseRequest", "Plan",
           "verify"]

# name -> (module, attribute; None: the module itself, which is callable: `release(con, request)`
# is `release.release(...)`, `verify(summary, plan)` is `verify.verify(...)`)
_PUBLIC = {
    "install": ("dpspin_sql.embed", "install"), "session": ("dpspin_sql.embed", "session"),
    "run_sql": ("dpspin_sql.sql.run", "run_sql"), "emit_sketch": ("dpspin_sql.sql.run", "emit_sketch"),
    "release": ("dpspin_sql.release", None), "verify": ("dpspin_sql.verify", None),
    "ReleaseRequest": ("dpspin_sql.request", "ReleaseRequest"), "Plan": ("dpspin_sql.plan", "Plan"),
}


def __getattr__(name: str):   # lazy: `import dpspin_sql` stays cheap (the CLI's --version)
    if name in _PUBLIC:
        import importlib

        module, attribute = _PUBLIC[name]
        found = importlib.import_module(module)
        return found if attribute is None else getattr(found, attribute)
    raise AttributeError(f"module 'dpspin_sql' has no attribute {name!r}")
