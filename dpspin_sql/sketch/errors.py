"""Refusals that point at the offending part of the statement (line, column and its SQL).

The sketch wing refuses what an engine could fail on (`totality.check_engine`, a literal out
of every engine's range); the DP SQL front end refuses through the same `refuse`, printing
the node in its own dialect (sql/errors.py). Filter nodes print the same in both."""
from __future__ import annotations

from typing import NoReturn

from sqlglot import exp
from sqlglot.dialects.dialect import DialectType

from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sketch.sqlglot_log import quiet


def position(node: exp.Expr | None) -> tuple[int, int] | None:
    """(line, col) of the first token of `node` that the parser placed, if any."""
    if node is None:
        return None
    best = None
    for sub in node.walk():
        meta = sub.meta if hasattr(sub, "_meta") and sub._meta else None
        if meta and "line" in meta and "start" in meta and (best is None or meta["start"] < best[2]):
            col = meta["col"] - (meta.get("end", meta["start"]) - meta["start"])
            best = (meta["line"], max(col, 1), meta["start"])
    return (best[0], best[1]) if best else None


def snippet(node: exp.Expr, limit: int = 80, dialect: DialectType = "duckdb") -> str:
    try:
        with quiet():
            text = node.sql(dialect, comments=False)
    except Exception:  # a node the generator cannot print still gets refused
        text = node.key.upper()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refuse(reason: str, node: exp.Expr | None, dialect: DialectType = "duckdb") -> NoReturn:
    """Raise the one-line refusal: `SQL audit refused: <reason> [at line L, col C: <sql>]`."""
    where = ""
    if node is not None:
        pos = position(node)
        at = f"at line {pos[0]}, col {pos[1]}" if pos else "at"
        where = f" [{at}: {snippet(node, dialect=dialect)}]"
    raise AuditRefusal(f"SQL audit refused: {reason}{where}")
