"""Claims of change against a comparison of two releases (`unsupported_change`, `reversed_change`).

Only when the verifier checks against a comparison (verify/comparison.py; docs/VERIFIER.md
*Comparisons of two releases*); against a single plan this rule does nothing and rule
`temporal` rejects every change. With a the side compared from and b the side compared to
(a sentence may put them the other way round: "compared with from 2017, … before 2017"):

* "rose / increased / grew / climbed / jumped / went up" passes when the atom's `change` is
  `rose`; "fell / decreased / declined / dropped / went down" when it is `fell`; the other
  supported direction is `reversed_change`; an interval that includes 0 is
  `unsupported_change`;
* "doubled / tripled / halved / N-fold" also needs N inside the `ratio_interval`; "by 40%",
  "a 40% increase" also needs the released ratio to fit 1 ± 40% by the rounding rule;
* "stayed about the same / unchanged / little changed / held steady" passes only when the
  comparison supports no change and `about_the_same` is true (the ratio interval within
  [1/E, E]); "no supported change" ("the comparison does not support a change for …") passes
  when the change is `no_supported_change`;
* "A overtook C" needs a supported `rank_swaps` entry; "more common from 2017 than before
  2017" is a rise from the side after *than* to the side before it;
* "from about N to about M" (and "to about M", "from about N"): each number is a side's
  released noisy mass, by the rounding rule; "rose / fell by about D": D is the released
  difference b − a (its size), by the same rule; any other number in the sentence is
  `unsupported_number`;
* a theme admitted by one release only is judged by its one-sided row: supported only when
  the comparison's one-sided bound supports it; a change named with no theme of either
  release is `unknown_theme`; other wording of change is `unsupported_change`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..context import Check
from ..lexicon import Mention
from ..numeric import Num, number_matches, numbers
from . import temporal

_UP = (r"rose|risen|rises|rising|rise|increased|increases|increasing|grew|grown|grows|growing|climbed|climbs|climbing|"
       r"jumped|jumps|surged|surges|gained|gains|soared|spiked|expanded|went\s+up|goes\s+up|gone\s+up|"
       r"(?:is|was|were|are)\s+up|ticked\s+up|edged\s+up|picked\s+up")
_DOWN = (r"fell|fallen|falls|falling|decreased|decreases|decreasing|declined|declines|declining|dropped|drops|dropping|"
         r"dipped|dips|shrank|shrunk|shrinks|plunged|plummeted|slid|sank|eased|contracted|went\s+down|goes\s+down|"
         r"gone\s+down|(?:is|was|were|are)\s+down|ticked\s+down|edged\s+down")
_HEDGE = r"(?:about|around|roughly|nearly|almost|some|approximately|just\s+over|just\s+under|over|under)\s+"
_PCT = r"(?:%|\s*percent\b|\s*per\s+cent\b)"
CUES: list[tuple[str, re.Pattern]] = [
    ("nosup", re.compile(r"\bno\s+(?:supported|clear|clearly\s+supported|statistically\s+supported|detectable|reliable)\s+"
                         r"(?:change|difference|shift|rise|fall)\b|\b(?:change|difference)\s+(?:is|was)\s+not\s+supported\b"
                         r"|\bnot\s+(?:a\s+)?supported\s+change\b"
                         r"|\b(?:does|did|do)\s*(?:not|n't)\s+support\s+(?:a|any)\s+(?:change|rise|fall|difference)\b(?!\s+(?:for|in)\s+(?:any|all|every)\b)",
                         re.I)),
    ("same", re.compile(r"\b(?:(?:stayed|stays|stay|remained|remains|remain|held|holds|was|were|is|are|looked|looks)\s+"
                        r"(?:(?:about|roughly|nearly|much|largely|essentially|broadly|more\s+or\s+less|virtually|"
                        r"practically)\s+)?(?:the\s+same|unchanged|steady|stable|flat|level|constant)"
                        r"|(?:held|holding|holds)\s+steady"
                        r"|(?:(?:was|were|is|are|remained|stayed)\s+)?(?:little|barely|hardly|largely|essentially|"
                        r"virtually)\s+changed"
                        r"|unchanged|about\s+the\s+same"
                        r"|(?:did|does|has|have)\s*(?:not|n't)\s+(?:change|changed|move|moved|shift|shifted)(?:\s+much)?)\b",
                        re.I)),
    ("overtook", re.compile(r"\b(?:overtook|overtaken|overtakes|overtake|overtaking|passed|surpassed|pulled\s+ahead\s+of|"
                            r"moved\s+(?:ahead\s+of|above|past)|climbed\s+(?:above|past)|rose\s+(?:above|past))(?=\s*§)",
                            re.I)),
    ("mult", re.compile(r"\b(?P<more>more\s+than\s+)?(?P<mw>doubled|tripled|trebled|quadrupled|halved)\b"
                        r"|\b(?:rose|grew|increased|jumped)\s+(?P<mk>\d+(?:\.\d+)?|two|three|four|five|ten)[\s-]?fold\b",
                        re.I)),
    ("pct", re.compile(rf"\b(?P<pd>{_UP}|{_DOWN})\s+(?:by\s+)?(?:{_HEDGE})?(?P<n>\d+(?:\.\d+)?){_PCT}"
                       rf"|\b(?:an?\s+)?(?:{_HEDGE})?(?P<n2>\d+(?:\.\d+)?){_PCT}[\s-]+(?P<dw>increase|rise|jump|gain|growth|"
                       r"decrease|drop|fall|decline|reduction)\b", re.I)),
    ("up", re.compile(rf"\b(?:{_UP})\b(?!\s+(?:to\s+(?:the\s+)?(?:top|first)))"
                      r"|\b(?:an?\s+)?(?:increase|rise|growth|jump|surge|gain)\s+(?:in|for|of)\b", re.I)),
    ("down", re.compile(rf"\b(?:{_DOWN})\b(?!\s+(?:in|into|within|under|between|inside|outside|among)\b)"
                        r"|\b(?:an?\s+)?(?:decrease|drop|fall|decline|reduction|dip)\s+(?:in|for|of)\b", re.I)),
]
CROSS = re.compile(r"\b(?P<d>more|less)\s+(?:common(?:ly)?|frequent(?:ly)?|prevalent|often|widespread|mentioned|reported|"
                   r"cited|numerous)\b|\b(?P<w>commoner|rarer|higher|lower|larger|smaller|bigger|fewer)\b", re.I)
_NEG = re.compile(r"(?:\bnot|n't|\bnever|\bno\s+longer)\s+(?:\w+\s+)?$", re.I)
_BASELINE = re.compile(r"(?:compared\s+(?:with|to)|relative\s+to|versus|vs\.?|against|than|from|since|after|over)\s*$", re.I)
_MULTS = {"doubled": 2.0, "tripled": 3.0, "trebled": 3.0, "quadrupled": 4.0, "halved": 0.5,
          "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "ten": 10.0}
_CONFIDENCE = re.compile(r"\b(?:confidence|level|family[\s-]?wise|simultaneous|intervals?)\b", re.I)


@dataclass
class Cue:
    start: int
    end: int
    kind: str            # up | down | same | nosup | mult | pct | overtook | cross
    k: float = 0.0       # the multiple or 1 ± percentage
    more: bool = False   # "more than doubled"
    num: Num | None = None
    negated: bool = False
    baseline: str = "a"  # the side the change is from
    fixed: bool = False  # the baseline is the cue's own ("more common in b than in a")


def _sentence_cues(c: Check, k: int) -> list[Cue]:
    ss, se = c.sents[k]
    txt = c.masked
    out: list[Cue] = []
    for kind, rx in CUES:
        for m in rx.finditer(txt, ss, se):
            s, e = m.span()
            if any(s < x.end and x.start < e for x in out):
                continue
            cue = Cue(s, e, kind, negated=bool(_NEG.search(txt[max(ss, s - 20):s])) and kind not in ("same", "nosup"))
            if kind == "mult":
                word = (m.group("mw") or m.group("mk") or "").lower()
                cue.k = _MULTS.get(word) or float(word)
                cue.more = bool(m.group("more"))
            elif kind == "pct":
                ns = [n for n in numbers(txt[s:e]) if n.pct]
                if not ns:
                    continue
                n = ns[0]
                n.start, n.end = n.start + s, n.end + s
                down = bool(re.match(rf"(?:{_DOWN})\b", m.group("pd") or "", re.I)) or \
                    (m.group("dw") or "").lower() in ("decrease", "drop", "fall", "decline", "reduction")
                cue.k, cue.num = (1 - n.value / 100) if down else (1 + n.value / 100), n
            out.append(cue)
    sides = [(s, e, w) for s, e, w in c.side_spans if ss <= s < se and w in ("a", "b")]
    for m in CROSS.finditer(txt, ss, se):
        than = re.search(r"\bthan\b", txt[m.end():se])
        if not than or any(m.start() < x.end and x.start < m.end() for x in out):
            continue
        t = m.end() + than.start()
        before = [w for s, _, w in sides if s < t]
        after = [w for s, _, w in sides if s > t]
        if before and after and before[-1] != after[0]:
            less = (m.group("d") or "").lower() == "less" or (m.group("w") or "").lower() in (
                "rarer", "lower", "smaller", "fewer")
            out.append(Cue(m.start(), t + 4, "down" if less else "up", baseline=after[0], fixed=True))
    base = _baseline(c, ss, se)
    if len({w for *_, w in sides}) == 2 and any(_BASELINE.search(c.text[max(ss, s - 20):s]) for s, _, _ in sides):
        for m in CROSS.finditer(txt, ss, se):   # "compared with b, A was lower in a"
            if not any(m.start() < x.end and x.start < m.end() for x in out):
                less = (m.group("d") or "").lower() == "less" or (m.group("w") or "").lower() in (
                    "rarer", "lower", "smaller", "fewer")
                out.append(Cue(m.start(), m.end(), "down" if less else "up", baseline=base, fixed=True))
    for x in out:
        if not x.fixed:
            x.baseline = base
    return sorted(out, key=lambda x: x.start)


def _baseline(c: Check, ss: int, se: int) -> str:
    """The side a change is from: the side named after "compared with", "from", "than" …, else the
    other side of one named after "to", else a."""
    sides = [(s, e, w) for s, e, w in c.side_spans if ss <= s < se and w in ("a", "b")]
    for s, _, w in sides:
        if _BASELINE.search(c.text[max(ss, s - 20):s]):
            return w
    for s, _, w in sides:
        if re.search(r"\b(?:to|into|until)\s*$", c.text[max(ss, s - 8):s], re.I):
            return "a" if w == "b" else "b"
    if len({w for *_, w in sides}) == 2:
        return sides[0][2]
    return "a"


def claims_change(c: Check, k: int) -> bool:
    """Does sentence k claim a change (the kinds above, or any wording rule `temporal` reads as one)?"""
    ss, se = c.sents[k]
    if any(x.kind == "nosup" for x in _sentence_cues(c, k)):
        return True
    sentence = c.text[ss:se]
    if temporal.DISCLAIMER.search(sentence) or (temporal.NEGATION.search(sentence) and temporal.ABILITY.search(sentence)):
        return False
    if _sentence_cues(c, k):
        return True
    return bool(temporal._claims(c, c.masked, ss, se) or temporal._MORE_CHANGE.search(c.masked, ss, se))


def _fmt_iv(iv) -> str:
    lo, hi = (list(iv) if iv else [None, None])[:2]
    return f"[{'−∞' if lo is None else f'{lo:.4g}'}, {'∞' if hi is None else f'{hi:.4g}'}]"


class _Judge:
    def __init__(self, c: Check):
        self.c = c
        comp = c.comparison or {}
        self.comp = comp
        self.rows: dict[int, dict] = {}
        for key, where in (("atoms", "both"), ("only_in_a", "a"), ("only_in_b", "b")):
            for r in comp.get(key, []):
                self.rows[int(r.get("atom_id", -1))] = dict(r, where=where)
        self.names = {w: str((comp.get(w) or {}).get("name") or w) for w in ("a", "b")}
        self.level = f"{100 * float(comp.get('confidence', 0.95)):g}%"
        self.eq = float(comp.get("equivalence_ratio") or 1.25)

    def row(self, aid: int) -> dict | None:
        label = self.c.atom(aid)["label"]
        return self.rows.get(aid) or next((r for r in self.rows.values() if r["label"] == label), None)

    def span(self, base: str) -> str:
        other = "b" if base == "a" else "a"
        return f"from {self.names[base]!r} to {self.names[other]!r}"

    def direction(self, r: dict, up: bool, base: str, negated: bool = False) -> tuple[str, str] | None:
        """None when the comparison supports the claimed direction (seen from `base`), else (code, why)."""
        change = r.get("change")
        if base == "b":   # "rose" from b to a is "fell" from a to b
            up = not up
        want, other = ("rose", "fell") if up else ("fell", "rose")
        label = r["label"]
        iv = _fmt_iv(r.get("difference_interval"))
        if negated:   # "did not rise": only the supported opposite shows it
            if change == other:
                return None
            return ("unsupported_change", f'"{label}": that it did not {"rise" if up else "fall"} is not shown; the '
                    f"difference interval {iv} (b − a) does not exclude the claimed direction")
        if r["where"] != "both" and change != want:
            return ("unsupported_change", self.one_sided(r))
        if change == want:
            return None
        if change == other:
            return ("reversed_change", f'"{label}" {change} {self.span("a")} (difference b − a '
                    f"{r.get('difference', float('nan')):+.4g}, interval {iv}); the claim says the opposite")
        return ("unsupported_change", f'"{label}": the comparison does not support a change {self.span("a")}: the '
                f"difference interval {iv} includes 0 at the {self.level} family-wise level, so neither a rise nor a fall "
                "is supported (which is not evidence that nothing changed)")

    def one_sided(self, r: dict) -> str:
        here, other = r["where"], "b" if r["where"] == "a" else "a"
        L = (self.comp.get(other) or {}).get("L")
        bound = (r.get(other) or {}).get("upper_bound")
        told = (f"; on the comparison's event its mass there is at most {bound:.4g}, which does not clear its interval"
                if isinstance(bound, (int, float)) else "; under private top-L that bounds nothing at this level")
        return (f'"{r["label"]}" is admitted in {self.names[here]!r} only: not being admitted in {self.names[other]!r} '
                f"says only that its released value there was not among that plan's top {L}, not that its mass there "
                f"is zero, nor by itself that it rose or fell{told}")

    def same(self, r: dict) -> tuple[str, str] | None:
        label = r["label"]
        if r["where"] != "both":
            return ("unsupported_change", self.one_sided(r))
        if r.get("supported"):
            return ("unsupported_change", f'"{label}" {r.get("change")} {self.span("a")}, supported at the {self.level} '
                    "family-wise level: it did not stay about the same")
        if not r.get("about_the_same"):
            return ("unsupported_change", f'"{label}": "about the same" needs the ratio interval within '
                    f"[{1 / self.eq:.3g}, {self.eq:g}] and no supported change; its ratio interval is "
                    f"{_fmt_iv(r.get('ratio_interval'))}. A difference interval that includes 0 says only that no change "
                    "is supported, not that nothing changed")
        return None

    def nosup(self, r: dict) -> tuple[str, str] | None:
        if r.get("change") == "no_supported_change":
            return None
        return ("unsupported_change", f'"{r["label"]}" {r.get("change")} {self.span("a")}, supported at the '
                f"{self.level} family-wise level")

    def multiple(self, r: dict, k: float, base: str, more: bool, num: Num | None) -> tuple[str, str] | None:
        if r["where"] != "both":
            return ("unsupported_change", self.one_sided(r) + "; a one-sided atom has no ratio")
        d = self.direction(r, k > 1, base)
        if d:
            return d
        ratio, iv = r.get("ratio"), r.get("ratio_interval")
        if base == "b":
            ratio = 1 / ratio if ratio else None
            iv = None if not iv or not iv[0] else [1 / iv[1] if iv[1] else 0.0, 1 / iv[0]]
        if num is not None:
            if ratio is None or not number_matches(num, abs(ratio - 1) * 100):
                have = "undefined" if ratio is None else f"{100 * (ratio - 1):+.1f}%"
                return ("unsupported_number", f'"{r["label"]}": the released change is {have}, not {num.text}')
            return None
        if iv is None:
            return ("unsupported_change", f'"{r["label"]}": the ratio is undefined (its first value is not positive)')
        lo, hi = iv[0], iv[1]
        fits = (hi is None or hi >= k) and (lo <= k or more) and (not more or (ratio or 0) >= k)
        if not fits:
            return ("unsupported_change", f'"{r["label"]}": a {k:g}-fold change is not inside the ratio interval '
                    f"{_fmt_iv(iv)} (released ratio {ratio if ratio is None else f'{ratio:.3g}'})")
        return None


def _themes(c: Check, cue: Cue, cues: list[Cue]) -> list[Mention]:
    """The themes a cue is said of: those between the previous cue of its clause and it ("A rose and B
    fell"), else those after it up to the next ("an increase in A"), else the nearest before it."""
    cs, ce = c.clause_at(cue.start)
    mine = [x for x in cues if cs <= x.start < ce]
    i = mine.index(cue)
    lo = mine[i - 1].end if i > 0 else cs
    hi = mine[i + 1].start if i + 1 < len(mine) else ce
    ms = [m for m in c.in_range(lo, cue.start) if m.end <= cue.start]
    if not ms and cue.kind != "overtook":
        ms = c.in_range(cue.end, hi)
    if not ms:   # "A, the top theme, rose": the nearest theme before it in the sentence
        ss = c.sents[c.sentence_of(cue.start)][0]
        ms = c.in_range(ss, cue.start)[-1:]
    return ms


def _judge_any(mention: Mention, judge) -> tuple[str, str] | None:
    """A mention may be ambiguous: it passes when some reading does."""
    worst = None
    for aid in sorted(mention.atoms):
        r = judge(aid)
        if r is None:
            return None
        worst = worst or r
    return worst


def check(c: Check) -> None:
    if c.comparison is None:
        return
    J = _Judge(c)
    txt = c.masked
    for k, (ss, se) in enumerate(c.sents):
        if not claims_change(c, k):
            continue
        cues = _sentence_cues(c, k)
        judged: list[tuple[int, int]] = []
        themed: list[tuple[Mention, Cue]] = []
        for cue in cues:
            judged.append((cue.start, cue.end))
            c.consume(cue.start, cue.end)
            ms = _themes(c, cue, cues)
            if not ms:
                c.add("unknown_theme", cue.start, cue.end, f'"{c.text[cue.start:cue.end]}" names no theme of either '
                      "release: a theme in neither plan has no released value on either side, so no change can be "
                      "checked (the comparison releases per-theme masses only)")
                continue
            for m in ms:
                themed.append((m, cue))
                v = _judge_any(m, lambda aid, cue=cue: _one(c, J, aid, cue))
                if v:
                    c.add(v[0], min(m.start, cue.start), max(m.end, cue.end), v[1])
        _numbers(c, J, k, themed)
        for s, e in sorted(set(temporal._claims(c, txt, ss, se))
                           | {m.span() for m in temporal._MORE_CHANGE.finditer(txt, ss, se)}):
            if not any(s < b and a < e for a, b in judged):
                c.add("unsupported_change", s, e, f'"{c.text[s:e]}" words a change the verifier cannot check against '
                      "the comparison; say rose, fell, doubled, halved, overtook, stayed about the same, or "
                      "from about N to about M")


def _one(c: Check, J: _Judge, aid: int, cue: Cue) -> tuple[str, str] | None:
    r = J.row(aid)
    if r is None:
        return ("unknown_theme", f'"{c.atom(aid)["label"]}" is in neither release')
    if cue.kind in ("up", "down"):
        return J.direction(r, cue.kind == "up", cue.baseline, cue.negated)
    if cue.kind == "same":
        return J.same(r)
    if cue.kind == "nosup":
        return J.nosup(r)
    if cue.kind in ("mult", "pct"):
        return J.multiple(r, cue.k, cue.baseline, cue.more, cue.num)
    if cue.kind == "overtook":
        obj = next((m for m in c.in_range(cue.end, c.clause_at(cue.start)[1])), None)
        if obj is None:
            return ("unsupported_change", "overtook what? name the theme it overtook")
        for other in obj.atoms:
            for s in (J.comp.get("rank_swaps") or []):
                if (int(s.get("atom_id", -1)) == aid and int(s.get("overtook", -2)) == other
                        and s.get("supported") and cue.baseline == "a"):
                    return None
        return ("unsupported_change", f'"{r["label"]}" overtaking "{obj.text}" {J.span(cue.baseline)} is not a supported '
                "rank swap of the comparison (their intervals must be apart on both sides)")
    return None


def _numbers(c: Check, J: _Judge, k: int, themed: list[tuple[Mention, Cue]]) -> None:
    """Numbers in a sentence of change: each side's released value ("from about N to about M"), the
    percentage of a change (judged with its cue), or the comparison's confidence; anything else fails."""
    ss, se = c.sents[k]
    nums = [n for n in numbers(c.masked[ss:se]) if not n.ordinal]
    for n in nums:
        n.start, n.end = n.start + ss, n.end + ss
    pct_spans = [(cue.num.start, cue.num.end) for _, cue in themed if cue.num is not None]
    conf = 100 * float(J.comp.get("confidence", 0.95))
    free = []
    for n in nums:
        if any(a <= n.start and n.end <= b for a, b in pct_spans):
            continue
        if n.pct and abs(n.value - conf) < 1e-9 and _CONFIDENCE.search(c.masked[n.end:min(se, n.end + 40)]
                                                                        + c.masked[max(ss, n.start - 40):n.start]):
            continue
        free.append(n)
    used: set[int] = set()
    for m, cue in themed:
        if cue.kind not in ("up", "down", "same", "mult", "pct"):
            continue
        cs, ce = c.clause_at(cue.start)
        mine = [n for n in free if cs <= n.start < ce and n.start >= m.end and id(n) not in used]
        for n in [n for n in mine if cue.kind in ("up", "down") and not n.pct
                  and _BY.search(c.masked[max(cs, n.start - 24):n.start])]:
            # "rose by about 200": the size of the change, the released difference b − a
            mine.remove(n)
            used.add(id(n))
            diffs = [d for d in (_difference(J, aid) for aid in m.atoms) if d is not None]
            if any(number_matches(n, abs(d)) or number_matches(n, round(abs(d), 1)) for d in diffs):
                c.consume(n.start, n.end)
            else:
                c.add("unsupported_number", n.start, n.end, f'"{n.text}" is not the released difference of '
                      f'"{m.text}" ({", ".join(f"{d:+.1f}" for d in diffs) or "none: it is not in both releases"}; '
                      "a change's size is b − a of the two released noisy masses, by the public rounding rule)")
        if not mine:
            continue
        base = cue.baseline
        other = "b" if base == "a" else "a"
        order: list[str]
        if len(mine) >= 2:
            order = [base, other] + ["?"] * (len(mine) - 2)
        else:
            before = c.masked[max(cs, mine[0].start - 12):mine[0].start]
            order = [other] if re.search(r"\bto\s+(?:about\s+|around\s+|roughly\s+|nearly\s+|almost\s+)?$", before, re.I) \
                else [base]
        for n, side in zip(mine, order):
            used.add(id(n))
            ok = side != "?" and any(_side_value_matches(J, aid, side, n) for aid in m.atoms)
            if ok:
                c.consume(n.start, n.end)
            elif side in ("a", "b") and all(not isinstance((J.row(a) or {}).get(side), dict)
                                            or "noisy_mass" not in (J.row(a) or {})[side] for a in m.atoms):
                c.add("unsupported_number", n.start, n.end, f'"{m.text}" is not admitted in {J.names[side]!r}: it has '
                      "no released value there (not being admitted says only that it was not among that plan's top "
                      "L, not that its mass there is zero)")
            else:
                where = J.names.get(side, "either release")
                c.add("unsupported_number", n.start, n.end, f'"{n.text}" is not "{m.text}"\'s released value in '
                      f"{where!r} (numbers in a claim of change are each side's released noisy mass, by the "
                      "public rounding rule)")
    for n in free:
        if id(n) not in used:
            c.add("unsupported_number", n.start, n.end, f'"{n.text}" in a claim of change is neither a side\'s released '
                  "value of a theme it names nor the change's percentage")


_BY = re.compile(rf"\bby\s+(?:{_HEDGE})?$", re.I)


def _difference(J: _Judge, aid: int) -> float | None:
    """The released difference b − a of an atom in both releases (None for one in one release only)."""
    r = J.row(aid)
    d = (r or {}).get("difference")
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _side_value_matches(J: _Judge, aid: int, side: str, n: Num) -> bool:
    r = J.row(aid)
    if r is None:
        return False
    v = r.get(side)
    if not isinstance(v, dict) or not isinstance(v.get("noisy_mass"), (int, float)):
        return False
    x = float(v["noisy_mass"])
    if n.pct:
        d = (J.comp.get(side) or {}).get("public_denominator")
        return isinstance(d, (int, float)) and d > 0 and number_matches(n, 100 * x / d)
    return number_matches(n, x) or number_matches(n, round(x, 1))
