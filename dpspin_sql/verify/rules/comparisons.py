"""Pairwise comparisons under the public margin (docs/PLAN.md, the comparison margin; docs/VERIFIER.md *Comparisons*).

"A is more common than B" is supported only if the released masses differ by at least
the margin; "similar" only if they differ by less; a multiple needs the order by the
margin and the released ratio; a gap claim is judged against the margin, and a stated
gap value by the rounding rule.
"""
from __future__ import annotations

import functools
import math
import re

from ..context import Check
from ..lexicon import Mention
from ..negation import judged
from ..numeric import HEDGE_APPROX, NUMWORD, number_matches, numbers, parse_words
from ..plan import mass
from ..vocab import SHARED_RANK

GT = re.compile(r"\b(?:more|higher|greater|larger|bigger)\b(?:\s+[\w§-]+){0,3}?\s+than\b"
                r"|\b(?:outnumber(?:s|ed)?|exceed(?:s|ed)?|surpass(?:es|ed)?|outpace(?:s|d)?|outrank(?:s|ed)?"
                r"|eclipse(?:s|d)?|dwarf(?:s|ed)?|overshadow(?:s|ed)?|outweigh(?:s|ed)?|outstrip(?:s|ped)?|overtake(?:s|n)?"
                r"|overtook)\b(?!\s+by)|\bahead\s+of\b"
                r"|\b(?:beat(?:s|ing)?|tops?|topped|leads?|led|dominat(?:es|ed|ing)|edges?\s+out|edged\s+out)(?=\s+§)"
                r"|\b(?:ranks?|ranked|sits?|comes?|came)\s+(?:above|ahead\s+of|higher\s+than|over)\b|\bcommoner\s+than\b",
                re.I)
LT = re.compile(r"\b(?:less|fewer|lower|smaller)\b(?:\s+[\w§-]+){0,3}?\s+than\b"
                r"|\b(?:outnumbered|exceeded|surpassed|outpaced|outranked|eclipsed|dwarfed|overshadowed|outstripped|"
                r"overtaken|outweighed)\s+by\b"
                r"|\b(?:trail(?:s|ed|ing)?|lag(?:s|ged|ging)?(?:\s+behind)?|behind)\b"
                r"|\b(?:rarer|scarcer)\s+than\b|\b(?:ranks?|ranked|sits?|comes?|came)\s+(?:below|lower\s+than|under)\b",
                re.I)
SIM = re.compile(r"\b(?:(?:very\s+|quite\s+)?similar(?:ly)?|comparable|on\s+(?:a\s+)?par|indistinguishable"
                 r"|equally\s+(?:common|frequent|prevalent|popular|often|mentioned|represented|cited|reported)"
                 r"|(?:the\s+)?same\s+(?:support|share|mass|frequency|prevalence|size|amount)"
                 r"|(?:do|does|did)\s+not\s+differ(?:\s+(?:meaningfully|significantly|much|materially))?"
                 r"|cannot\s+be\s+(?:told\s+apart|distinguished)|roughly\s+equal(?:ly)?|about\s+equal(?:ly)?"
                 r"|nearly\s+equal(?:ly)?|(?:about|roughly|nearly|almost|just)\s+as\s+\w+\s+as"
                 r"|as\s+(?:common|frequent|prevalent|often|rare|uncommon|infrequent|popular|widespread|mentioned)\s+as"
                 r"|neck\s+and\s+neck|tied|level\s+with|close\s+to|in\s+line\s+with|match(?:es)?"
                 r"|close\s+together|(?:(?:are|were|is|was|remain|remains|stay|stays|sit|sits|look|looks|seem|seem|run|runs)\s+)"
                 r"(?:very\s+|quite\s+|fairly\s+|relatively\s+)?close(?=\s*(?:[,.;:!?)—–]|$|\s+in\s+(?:support|size|mass|"
                 r"volume|frequency|prevalence|share|count|number|magnitude)\b|\s+(?:to\s+)?(?:each\s+other|one\s+another))))\b", re.I)
RATIO = re.compile(r"\b(?P<k>twice|double|triple|half|(?:\d+(?:\.\d+)?|" + NUMWORD + r")\s*(?:times|x|[\s-]?fold))"
                   r"\s+(?:as\s+[\w-]+\s+as|more\s+(?:[\w-]+\s+){0,2}?than|the\s+\w+\s+of|that\s+of|as\s+many\s+[\w-]*\s*as|as\s+often\s+as)", re.I)
