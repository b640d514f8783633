"""The DP-SPIN SQL surface (docs/SQL.md): dialect, audit, run (the rewrite and transpilation
of the sketch query are the sketch wing's, dpspin_sql/sketch/).

    from dpspin_sql.sql import run_sql
    plan = run_sql(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) atom_id, DPSPIN_MASS(weight) ...",
                   out_path="private_plan.json")
"""
from __future__ import annotations


def __getattr__(name: str):
    """`audit_statement`, `run_sql` and `emit_sketch`, imported when first used (the dialect
    and the audit load sqlglot, which a plain `import dpspin_sql` should not pay for)."""
    if name == "audit_statement":
        from dpspin_sql.sql.audit import audit_statement

        return audit_statement
    if name in ("run_sql", "emit_sketch"):
        from dpspin_sql.sql import run

        return getattr(run, name)
    raise AttributeError(name)
