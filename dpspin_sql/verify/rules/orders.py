"""Claims about a whole order (`unsupported_comparison`): "every adjacent pair clears the
comparison margin", "the ranking of all eight themes is supported", "the order 1 to 6 holds",
"not every neighbouring step is significant".

Such a sentence claims one comparison per consecutive pair of released ranks it covers (all
the released themes, ranks a to b, or the top n): it holds when every pair's noisy masses
differ by at least the comparison margin, and its negation when some pair's do not. Either
way the sentence is checked against the plan, never read as a claim about one theme.
"""
from __future__ import annotations

import re

from ..context import Check
from ..numeric import UNITS
from ..plan import margin_of, mass

_N = r"(?:\d{1,2}|" + "|".join(list(UNITS)[1:21]) + r")"
# what the order covers must be said: every adjacent pair (of all the released themes, or of the top n), the
# full order, the order of all n themes, of the top n, or of ranks a to b; "their order", "each adjacent pair
# among them" refer to a group named elsewhere and are left to the other rules
_WHAT = (r"(?:\s+of\s+(?:all\s+(?:the\s+)?(?P<n2>" + _N + r")\s+(?:released\s+|admitted\s+)?themes?|all\s+(?:the\s+)?"
         r"(?:released\s+|admitted\s+)?themes|the\s+top\s+(?P<n3>" + _N + r")(?:\s+themes?)?)"
         r"|\s+(?:from\s+)?(?:rank\s+)?(?P<a>\d{1,2})\s*(?:to|through|–|-)\s*(?P<b>\d{1,2}))")
ORDER = re.compile(
    r"\b(?:(?:every|each|all(?:\s+the)?|all\s+\w+)\s+(?:of\s+the\s+)?(?:neighbou?ring|adjacent|consecutive|successive)"
    r"\s+(?:pairs?|themes?|steps?|gaps?|ranks?|positions?)(?:\s+(?:among|in|within)\s+the\s+top\s+(?P<n1>" + _N +
    r"))?(?!\s+(?:among|between|of|in|within)\s+(?:them|these|those|this|that|the\s+(?!top\b)))"
    r"|(?:the\s+)?(?:(?P<full>full|whole|entire|complete)\s+)?(?:rank\s+order|order(?:ing)?|ranking)(?:" + _WHAT +
    r")?)\b", re.I)
_HOLDS = re.compile(r"[^.;:!?]{0,50}?\b(?:clears?|cleared|exceeds?|exceeded|beats?|passes|passed|is|are|was|were|"
                    r"holds?|held|stands?)\b[^.;!?]{0,40}?\b(?:comparison\s+margin|margin|supported|solid|reliable|"
                    r"significant|distinguishable|separated|firm|meaningful|holds?|robust)\b", re.I)
_NOT = re.compile(r"\b(?:not|n['’]t|never|no|neither|nor|none)\b", re.I)


def _number(text: str | None) -> int | None:
    if not text:
        return None
    return int(text) if text.isdigit() else UNITS.get(text.lower())


def check(c: Check) -> None:
    txt, p = c.masked, c.plan
    ranked = sorted((a for a in p.get("atoms", []) if isinstance(a.get("rank"), int)), key=lambda a: a["rank"])
    if len(ranked) < 2:
        return
    margin = margin_of(p)
    for m in ORDER.finditer(txt):
        k = c.sentence_of(m.start())
        ss, se = c.sents[k]
        holds = _HOLDS.match(txt, m.end(), se)
        if not holds:
            continue
        if m.group().lower().lstrip().startswith(("the", "rank", "order", "full", "whole", "entire", "complete")) and \
                not (m.group("full") or m.group("n2") or m.group("n3") or m.group("a") or
                     re.search(r"\ball\s+(?:the\s+)?(?:released\s+|admitted\s+)?themes", m.group(), re.I)):
            continue   # "the order is supported" after a group: what it covers is named elsewhere
        n = _number(m.group("n1") or m.group("n2") or m.group("n3"))
        lo, hi = 1, len(ranked)
        if m.group("a") and m.group("b"):
            lo, hi = int(m.group("a")), int(m.group("b"))
        elif n is not None and (m.group("n1") or m.group("n3")):
            hi = n
        elif n is not None and n != len(ranked):
            continue   # "the order of all three themes" of a plan with more: a group named elsewhere
        if not 1 <= lo < hi <= len(ranked):
            continue
        negated = bool(_NOT.search(txt[ss:m.start()]) or _NOT.search(txt[m.end():holds.end()]))
        span = ranked[lo - 1:hi]
        close = [(a, b) for a, b in zip(span, span[1:]) if abs(mass(a) - mass(b)) < margin]
        if close and not negated:
            a, b = close[0]
            c.add("unsupported_comparison", m.start(), holds.end(),
                  f'"{txt[m.start():holds.end()]}" is not supported: "{a["label"]}" and "{b["label"]}" (ranks '
                  f'{a["rank"]} and {b["rank"]}) differ by less than the comparison margin ({margin:g})')
        elif not close and negated:
            c.add("unsupported_comparison", m.start(), holds.end(),
                  f'"{txt[m.start():holds.end()]}" is not what the plan says: every consecutive pair of ranks {lo} to '
                  f'{hi} differs by at least the comparison margin ({margin:g})')
        c.consume(m.start(), holds.end())
