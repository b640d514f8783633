"""Numbers: every number left over is a released value of its theme or cued plan metadata.

Runs last: numbers that other rules have judged (ranks, counts, intervals, gaps,
quantifiers) are consumed. A number is accepted when, under the public rounding rule,
it matches a released value of the theme it is attached to, or a metadata field whose
cue word stands in the number's clause — or in its sentence when the number's clause
names no theme (docs/VERIFIER.md, *Plan metadata*). Scopes are grammatical, never a
character distance: a longer sentence about the margin is as valid as a short one.
"""
from __future__ import annotations

import dataclasses
import math
import re

from ..context import Check
from ..lexicon import Mention
from ..numeric import HIGH_HEDGES, LOW_HEDGES, Num, number_matches, numbers
from ..plan import mass, mass_interval
from ..text import is_enumerator, span_of
from ..vocab import BIN_PATTERNS, PLAN_NOUNS

# field → cue words (whole words, case-insensitive); docs/VERIFIER.md *Plan metadata*
CUES = {
    "epsilon": r"ε|epsilon|privacy|budget|dp|differential(?:ly)?",
    "delta": r"δ|delta",
    "L": PLAN_NOUNS + r"|plan|top|top-l|l",
    "m": PLAN_NOUNS + r"|dictionary|universe|candidates?|vocabulary|taxonomy|m",
    "K": r"k|per\s+record|assignments?|at\s+most|up\s+to",
    "B": r"b|bound|clip(?:ping|ped)?|contribut\w*|per\s+(?:user|reviewer|customer|consumer|person|account)",
    "public_denominator": r"denominator|total|out\s+of|of|among|across|over|in|records?|complaints?|reviews?|documents?",
    "comparison_margin": r"margins?(?!\s+of\s+error)|comparison\s+threshold|threshold|differences?|differ(?:s|ing)?|"
                         r"gaps?|apart|meaningful|significant|(?:in)?distinguishable",
    "noise_scale": r"noise|scale|σ|sigma|standard\s+deviation",
    "interval_half_width": r"±|\+/-|\+-|plus\s+or\s+minus|give\s+or\s+take|margin\s+of\s+error|half[\s-]?width|error|"
                           r"uncertainty|accura(?:cy|te)|precision|within",
    "interval_confidence": r"confidence|confident|intervals?|ci|credible|coverage",
    "comparison_confidence": r"comparisons?|margin",
    # the assignment's fidelity on the auxiliary split, and the documented minimums (plan.assignment)
    "budget_share": r"ε|epsilon|budget",
    "unit_share": r"units?",
    "fidelity_precision": r"precision",
    "fidelity_recall": r"recall",
    "fidelity_spearman": r"spearman|(?:rank\s+)?correlation",
}
# public parameters and counts that are exact in the plan: stated, they must be the plan's value, not a rounding of it
EXACT_FIELDS = frozenset({"public_denominator", "K", "L", "m", "epsilon", "delta", "B"})
_CUE_RX = {k: re.compile(r"(?<![\w])(?:" + v + r")(?![\w])", re.I) for k, v in CUES.items()}


def metadata_values(c: Check, num: Num) -> list[tuple[str, float]]:
    """The public metadata values this number could state (field, value)."""
    p = c.plan
    vals: list[tuple[str, float]] = []
    if num.kind == "frac":
        # "half of ε for the selection, half for the values"; "a record in two themes gives each half of its unit"
        share = (p.get("mechanism_details") or {}).get("selection_fraction")
        if isinstance(share, (int, float)) and not isinstance(share, bool):
            vals += [("budget_share", 100.0 * float(share)), ("budget_share", 100.0 * (1 - float(share)))]
        k = p.get("K")
        if isinstance(k, int) and not isinstance(k, bool):
            vals += [("unit_share", 100.0 / j) for j in range(2, k + 1)]
        return vals
    if num.kind not in ("digits", "words"):
        return vals
    if num.pct:  # only the confidence levels are percentages: the intervals' and the comparison margin's
        conf = p.get("interval_confidence")
        out = [("interval_confidence", 100.0 * float(conf))] if isinstance(conf, (int, float)) else []
        cc = (p.get("mechanism_details") or {}).get("comparison_confidence")
        if isinstance(cc, (int, float)) and not isinstance(cc, bool):
            out.append(("comparison_confidence", 100.0 * float(cc)))
        return out
    for key in CUES:
        if isinstance(p.get(key), (int, float)) and not isinstance(p.get(key), bool):
            vals.append((key, float(p[key]) * (100.0 if key == "interval_confidence" else 1.0)))
    vals.append(("L", float(c.n)))
    raw = p.get("assignment")
    assignment: dict = raw if isinstance(raw, dict) else {}
    for part in ("fidelity", "fidelity_minimum"):
        for name, v in (assignment.get(part) or {}).items():
            key = next((f"fidelity_{w}" for w in ("precision", "recall", "spearman") if w in name), "")
            if key and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1:
                vals.append((key, float(v)))
    return vals


