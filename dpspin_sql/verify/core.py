"""The orchestrator: run every registered rule over one (summary, plan) pair.

`verify_plan` checks a summary against one release; `verify.entry.verify` sends a
comparison of two releases to `verify.comparison` instead, which calls back here.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .context import Check, Verdict, Violation
from .plan import plan_dict
from .rules import RULES


def verify_plan(summary: str, plan: Any, dictionary: Iterable | None = None, require_theme: bool = False) -> Verdict:
    """Check `summary` against the released `plan`; deterministic and public.

    `dictionary` (labels or {atom_id, label} dicts) overrides the plan's
    `dictionary_labels` so that non-admitted labels can be recognised.
    `require_theme` also rejects a summary that mentions no admitted theme
    (the decoding loop uses it so that an empty-of-content answer never wins).
    """
    c = Check(summary or "", plan_dict(plan), dictionary, require_theme)  # a bad plan fails even when empty
    c.reverify = lambda text: verify_plan(text, c.plan, c.dictionary)
    if not c.text.strip():
        return Verdict(False, [Violation("empty", "", "the summary is empty", 0, 0)])
    checks = [c]
    for rule in RULES:  # a rule may fork the check (one per reading); the later rules run on every fork
        checks = [f for x in checks for f in (rule.check(x) or [x])]
    out = [v for x in checks for v in x.out if not _asked(c, v)]
    if require_theme and c.plan["atoms"] and not c.mentions:
        out.append(Violation("no_theme", "", "the summary mentions none of the plan's themes", 0, 0))
    return verdict_of(out)


# a question that asks which, what, how many ... asserts nothing of what it asks about
# ("Which themes are tied at the bottom?"); its answer, the next sentence, is what is checked
_WH = re.compile(r"^\s*(?:[-*•>#]+\s*)*(?:q(?:uestion)?\s*\d*\s*[:.]\s*)?(?:which|what|how|where|who|when)\b", re.I)
_ASKED_CODES = {"unsupported_comparison", "reversed_comparison", "wrong_rank", "wrong_bin", "unsupported_number",
                "unsupported_interval"}


def _asked(c: Check, v: Violation) -> bool:
    """The violation binds a wh-question's predicate to a theme its answer does not name: the claim
    word is in the question and its theme comes from before the question (a span that starts
    there), or from anywhere but the answer that follows."""
    if v.code not in _ASKED_CODES or v.end <= v.start:
        return False
    for k, (s, e) in enumerate(c.sents):
        if s < v.end <= e:
            text = c.masked[s:e]
            if not (text.rstrip().endswith("?") and _WH.match(text)):
                return False
            if v.start < s:
                return True
            answer = {str(c.atom(x).get("label", "")).lower() for m in (c.in_range(*c.sents[k + 1])
                      if k + 1 < len(c.sents) else []) for x in m.atoms}
            named = {q.lower() for q in re.findall(r'"([^"]+)"', v.message)}
            return bool(answer) and not (named & answer)
    return False


def verdict_of(out: Iterable[Violation]) -> Verdict:
    """The verdict of the violations found: each (code, span) once, in text order."""
    seen, vs = set(), []
    for v in sorted(out, key=lambda v: (v.start, v.code)):
        if (v.code, v.start, v.end) not in seen:
            seen.add((v.code, v.start, v.end))
            vs.append(v)
    return Verdict(not vs, vs)


def run_rules(c: Check, rules: Iterable, comparison: dict | None = None,
              side_spans: list[tuple[int, int, str]] | None = None) -> list[Violation]:
    """Run `rules` over one check (forks included) and return every violation found."""
    c.comparison, c.side_spans = comparison, list(side_spans or [])
    checks = [c]
    for rule in rules:
        checks = [f for x in checks for f in (rule.check(x) or [x])]
    return [v for x in checks for v in x.out]
