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


# an aside that adds a theme to the claim: "A, like B, has high support", "Like B, A is …",
# "A has high support, along with B": the claim is re-verified for B with the aside left out
_ADD = r"(?:like|just\s+like|along\s+with|as\s+well\s+as|together\s+with|as\s+with|as\s+does|as\s+do)"
ADDITIVE = re.compile(rf"(?P<main>§+)\s*,\s*{_ADD}\s+(?P<other>§+)\s*,"
                      rf"|(?:^|(?<=[.!?;:]\s))(?:just\s+)?(?:like|as\s+with)\s+(?P<other2>§+)\s*,\s*(?P<main2>§+)"
                      rf"|(?P<main3>§+)(?P<rest>[^.;!?§]+?)\s*,?\s+{_ADD}\s+(?P<other3>§+)\s*(?=[.;!?]|$)", re.I)


def _mention_at(c: Check, pos: int):
    return next((x for x in c.mentions if x.start == pos), None)


def _report(c: Check, claim: str, s: int, e: int, what: str) -> None:
    """Verify the carried claim as a sentence of its own; report each code it breaks at s..e. The antecedent's
    parenthesised values are its own themes' ("A (4.8%) and B (4.4%) are similar, and so are C and D")."""
    assert c.reverify is not None
    claim = re.sub(r"\s*\([^()\n]*\d[^()\n]*\)", "", claim)
    verdict = c.reverify(claim.strip(" ,;"))
    for code in sorted({v.code for v in verdict.violations}):
        why = next(v.message for v in verdict.violations if v.code == code)
        c.add(code, s, e, f"{what}: {why}")


def _additive(c: Check) -> None:
    assert c.reverify is not None
    for m in ADDITIVE.finditer(c.masked):
        gm, go = next((a, b) for a, b in (("main", "other"), ("main2", "other2"), ("main3", "other3")) if m.group(a))
        main = _mention_at(c, m.start(gm))
        other = _mention_at(c, m.start(go))
        if main is None or other is None or main.atoms == other.atoms:
            continue
        ss, se = c.sents[c.sentence_of(m.start())]
        if gm == "main":       # drop ", like B," and put B where A stands
            a, b = m.end(gm), m.end()
        elif gm == "main2":    # drop "Like B, "
            a, b = m.start(), m.start(gm)
        else:                  # drop ", along with B"
            a, b = m.end("rest"), m.end()
        label = c.lex.label_of[min(other.atoms)]
        claim = c.text[ss:main.start] + label + c.text[main.end:a] + c.text[b:se]
        _report(c, claim, other.start, other.end, f'the claim made for "{other.text}" as well does not hold')


def check(c: Check) -> None:
    if c.reverify is None:
        return
    _additive(c)
    for m in ELLIPSIS.finditer(c.masked):
        g = next(name for name in "abcde" if m.group(name))
        ms = m.start(g)
        carried = _mention_at(c, ms)
        k = c.sentence_of(m.start())
        if g == "e" and re.match(r"(?i)likewise", m.group()) and re.search(
                r"[A-Za-z]{3,}", re.sub(r"§+|\b(?:and|or|too|also|as\s+well)\b", "", c.masked[m.end(g):c.sents[k][1]])):
            continue   # "Likewise, A, B and C should be shown as a tie": a sentence of its own, not an ellipsis
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
        pair = re.match(r"(?:\s*\([^()\n]*\))?\s*(?:,\s*)?(?:and|&)\s+(§+)", c.masked[m.end(g):])
        second = _mention_at(c, m.end(g) + pair.start(1)) if pair else None
        before = [x for x in c.mentions if lo <= x.start < hi and x.start != ms]
        if second is not None and len({x.atoms for x in before}) >= 2:
            # "A and B are similar, and so are C and D": the relation of the last pair named carried to the new
            # pair, both replaced, read from the clause the pair stands in
            other = before[-1]
            first = next(x for x in reversed(before) if x.atoms != other.atoms)
            lo = max(lo, c.clause_at(first.start)[0])
            label2 = c.lex.label_of[min(second.atoms)]
            spans = sorted([(first, label), (other, label2)], key=lambda t: t[0].start)
            claim, pos = "", lo
            for men, lab in spans:
                claim += c.text[pos:men.start] + lab
                pos = men.end
            claim += c.text[pos:hi]
        _report(c, claim, m.start(), m.end(), f'the claim carried to "{carried.text}" does not hold')
        c.consume(m.start(), m.end())