GAP = re.compile(r"(?P<q>\b(?:large|wide|big|clear|substantial|sizable|sizeable|significant|notable|considerable|"
                 r"small|narrow|slight|negligible|tiny|minor|little|no|marginal)\s+)?"
                 r"\b(?:gap|difference|margin|spread|distance)\s+(?:between|separating)\b|\bdiffer(?:s)?\s+by\b", re.I)
_SMALL = ("small", "narrow", "slight", "negligible", "tiny", "minor", "little", "no", "marginal")
# "the difference between A and B is too small to matter", "no meaningful difference between"
_SMALL_WORDS = re.compile(r"\b(?:small|smaller|narrow|slight|negligible|tiny|minor|little|insignificant|no\s+(?:real\s+|"
                          r"meaningful\s+|significant\s+|clear\s+|statistically\s+meaningful\s+)?(?=gap|difference)|"
                          r"not\s+(?:statistically\s+)?(?:meaningful|significant|reliable)|within\s+the\s+(?:[\d.,]+\s+)?(?:public\s+)?"
                          r"(?:comparison\s+)?margin|(?:below|under|less\s+than)\s+the\s+(?:[\d.,]+\s+)?(?:public\s+)?"
                          r"(?:comparison\s+)?margin|"
                          r"indistinguishable|within\s+(?:the\s+)?noise|"
                          r"(?:not|never)\s+(?:read|put)\s+(?:anything|much|too\s+much|a\s+lot)\s+into)\b", re.I)


def _groups(c: Check, s: int, e: int) -> tuple[list[Mention], list[Mention]]:
    """The mentions compared: before the cue in its clause, and after it."""
    k = c.sentence_of(s)
    ss = c.sents[k][0]
    left = right = []
    for cs, ce in c.clauses_of(k):
        if cs <= s < ce:
            left = c.in_range(cs, s)
            right = c.in_range(e, ce)
    if not left:  # "A, with 480, is more common than B"
        left = c.in_range(ss, s)[-1:]
    return left, right


def _judge(c: Check, ma: float, mb: float, op: str, k: float):
    d, M = ma - mb, c.margin
    if op == "gt":
        if d >= M:
            return None
        if d <= -M:
            return ("reversed_comparison", "the released masses order them the other way")
        return ("unsupported_comparison", f"their released masses differ by less than the comparison margin ({M:g})")
    if op == "lt":
        return _judge(c, mb, ma, "gt", k)
    if op == "sim":
        return None if abs(d) < M else ("unsupported_comparison", f"their released masses differ by at least the comparison margin ({M:g}), so they are not similar")
    if op == "gap_big":
        return None if abs(d) >= M else ("unsupported_comparison", f"the released gap is below the comparison margin ({M:g})")
    if op == "ratio":
        if k < 1:
            ma, mb, k, d = mb, ma, 1 / k, -d
        if d < M:
            return ("reversed_comparison" if d <= -M else "unsupported_comparison",
                    f"a multiple needs the first to exceed the second by the comparison margin ({M:g})")
        r = ma / mb if mb > 0 else math.inf
        return None if abs(r - k) <= max(0.25, 0.03 * k) + 1e-9 else ("unsupported_comparison", f"the released ratio is {r:.2f}, not about {k:g}")
    return None


def _pair_verdict(c: Check, a: Mention, b: Mention, op: str, k: float = 0.0):
    """A violation (code, why) unless some reading of the two mentions supports the claim."""
    best = None
    for x in a.atoms:
        for y in b.atoms:
            if x == y:
                continue
            r = _judge(c, mass(c.atom(x)), mass(c.atom(y)), op, k)
            if r is None:
                return None
            best = best or r
    return best


