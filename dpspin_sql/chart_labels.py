"""Atom labels as a chart draws them: at most two short lines, the distinguishing part kept.

A chart row has room for about 30 characters a line. Cutting a long label at its end loses
what tells it apart from its neighbours when labels share a long beginning — the CFPB's
sub-issues all start with their product ("Payday loan, title loan, or personal loan: …"),
and cut at 31 characters seven of ten read the same. So a label that does not fit in two
lines first has the beginning it shares with another label of the chart shortened to its
first word and "…"; what still does not fit loses words from its middle, never its end.
The full label is always in the row's tooltip and in the card's table.
"""
from __future__ import annotations

from collections.abc import Sequence

WIDTH = 30       # characters a line
LINES = 2        # lines a label


def chart_lines(label: str, others: Sequence[str] = (), *, width: int = WIDTH, lines: int = LINES) -> list[str]:
    """`label` as at most `lines` lines of at most `width` characters each (`others`: the
    chart's other labels, whose shared beginning may be shortened)."""
    words = label.split()
    if not words:
        return [""]
    fitted = _wrap(words, width)
    if len(fitted) <= lines:
        return fitted
    shared = max((_shared_words(words, o.split()) for o in others if o != label), default=0)
    if 1 < shared < len(words):
        words = [_cut(words[0].rstrip(",:;"), width - 1) + "…"] + words[shared:]
        fitted = _wrap(words, width)
        if len(fitted) <= lines:
            return fitted
    return _elide_middle(words, width, lines)


def _wrap(words: list[str], width: int) -> list[str]:
    out: list[str] = []
    line = ""
    for w in words:
        w = _cut(w, width)
        if line and len(line) + 1 + len(w) <= width:
            line += " " + w
        else:
            if line:
                out.append(line)
            line = w
    out.append(line)
    return out


def _shared_words(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x.rstrip(",:;") != y.rstrip(",:;"):
            break
        n += 1
    return n


def _cut(word: str, width: int) -> str:
    return word if len(word) <= width else word[:width - 1] + "…"


def _elide_middle(words: list[str], width: int, lines: int) -> list[str]:
    """The first lines from the start, the last line the label's end behind "…"."""
    head = _wrap(words, width)[:lines - 1]
    used = sum(len(h.split()) for h in head)
    tail: list[str] = []
    for w in reversed(words[used:]):
        w = _cut(w, width - 2)
        if len("… " + " ".join([w, *tail])) > width:
            break
        tail.insert(0, w)
    if not tail:
        tail = [_cut(words[-1], width - 2)]
    return [*head, "… " + " ".join(tail)]
