"""The DP-SPIN SQL surface (docs/SQL.md): dialect, audit, rewrite, transpile, run.

    from dpspin_sql.sql import run_sql
    plan = run_sql(con, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) atom_id, DPSPIN_MASS(weight) ...",
                   out_path="private_plan.json")
"""
from __future__ import annotations


def audit_statement(sql: str):
    """Parse (BadInput if unparseable) and audit (AuditRefusal if unsafe) one statement."""
    from dpspin_sql.sql.audit import audit
    from dpspin_sql.sql.dialect import parse

    return audit(parse(sql))


def __getattr__(name: str):
    if name in ("run_sql", "emit_sketch"):
        from dpspin_sql.sql import run

        return getattr(run, name)
    raise AttributeError(name)
