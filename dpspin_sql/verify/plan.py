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


def _pair(v) -> tuple[float, float] | None:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        lo, hi = float(v[0]), float(v[1])
        return (min(lo, hi), max(lo, hi)) if math.isfinite(lo) and math.isfinite(hi) else None
    return None


def half_width(plan: dict) -> float | None:
    """The plan's public interval half-width (mass units), when released."""
    h = plan.get("interval_half_width")
    return float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) else None


def mass_interval(plan: dict, atom: dict) -> tuple[float, float] | None:
    """The atom's released accuracy interval in mass units: its own, else noisy_mass ± the plan's half-width."""
    own = _pair(atom.get("interval"))
    if own:
        return own
    h = half_width(plan)
    return (mass(atom) - h, mass(atom) + h) if h is not None else None


def support_interval(plan: dict, atom: dict) -> tuple[float, float] | None:
    """The atom's interval on support (a fraction): its own, else the mass interval over the public denominator."""
    own = _pair(atom.get("support_interval"))
    if own:
        return own
    d = plan.get("public_denominator")
    iv = mass_interval(plan, atom)
    if iv and isinstance(d, (int, float)) and d > 0:
        return iv[0] / float(d), iv[1] / float(d)
    return None


def has_intervals(plan: dict) -> bool:
    return half_width(plan) is not None or any(_pair(a.get("interval")) for a in plan.get("atoms", []))
