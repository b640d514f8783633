"""The verifier's one entry point: a plan or a comparison of two plans, checked alike."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .comparison import is_comparison, verify_comparison
from .context import Verdict
from .core import verify_plan


def verify(summary: str, plan: Any, dictionary: Iterable | None = None, require_theme: bool = False) -> Verdict:
    """Check `summary` against a released plan, or against a comparison of two (verify/comparison.py).

    Deterministic and public; `dictionary` and `require_theme` as in `core.verify_plan`.
    """
    if is_comparison(plan):
        return verify_comparison(summary, plan, dictionary, require_theme)
    return verify_plan(summary, plan, dictionary, require_theme)
