"""Statements of the method: every public field of the plan may be stated, and each is checked
against the plan (docs/VERIFIER.md, *Statements of the method*).

* **A number bound to a field** — its symbol or name right before it, joined by `=`, `≈`, `~`,
  `:`, *is, of, at, set to, equal to, around, about, roughly* (or the field's name right after
  a number: "a 37-theme dictionary" is read by *Counts*) — must match that field under the
  rounding rule, whatever other field it might also equal: *ε / epsilon / privacy budget*,
  *δ / delta*, *B / contribution bound*, *K*, *L*, *m*, *σ / sigma / noise scale / scale of the
  noise / standard deviation*, *comparison margin / margin*, *public denominator /
  denominator*, *half-width*, *selection share / selection fraction* (`mechanism_details`),
  *selection ε / value ε*. "ε = 1" in a plan released at ε = 2 is an `unsupported_number`, even
  though B = 1.
* **Bin thresholds**: a percentage that is 100·`bins.high` or 100·`bins.moderate` in a clause that
  names no theme and speaks of the bins (*bin, threshold, cut-off, high, moderate, low, at least,
  ≥*) is the public bin rule ("high means support of at least 10%").
* **Words of the method**: the mechanism (*Laplace*, *Gaussian*, *private top-L / top-L
  selection / noisy top-k*), the unit (*record-level, user-level, the protected unit is the
  user*), the calibration (*zCDP*, *pure ε-DP*, *approximate DP*): each must be the plan's
  (`mechanism`, `mechanism_details.noise`, `unit`, `calibration`, `delta`), else `wrong_method`
  — unless its clause denies it (*not, rather than, instead of, unlike*).
"""
from __future__ import annotations

import dataclasses
import re

from ..context import Check
from ..negation import _answer
from ..numeric import Num, number_matches, numbers
from .numbers import EXACT_FIELDS

_JOIN = (r"\s*(?:\([^()\n]{0,30}\)\s*)?(?:=|≈|~|:|≤|\||is|was|of|at|to|set\s+to|equal\s+to|equals|around|about|roughly|"
         r"approximately|near|only|just|\(|,)*\s*")
_FIELDS: list[tuple[str, str]] = [
    # the specific fields first: "selection ε = 1" is the selection's ε, not the plan's
    ("selection_fraction", r"selection\s+(?:share|fraction)|share\s+of\s+(?:the\s+)?(?:ε|epsilon|budget)\s+"
                           r"(?:spent\s+)?on\s+(?:the\s+)?(?:admission|selection)"),
    ("selection_epsilon", r"selection\s+(?:ε|epsilon)|(?:ε|epsilon)\s+(?:for|of)\s+(?:the\s+)?(?:selection|admission)"),
    ("value_epsilon", r"value\s+(?:ε|epsilon)|(?:ε|epsilon)\s+(?:for|of)\s+(?:the\s+)?(?:values|measurement)"),
    ("epsilon", r"ε|epsilon|privacy\s+budget|privacy\s+loss|privacy\s+parameter"),
    ("delta", r"δ|delta"),
    ("B", r"(?<![\w-])B|contribution\s+bound|per[\s-]user\s+bound|user\s+bound"),
    ("K", r"(?<![\w-])K"),
    ("L", r"(?<![\w-])L"),
    ("m", r"(?<![\w-])m"),
    ("noise_scale", r"σ|sigma|noise\s+scale|scale\s+of\s+the\s+noise|noise\s+standard\s+deviation|"
                    r"standard\s+deviation|laplace\s+scale|gaussian\s+scale|noise\s+of\s+scale|(?<![\w-])scale"),
    ("comparison_margin", r"comparison\s+margin|(?<!error\s)margin(?!\s+of\s+error)"),
    ("public_denominator", r"public\s+denominator|denominator"),
    ("interval_half_width", r"half[\s-]?width"),
]
_PART_AFTER = re.compile(r"\s*(?:is\s+|was\s+)?(?:spent\s+|used\s+)?(?:for|on|in)\s+(?:the\s+)?"
                        r"(?:(?!for\b|and\b|or\b)[\w-]+\s+){0,2}?(selection|admission|values?|measurement)\b", re.I)
def _part_key(part: re.Match) -> str:
    """The ε field of the part `_PART_AFTER` named: the selection's or the values'."""
    return "selection_epsilon" if part.group(1).lower() in ("selection", "admission") else "value_epsilon"


