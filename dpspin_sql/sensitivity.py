"""Sensitivities of the semantic sketch (SPEC §2), from the contribution bounds alone.

Every unit's clipped vector is non-negative with L1 ≤ B (B = 1 at record level), so
adding or dropping a unit moves the sketch by at most B in L1, L2 and per coordinate;
replacing one moves it by at most 2B in L1, √2·B in L2 (two non-negative vectors of
mass ≤ B) and B per coordinate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpspin_sql.errors import BadInput

ADJACENCIES = ("add_drop", "replace")


@dataclass(frozen=True)
class Sensitivity:
    l1: float
    l2: float
    linf: float


def sensitivity(unit: str, adjacency: str, B: float = 1.0) -> Sensitivity:
    """SPEC §2's table. At record level B is fixed to 1 whatever is passed."""
    if unit not in ("record", "user"):
        raise BadInput(f"--unit must be record or user, not {unit!r}")
    if adjacency not in ADJACENCIES:
        raise BadInput(f"--adjacency must be add_drop or replace, not {adjacency!r}")
    b = 1.0 if unit == "record" else float(B)
    if not math.isfinite(b) or b <= 0:
        raise BadInput(f"-B must be a positive number, not {B!r}")
    if adjacency == "add_drop":
        return Sensitivity(l1=b, l2=b, linf=b)
    return Sensitivity(l1=2 * b, l2=math.sqrt(2) * b, linf=b)


def fixed_point_d_in(unit: str, adjacency: str, bound_fix: int) -> Sensitivity:
    """The same table in fixed-point units, as integers OpenDP's i64 metrics accept.

    `bound_fix` is the exact per-unit L1 bound the sketch SQL enforces (2^S at record
    level, floor(B·2^S) at user level). The L2 entry under replace is rounded up.
    """
    if adjacency == "add_drop":
        return Sensitivity(l1=bound_fix, l2=bound_fix, linf=bound_fix)
    return Sensitivity(l1=2 * bound_fix, l2=math.isqrt(2 * bound_fix * bound_fix - 1) + 1, linf=bound_fix)
