"""The state one verification shares between rules, and attachment of values to themes.

A rule reads `c.text` (the summary), `c.masked` (the summary with theme mentions
masked as `§` and record details as `¤`, same length, so positions agree), `c.plan`,
`c.lex` and `c.mentions`; it reports with `c.add(code, start, end, message)` and marks
text it has judged with `c.consume(start, end)` so that later rules leave it alone.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .lexicon import Lexicon, Mention
from .numeric import numbers
from .phrases import leading_np
from .plan import margin_of
from .text import clauses, content, merge_list_clauses, neutral, sentences
from .vocab import BIN_PATTERNS, THEME_PUBLIC, bin_word_applies


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
        dictionary = list(dictionary) if dictionary is not None else None   # read twice (rules/ellipsis.py)
        self.text, self.plan, self.require_theme, self.dictionary = text, plan, require_theme, dictionary
        self.lex = Lexicon(plan, dictionary)
        # the whole verifier on another text, same plan and dictionary (set by core.verify_plan; rules/ellipsis.py)
        self.reverify: Callable[[str], Verdict] | None = None
        self.out: list[Violation] = []
        self.margin = margin_of(plan)
        self.n = len(plan["atoms"])
        self.max_rank = max((int(a.get("rank", i + 1)) for i, a in enumerate(plan["atoms"])), default=0)
        self.mentions: list[Mention] = []
        self.label_spans: list[tuple[int, int, frozenset]] = []  # every label match (admitted or not): start, end, ids
        self.consumed: list[tuple[int, int]] = []
        self.rank_spans: list[tuple[int, int]] = []
        self.rank_counts: list[tuple[int, int, int, int, int]] = []  # rank groups: (start, number start, end, N, end)
        self._chars = list(neutral(text))
        self._masked: str | None = None
        self._sents: list[tuple[int, int]] | None = None
        self._clauses: dict[int, list[tuple[int, int]]] = {}
        self._respective: dict[int, Mention] | None = None
        self.groups: dict[int, list[frozenset]] = {}  # sentence → the group a count or rank phrase names
        # against a comparison (verify/comparison.py): the comparison, and where the text names a side
        self.comparison: dict | None = None
        self.side_spans: list[tuple[int, int, str]] = []

    def fork(self) -> Check:
        """A copy whose later rules can run on one reading without touching this state."""
        f = copy.copy(self)
        f.out, f.mentions, f.consumed = list(self.out), list(self.mentions), list(self.consumed)
        f.rank_spans, f.rank_counts, f._chars = list(self.rank_spans), list(self.rank_counts), list(self._chars)
        f.groups = {k: list(v) for k, v in self.groups.items()}
        f._respective = None
        f._clauses = dict(self._clauses)
        return f

    # --- text ---------------------------------------------------------
    def mask(self, s: int, e: int, ch: str) -> None:
        self._chars[s:e] = ch * (e - s)
        self._masked = self._sents = None
        self._clauses = {}

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
        """Clauses of sentence k, list-only clauses joined to the next (cached until the text is masked again)."""
        got = self._clauses.get(k)
        if got is None:
            ss, se = self.sents[k]
            got = self._clauses[k] = merge_list_clauses(self.masked, clauses(self.masked, ss, se))
        return list(got)

    def clause_at(self, pos: int) -> tuple[int, int]:
        """The clause that holds pos (its sentence when none does)."""
        k = self.sentence_of(pos)
        return next(((a, b) for a, b in self.clauses_of(k) if a <= pos < b), self.sents[k])

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
                    if not n.ordinal and not (n.text.isdigit() and _RANK_NUMBER.search(txt, ss, ss + n.start)):
                        # (the bare integers of "ranks 5 and 6" are ranks, not values)
                        kinds.setdefault("pct" if n.pct else "num", []).append((ss + n.start, ss + n.end))
                for _name, needs, rx in BIN_PATTERNS:
                    for m in rx.finditer(txt, ss, se):
                        if bin_word_applies(txt, m.start(), m.end(), needs):
                            kinds.setdefault("bin", []).append(m.span())
                ranged = bool(_RANGED.search(self.text[ss:se]))   # "from 32.1 to 37.7" is a range, not a versus
                for spans in kinds.values():
                    for run in _runs(txt, sorted(set(spans)), ranged):
                        versus = any(_VERSUS.fullmatch(txt[a[1]:b[0]]) for a, b in zip(run, run[1:]))
                        themes = self._theme_list(ss, run[0][0], resp or versus)
                        if versus:   # "A is ahead of B (12.2% vs 0.7%)": the last themes named, in order
                            themes = themes[-len(run):]
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
            if tail and m.group >= 0 and m.group == tail[0].group:  # one plural anaphor: its themes in order
                tail.insert(0, m)
                continue
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
        # the label may be quoted or emphasised: '"nice color" (≈ 247)', '**nice color** (≈ 247)'
        if not before or not re.fullmatch(r"(?:[\s\"”’'*_≈~]*[\w'.,-]+){0,2}[\s\"”’'*_≈~]*", txt[before[-1].end:opened]):
            return None
        return before[-1]

    def siblings(self, m: Mention) -> list[Mention]:
        """A plural anaphor's mentions (one per theme); a named mention alone."""
        if m.group < 0:
            return [m]
        return [x for x in self.mentions if x.group == m.group] or [m]

    def plural(self, att: list[Mention]) -> bool:
        """Is `att` a plural anaphor ("they", "both", "these two"): a value attached to it is stated for each."""
        return len(att) > 1 and all(m.group >= 0 and m.group == att[0].group for m in att)

    def _in_aside(self, k: int, pos: int) -> bool:
        """Is pos in a clause that is an aside about another theme (", unlike B,", ", like B,")?"""
        return bool(_ASIDE.search(self.masked[max(self.sents[k][0], pos - 40):pos]))

    def _subject_words(self, lo: int, hi: int) -> list[str]:
        np = leading_np(self.masked, lo, hi)   # the clause's own subject, read by structure
        if np is None:
            return []
        lo, hi = np
        out = []
        for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", self.masked[lo:hi]):
            a, b = lo + m.start(), lo + m.end()
            w = re.sub(r"'s$", "", m.group().lower())
            if (w not in _SUBJECT_FILLER and not _FILLER_NOUNS.fullmatch(w) and not self.is_consumed(a, b)
                    and not set(content(w)) <= THEME_PUBLIC):
                out.append(w)
        return out

    def subject(self, lo: int, hi: int) -> Mention | None:
        """The theme(s) an unrecognised subject in masked[lo:hi] may mean, or None when it names
        nothing. A subject that is no label ("nice smell", "errors on the consumer reports") may
        mean any admitted theme that holds more than half of its content words (any reading may
        support the claim, as for ambiguous mentions: "scent" may be nice scent, "errors on the
        consumer reports" the label with "error … report"); one that no theme covers so
        ("allergic reactions", "nice smell", "unfriendly staff") is an empty mention, and a
        claim about it fails closed."""
        words = self._subject_words(lo, hi)
        if not words:
            return None
        every = {t for w in words for t in content(w)}
        toks = every - _GENERIC
        atoms = frozenset(x for x, label in self.lex.label_of.items()
                          if toks and 2 * len(toks & (set(content(label)) - _GENERIC)) > len(every))
        return Mention(lo, hi, atoms, self.text[lo:hi].strip())

    def list_items(self, s: int) -> list[tuple[int | None, list[Mention]]]:
        """The items a lead line or heading introduces ("The most common themes:" then "- A",
        "- B"; "## High support" then its bullets; "Most common theme:" then one line): for each
        following line, its list number (or None) and its mentions. Empty when the line of s is
        neither a lead (ending in a colon) nor a heading."""
        ls = self.text.rfind("\n", 0, s) + 1
        le = self.text.find("\n", s)
        if le < 0:
            return []
        line = self.text[ls:le].strip()
        heading = line.startswith("#")
        if not heading and not line.endswith(":"):
            return []
        items: list[tuple[int | None, list[Mention]]] = []
        pos = le + 1
        while pos < len(self.text):
            end = self.text.find("\n", pos)
            end = len(self.text) if end < 0 else end
            row = self.text[pos:end]
            marker = re.match(r"\s*(?:[-*•+]|(\d{1,2})[.)])\s+", row)
            if not row.strip() or (heading and row.lstrip().startswith("#")):
                break
            if not marker and (items or heading):
                break   # a plain line after a lead is its one item ("Most common theme:\nA")
            items.append((int(marker.group(1)) if marker and marker.group(1) else None, self.in_range(pos, end)))
            if not marker:
                break
            pos = end + 1
        return items

    def listed(self, s: int) -> list[Mention]:
        """The mentions of every item under the lead line or heading of s (`list_items`)."""
        return [m for _, ms in self.list_items(s) for m in ms]

    def claim_subject(self, s: int, e: int) -> Mention | None:
        """The subject of a rank or bin claim at s..e when its clause names no theme: the words
        before the claim word in the clause ("Allergic reactions are the most common theme,
        ahead of dry skin"), or the words after its verb in the clause ("The most common theme is
        allergic reactions, not dry skin"). None: attachment decides."""
        cs, ce = self.clause_at(s)
        if self.in_range(cs, ce):
            return None
        guess = self.subject(cs, s)
        if guess is not None:
            return guess
        verb = re.match(r"[^§¤]{0,40}?\b(?:is|are|was|were|remains?|remained|would\s+be)\s+", self.masked[e:ce])
        return self.subject(e + verb.end(), ce) if verb else None

    def attach(self, s: int, e: int, back: bool = True) -> list[Mention]:
        """The theme a value at s..e is about: clause, then sentence, then previous sentence."""
        respective = self.respective()
        if s in respective:
            return [respective[s]]
        return [x for m in self._attach(s, e, back)[:1] for x in self.siblings(m)]

    def _gap(self, m: Mention, s: int, e: int) -> int:
        """_dist without the parenthesised asides between ("A (about 138.0) is second and B third": the
        claim word is A's, the aside does not put it nearer B)."""
        lo, hi = (m.end, s) if m.end <= s else (e, m.start) if m.start >= e else (0, 0)
        return _dist(m, s, e) - sum(len(a.group()) for a in _PAREN_ASIDE.finditer(self.masked, lo, hi) if a.end() <= hi)

    def _attach(self, s: int, e: int, back: bool = True) -> list[Mention]:
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
                before = [m for m in ms if m.end <= s]
                after = [m for m in ms if m.start >= e]
                if before and after and _RELATES.search(self.masked[e:after[0].start]):
                    return [before[-1]]   # "A is the most common theme (mass about 422) and far ahead of B"
                if ms:
                    return [min(ms, key=lambda m: self._gap(m, s, e))]
        ms = self.in_range(ss, se)
        before = [m for m in ms if m.end <= s]
        main = [m for m in before if not self._in_aside(k, m.start)]
        if main:   # "Nice scent, unlike dry skin, is the most common theme": the claim is nice scent's
            return [main[-1]]
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