def _vs_rest(c: Check, a: Mention, op: str, s: int, e: int) -> None:
    ranked = sorted(c.plan["atoms"], key=lambda x: int(x.get("rank", 0)))
    if len(ranked) < 2:
        return
    target = ranked[0] if op == "gt" else ranked[-1]
    other = ranked[1] if op == "gt" else ranked[-2]
    ok = any(int(c.atom(x).get("atom_id", x)) == int(target.get("atom_id", -9)) for x in a.atoms) and \
        abs(mass(target) - mass(other)) >= c.margin
    if not ok:
        c.add("unsupported_comparison", a.start, e,
              f'"{a.text}" is not {("above" if op == "gt" else "below")} every other theme by the comparison margin ({c.margin:g})')


def _gap_numbers(c: Check, a: Mention, b: Mention, s: int) -> None:
    """A stated gap value ("the difference … is 311 reviews") is a released difference."""
    ss, se = c.sents[c.sentence_of(s)]
    for num in numbers(c.masked[ss:se]):
        num.start += ss
        num.end += ss
        vals = []
        for x in a.atoms:
            for y in b.atoms:
                ax, ay = c.atom(x), c.atom(y)
                vals.append(abs(mass(ax) - mass(ay)))
                vals.append(abs(float(ax.get("display_mass", mass(ax))) - float(ay.get("display_mass", mass(ay)))))
                if "support" in ax and "support" in ay:
                    vals.append(abs(float(ax["support"]) - float(ay["support"])) * 100)
        if any(number_matches(num, v) for v in vals):
            c.consume(num.start, num.end)


def _ratio_k(m: re.Match) -> float:
    kk = m.group("k").lower()
    k = {"twice": 2, "double": 2, "triple": 3, "half": 0.5}.get(kk)
    if k is None:
        lead = re.match(r"([\w.]+)", kk)
        assert lead is not None  # RATIO's other forms start with a digit or a number word
        num = lead.group(1)
        k = float(num) if re.match(r"[\d.]+$", num) else (parse_words(num) or (0.0, 0))[0]
    return float(k)


def check(c: Check) -> None:
    txt = c.masked
    found: list[tuple[int, int, str, float, str]] = []
    shared = [m.span() for m in SHARED_RANK.finditer(txt)]  # "tied for second": one rank claim (rule ranks)
    for rx, op in ((RATIO, "ratio"), (GAP, "gap"), (GT, "gt"), (LT, "lt"), (SIM, "sim")):
        for m in rx.finditer(txt):
            s, e = m.span()
            if any(s < fe and fs < e for fs, fe, *_ in found) or (op == "sim" and any(s < b and a < e for a, b in shared)):
                continue
            if op in ("gt", "lt") and re.match(r"\s*(?:" + HEDGE_APPROX + r")?\s*(?:[\d~]|(?:" + NUMWORD + r")\b)",
                                               txt[e:e + 24], re.I) and not re.match(r"\s*§", txt[e:]):
                continue  # "more than 480", "more than four themes": a hedge, not a comparison
            k = _ratio_k(m) if op == "ratio" else 0.0
            found.append((s, e, op, k, m.group("q") if op == "gap" else ""))
    for s, e, op, k, q in found:
        if op == "sim" and re.match(r"(?i)close\s+to\b|match", txt[s:e]) and not re.match(r"\s*§", txt[e:e + 3]) \
                and not re.match(r"(?i)close\s+to\s+(?:each\s+other|one\s+another)", txt[s:s + 30]):
            continue  # "close to 480" is a hedge; "close to each other" is a similarity claim
        c.consume(s, e)
        left, right = _groups(c, s, e)
        if op == "gap":
            ms = c.in_range(*c.sents[c.sentence_of(s)])
            after = [m for m in ms if m.start >= e][:2]
            pair = after if len(after) == 2 else ms[:2]
            if len(pair) < 2:
                continue
            k = c.sentence_of(s)
            cs = c.clause_at(s)[0]
            small = (q or "").strip().lower() in _SMALL or bool(_SMALL_WORDS.search(txt[cs:c.sents[k][1]]))
            op2 = "sim" if small else "gap_big"
            _gap_numbers(c, pair[0], pair[1], s)
            r = _pair_verdict(c, pair[0], pair[1], op2)
            if r:
                c.add(r[0], s, max(pair[1].end, e), f'the stated gap between "{pair[0].text}" and "{pair[1].text}" is not supported: {r[1]}')
            continue
        if op == "sim" and not right and len(left) >= 2:
            left, right = left[:1], left[1:]
        if not left and op in ("gt", "lt"):   # "more reviews mention A than B": A is inside the cue
            left = c.in_range(s, e)[:1]
        code = "unsupported_comparison" if op == "sim" else "reversed_comparison"
        neg_as = _NOT_AS.search(txt[max(0, s - 30):s]) if op == "sim" and _AS_AS.match(txt[s:e]) else None
        if neg_as:   # "A is not as common as B" is "A is less common than B" ("not as rare as": more)
            op = "gt" if re.search(r"(?i)\b(?:rare|uncommon|infrequent|scarce)\b", txt[s:e]) else "lt"
            s0 = s - 30 + neg_as.start() if s >= 30 else neg_as.start()
            judged(c, s0, e, "reversed_comparison", functools.partial(_pairs, c, s, e, op, k, left, right))
            continue
        judged(c, s, e, code, functools.partial(_pairs, c, s, e, op, k, left, right))
    _bare_comparatives(c, [f[:2] for f in found])


