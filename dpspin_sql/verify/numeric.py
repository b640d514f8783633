"""Numbers in prose and the public rounding rule (docs/VERIFIER.md, *Numbers*)."""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass

UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000}
ORDINALS = {w: i + 1 for i, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                                             "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                                             "nineteenth twentieth".split())}
FRACTIONS = {"half": 50.0, "a half": 50.0, "one half": 50.0, "a third": 100 / 3, "one third": 100 / 3,
             "one-third": 100 / 3, "two thirds": 200 / 3, "two-thirds": 200 / 3, "a quarter": 25.0,
             "one quarter": 25.0, "one-quarter": 25.0, "three quarters": 75.0, "three-quarters": 75.0,
             "a fifth": 20.0, "one fifth": 20.0, "one-fifth": 20.0, "a tenth": 10.0, "one tenth": 10.0,
             "one-tenth": 10.0, "a majority": 60.0, "the majority": 60.0}
for _name, _share in (("sixth", 100 / 6), ("seventh", 100 / 7), ("eighth", 12.5), ("ninth", 100 / 9),
                      ("twelfth", 100 / 12), ("twentieth", 5.0)):
    _art = "an" if _name[0] in "aeiou" else "a"
    FRACTIONS.update({f"{_art} {_name}": _share, f"one {_name}": _share, f"one-{_name}": _share})
NUMWORD = "|".join(sorted(list(UNITS) + list(TENS) + list(SCALES), key=len, reverse=True))
HEDGE_APPROX = (r"about|around|approximately|approx\.?|roughly|some|close to|an estimated|estimated|~|≈|circa|nearly|"
                r"almost|just under|under|below|less than|fewer than|up to|at most|over|more than|above|at least|"
                r"just over|upwards of|exceeding|exceeds|exceeded|exceed|surpassing|surpasses|surpassed|greater than")
NUM_RE = re.compile(
    rf"(?P<hedge>(?:{HEDGE_APPROX})\s*)?"
    r"(?:(?P<onein>\b(?:one|1)\s+(?:(?:review|complaint|record|report|document|post|comment|ticket|submission|"
    r"customer|reviewer|user|diner|consumer|guest|buyer|shopper|borrower|person)\s+)?(?:in|out of)\s+(?:every\s+)?(?P<n1>\d+|" + NUMWORD + r"(?:[\s-](?:" + NUMWORD + r"))*)\b)"
    r"|(?P<frac>\b(?:" + "|".join(sorted((re.escape(f) for f in FRACTIONS), key=len, reverse=True)) + r")\b(?![-‐]\w))"
    r"|(?P<vague>\b(?:dozens|hundreds|thousands)\b)"
    r"|(?P<sci>(?<![\w.,])(?:(?P<mant>\d+(?:\.\d+)?)\s*[×x·*]\s*)?10\s*(?:\^\s*\(?\s*(?P<e1>[-−+]?\d+)\s*\)?"
    r"|\*\*\s*\(?(?P<e2>[-−+]?\d+)\)?|(?P<e3>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)))"
    r"|(?P<digits>(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?P<ordsfx>st|nd|rd|th)?(?![\w]))"
    r"|(?P<words>\b(?:" + NUMWORD + r")(?:(?:[\s-]|\s+and\s+)(?:" + NUMWORD + r"))*\b))"
    r"(?P<pct>\s*(?:%|percent\b|per\s+cent\b|pct\b|percentage points?\b|pp\b))?",
    re.I)
LOW_HEDGES = {"nearly", "almost", "just under", "under", "below", "less than", "fewer than", "up to", "at most"}
HIGH_HEDGES = {"over", "more than", "above", "at least", "just over", "upwards of", "exceeding", "exceeds", "exceeded",
               "exceed", "surpassing", "surpasses", "surpassed", "greater than"}


@dataclass
class Num:
    """A number as written: value, precision (`gran`), hedge and kind."""

    start: int
    end: int
    text: str
    value: float
    gran: float
    hedge: str
    kind: str  # digits | words | frac | onein | vague
    pct: bool
    ordinal: bool


def parse_words(s: str) -> tuple[float, float] | None:
    """'two hundred and five' → (205, precision)."""
    parts = [p for p in re.split(r"[\s-]+", s.lower()) if p and p != "and"]
    total, cur = 0, 0
    for p in parts:
        if p in UNITS:
            cur += UNITS[p]
        elif p in TENS:
            cur += TENS[p]
        elif p in SCALES:
            cur = max(cur, 1) * SCALES[p]
            if p == "thousand":
                total, cur = total + cur, 0
        else:
            return None
    v = total + cur
    return float(v), gran_int(v)


def gran_int(v: float) -> float:
    """Place value of the last significant digit of an integer (480 → 10)."""
    v = int(round(abs(v)))
    if v == 0:
        return 1.0
    g = 1
    while v % (g * 10) == 0:
        g *= 10
    return float(g)


def ord_value(s: str) -> int:
    s = s.lower()
    return ORDINALS[s] if s in ORDINALS else int(re.sub(r"\D", "", s))


_SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def numbers(masked: str, include_one: bool = False) -> list[Num]:
    """Every number in the (masked) text.

    'one' and 'zero' as words are ordinary English ("one of the themes") and are left
    out unless `include_one` (the count rule reads "only one theme"). Parsed once per
    text; callers get fresh objects they may shift.
    """
    return [Num(*f) for f in _parse(masked, include_one)]


@functools.lru_cache(maxsize=4096)
def _parse(masked: str, include_one: bool) -> tuple[tuple, ...]:
    return tuple(dataclasses.astuple(n) for n in _numbers(masked, include_one))


_PLUS_BEFORE = re.compile(r"\+\s*/?\s*$")


def _numbers(masked: str, include_one: bool) -> list[Num]:
    out: list[Num] = []
    for m in NUM_RE.finditer(masked):
        hedge = (m.group("hedge") or "").strip().lower()
        pct = bool(m.group("pct"))
        s = m.start() if not hedge else m.start("hedge")
        if m.group("digits"):
            txt = m.group("digits")
            ordsfx = m.group("ordsfx")
            core = txt[:-2] if ordsfx else txt
            value = float(core.replace(",", ""))
            if not hedge and s > 0 and masked[s - 1] in "-−" and (s < 2 or not masked[s - 2].isalnum()) \
                    and not _PLUS_BEFORE.search(masked[max(0, s - 5):s - 1]):   # "+/-4", "+-4": a half-width
                value, s = -value, s - 1  # a released noisy mass may be negative
            if "e" in core.lower():
                gran = abs(value) * 0.05
            elif "." in core:
                gran = 10.0 ** -len(core.split(".")[1])
            else:
                gran = gran_int(value)
            out.append(Num(s, m.end(), m.group().strip(), value, gran, hedge, "digits", pct, bool(ordsfx)))
        elif m.group("words"):
            w = m.group("words")
            if w.lower() in ("one", "zero") and not pct and not include_one:
                continue  # "one of the themes": ordinary English, not a quantity
            parsed = parse_words(w)
            if parsed:
                out.append(Num(s, m.end(), m.group().strip(), parsed[0], parsed[1], hedge, "words", pct, False))
        elif m.group("frac"):
            out.append(Num(s, m.end(), m.group().strip(), FRACTIONS[m.group("frac").lower()], 0, hedge, "frac", True, False))
        elif m.group("onein"):
            n1 = m.group("n1")
            n = float(n1) if n1.isdigit() else (parse_words(n1) or (0, 0))[0]
            out.append(Num(s, m.end(), m.group().strip(), n, 0, hedge, "onein", True, False))
        elif m.group("sci"):  # 10⁻⁶, 10^-6, 1 × 10^-6: precision like 1e-6
            exp = (m.group("e1") or m.group("e2") or m.group("e3") or "0").translate(_SUPER).replace("−", "-")
            value = float(m.group("mant") or 1) * 10.0 ** int(exp)
            out.append(Num(s, m.end(), m.group().strip(), value, abs(value) * 0.05, hedge, "digits", pct, False))
        elif m.group("vague"):
            out.append(Num(s, m.end(), m.group().strip(), 0, 0, hedge, "vague", False, False))
    return out


def number_matches(num: Num, v: float) -> bool:
    """The public rounding rule (docs/VERIFIER.md): does the stated number fit released value v?"""
    x, g, hedge, kind = num.value, num.gran, num.hedge, num.kind
    tol = 1e-9 * max(1.0, abs(v))
    if kind == "onein":
        return v > 0 and x in (math.floor(100.0 / v), math.ceil(100.0 / v))
    if kind == "frac":
        lo, hi = 0.8 * x, 1.2 * x
        if hedge in LOW_HEDGES:
            hi = x
        elif hedge in HIGH_HEDGES:
            lo = x
        return lo - tol <= v <= hi + tol
    if kind == "vague":
        rng = {"dozens": (24, 144), "hundreds": (200, 1000), "thousands": (2000, 1e9)}[num.text.split()[-1].lower()]
        return rng[0] <= v < rng[1]
    if hedge in LOW_HEDGES:
        return v <= x + tol and x - v <= g + tol
    if hedge in HIGH_HEDGES:
        return v >= x - tol and v - x <= g + tol
    return abs(x - v) <= g / 2 + tol  # "about" acknowledges rounding, it does not widen it
