"""Reading the released plan: shape check, masses, the public margin."""
from __future__ import annotations

import math
from typing import Any


def plan_dict(plan: Any) -> dict:
    """Accept a SPEC §4 dict or any object with `.to_dict()`."""
    if hasattr(plan, "to_dict"):
        plan = plan.to_dict()
    if not isinstance(plan, dict) or not isinstance(plan.get("atoms"), list):
        raise ValueError("plan must be a dict with an 'atoms' list (SPEC §4)")
    for a in plan["atoms"]:
        if not isinstance(a, dict) or not isinstance(a.get("label"), str):
            raise ValueError("every plan atom needs a string 'label'")
    return plan


def mass(atom: dict) -> float:
    """The released noisy mass (raw, may be negative); display mass when only that is given."""
    v = atom.get("noisy_mass", atom.get("display_mass", 0.0))
    return float(v if v is not None else 0.0)


def margin_of(plan: dict) -> float:
    """The public comparison margin; derived from the noise scale when absent."""
    m = plan.get("comparison_margin")
    if m is not None:
        return float(m)
    s = plan.get("noise_scale")
    return 1.96 * math.sqrt(2.0) * float(s) if s is not None else 0.0