_PART_BEFORE = re.compile(r"\b(select(?:ing|ion|ed)?|admi(?:ssion|tting|tted)|values?|measur(?:ement|ing))\b"
                          r"(?:\s+[\w-]+){0,4}\s*[(,:]?\s*$", re.I)
_EPSILON_CUE = re.compile(r"ε|\bepsilon\b|\bprivacy\s+budget\b", re.I)
_BOUND = [(k, re.compile(r"(?:" + v + r")" + _JOIN + r"$", re.I)) for k, v in _FIELDS]


def field_value(plan: dict, key: str) -> float | None:
    """The plan's value of a public field (top level or `mechanism_details`)."""
    v = plan.get(key)
    if v is None and isinstance(plan.get("mechanism_details"), dict):
        v = plan["mechanism_details"].get(key)
    if key == "L" and v is None:
        v = len(plan.get("atoms", []))
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _matches(num: Num, v: float, key: str = "") -> bool:
    """A public parameter is exact: its written digits are the value rounded (an exact half is not: "ε = 1" is
    no statement of ε = 1.5); a hedge states a rule ("ε of at most 2"), not the value."""
    if num.kind in ("digits", "words") and not num.pct and abs(abs(num.value - v) - num.gran / 2) < 1e-9 * max(1, abs(v)):
        return False
    if key in EXACT_FIELDS:
        return num.kind in ("digits", "words") and (abs(num.value - v) <= 1e-9 * max(1.0, abs(v))
                                                    or (num.pct and abs(num.value - 100.0 * v) <= 1e-9 * max(1.0, v)))
    if number_matches(num, v) or number_matches(dataclasses.replace(num, hedge=""), v):
        return True
    if num.pct and number_matches(num, 100.0 * v):   # a share of ε written as a percentage
        return True
    return v < 1 and num.kind == "frac" and abs(num.value - 100.0 * v) < 1e-9


_BIN_CUE = re.compile(r"\b(?:bins?|thresholds?|cut-?offs?|high|moderate|low|at\s+least|or\s+more|and\s+above|above)\b|≥|>=",
                      re.I)
_MECH = [
    ("laplace", re.compile(r"\blaplace\b", re.I)),
    ("gaussian", re.compile(r"\bgaussian\b", re.I)),
    ("private_topL", re.compile(r"\b(?:private\s+top-?l|top-?l\s+(?:mechanism|selection|procedure|admission|step|method)|"
                                r"noisy\s+top-?k|top-?k\s+(?:selection|admission))\b", re.I)),
]
_UNIT = re.compile(r"\b(?P<u>record|user|review|complaint|reviewer|consumer)[\s-]level\b"
                   r"|\bprotected\s+unit\s+(?:is|:)\s+(?:the|a|each|one)?\s*(?P<v>record|user|review|complaint|reviewer)\b",
                   re.I)
_DENY = re.compile(r"\b(?:not|no|rather\s+than|instead\s+of|unlike|than|versus|vs|nor|neither|never|n['’]t|would|"
                   r"could|if|whereas)\b", re.I)


def _denied(c: Check, s: int) -> bool:
    """The clause denies or supposes the word, or it is asked in a question not answered yes."""
    cs, _ = c.clause_at(s)
    if _DENY.search(c.masked[cs:s]):
        return True
    k = c.sentence_of(s)
    if c.masked[c.sents[k][0]:c.sents[k][1]].rstrip().endswith("?"):
        return _answer(c, s) != "yes"
    return False


