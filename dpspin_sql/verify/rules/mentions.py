"""Mentions: find every dictionary label in the summary (`unadmitted_atom`).

Labels of admitted atoms become the mentions other rules attach values to; a label of
an atom outside the plan is a violation — the whole dictionary is public, so these can
be detected (docs/DESIGN.md §6). Text that is literally part of an admitted label is supported.
"""
from __future__ import annotations

import re

from ..context import Check
from ..lexicon import Mention
from ..text import GLUE, contains, content, soft_breaks_as_spaces, tokenize

_POSSESSIVE = {"their", "your", "my", "his", "her", "its", "our"}


def _match(toks, i, variant) -> int | None:
    """End token index if `variant` matches at i, skipping ≤2 glue words per gap."""
    k, j, skipped = 0, i, 0
    while k < len(variant):
        if j >= len(toks) or toks[j][0] == "|":
            return None
        if toks[j][0] == variant[k]:
            k, j, skipped = k + 1, j + 1, 0
        elif 0 < k < len(variant) - 1 and variant[k] in _POSSESSIVE:  # "used the report" for "used your report"
            k += 1
        elif k > 0 and toks[j][0] in GLUE and skipped < 2:
            j, skipped = j + 1, skipped + 1
        else:
            return None
    return j


def check(c: Check) -> None:
    text, lex = c.text, c.lex
    toks = tokenize(soft_breaks_as_spaces(text), lex.boundaries)   # hard-wrapped text: "good\nprice" is a label
    i = 0
    while i < len(toks):
        best: tuple[int, tuple] | None = None
        for pattern, variant in lex.by_first.get(toks[i][0], ()):
            end = _match(toks, i, pattern)
            if end is not None and (best is None or len(variant) > len(best[1])
                                    or (len(variant) == len(best[1]) and lex.variants[variant] & lex.admitted)):
                best = (end, variant)
        if best is None:
            i += 1
            continue
        end, variant = best
        s, e = toks[i][1], toks[end - 1][2]
        ids = lex.variants[variant]
        c.label_spans.append((s, e, frozenset(ids)))
        hit = ids & lex.admitted
        if not hit and variant not in lex.admitted_ngrams:
            c.add("unadmitted_atom", s, e, f'"{text[s:e]}" names an atom that is not in the released plan; '
                  "mention only the plan's themes")
            c.mask(s, e, "¤")
        else:
            if not hit:  # literally part of an admitted label: supported, ambiguous
                hit = {a for a in lex.admitted if contains(content(lex.label_of[a]), variant)}
            c.mentions.append(Mention(s, e, frozenset(hit), text[s:e]))
        i = end
    c.mentions = _merge_segments(text, c.mentions)
    for m in c.mentions:
        c.mask(m.start, m.end, "§")


# "fees on credit cards", "Mortgage complaints about trouble during the payment process":
# two segments of one hierarchical label, a few words apart, name one theme
_JOIN = re.compile(r"(?:\s+|\s*[:(—–-]\s*)(?:(?!(?:and|or|but|than|nor|versus|vs|while|whereas|compared|more|less|"
                   r"fewer|similar|ahead|behind)\b)[\w'-]+\s+){0,4}?(?:\s*[:(—–-]\s*)?$", re.I)


def _merge_segments(text: str, mentions: list[Mention]) -> list[Mention]:
    out: list[Mention] = []
    for m in mentions:
        if out:
            prev = out[-1]
            both = prev.atoms & m.atoms
            gap = text[prev.end:m.start]
            if both and both != prev.atoms | m.atoms and _JOIN.match(gap) and not re.search(r"[,;.!?]", gap):
                out[-1] = Mention(prev.start, m.end, frozenset(both), text[prev.start:m.end])
                continue
        out.append(m)
    return out
