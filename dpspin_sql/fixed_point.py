"""Fixed point: every mass, weight and bound of the sketch is an int64 in units of 2^-SCALE_BITS
(docs/DESIGN.md §1). One module below the request, the canonical store, the sketch and the
mechanisms, so that each reads the same scale and none imports another for it."""
from __future__ import annotations

import math

__all__ = ["SCALE_BITS", "SCALE", "MAX_B", "fixed_bound"]

SCALE_BITS = 24
SCALE = 1 << SCALE_BITS
# 2·floor(B·2^S) (Δ1 under replace) must fit OpenDP's i64 metrics.
MAX_B = float(2 ** (61 - SCALE_BITS))


def fixed_bound(B: float, scale: int = SCALE) -> int:
    """floor(B · 2^S): a per-unit L1 bound in fixed point (never above B)."""
    return int(math.floor(B * scale))