_AS_AS = re.compile(r"(?:(?:about|roughly|nearly|almost|just|quite)\s+)?as\s+\w+\s+as\b", re.I)
_NOT_AS = re.compile(r"(?:\bnot|n['’]t)\s+(?:quite\s+|nearly\s+|anywhere\s+near\s+|at\s+all\s+)?$", re.I)
# a comparative with no "than": "Compared with B, A is less common", "Of A and B, B is the more frequent",
# "A is more common, B less so"
_BARE = re.compile(r"\b(?P<d>more|less)\s+(?P<a>common(?:ly)?|frequent(?:ly)?|prevalent|often|popular|mentioned|reported|"
                   r"cited|widespread|rare|uncommon)\b(?!\s+(?:than|and\s+more|and\s+less))|\b(?P<w>commoner|rarer)\b(?!\s+than)",
                   re.I)


def _bare_comparatives(c: Check, taken: list[tuple[int, int]]) -> None:
    txt = c.masked
    for m in _BARE.finditer(txt):
        s, e = m.span()
        k = c.sentence_of(s)
        ss, se = c.sents[k]
        if any(ss <= a < se for a, _ in taken) or c.is_consumed(s, e):
            continue   # the sentence has a comparison of its own
        ms = c.in_range(ss, se)
        distinct = {x.atoms for x in ms}
        if len(distinct) != 2:
            continue
        before = [x for x in ms if x.end <= s]
        if not before:
            continue
        subj = before[-1]
        others = [x for x in ms if x.atoms != subj.atoms]
        # "A and B are more common": a conjoined subject compares them with nothing named
        if any(x.end <= subj.start and re.fullmatch(r"\s*(?:and|or|&|,\s*and|,\s*or)\s*", txt[x.end:subj.start])
               for x in others):
            continue
        word = (m.group("a") or m.group("w") or "").lower()
        up = (m.group("d") or "more").lower() == "more"
        if word in ("rare", "uncommon", "rarer"):
            up = not up
        op = "gt" if up else "lt"
        c.consume(s, e)
        judged(c, s, e, "reversed_comparison",
               functools.partial(_pairs, c, s, e, op, 0.0, [subj], others[:1]))


_QUANTITY = re.compile(r"\s*(?:half|a\s+(?:third|quarter|fifth|tenth)|one\s+in|twice|double|a\s+few|a\s+handful|"
                       r"a\s+couple|several|many|most|(?:the\s+|its\s+|their\s+)?(?:[\d.,]+\s+)?(?:public\s+)?(?:comparison\s+)?"
                       r"(?:margin|threshold|cut-?off|interval|noise|half-width|gap)|(?:the\s+)?noise|[\d.,]+\b)\b", re.I)
_FUNCTION = {"a", "an", "the", "is", "are", "was", "were", "be", "been", "it", "they", "them", "this", "that", "these",
             "those", "there", "here", "of", "in", "on", "at", "by", "for", "to", "and", "or", "as", "so", "does", "do",
             "did", "has", "have", "had", "theme", "themes", "topic", "topics", "mention", "mentions", "one", "ones"}


