"""The public, deterministic DP-SPIN verifier (docs/DESIGN.md §6; rules in docs/VERIFIER.md).

`verify(summary, plan)` checks that every claim in a summary is supported by the
released plan: atom mentions, numbers (public rounding rule), counts of the plan's
themes, support bins, pairwise comparisons (public margin), rank claims, accuracy
intervals, and the absence of trend claims and record-level detail. It reads only
the plan and public rules, so verification and everything it feeds (feedback,
regeneration, fallback) is post-processing. It imports nothing else from dpspin_sql:
anyone can run it on a plan file.

Layout: `text` (tokens, normalisation, sentences, clauses), `lexicon` (labels),
`numeric` (numbers and the rounding rule), `context` (the shared check state and
attachment), `rules/` (one module per rule, registered in `rules.RULES`), `core`
(the orchestrator over one plan), `comparison` (two plans compared), `entry` (the
one `verify` for either) and `claims` (structured claims).
"""
from __future__ import annotations

import sys as _sys
import types as _types

from .claims import verify_claims
from .context import Verdict, Violation
from .entry import verify
from .plan import margin_of, plan_dict
from .vocab import BIN_WORDS

__all__ = ["Violation", "Verdict", "verify", "verify_claims", "plan_dict", "margin_of", "BIN_WORDS"]


class _CallableModule(_types.ModuleType):
    """`from dpspin_sql import verify` is this package whether or not something imported it
    before; calling it is calling `verify.verify`."""

    def __call__(self, *args, **kwargs):
        return verify(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
