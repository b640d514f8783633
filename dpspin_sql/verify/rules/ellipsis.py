"""Claims carried to another theme by ellipsis: "A is the most common theme, and so is B",
"A has high support, as does B", "A accounts for 12% of reviews. So does B."

The carried claim is the antecedent clause with its theme replaced by the new one; it is
verified like any sentence (every rule, the same plan and dictionary), and what it breaks is
reported at the ellipsis. Without this the second theme's claim would never be read.
"""
from __future__ import annotations

import re

from ..context import Check

_AUX = r"(?:is|are|was|were|does|do|did|has|have|had)"
ELLIPSIS = re.compile(rf"\b(?:and|but)\s+so\s+{_AUX}\s+(?P<a>§+)|,\s*as\s+{_AUX}\s+(?P<b>§+)"
                      rf"|(?:^|(?<=[.!?;]\s))(?:and\s+)?so\s+{_AUX}\s+(?P<c>§+)"
                      rf"|(?P<d>§+)\s*,?\s+(?:{_AUX}\s*,?\s+)?(?:too|as\s+well|likewise)\s*(?=[.,;:!?)]|$)"
                      rf"|(?:the\s+same\s+(?:goes|is\s+true|holds)\s+(?:for|of)|likewise,?|so,?\s+too,?\s+{_AUX}|"
                      rf"and\s+so\s+{_AUX})\s+(?P<e>§+)", re.I)


def check(c: Check) -> None:
    if c.reverify is None:
        return
    for m in ELLIPSIS.finditer(c.masked):
        g = next(name for name in "abcde" if m.group(name))
        ms = m.start(g)
        carried = next((x for x in c.mentions if x.start == ms), None)
        k = c.sentence_of(m.start())
        lo, hi = c.sents[k][0], m.start()
        if g in "cde" and not [x for x in c.mentions if lo <= x.start < hi and x.start != ms]:
            if k == 0:
                continue
            lo, hi = c.sents[k - 1]          # "So does B.": the previous sentence's claim
        subject = next((x for x in c.mentions if lo <= x.start < hi and x.start != ms), None)
        if carried is None or subject is None or carried.atoms == subject.atoms:
            continue
        label = c.lex.label_of[min(carried.atoms)]
        claim = c.text[lo:subject.start] + label + c.text[subject.end:hi]
        verdict = c.reverify(claim.strip(" ,;"))
        for code in sorted({v.code for v in verdict.violations}):
            why = next(v.message for v in verdict.violations if v.code == code)
            c.add(code, m.start(), m.end(), f'the claim carried to "{carried.text}" does not hold: {why}')
        c.consume(m.start(), m.end())