def check(c: Check) -> None:
    p, txt = c.plan, c.masked
    for num in numbers(txt):
        s, e = num.start, num.end
        if c.overlaps(s, e, c.consumed) or num.ordinal:
            continue
        before = txt[max(0, s - 60):s]
        if re.search(r"\bby\s+a\s+(?:\w+\s+)?margin\W*$", before, re.I):
            continue   # "by a wide margin: about 22%" is an idiom, not the comparison margin
        for key, rx in _BOUND:
            bound = rx.search(before)
            if not bound or (num.pct and key not in ("selection_fraction",)):
                continue   # a percentage right after a field's name is its confidence level or a share, not the field
            if key == "noise_scale" and field_value(p, "selection_scale") is not None and re.search(
                    r"\b(?:admission|selection|top-?k|top-?l)\b", txt[max(c.sents[c.sentence_of(s)][0], s - 60):s], re.I) \
                    and not re.search(r"σ|sigma|standard\s+deviation|gaussian", txt[max(0, s - 12):s], re.I):
                key = "selection_scale"   # "the noisy top-k admission (scale 8)": the selection's scale
            if key == "epsilon":   # "an epsilon of 1 for the selection": the part is named after the number
                part = _PART_AFTER.match(txt, e)
                lead = _PART_BEFORE.search(before[:bound.start()])
                if part:
                    key = _part_key(part)
                elif lead and field_value(p, "selection_epsilon") is not None and \
                        not _matches(num, field_value(p, "epsilon") or 0.0, "epsilon"):
                    # "selecting the eight themes (epsilon 1) and the values (epsilon 1)": named before it
                    # (a number that is the plan's total stays the total: "top-L selection (ε = 2, δ = 1e-6)")
                    key = "selection_epsilon" if lead.group(1).lower().startswith(("select", "admi")) \
                        else "value_epsilon"
            v = field_value(p, key)
            if v is None or not _matches(num, v, key):
                what = "not in the plan" if v is None else f"{v:g}"
                c.add("unsupported_number", s, e, f'"{num.text}" is stated as the plan\'s {key}, which is {what}')
            c.consume(s, e)
            break
        else:
            part = _PART_AFTER.match(txt, e)
            k = c.sentence_of(s)
            if part and not num.pct and _EPSILON_CUE.search(txt[c.sents[k][0]:s]):
                # "a total of ε = 2: 1.0 for the selection and 1.0 for the values": the parts' ε
                key = _part_key(part)
                v = field_value(p, key)
                if v is not None:
                    if not _matches(num, v, key):
                        c.add("unsupported_number", s, e, f'"{num.text}" is stated as the plan\'s {key}, which is {v:g}')
                    c.consume(s, e)
                    continue
            bins: dict = p["bins"] if isinstance(p.get("bins"), dict) else {}
            fractions = [float(x) for x in bins.values() if isinstance(x, (int, float)) and not isinstance(x, bool)]
            by_support = p.get("bin_basis") == "support" or (p.get("bin_basis") is None and fractions
                                                              and max(fractions) < 1)
            if num.pct and by_support:
                cs, ce = c.clause_at(s)
                if not c.in_range(cs, ce) and _BIN_CUE.search(txt[cs:ce]):
                    vals = [100.0 * x for x in fractions]
                    if any(number_matches(num, x) for x in vals):
                        c.consume(s, e)
    mech = str(p.get("mechanism") or "").lower()
    noise = str((p.get("mechanism_details") or {}).get("noise") or "").lower()
    allowed = {mech, noise} | ({"gaussian"} if mech in ("gaussian", "private_topl") else set())
    for name, rx in _MECH:
        for m in rx.finditer(txt):
            if name.lower() in allowed or _denied(c, m.start()) or c.is_consumed(*m.span()):
                continue
            if name == "gaussian" and noise == "laplace" and mech != "gaussian":
                pass
            c.add("wrong_method", *m.span(), f'"{m.group()}" is not this plan\'s mechanism ({p.get("mechanism")}, '
                  f'{noise or "?"} noise)')
    unit = str(p.get("unit") or "").lower()
    for m in _UNIT.finditer(txt):
        u = (m.group("u") or m.group("v") or "").lower()
        said = "user" if u in ("user", "reviewer", "consumer") else "record"
        if unit and said != unit and not _denied(c, m.start()):
            c.add("wrong_method", *m.span(), f'"{m.group()}" is not this plan\'s unit ({unit} level)')
    cal = str(p.get("calibration") or "").lower()
    delta = p.get("delta")
    for m in re.finditer(r"\bz-?cdp\b|\bzero[\s-]concentrated\b|\bpure\s+(?:ε-?|epsilon-?)?(?:dp|differential\s+privacy)\b|"
                         r"\bapproximate\s+(?:dp|differential\s+privacy)\b|\bclassical\s+(?:calibration|gaussian)\b",
                         txt, re.I):
        w = m.group().lower()
        ok = (("cdp" in w or "concentrated" in w) and cal == "zcdp") or \
             ("pure" in w and isinstance(delta, (int, float)) and delta == 0) or \
             ("approximate" in w and isinstance(delta, (int, float)) and delta > 0) or \
             ("classical" in w and cal == "classical")
        if not ok and not _denied(c, m.start()):
            c.add("wrong_method", *m.span(), f'"{m.group()}" does not describe this plan (calibration {cal or "?"}, '
                  f"δ = {delta})")