def _other_side(c: Check, s: int, e: int, right_missing: bool) -> bool:
    """Does the side with no theme name something (a word no earlier rule has judged), so
    the comparison is with a thing the plan does not release? "More than half of …" is a
    quantity, and "than last year" has been judged as a trend already."""
    k = c.sentence_of(s)
    if c.masked[c.sents[k][0]:c.sents[k][1]].rstrip().endswith("?") and re.match(
            r"\s*(?:[-*•>]\s*)*(?:how|what|which|who|where|why|when)\b", c.masked[c.sents[k][0]:c.sents[k][1]], re.I):
        return False   # "How far behind is good service?": a question asks, it compares nothing
    if right_missing and not c.masked[s:e].lower().rstrip().endswith("than"):
        return False   # "A is close behind", "A trails": its partner may be in another sentence
    cs, ce = c.clause_at(s)
    if _QUANTITY.match(c.masked[e:e + 48]):
        return False
    lo, hi = (e, ce) if right_missing else (cs, s)
    if any(v.start < hi and lo < v.end for v in c.out):
        return False   # already judged there ("than last year": a trend)
    for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", c.masked[lo:hi]):
        a, b = lo + m.start(), lo + m.end()
        if m.group().lower() not in _FUNCTION and not c.is_consumed(a, b):
            return True
    return False


_REST = re.compile(r"\s*(?:(?:the|all|any|every)\s+)?(?:other|rest|remaining|others)\b"
                   r"|\s*(?:anything|everything|any\s+theme|every\s+theme|all\s+themes)\s+(?:else|other)?", re.I)


# "A, B and C …, and each is more common than the next": a chain over the themes listed, in the order named
_CHAIN = re.compile(r"\s*(?:the\s+)?(?:next(?:\s+one)?|following\s+one|one\s+(?:after|below|behind)\s+it|"
                    r"(?:theme|one)\s+(?:ranked|listed|just)\s+(?:below|after)\s+it)(?![\w§])", re.I)
_EACH = re.compile(r"\beach\b(?:\s+of\s+(?:the|these|those|them)\b)?(?:\s+(?:two|three|four|five|six))?", re.I)


def _chain(c: Check, s: int, e: int, op: str) -> bool:
    """Judge "each … more common than the next" as consecutive pairs of the group named before; False when the
    sentence is not of that form."""
    txt = c.masked
    k = c.sentence_of(s)
    ss = c.sents[k][0]
    tail = _CHAIN.match(txt, e)
    if op not in ("gt", "lt") or tail is None or not _EACH.search(txt, max(ss, s - 60), s):
        return False
    group: list[Mention] = []
    for lo, hi in ((ss, s), (c.sents[k - 1] if k > 0 else (0, 0))):
        for m in c.in_range(lo, hi):
            if m.anaphor or any(m.atoms == g.atoms for g in group):
                continue
            group.append(m)
        if len(group) >= 2:
            break
        group = []
    if len(group) < 2:
        return False
    end = tail.end()
    for a, b in zip(group, group[1:]):
        r = _pair_verdict(c, a, b, op)
        if r:
            c.add(r[0], s, end, f'"{a.text}" {txt[s:e].strip()} "{b.text}", the next one named, is not supported: {r[1]}')
            return True
    c.consume(s, end)
    return True


def _pairs(c: Check, s: int, e: int, op: str, k: float, left: list[Mention], right: list[Mention]) -> None:
    txt = c.masked
    if _chain(c, s, e, op):
        return
    if not left or not right:
        if left and op in ("gt", "lt") and _REST.match(txt[e:e + 30]):
            _vs_rest(c, left[0], op, s, e)
        elif (left or right) and op in ("gt", "lt", "ratio") and _other_side(c, s, e, bool(left)):
            # one side is a theme, the other is not one the plan releases ("allergic reactions",
            # "than expected", "than last year"): nothing in the plan backs it (fails closed)
            known = (left or right)[0]
            c.add("unsupported_comparison", min(s, known.start), max(e, known.end),
                  f'"{known.text}" is compared with something the plan does not release')
        return
    for a in left:
        for b in right:
            r = _pair_verdict(c, a, b, op, k)
            if r:
                c.add(r[0], min(a.start, b.start), max(a.end, b.end),
                      f'"{a.text}" {txt[s:e].strip()} "{b.text}" is not supported: {r[1]}')
            elif op in ("gt", "lt"):
                _gap_numbers(c, a, b, s)   # "A leads B by about 133 mentions", "A is 577 mentions ahead of B"
