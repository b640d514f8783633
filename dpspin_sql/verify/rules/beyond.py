"""Claims no plan can support, whatever the numbers (`unsupported_claim`, `unsupported_number`).

A plan releases one noisy mass per admitted theme, so it cannot show:
- absence: that no record mentions a theme ("never mentioned", "zero reviews", "0 mentions"),
  since a released theme has noise on it and an unreleased one was never measured
  ("nobody", "none of the customers" are the quantifier rule's);
- an exact count ("exactly 612", "the true count"): every released value is noisy;
- a relation between themes or with something else — cause ("causes", "leads to", "due to"),
  co-occurrence ("reviewers who mention A also mention B"), or a subgroup ("women", "one-star
  reviews") — since the sketch keeps no record's other attributes and no pair of themes;
- a number in a unit the number rule does not read ("5k", "90pc"), which would otherwise pass
  unchecked.
They fail closed: the sentence is rejected rather than read as something the plan says.
"""
from __future__ import annotations

import re

from ..context import Check
from ..vocab import METHOD, PEOPLE_NOUNS, RECORD_NOUNS

ABSENCE = re.compile(
    r"\b(?:never|not\s+(?:once|ever))\s+(?:been\s+)?(?:mentioned|raised|cited|reported|discussed|appears?|comes?\s+up)\b"
    r"|\bnot\s+(?:mentioned|raised|cited|reported|discussed)\s+at\s+all\b"
    r"|\b(?:zero|0|no|not\s+a\s+single|not\s+one)\s+(?:single\s+)?" + RECORD_NOUNS + r"\s+(?:\w+\s+){0,2}?"
    r"(?:mention|mentions|mentioned|raise|raises|raised|cite|cites|cited|report|reports|reported|discuss|discusses|"
    r"discussed|include|includes|included|about|on|of|concern|concerns|concerned)\b"
    r"|\b(?:zero|0|no)\s+(?:mentions?|support|occurrences?|instances?)\b", re.I)
_PLAN_PARTS = r"(?:themes?|topics?|atoms?|categories|category|bins?|ranks?)"
EXACT = re.compile(r"\b(?:exactly|precisely)\s+(?:[\d,.]+|\w+)\s+(?:\w+\s+){0,2}?(?:" + RECORD_NOUNS + "|" + PEOPLE_NOUNS
                   + r")\b|\bthe\s+(?:true|actual|real|precise|exact)\s+(?:count|number|total|figure|value|amount)\b"
                   r"(?!\s+of\s+" + _PLAN_PARTS + r")", re.I)
RELATION = re.compile(
    r"\b(?:causes?|caused|causing|leads?\s+to|led\s+to|results?\s+in|resulted\s+in|drives?|drove|driven\s+by|"
    r"because\s+of|due\s+to|owing\s+to|triggers?|triggered|explains?|explained\s+by|is\s+linked\s+to|are\s+linked\s+to|"
    r"correlates?|correlated|associated\s+with)\b"
    r"|\b(?:who|that)\s+(?:mention|mentions|mentioned|raise|raises|raised|cite|cites|cited|complain\w*)\b[^.;!?]*?"
    r"\balso\b"
    r"|\b(?:women|men|female|male|older|younger|elderly|teen\w*|one-star|two-star|three-star|four-star|five-star|"
    r"[1-5]-star|negative\s+ratings?|positive\s+ratings?|low\s+ratings?|high\s+ratings?)\b", re.I)
SUFFIXED = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?:k|K|m|M|bn|pc|mn)\b")


def check(c: Check) -> None:
    txt = c.masked
    for m in ABSENCE.finditer(txt):
        if not c.is_consumed(*m.span()):
            c.add("unsupported_claim", *m.span(), f'"{m.group()}" claims that no record mentions a theme, which a '
                  "noisy release cannot show")
            c.consume(*m.span())
    for m in EXACT.finditer(txt):
        c.add("unsupported_number", *m.span(), f'"{m.group()}" presents a noisy released value as an exact count')
    for m in RELATION.finditer(txt):
        ss, se = c.sents[c.sentence_of(m.start())]
        if "§" in txt[ss:se] and not c.is_consumed(*m.span()) and not METHOD.search(c.text[ss:se]):   # about a theme
            c.add("unsupported_claim", *m.span(), f'"{m.group()}" relates a theme to a cause, another theme or a '
                  "group of records; a plan releases only each theme's own mass")
    for m in SUFFIXED.finditer(txt):
        if not c.is_consumed(*m.span()):
            c.add("unsupported_number", *m.span(), f'"{m.group()}" is a number in a unit the verifier does not read')
            c.consume(*m.span())