# values set against each other: "(12.2% vs. 0.7%)", "12.2% to 0.7%", "9.6% versus 9.4%"
_VERSUS = re.compile(r"\s*(?:%|percent|per\s+cent)?\s*(?:vs\.?|versus|against|to)\s*(?:about|around|roughly|~|≈)?\s*$", re.I)


_RANGED = re.compile(r"\b(?:intervals?|ranges?|ci|confidence|from|between|runs?|spans?|plausible)\b", re.I)


def _runs(txt: str, spans: list[tuple[int, int]], ranged: bool = False) -> list[list[tuple[int, int]]]:
    """Maximal runs of values joined only by list glue ("9.6% and 9.4%", "high, moderate and low");
    in a sentence about intervals, "a to b" is a range and joins no run."""
    runs: list[list[tuple[int, int]]] = []
    for sp in spans:
        gap = txt[runs[-1][-1][1]:sp[0]] if runs else ""
        versus = bool(runs) and bool(_VERSUS.fullmatch(gap)) and not (ranged and re.search(r"\bto\b", gap))
        if runs and (_LIST_GLUE.fullmatch(gap) or versus):
            runs[-1].append(sp)
        else:
            runs.append([sp])
    return [r for r in runs if len(r) > 1]


# words that introduce the other side of a relation: a value before them belongs to the side before
_RELATES = re.compile(r"\b(?:than|ahead\s+of|behind|over|above|below|compared|versus|vs|against|as\s+common\s+as|twice|"
                      r"similar\s+to|tied\s+with|followed\s+by|leads?|trails?|edges?\s+out|beats?|outranks?)\b", re.I)


