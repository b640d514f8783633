"""Accuracy intervals (`unsupported_interval`): "about 95, ±4", "between 91 and 99".

A plan may release, by post-processing of the public noise scale, an interval around
every noisy value. A stated interval is checked as one unit against the attached
theme's released interval, each part under the public rounding rule with its own
precision: the value against `noisy_mass` (or the support), the half-width against the
released half-width, the endpoints against the interval's ends. Any part that does not
match — and any interval statement about a plan that releases none — is one violation.
The confidence level itself is plan metadata (rule `numbers`).
"""
from __future__ import annotations

import re

from ..context import Check
from ..numeric import Num, number_matches, numbers
from ..plan import half_width, has_intervals, mass, mass_interval, support_interval

PM = r"(?:±|\+/-|\+-|\+ / -|plus\s+or\s+minus|give\s+or\s+take)"
_PM_RX = re.compile(PM, re.I)
_ALONE = re.compile(r"\bmargin\s+of\s+error\s+(?:of\s+|is\s+|was\s+|:\s*)?|\baccurate\s+to\s+within\s+|\bwithin\s+(?=±)", re.I)
_POINTS = re.compile(r"\s*(?:%|percent\b|per\s+cent\b|percentage\s+points?\b|points?\b|pp\b)", re.I)
_RANGE_CUE = re.compile(r"\b(?:interval|range|ci|confidence|plausible|likely|credible)\b", re.I)
_CONF_AFTER = re.compile(r"\s*(?:%|percent|per\s+cent)?\s*(?:(?:family-?wise|simultaneous|joint|two-sided)\s+)?"
                         r"(?:confidence|ci\b|intervals?|credible|level)", re.I)
_BETWEEN = re.compile(r"\b(between|from)\s+$", re.I)


_CERTAIN = re.compile(r"\b(?:certain(?:ly|ty)?|sure|guarantee[sd]?|guaranteed|definitely|definite|undoubtedly|"
                      r"without\s+(?:a\s+)?doubt|for\s+a\s+fact|100\s*%\s+(?:confident|certain|sure)|exactly|precisely|"
                      r"always|surely|no\s+doubt)\b", re.I)


def _nums_in(c: Check, s: int, e: int) -> list[Num]:
    out = []
    for n in numbers(c.masked[s:e]):
        n.start += s
        n.end += s
        out.append(n)
    return out


def _fits(num: Num, v: float, as_abs: bool = False) -> bool:
    if as_abs:
        num = Num(num.start, num.end, num.text, abs(num.value), num.gran, num.hedge, num.kind, num.pct, num.ordinal)
    return number_matches(num, v)


class _Statement:
    def __init__(self, s: int, e: int, x: Num | None = None, h: Num | None = None, lo: Num | None = None,
                 hi: Num | None = None, pct: bool = False):
        self.s, self.e, self.x, self.h, self.lo, self.hi, self.pct = s, e, x, h, lo, hi, pct


def _find(c: Check) -> list[_Statement]:
    txt = c.masked
    found: list[_Statement] = []
    for ss, se in c.sents:
        nums = [n for n in _nums_in(c, ss, se) if not n.ordinal]
        # value ± half-width, or ± half-width alone
        for m in _PM_RX.finditer(txt, ss, se):
            after = [n for n in nums if n.start >= m.end() and re.fullmatch(r"\s*", txt[m.end():n.start])]
            if not after:
                continue
            h = after[0]
            hpct = h.pct or bool(_POINTS.match(txt[h.end:]))
            points = _POINTS.match(txt[h.end:])
            end = h.end + (points.end() if points else 0)
            before = [n for n in nums if n.end <= m.start()
                      and re.fullmatch(r"(?:\s*(?:%|percent|per\s+cent))?(?:\s+[\w-]+){0,3}?\s*[,(]?\s*", txt[n.end:m.start()], re.I)]
            before = [n for n in before if not _CONF_AFTER.match(txt[n.end:])]  # "a 95% interval of ±8.8"
            x = before[-1] if before else None
            if x is None:
                alone = _ALONE.search(txt, ss, m.start())
                s0 = alone.start() if alone and re.fullmatch(r"\s*", txt[alone.end():m.start()]) else m.start()
                found.append(_Statement(s0, end, h=h, pct=hpct))
            else:
                found.append(_Statement(x.start, end, x=x, h=h, pct=x.pct or hpct))
        # "margin of error of 4", "accurate to within 4" (no ± sign)
        for m in _ALONE.finditer(txt, ss, se):
            after = [n for n in nums if n.start >= m.end() and re.fullmatch(r"\s*", txt[m.end():n.start])]
            if after and not any(st.s <= after[0].start < st.e for st in found):
                h = after[0]
                found.append(_Statement(m.start(), h.end, h=h, pct=h.pct))
        # ranges
        for i, a in enumerate(nums[:-1]):
            b = nums[i + 1]
            gap = txt[a.end:b.start]
            if any(st.s <= a.start < st.e for st in found):
                continue
            joined = None
            lead = _BETWEEN.search(txt, ss, a.start)
            if lead and re.fullmatch(r"\s+and\s+" if lead.group(1).lower() == "between" else r"\s+to\s+", gap, re.I):
                joined = lead.start()
            elif re.fullmatch(r"\s*[–-]\s*|\s+to\s+", gap) and a.kind == b.kind == "digits" and not b.hedge:
                cs, ce = next(((x, y) for x, y in c.clauses_of(c.sentence_of(a.start)) if x <= a.start < y), (ss, se))
                cued = bool(_RANGE_CUE.search(c.text[cs:ce]))
                if gap.strip() in ("–", "-") or cued:   # "(roughly 402 to 442)" after "interval"; "≈ 86–96"
                    joined = a.start
            elif re.fullmatch(r",\s*", gap) and txt[a.start - 1:a.start] == "[" and txt[b.end:b.end + 1] == "]":
                joined = a.start - 1
            if joined is None:
                continue
            end = b.end + (1 if txt[b.end:b.end + 1] == "]" else 0)
            found.append(_Statement(joined, end, lo=a, hi=b, pct=a.pct or b.pct))
    return found


