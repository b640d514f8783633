"""Numbers: every number left over is a released value of its theme or cued plan metadata.

Runs last: numbers that other rules have judged (ranks, gaps, quantifiers) are
consumed. A number is accepted when, under the public rounding rule, it matches a
released value of the theme it is attached to, or a metadata field whose cue word
stands near it.
"""
from __future__ import annotations

import re

from ..context import Check
from ..lexicon import Mention
from ..numeric import Num, number_matches, numbers
from ..plan import mass
from ..vocab import PLAN_NOUNS


def _plan_values(c: Check) -> dict[str, tuple[float, str]]:
    p = c.plan
    vals = {}
    for key, cue in (("epsilon", r"ε|epsilon|privacy|budget|dp"), ("delta", r"δ|delta"),
                     ("L", PLAN_NOUNS + r"|plan|top|l\b"), ("m", PLAN_NOUNS + r"|dictionary|universe|candidates?|m\b"),
                     ("K", r"k\b|per\s+record|assignments?|at\s+most|up\s+to"), ("B", r"\bb\b|bound|clip|contribution"),
                     ("public_denominator", r"out\s+of|of|among|across|total|records|complaints|reviews|documents|denominator|in"),
                     ("comparison_margin", r"margin"), ("noise_scale", r"noise|scale|σ|sigma")):
        if isinstance(p.get(key), (int, float)):
            vals[key] = (float(p[key]), cue)
    vals["n_atoms"] = (float(c.n), PLAN_NOUNS + r"|plan")
    return vals


def atom_values(c: Check, att: list[Mention], num: Num) -> list[float]:
    """The released values a number attached to these mentions may state."""
    vals: list[float] = []
    for men in att:
        for x in men.atoms:
            a = c.atom(x)
            if num.pct:
                if a.get("support") is not None:
                    vals.append(float(a["support"]) * 100)
            else:
                vals.append(mass(a))
                if a.get("display_mass") is not None:
                    vals.append(float(a["display_mass"]))
                if a.get("support") is not None and num.kind == "digits" and num.value < 1:
                    vals.append(float(a["support"]))
    return vals


def check(c: Check) -> None:
    txt = c.masked
    plan_vals = _plan_values(c)
    for num in numbers(txt):
        s, e = num.start, num.end
        if c.overlaps(s, e, c.rank_spans + c.consumed) or num.ordinal:
            continue  # judged by another rule; ordinals are rank words
        window = txt[max(0, s - 30):min(len(txt), e + 30)]
        after = txt[e:e + 40]
        if not num.pct and num.value == int(num.value) and 0 < num.value <= c.n and \
                re.match(r"\s+(?:[\w-]+\s+)?" + PLAN_NOUNS + r"\b", after, re.I):
            continue  # "the two themes": counting what the plan lists
        att = c.attach(s, e)
        if any(number_matches(num, v) for v in atom_values(c, att, num)):
            continue
        if not num.pct and num.kind in ("digits", "words") and any(
                re.search(r"(?i)(?:^|[\s(=:])(?:" + cue + r")", window) and number_matches(num, v)
                for v, cue in plan_vals.values()):
            continue
        who = f' for "{att[0].text}"' if att else ""
        c.add("unsupported_number", s, e, f'"{num.text}" is not a released value{who} under the public rounding rule')