def _dist(m: Mention, s: int, e: int) -> int:
    return s - m.end if m.end <= s else (m.start - e if m.start >= e else 0)


_RANK_NUMBER = re.compile(r"\b(?:ranks?|ranked|#)\s*(?:\d+\s*(?:,|and|&|to|through|–|-)\s*)*$", re.I)
_PAREN_ASIDE = re.compile(r"\s*\([^()\n]*\)")

# words a clause may hold before a claim word without naming a subject of its own
_SUBJECT_FILLER = set("""a an the is are was were be been being it its they them their this that these those there here
what which who whose one ones of in on at by for to from with and or as so also still overall then however finally
meanwhile instead both each every all any some other others another rest remaining next last first second third its
has have had do does did can could may might will would should appear appears appeared seem seems seemed stand stands
stood remain remains remained rank ranks ranked come comes came sit sits sat clearly easily far by just only even
again now currently overall altogether together plan release released data results result summary support share
mass bin bins tier tiers level levels band bands group groups range fall falls fell fallen drop drops lie lies sit
below above beyond after under over top bottom than most least more less high moderate low two three four five six
seven eight nine ten single whole per cent percent but yet while whereas though although because since however
about around roughly nearly approximately almost just within with without nor neither not no lead leads led top tops head heads follow
follows followed trail trails trailing place places placed position positions spot spots list ranking chart table""".split())
_FILLER_NOUNS = re.compile(r"(?:themes?|topics?|atoms?|issues?|categor(?:y|ies)|concepts?|items?|entr(?:y|ies)|areas?|"
                           r"subjects?|labels?|phrases?|reviews?|complaints?|records?|reports?|mentions?|posts?|"
                           r"comments?|tickets?|cases?|consumers?|customers?|reviewers?|users?|people|guests?|diners?)")
# label words too general to say which theme a paraphrase means
_GENERIC = {"problem", "issue", "other", "company", "service", "product", "good", "bad", "great", "poor", "not",
            "no", "your", "my", "their", "get", "got", "make", "made", "thing", "way", "time", "experience"}
_ASIDE = re.compile(r"[,;:(—–-]\s*(?:unlike|like|along\s+with|as\s+with|as\s+well\s+as|together\s+with|besides|"
                    r"apart\s+from|except(?:\s+for)?|not|rather\s+than|instead\s+of|compared\s+(?:with|to)|"
                    r"in\s+contrast\s+to|similar\s+to)\s+(?:the\s+)?$", re.I)