def _judge(c: Check, st: _Statement) -> str | None:
    """Why the statement does not match the released interval (None when it matches)."""
    if not has_intervals(c.plan):
        return "the plan releases no accuracy interval"
    att = c.attach(st.s, st.e)
    atoms = [c.atom(x) for men in att for x in men.atoms]
    if st.x is None and st.lo is None:  # a half-width alone: the theme's, or the plan's
        assert st.h is not None  # _find gives every statement without a value or range a half-width
        hs: list[float] = []
        for a in atoms:
            iv = support_interval(c.plan, a) if st.pct else mass_interval(c.plan, a)
            if iv:
                hs.append((iv[1] - iv[0]) / 2 * (100 if st.pct else 1))
        hw = half_width(c.plan)
        if not st.pct and hw is not None:
            hs.append(hw)
        d = c.plan.get("public_denominator")
        if st.pct and hw is not None and isinstance(d, (int, float)) and d > 0:
            hs.append(100.0 * hw / float(d))   # the plan's half-width as a share, in points
        return None if any(_fits(st.h, v, True) for v in hs) else "the stated half-width is not the released one"
    if not atoms:
        return "it is not attached to a theme"
    if st.lo is not None and st.hi is not None:
        ss = c.sents[c.sentence_of(st.s)][0]
        group: dict[int, dict] = {}
        for men in c.in_range(ss, st.s):
            for x in men.atoms:
                group.setdefault(x, c.atom(x))
        if len(group) >= 2 and _spans_values(list(group.values()), st):
            return None   # "A, B, C and D are similar (≈ 86–96, i.e. 3.3–3.7%)": the span of the group's values
    for a in atoms:
        iv = support_interval(c.plan, a) if st.pct else mass_interval(c.plan, a)
        if not iv:
            continue
        k = 100.0 if st.pct else 1.0
        lo, hi = iv[0] * k, iv[1] * k
        if st.x is not None:
            assert st.h is not None  # _find pairs every stated value with its half-width
            vals = [100.0 * float(a["support"])] if st.pct and a.get("support") is not None else \
                   [] if st.pct else [mass(a), float(a.get("display_mass", mass(a)))]
            if any(_fits(st.x, v) for v in vals) and _fits(st.h, (hi - lo) / 2, True):
                return None
        else:
            assert st.lo is not None and st.hi is not None  # without a value, _find gives a range
            los = [lo] + ([0.0] if lo < 0 else [])
            if any(_fits(st.lo, v) for v in los) and _fits(st.hi, hi):
                return None
    return "its parts do not match the released interval under the public rounding rule"


def _spans_values(atoms: list[dict], st: _Statement) -> bool:
    """Do the range's ends state the lowest and the highest released value of the themes it is attached to?"""
    assert st.lo is not None and st.hi is not None
    if st.pct:
        if any(a.get("support") is None for a in atoms):
            return False
        vals = [[100.0 * float(a["support"])] for a in atoms]
    else:
        vals = [[mass(a), float(a.get("display_mass", mass(a)))] for a in atoms]
    low = min(vals, key=lambda v: v[0])
    high = max(vals, key=lambda v: v[0])
    return any(_fits(st.lo, v) for v in low) and any(_fits(st.hi, v) for v in high)


def check(c: Check) -> None:
    for st in _find(c):
        if c.overlaps(st.s, st.e, c.rank_spans) or c.is_consumed(st.s, st.e):
            continue
        c.consume(st.s, st.e)
        why = _judge(c, st)
        ss, se = c.sents[c.sentence_of(st.s)]
        if why is None and _CERTAIN.search(c.text[ss:se]) and not re.search(r"\b(?:not|never|no|cannot|can't|n't)\s+"
                                                                              r"(?:\w+\s+){0,2}?(?:certain|sure)", c.text[ss:se], re.I):
            why = "an accuracy interval holds with its stated confidence, never with certainty"
        if why:
            c.add("unsupported_interval", st.s, st.e, f'"{c.text[st.s:st.e]}" is not supported: {why}')