def cue_scope(c: Check, s: int) -> tuple[int, int]:
    """The number's clause; its sentence when the clause names no admitted theme.

    A pronoun does not count as naming one: "It is based on 8,000 reviews" may be about the data."""
    k = c.sentence_of(s)
    cs, ce = span_of(c.clauses_of(k), s, c.sents[k])
    return (cs, ce) if any(not m.anaphor for m in c.in_range(cs, ce)) else c.sents[k]


def _matches(key: str, num: Num, v: float) -> bool:
    """The rounding rule; a confidence level is a label (95%), stated exactly. A hedge on a
    metadata value states the rule, not the value ("differ by less than 14.9"): the value is
    read at its written precision."""
    if key in ("interval_confidence", "comparison_confidence"):
        return abs(num.value - v) < 1e-9 or (abs(num.value - v / 100.0) < 1e-9 and not num.pct)
    if key in EXACT_FIELDS:   # a public count or parameter is stated as it is ("3,000" is not a denominator of 3,400)
        return num.kind in ("digits", "words") and abs(num.value - v) <= 1e-9 * max(1.0, abs(v))
    return number_matches(num, v) or number_matches(dataclasses.replace(num, hedge=""), v)


def is_metadata(c: Check, num: Num) -> bool:
    vals = [(k, v) for k, v in metadata_values(c, num) if _matches(k, num, v)]
    if not vals:
        return False
    a, b = cue_scope(c, num.start)
    region = c.masked[a:num.start] + " " + c.masked[num.end:b]
    return any(_CUE_RX[k].search(region) for k, _ in vals)


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
                if a.get("support") is not None and num.kind == "digits" and 0 < num.value < 1:
                    vals.append(float(a["support"]))
    return vals


_OWN_VALUE = re.compile(r"\s*\(\s*(?:about|around|roughly|~|≈)?\s*[\d.,]+\s*%|\s+at\s+(?:about\s+|around\s+)?[\d.,]+\s*%",
                        re.I)
_DISTRIBUTIVE = re.compile(r"\b(?:each|both|apiece|every\s+one|all\s+(?:of\s+them|five|four|three|two))\b", re.I)


def _distributed(c: Check, num: Num) -> list[Mention] | None:
    """'A, B and C each appear in under 3%': the value is stated for every theme of the group."""
    k = c.sentence_of(num.start)
    cs, ce = span_of(c.clauses_of(k), num.start, c.sents[k])
    # a parenthesis the number is not in speaks for itself ("…, C about 32 (each ±2.8 at 95% confidence)")
    own = "".join(ch if not ("(" in c.masked[cs:i + 1] and _paren_depth(c.masked, cs, i) and not
                             _paren_depth(c.masked, cs, num.start)) else " " for i, ch in enumerate(c.masked[cs:ce], cs))
    if not _DISTRIBUTIVE.search(own):
        return None
    if num.start in c.respective() or c._paren_owner(c.sents[k][0], num.start, num.end) is not None:
        return None  # "both dry skin (12.2%) and long lasting (9.6%)": each value has its own theme
    if k in c.groups and len(c.groups[k]) > 1:
        return [Mention(num.start, num.end, g, "") for g in c.groups[k]]
    named: list[Mention] = []
    here = c.in_range(*c.sents[k]) or (c.in_range(*c.sents[k - 1]) if k > 0 else [])
    # a theme with a value of its own ("Sensitive skin (7.04%) and skin care (4.41%) are moderate, and four more
    # themes (A, B, C, D) each …") is not in the group the distributive value is stated for
    here = [m for m in here if not _OWN_VALUE.match(c.masked, m.end)] or here
    for m in here:
        if all(m.atoms != x.atoms for x in named):
            named.append(m)
    return named if len(named) > 1 else None


