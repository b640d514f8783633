"""The state one verification shares between rules, and attachment of values to themes.

A rule reads `c.text` (the summary), `c.masked` (the summary with theme mentions
masked as `§` and record details as `¤`, same length, so positions agree), `c.plan`,
`c.lex` and `c.mentions`; it reports with `c.add(code, start, end, message)` and marks
text it has judged with `c.consume(start, end)` so that later rules leave it alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import re

from .lexicon import Lexicon, Mention
from .numeric import numbers
from .plan import margin_of
from .text import clauses, merge_list_clauses, sentences
from .vocab import BIN_PATTERNS, bin_word_applies


@dataclass(frozen=True)
class Violation:
    """One broken rule: a code, the offending text and a human message."""

    code: str
    span: str
    message: str
    start: int = -1
    end: int = -1

    def to_dict(self) -> dict:
        return {"code": self.code, "span": self.span, "message": self.message}


@dataclass
class Verdict:
    accepted: bool
    violations: list[Violation] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"accepted": self.accepted, "violations": [v.to_dict() for v in self.violations]}


class Check:
    """One (summary, plan) verification in progress."""

    def __init__(self, text: str, plan: dict, dictionary: Iterable | None, require_theme: bool = False):
        self.text, self.plan, self.require_theme = text, plan, require_theme
        self.lex = Lexicon(plan, dictionary)
        self.out: list[Violation] = []
        self.margin = margin_of(plan)
        self.n = len(plan["atoms"])
        self.max_rank = max((int(a.get("rank", i + 1)) for i, a in enumerate(plan["atoms"])), default=0)
        self.mentions: list[Mention] = []
        self.consumed: list[tuple[int, int]] = []
        self.rank_spans: list[tuple[int, int]] = []
        self.rank_counts: list[tuple[int, int, int, int, int]] = []  # rank groups: (start, number start, end, N, end)
        self._chars = list(text)
        self._masked: str | None = None
        self._sents: list[tuple[int, int]] | None = None
        self._respective: dict[int, Mention] | None = None
        self.groups: dict[int, list[frozenset]] = {}  # sentence → the group a count or rank phrase names

    # --- text ---------------------------------------------------------
    def mask(self, s: int, e: int, ch: str) -> None:
        self._chars[s:e] = ch * (e - s)
        self._masked = self._sents = None

    @property
    def masked(self) -> str:
        if self._masked is None:
            self._masked = "".join(self._chars)
        return self._masked

    @property
    def sents(self) -> list[tuple[int, int]]:
        if self._sents is None:
            self._sents = sentences(self.masked)
        return self._sents

    def sentence_of(self, pos: int) -> int:
        for k, (s, e) in enumerate(self.sents):
            if s <= pos < e:
                return k
        return len(self.sents) - 1

    def clauses_of(self, k: int) -> list[tuple[int, int]]:
        """Clauses of sentence k, list-only clauses joined to the next."""
        ss, se = self.sents[k]
        return merge_list_clauses(self.masked, clauses(self.masked, ss, se))

    # --- reporting ----------------------------------------------------
    def add(self, code: str, s: int, e: int, msg: str) -> None:
        self.out.append(Violation(code, self.text[s:e], msg, s, e))

    def consume(self, s: int, e: int) -> None:
        self.consumed.append((s, e))

    def is_consumed(self, s: int, e: int) -> bool:
        return any(a <= s and e <= b for a, b in self.consumed)

    def overlaps(self, s: int, e: int, spans: Iterable[tuple[int, int]]) -> bool:
        return any(s < te and ts < e for ts, te in spans)

    # --- plan ---------------------------------------------------------
    def atom(self, aid) -> dict:
        return self.lex.atoms[aid]

    # --- attachment ---------------------------------------------------
    def in_range(self, s: int, e: int) -> list[Mention]:
        return [m for m in self.mentions if s <= m.start < e]

    def respective(self) -> dict[int, Mention]:
        """Parallel lists: 'A and B follow at 9.6% and 9.4% (respectively)'.

        A list of k ≥ 2 values of one kind (percentages, other numbers, bin words) joined
        by commas / *and* pairs in order with the list of k themes that ends before it in
        the same sentence; with *respectively*, with the k distinct themes named before it.
        """
        if self._respective is None:
            self._respective = {}
            txt = self.masked
            for ss, se in self.sents:
                resp = bool(re.search(r"\brespectively\b", txt[ss:se], re.I))
                kinds: dict[str, list[tuple[int, int]]] = {}
                for n in numbers(txt[ss:se]):
                    if not n.ordinal:
                        kinds.setdefault("pct" if n.pct else "num", []).append((ss + n.start, ss + n.end))
                for name, needs, rx in BIN_PATTERNS:
                    for m in rx.finditer(txt, ss, se):
                        if bin_word_applies(txt, m.start(), m.end(), needs):
                            kinds.setdefault("bin", []).append(m.span())
                for spans in kinds.values():
                    for run in _runs(txt, sorted(set(spans))):
                        themes = self._theme_list(ss, run[0][0], resp)
                        if len(themes) == len(run):
                            self._respective.update(zip((a for a, _ in run), themes))
        return self._respective

    def _theme_list(self, ss: int, before: int, resp: bool) -> list[Mention]:
        """The themes a value list pairs with: the list of mentions that ends before it."""
        ms = self.in_range(ss, before)
        if resp:
            out: list[Mention] = []
            for m in ms:
                if all(m.atoms != t.atoms for t in out):
                    out.append(m)
            return out
        tail: list[Mention] = []
        for m in reversed(ms):
            if tail and not re.fullmatch(r"\s*(?:,|and|or|&|,\s*and|,\s*or)\s*", self.masked[m.end:tail[0].start]):
                break
            tail.insert(0, m)
        return tail if len({m.atoms for m in tail}) == len(tail) else []

    def _paren_owner(self, ss: int, s: int, e: int) -> Mention | None:
        """'Great price (rank 4, about 6%)': a value in parentheses belongs to the theme just before them."""
        txt = self.masked
        opened = txt.rfind("(", ss, s)
        if opened < 0 or ")" in txt[opened:s]:
            return None
        before = [m for m in self.in_range(ss, opened) if m.end <= opened]
        if not before or not re.fullmatch(r"(?:\s*[\w'-]+){0,2}\s*", txt[before[-1].end:opened]):
            return None
        return before[-1]

    def attach(self, s: int, e: int, back: bool = True) -> list[Mention]:
        """The theme a value at s..e is about: clause, then sentence, then previous sentence."""
        if s in self.respective():
            return [self._respective[s]]
        k = self.sentence_of(s)
        if k < 0:
            return []
        ss, se = self.sents[k]
        owner = self._paren_owner(ss, s, e)
        if owner is not None:
            return [owner]
        for cs, ce in self.clauses_of(k):
            if cs <= s < ce:
                ms = self.in_range(cs, ce)
                if ms:
                    return [min(ms, key=lambda m: _dist(m, s, e))]
        ms = self.in_range(ss, se)
        before = [m for m in ms if m.end <= s]
        if before:
            return [before[-1]]
        if ms:
            return [ms[0]]
        if back and k > 0:
            prev = self.in_range(*self.sents[k - 1])
            if prev:
                return [prev[-1]]
        return []


_LIST_GLUE = re.compile(r"\s*(?:%|percent|per\s+cent)?\s*(?:,|and|&|,\s*and)\s*(?:about|around|roughly|approximately|"
                        r"nearly|almost|just\s+over|just\s+under|over|under|~|≈)?\s*$", re.I)


def _runs(txt: str, spans: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Maximal runs of values joined only by list glue ("9.6% and 9.4%", "high, moderate and low")."""
    runs: list[list[tuple[int, int]]] = []
    for sp in spans:
        if runs and _LIST_GLUE.fullmatch(txt[runs[-1][-1][1]:sp[0]]):
            runs[-1].append(sp)
        else:
            runs.append([sp])
    return [r for r in runs if len(r) > 1]


def _dist(m: Mention, s: int, e: int) -> int:
    return s - m.end if m.end <= s else (m.start - e if m.start >= e else 0)
