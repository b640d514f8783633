"""Sensitivities of the semantic sketch (docs/DESIGN.md §2), from the contribution bounds alone.

Every unit's clipped vector is non-negative with L1 ≤ b (b = B at user level, 1 at record
level), so adding or dropping a unit moves the sketch by at most b in L1, L2 and per
coordinate; replacing one moves it by at most 2b in L1, √2·b in L2 (two non-negative
vectors of mass ≤ b on disjoint supports is the worst case) and b per coordinate.

The table is data: each adjacency's row gives (Δ1, Δ2, Δ∞) as multiples of b. The
request (`request.py`) validates unit, adjacency and B before it looks a row up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

ADJACENCIES = ("add_drop", "replace")

# adjacency -> (Δ1, Δ2, Δ∞) in multiples of the per-unit bound b
TABLE: dict[str, tuple[float, float, float]] = {
    "add_drop": (1.0, 1.0, 1.0),
    "replace": (2.0, math.sqrt(2), 1.0),
}


@dataclass(frozen=True)
class Sensitivity:
    l1: float
    l2: float
    linf: float


def sensitivity(unit: str, adjacency: str, B: float = 1.0) -> Sensitivity:
    """The table's row for `adjacency` at the per-unit bound (B at user level, 1 at record level)."""
    b = 1.0 if unit == "record" else float(B)
    l1, l2, linf = TABLE[adjacency]
    return Sensitivity(l1=l1 * b, l2=l2 * b, linf=linf * b)


def fixed_point_d_in(unit: str, adjacency: str, bound_fix: int) -> Sensitivity:
    """The same row in fixed-point units, as integers OpenDP's i64 metrics accept.

    `bound_fix` is the exact per-unit L1 bound the sketch SQL enforces (2^S at record
    level, floor(B·2^S) at user level), so `unit` only documents the call. The L2 entry
    under replace, √2·bound_fix, is rounded up to the smallest integer whose square is at
    least 2·bound_fix².
    """
    if adjacency == "add_drop":
        return Sensitivity(l1=bound_fix, l2=bound_fix, linf=bound_fix)
    return Sensitivity(l1=2 * bound_fix, l2=math.isqrt(2 * bound_fix * bound_fix - 1) + 1, linf=bound_fix)