def _group_fits(c: Check, group: list[Mention], num: Num) -> bool:
    """Every member satisfies the number; a bound is tight for the member nearest to it."""
    per = [atom_values(c, [m], num) for m in group]
    if not all(per):
        return False
    if num.kind in ("digits", "words") and num.hedge in LOW_HEDGES | HIGH_HEDGES:
        low = num.hedge in LOW_HEDGES
        extreme = max(max(v) for v in per) if low else min(min(v) for v in per)
        loose = Num(num.start, num.end, num.text, num.value, math.inf, num.hedge, num.kind, num.pct, num.ordinal)
        return all(any(number_matches(loose, x) for x in v) for v in per) and number_matches(num, extreme)
    return all(any(number_matches(num, x) for x in v) for v in per)


def check(c: Check) -> None:
    for num in numbers(c.masked):
        s, e = num.start, num.end
        if c.overlaps(s, e, c.rank_spans + c.consumed) or num.ordinal or is_enumerator(c.text, s, e):
            continue  # judged by another rule; ordinals are rank words; "1." starts a list item
        group = _distributed(c, num)
        if group:
            if not _group_fits(c, group, num) and not is_metadata(c, num):
                c.add("unsupported_number", s, e, f'"{num.text}" is not a released value of every theme it is stated for')
            continue
        if _gap_value(c, num):
            continue
        if _zero_reached(c, num) or _negated_alternative(c, num):
            continue
        answered = _answered_count(c, num)
        if answered is not None:
            if not answered:
                c.add("unsupported_number", s, e, f'"{num.text}" does not answer the question\'s count of the plan\'s themes')
            continue
        att = c.attach(s, e)
        if all(m.anaphor for m in att) and _asked_theme_value(c, num):
            continue   # "Q: Is A more common than B? A: Not clearly: about 154 against about 135"
        each = [[m] for m in att] if c.plural(att) else [att]  # a plural anaphor states the value for each theme
        if all(any(number_matches(num, v) for v in atom_values(c, g, num)) for g in each) or is_metadata(c, num):
            continue
        who = f' for "{att[0].text}"' if att else ""
        c.add("unsupported_number", s, e, f'"{num.text}" is not a released value{who} under the public rounding rule')


_GAP = re.compile(r"\b(?:gap|gaps|difference|differences|differ|differs|apart|separat\w*|leads?|led|trails?|by|margin\s+of|"
                  r"above|below|ahead|behind|clears?|cleared|short\s+of)\b", re.I)


def _asked_theme_value(c: Check, num: Num) -> bool:
    """In an answer that names no theme, a number may state a value of a theme the question named."""
    k = c.sentence_of(num.start)
    named = [m for m in c.in_range(*c.sents[k]) if not m.anaphor] if k > 0 else []
    if k == 0 or named or not c.masked[c.sents[k - 1][0]:c.sents[k - 1][1]].rstrip().endswith("?"):
        return False
    asked = c.in_range(*c.sents[k - 1])
    return any(number_matches(num, v) for m in asked for v in atom_values(c, [m], num))


_REACHES = re.compile(r"\b(?:reach(?:es|ed)?|touch(?:es|ed)?|includ(?:es|ed)|cross(?:es|ed)|hits?|spans?|"
                      r"(?:goes|go|extends?|drops?|runs?)\s+(?:down\s+)?to)\s+$", re.I)


