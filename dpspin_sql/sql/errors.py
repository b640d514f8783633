"""Refusals that point at the offending part of the statement (line, column and its SQL),
printed in the DP-SPIN dialect (the sketch wing's `sketch.errors.refuse`, which the front end
shares)."""
from __future__ import annotations

from typing import NoReturn

from sqlglot import exp

from dpspin_sql.sketch import errors as _sketch_errors


def snippet(node: exp.Expr, limit: int = 80) -> str:
    from dpspin_sql.sql.dialect import DPSpin

    return _sketch_errors.snippet(node, limit, DPSpin)


def refuse(reason: str, node: exp.Expr | None) -> NoReturn:
    """Raise the one-line refusal: `SQL audit refused: <reason> [at line L, col C: <sql>]`."""
    from dpspin_sql.sql.dialect import DPSpin

    _sketch_errors.refuse(reason, node, DPSpin)