def _zero_reached(c: Check, num: Num) -> bool:
    """"interval reaches 0": true when the interval of a theme the number is attached to reaches 0 (a low bin's
    reason); judged here, consumed either way."""
    if num.value != 0 or num.pct or not _REACHES.search(c.masked[max(0, num.start - 30):num.start]):
        return False
    if not re.search(r"\binterval|\bbound|\brange|\b(?:it|its|their|they)\b",
                     c.text[max(0, num.start - 40):num.start], re.I):   # "its interval" is a mention in c.masked
        return False
    ivs = [mass_interval(c.plan, c.atom(x)) for m in c.attach(num.start, num.end) for x in m.atoms]
    if not any(iv is not None and iv[0] <= 0 for iv in ivs):
        c.add("unsupported_number", num.start, num.end,
              f'"{num.text}": the released interval of the theme it is stated for does not reach 0')
    return True


def _negated_alternative(c: Check, num: Num) -> bool:
    """"90% (not 95%)", "rather than 95%": the number is the one the sentence denies, not a value it states."""
    before = c.masked[max(0, num.start - 20):num.start]
    return bool(re.search(r"(?:\(\s*not|\b(?:rather\s+than|instead\s+of))\s+$", before, re.I))


def _gap_value(c: Check, num: Num) -> bool:
    """'The gap between them is about 3.5', 'A leads B by about 3.5': a number in a clause about a gap is the
    released difference of two themes in scope (the sentence's, with those of up to three sentences before
    while it names fewer than two: a pronoun's theme): masses, or supports in points for a percentage."""
    cs, ce = c.clause_at(num.start)
    if not _GAP.search(c.masked[cs:num.start]) and not _GAP.search(c.masked[num.end:ce]):
        return False
    k = c.sentence_of(num.start)
    atoms = sorted({x for m in c.in_range(*c.sents[k]) for x in m.atoms})
    back = k
    while len(atoms) < 2 and back > 0 and k - back < 3:   # "It leads happy hour by 23.5": the pronoun's theme is before
        back -= 1
        atoms = sorted(set(atoms) | {x for m in c.in_range(*c.sents[back]) for x in m.atoms})
    for i, a in enumerate(atoms):
        for b in atoms[i + 1:]:
            x, y = c.atom(a), c.atom(b)
            if num.pct:
                if x.get("support") is None or y.get("support") is None:
                    continue
                d = 100.0 * abs(float(x["support"]) - float(y["support"]))
            else:
                d = abs(mass(x) - mass(y))
            if number_matches(num, d) or number_matches(dataclasses.replace(num, hedge=""), d):
                return True
    return False


def _paren_depth(txt: str, lo: int, pos: int) -> int:
    """How many parentheses opened after lo are still open at pos."""
    d = 0
    for ch in txt[lo:pos]:
        d = d + 1 if ch == "(" else max(0, d - 1) if ch == ")" else d
    return d


_HOW_MANY = re.compile(r"\bhow\s+many\s+(?:[\w-]+\s+){0,3}?(?:themes?|topics?|categories|issues?|bins?)\b", re.I)
_ADMITTED = re.compile(r"\b(?:released|admitted|listed|published|selected|in\s+(?:the|this)\s+(?:plan|release))\b", re.I)


def _answered_count(c: Check, num: Num) -> bool | None:
    """A short answer to "How many themes …?" ("A: Seven.") is a count of the plan's themes: with a bin word in the
    question it is that bin's size, with admission (released, listed, in the plan) the plan size, else 1..P.
    None when the number answers no such question."""
    k = c.sentence_of(num.start)
    if k == 0 or num.pct:
        return None
    qs, qe = c.sents[k - 1]
    q = c.masked[qs:qe]
    if not q.rstrip().endswith("?") or not _HOW_MANY.search(q):
        return None
    if len(re.findall(r"[A-Za-z§]+", c.masked[c.sents[k][0]:num.start])) > 3:
        return None   # not the answer's opening number
    n = num.value
    bins = [b for b, _, rx in BIN_PATTERNS if rx.search(q)]
    if bins:
        return n == sum(str(a.get("bin", "")).lower() in bins for a in c.plan["atoms"])
    if _ADMITTED.search(q) or re.search(r"\bbins?\b", q, re.I):
        return n == c.n or (bool(re.search(r"\bbins?\b", q, re.I)) and n == len({a.get("bin") for a in c.plan["atoms"]}))
    return 1 <= n <= c.n
