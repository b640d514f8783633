"""The public, deterministic DP-SPIN verifier (SPEC §5; rules in docs/VERIFIER.md).

`verify(summary, plan)` checks that every claim in a summary is supported by the
released plan: atom mentions, numbers (public rounding rule), support bins,
pairwise comparisons (public margin), rank claims, and the absence of
record-level detail. It reads only the plan and public rules, so verification
and everything it feeds (feedback, regeneration, fallback) is post-processing.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = ["Violation", "Verdict", "verify", "verify_claims", "plan_dict", "BIN_WORDS"]


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


# ---------------------------------------------------------------- plan access
def plan_dict(plan: Any) -> dict:
    """Accept a SPEC §4 dict or any object with `.to_dict()`."""
    if hasattr(plan, "to_dict"):
        plan = plan.to_dict()
    if not isinstance(plan, dict) or not isinstance(plan.get("atoms"), list):
        raise ValueError("plan must be a dict with an 'atoms' list (SPEC §4)")
    for a in plan["atoms"]:
        if not isinstance(a, dict) or not isinstance(a.get("label"), str):
            raise ValueError("every plan atom needs a string 'label'")
    return plan


def _mass(atom: dict) -> float:
    v = atom.get("noisy_mass", atom.get("display_mass", 0.0))
    return float(v if v is not None else 0.0)


def margin_of(plan: dict) -> float:
    """The public comparison margin; derived from the noise scale when absent."""
    m = plan.get("comparison_margin")
    if m is not None:
        return float(m)
    s = plan.get("noise_scale")
    return 1.96 * math.sqrt(2.0) * float(s) if s is not None else 0.0


# ---------------------------------------------------------------- tokens
_STOP = {"a", "an", "the", "to", "of", "or", "and", "for", "on", "in", "with", "by", "at", "from", "&"}
_GLUE = {"is", "are", "wa", "were", "be", "been", "being", "that", "which", "very", "really", "quite",
         "so", "too", "extremely", "rather", "fairly", "felt", "feel", "seem", "seemed", "look",
         "looked", "its", "their", "overly", "somewhat", "was"}
_PLACEHOLDER = {("none",), ("other",), ("n", "a"), ("unknown",), ("i", "do", "not", "know"), ("not", "applicable")}
_CONTRACTIONS = [(r"(?i)\bcan't\b", "can not"), (r"(?i)\bwon't\b", "will not"), (r"(?i)n't\b", " not"),
                 (r"(?i)\bcont'd\b", "continued"), (r"(?i)'s\b", ""), (r"(?i)'(re|ve|ll|m|d)\b", "")]
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_BOUNDARY_CHARS = ".;:!?—–()[]\"“”\n"


def _stem(w: str) -> str:
    w = w.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if len(w) > 4 and w.endswith(("ches", "shes", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@functools.lru_cache(maxsize=65536)
def _word_tokens(word: str) -> tuple[str, ...]:
    if "'" in word or "n't" in word:
        for pat, rep in _CONTRACTIONS:
            word = re.sub(pat, rep, word)
    return tuple(_stem(t) for t in re.findall(r"[A-Za-z0-9]+", word))


@functools.lru_cache(maxsize=16384)
def _content(text: str) -> tuple[str, ...]:
    """Normalised content tokens of a label: case, plural, hyphens, stopwords ignored."""
    out: list[str] = []
    for m in _WORD_RE.finditer(text):
        out.extend(t for t in _word_tokens(m.group()) if t not in _STOP)
    return tuple(out)


def _tokenize(text: str, boundaries: str) -> list[tuple[str, int, int]]:
    """Content tokens with character spans; '|' marks a hard boundary."""
    toks: list[tuple[str, int, int]] = []
    pos = 0
    for m in _WORD_RE.finditer(text):
        if any(c in boundaries for c in text[pos:m.start()]):
            toks.append(("|", pos, m.start()))
        for t in _word_tokens(m.group()):
            if t not in _STOP:
                toks.append((t, m.start(), m.end()))
        pos = m.end()
    return toks


# ---------------------------------------------------------------- dictionary
class _Lexicon:
    """Every public label, split into matchable variants, with its atom ids."""

    def __init__(self, plan: dict, dictionary: Iterable | None):
        self.atoms = {int(a.get("atom_id", i)): a for i, a in enumerate(plan["atoms"])}
        self.admitted = set(self.atoms)
        labels: list[tuple[int | None, str]] = [(aid, a["label"]) for aid, a in self.atoms.items()]
        extra = dictionary if dictionary is not None else plan.get("dictionary_labels") or []
        for i, d in enumerate(extra):
            if isinstance(d, dict):
                labels.append((d.get("atom_id"), str(d.get("label", ""))))
            else:
                labels.append((None, str(d)))
        by_label: dict[str, int] = {}
        self.variants: dict[tuple, set] = {}
        next_id = -1
        all_chars = "".join(lbl for _, lbl in labels)
        self.boundaries = "".join(c for c in _BOUNDARY_CHARS if c not in all_chars) + "\n"
        for aid, lbl in labels:
            key = " ".join(_content(lbl))
            if aid is None:
                aid = by_label.get(key, next_id)
                if aid == next_id:
                    next_id -= 1
            by_label.setdefault(key, aid)
            aid = int(aid)
            for v in _label_variants(lbl):
                self.variants.setdefault(v, set()).add(aid)
        for aid, a in self.atoms.items():
            desc = a.get("description") or ""
            v = _content(desc)
            if len(v) >= 2:
                self.variants.setdefault(v, set()).add(aid)
        self.admitted_ngrams: set[tuple] = set()
        for a in self.atoms.values():
            c = _content(a["label"])
            for i in range(len(c)):
                for j in range(i + 1, min(len(c), i + 12) + 1):
                    self.admitted_ngrams.add(c[i:j])
        self.by_first: dict[str, list[tuple[tuple, tuple]]] = {}  # first token -> (pattern, variant)
        for v in self.variants:
            self.by_first.setdefault(v[0], []).append((v, v))
            if len(v) == 2:  # "staff friendly" for "friendly staff"
                self.by_first.setdefault(v[1], []).append(((v[1], v[0]), v))
            if 2 <= len(v) <= 3:  # "dryskin"
                self.by_first.setdefault("".join(v), []).append((("".join(v),), v))
        for lst in self.by_first.values():
            lst.sort(key=lambda pv: len(pv[1]), reverse=True)
        self.label_of = {aid: a["label"] for aid, a in self.atoms.items()}


def _label_variants(label: str) -> set[tuple]:
    segs = [s for s in re.split(r"\s+/\s+|\s*>\s*|\s*\|\s*", label) if s.strip()]
    out: set[tuple] = set()
    full = _content(label)
    if full:
        out.add(full)
    for i in range(len(segs)):
        for j in range(i + 1, len(segs) + 1):
            v = _content(" ".join(segs[i:j]))
            if v and v not in _PLACEHOLDER:
                out.add(v)
    return out


@dataclass
class _Mention:
    start: int
    end: int
    atoms: frozenset
    text: str


def _match(toks, i, variant) -> int | None:
    """End token index if `variant` matches at i, skipping ≤2 glue words per gap."""
    k, j, skipped = 0, i, 0
    while k < len(variant):
        if j >= len(toks) or toks[j][0] == "|":
            return None
        if toks[j][0] == variant[k]:
            k, j, skipped = k + 1, j + 1, 0
        elif k > 0 and toks[j][0] in _GLUE and skipped < 2:
            j, skipped = j + 1, skipped + 1
        else:
            return None
    return j


def _find_mentions(text: str, lex: _Lexicon, out: list[Violation]) -> list[_Mention]:
    toks = _tokenize(text, lex.boundaries)
    mentions: list[_Mention] = []
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
        hit = ids & lex.admitted
        if not hit and variant not in lex.admitted_ngrams:
            out.append(Violation("unadmitted_atom", text[s:e],
                                 f'"{text[s:e]}" names an atom that is not in the released plan; '
                                 "mention only the plan's themes", s, e))
        elif hit:
            mentions.append(_Mention(s, e, frozenset(hit), text[s:e]))
        else:  # literally part of an admitted label: supported, ambiguous
            owners = {a for a in lex.admitted if _contains(_content(lex.label_of[a]), variant)}
            mentions.append(_Mention(s, e, frozenset(owners), text[s:e]))
        i = end
    return mentions


def _contains(seq: tuple, sub: tuple) -> bool:
    return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


# ---------------------------------------------------------------- record-level detail
_MONTHS = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_DETAIL_PATTERNS = [
    ("contact_detail", "an e-mail address", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("contact_detail", "a web address", re.compile(r"(?i)\bhttps?://\S+|\bwww\.\S+")),
    ("contact_detail", "a phone number",
     re.compile(r"(?<![\w.])(?:\+?\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?![\w])")),
    ("identifier", "an identification number", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("identifier", "a redacted record detail", re.compile(r"\b(?:X{2,}[/-]?)+(?:\d+)?\b|\{\$[\d.,]+\}")),
    ("identifier", "an account-like string",
     re.compile(r"(?<![\w.])(?=[A-Za-z0-9#-]*\d)(?=[A-Za-z0-9#-]*[A-Za-z])(?![0-9.]+[eE][-+]?\d+\b)"
                r"(?!\d+(?:st|nd|rd|th)\b)(?!\d+(?:\.\d+)?-[a-z]+\b)[A-Za-z0-9][A-Za-z0-9#-]{4,}\b")),
    ("identifier", "an account-like number", re.compile(r"(?<![\d,.])\d{6,}(?![\d,]|\.\d)|(?<!\w)#\d{3,}\b")),
    ("record_detail", "a calendar date",
     re.compile(rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|\b{_MONTHS}\s+\d{{4}}\b"
                r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b"
                r"|(?i:\b(?:in|since|during|from|until|before|after|year|circa|early|late|mid)[\s-]+)(?:19|20)\d{2}\b(?![.,]\d|\s*%)")),
    ("record_detail", "a money amount",
     re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|usd|euros?|pounds)\b", re.I)),
    ("record_detail", "an anecdote about one person",
     re.compile(r"(?i)\b(?:one|a|another|this|that|some|the)\s+(?:\w+\s+)?(?:customer|consumer|reviewer|user|person|client"
                r"|borrower|complainant|guest|diner|patient|man|woman|individual|buyer|shopper)\s+"
                r"(?:said|says|wrote|writes|reported|complained|claimed|stated|described|told|explained|noted|recalled)\b"
                r"|\b(?:he|she)\s+(?:said|says|wrote|told|claimed|complained|reported|stated)\b")),
    ("named_entity", "a named person", re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Madam)\.?\s+[A-Z][a-z]+")),
]
_QUOTE_RE = re.compile(r"“([^”]+)”|\"([^\"]+)\"|‘([^’]+)’|(?<![\w])'([^']{3,}?)'(?![\w])")
_PUBLIC_CAPS = {
    "i", "dp", "dp-spin", "spin", "cfpb", "gaussian", "laplace", "opendp", "zcdp", "ε", "δ", "epsilon", "delta",
    "note", "summary", "plan", "theme", "themes", "rank", "high", "moderate", "low", "support", "product",
    "issue", "sub-issue", "sub", "overall", "top", "atom", "atoms", "privacy", "differential", "differentially",
    "private", "json", "ok", "l", "k", "m", "b", "english", "ai", "llm", "pii", "id",
}


def _record_details(text: str, lex: _Lexicon, mentions: list[_Mention], out: list[Violation]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    inside = lambda s, e: any(m.start <= s and e <= m.end for m in mentions)  # noqa: E731
    for code, what, rx in _DETAIL_PATTERNS:
        for m in rx.finditer(text):
            s, e = m.span()
            if inside(s, e) or any(a <= s < b or a < e <= b for a, b in spans):
                continue
            spans.append((s, e))
            out.append(Violation(code, m.group(), f'"{m.group()}" is {what}; record-level details are never supported by a plan', s, e))
    public_quotes = set(lex.variants) | {(w,) for w in ("high", "moderate", "low")}
    for m in _QUOTE_RE.finditer(text):
        inner = next(g for g in m.groups() if g is not None)
        if _content(inner) not in public_quotes:
            out.append(Violation("quotation", m.group(), "quotations are record-level text; quote only released theme labels", *m.span()))
    allowed = set(_PUBLIC_CAPS)
    for v in lex.variants:
        allowed.update(v)
    for a in lex.atoms.values():
        allowed.update(_content(a.get("description") or ""))
    taken = spans + [(v.start, v.end) for v in out if v.code == "unadmitted_atom"]
    for m in re.finditer(r"\b[A-Z][A-Za-z'-]*[a-zA-Z](?:[ \t]+[A-Z][A-Za-z'-]*[a-zA-Z])*", text):
        words = [(w.start() + m.start(), w.end() + m.start(), w.group()) for w in re.finditer(r"\S+", m.group())]
        words = [w for w in words if not inside(w[0], w[1]) and not any(a <= w[0] < b for a, b in taken)]
        flagged = [(s, e, w) for s, e, w in words if not (s == m.start() and _sentence_start(text, s))
                   and not set(_word_tokens(w)) <= allowed and w.lower() not in allowed]
        if flagged:
            s, e = flagged[0][0], flagged[-1][1]
            out.append(Violation("named_entity", text[s:e], f'"{text[s:e]}" looks like a name; names of people, '
                                 "companies or places are record-level details", s, e))
            spans.append((s, e))
    return spans


def _sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip(" \t\"“'(*•#-")
    before = re.sub(r"(?:^|\n)\s*\d+[.)]$", "\n", before)
    return before == "" or before[-1] in ".!?:\n"


# ---------------------------------------------------------------- sentences / clauses
_CLAUSE_SPLIT = re.compile(r"[,;:]|—|–|\s-\s|\b(?:while|whereas|but|although|though|followed by)\b", re.I)


def _sentences(masked: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in re.finditer(r"[.!?;](?=\s|$)|\n", masked):
        out.append((start, m.end()))
        start = m.end()
    if start < len(masked):
        out.append((start, len(masked)))
    return [(s, e) for s, e in out if masked[s:e].strip()]


def _clauses(masked: str, s: int, e: int) -> list[tuple[int, int]]:
    cuts = [s] + [m.start() + s for m in _CLAUSE_SPLIT.finditer(masked[s:e])] + [e]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


class _Context:
    """Attach positions to admitted mentions: clause, then sentence, then previous sentence."""

    def __init__(self, masked: str, mentions: list[_Mention]):
        self.masked, self.mentions = masked, mentions
        self.sents = _sentences(masked)

    def sentence_of(self, pos: int) -> int:
        for k, (s, e) in enumerate(self.sents):
            if s <= pos < e:
                return k
        return len(self.sents) - 1

    def in_range(self, s: int, e: int) -> list[_Mention]:
        return [m for m in self.mentions if s <= m.start < e]

    def attach(self, s: int, e: int, back: bool = True) -> list[_Mention]:
        k = self.sentence_of(s)
        if k < 0:
            return []
        ss, se = self.sents[k]
        clauses = _clauses(self.masked, ss, se)
        merged = _merge_list_clauses(self.masked, clauses, self.mentions)
        for cs, ce in merged:
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


def _dist(m: _Mention, s: int, e: int) -> int:
    return s - m.end if m.end <= s else (m.start - e if m.start >= e else 0)


def _merge_list_clauses(masked, clauses, mentions):
    """'A, B and C are high': a clause holding only mentions joins the next one."""
    out: list[list[int]] = []
    carry = None
    for cs, ce in clauses:
        if carry is not None:
            cs = carry
            carry = None
        body = masked[cs:ce]
        rest = re.sub(r"§+|\band\b|\bor\b|\bboth\b|[,\s]", "", body)
        if rest == "" and "§" in body:
            carry = cs
            continue
        out.append([cs, ce])
    if carry is not None:
        out.append([carry, clauses[-1][1]])
    return [tuple(c) for c in out]


# ---------------------------------------------------------------- numbers
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000}
_ORDINALS = {w: i + 1 for i, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                                              "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                                              "nineteenth twentieth".split())}
_FRACTIONS = {"half": 50.0, "a half": 50.0, "one half": 50.0, "a third": 100 / 3, "one third": 100 / 3,
              "one-third": 100 / 3, "two thirds": 200 / 3, "two-thirds": 200 / 3, "a quarter": 25.0,
              "one quarter": 25.0, "one-quarter": 25.0, "three quarters": 75.0, "three-quarters": 75.0,
              "a fifth": 20.0, "one fifth": 20.0, "one-fifth": 20.0, "a tenth": 10.0, "one tenth": 10.0,
              "one-tenth": 10.0, "a majority": 60.0, "the majority": 60.0}
_NUMWORD = "|".join(sorted(list(_UNITS) + list(_TENS) + list(_SCALES), key=len, reverse=True))
_HEDGE_APPROX = r"about|around|approximately|approx\.?|roughly|some|close to|an estimated|estimated|~|≈|circa|nearly|almost|just under|under|below|less than|fewer than|up to|at most|over|more than|above|at least|just over|upwards of|exceeding|greater than"
_NUM_RE = re.compile(
    rf"(?P<hedge>(?:{_HEDGE_APPROX})\s*)?"
    r"(?:(?P<onein>\b(?:one|1)\s+(?:in|out of)\s+(?:every\s+)?(?P<n1>\d+|" + _NUMWORD + r"(?:[\s-](?:" + _NUMWORD + r"))*)\b)"
    r"|(?P<frac>\b(?:" + "|".join(sorted((re.escape(f) for f in _FRACTIONS), key=len, reverse=True)) + r")\b)"
    r"|(?P<vague>\b(?:dozens|hundreds|thousands)\b)"
    r"|(?P<digits>(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?P<ordsfx>st|nd|rd|th)?(?![\w]))"
    r"|(?P<words>\b(?:" + _NUMWORD + r")(?:(?:[\s-]|\s+and\s+)(?:" + _NUMWORD + r"))*\b))"
    r"(?P<pct>\s*(?:%|percent\b|per\s+cent\b|pct\b|percentage points?\b|pp\b))?",
    re.I)


@dataclass
class _Num:
    start: int
    end: int
    text: str
    value: float
    gran: float
    hedge: str
    kind: str  # digits | words | frac | onein | vague
    pct: bool
    ordinal: bool


def _parse_words(s: str) -> tuple[float, float] | None:
    parts = [p for p in re.split(r"[\s-]+", s.lower()) if p and p != "and"]
    total, cur = 0, 0
    for p in parts:
        if p in _UNITS:
            cur += _UNITS[p]
        elif p in _TENS:
            cur += _TENS[p]
        elif p in _SCALES:
            cur = max(cur, 1) * _SCALES[p]
            if p == "thousand":
                total, cur = total + cur, 0
        else:
            return None
    v = total + cur
    return float(v), _gran_int(v)


def _gran_int(v: float) -> float:
    v = int(round(abs(v)))
    if v == 0:
        return 1.0
    g = 1
    while v % (g * 10) == 0:
        g *= 10
    return float(g)


def _numbers(masked: str) -> list[_Num]:
    out: list[_Num] = []
    for m in _NUM_RE.finditer(masked):
        hedge = (m.group("hedge") or "").strip().lower()
        pct = bool(m.group("pct"))
        s = m.start() if not hedge else m.start("hedge")
        if m.group("digits"):
            txt = m.group("digits")
            ordsfx = m.group("ordsfx")
            core = txt[:-2] if ordsfx else txt
            value = float(core.replace(",", ""))
            if not hedge and s > 0 and masked[s - 1] in "-−" and (s < 2 or not masked[s - 2].isalnum()):
                value, s = -value, s - 1  # a released noisy mass may be negative
            if "e" in core.lower():
                gran = abs(value) * 0.05
            elif "." in core:
                gran = 10.0 ** -len(core.split(".")[1])
            else:
                gran = _gran_int(value)
            out.append(_Num(s, m.end(), m.group().strip(), value, gran, hedge, "digits", pct, bool(ordsfx)))
        elif m.group("words"):
            w = m.group("words")
            if w.lower() in ("one", "zero") and not pct:
                continue  # "one of the themes": ordinary English, not a quantity
            parsed = _parse_words(w)
            if parsed:
                out.append(_Num(s, m.end(), m.group().strip(), parsed[0], parsed[1], hedge, "words", pct, False))
        elif m.group("frac"):
            out.append(_Num(s, m.end(), m.group().strip(), _FRACTIONS[m.group("frac").lower()], 0, hedge, "frac", True, False))
        elif m.group("onein"):
            n1 = m.group("n1")
            n = float(n1) if n1.isdigit() else (_parse_words(n1) or (0, 0))[0]
            out.append(_Num(s, m.end(), m.group().strip(), n, 0, hedge, "onein", True, False))
        elif m.group("vague"):
            out.append(_Num(s, m.end(), m.group().strip(), 0, 0, hedge, "vague", False, False))
    return out


_LOW_HEDGES = {"nearly", "almost", "just under", "under", "below", "less than", "fewer than", "up to", "at most"}
_HIGH_HEDGES = {"over", "more than", "above", "at least", "just over", "upwards of", "exceeding", "greater than"}


def number_matches(num: _Num | tuple, v: float) -> bool:
    """The public rounding rule (docs/VERIFIER.md): does the stated number fit released value v?"""
    x, g, hedge, kind = num.value, num.gran, num.hedge, num.kind
    tol = 1e-9 * max(1.0, abs(v))
    if kind == "frac" or kind == "onein":
        if kind == "onein":
            if v <= 0:
                return False
            return x in (math.floor(100.0 / v), math.ceil(100.0 / v))
        lo, hi = 0.8 * x, 1.2 * x
        if hedge in _LOW_HEDGES:
            hi = x
        elif hedge in _HIGH_HEDGES:
            lo = x
        return lo - tol <= v <= hi + tol
    if kind == "vague":
        rng = {"dozens": (24, 144), "hundreds": (200, 1000), "thousands": (2000, 1e9)}[num.text.split()[-1].lower()]
        return rng[0] <= v < rng[1]
    if hedge in _LOW_HEDGES:
        return v <= x + tol and x - v <= g + tol
    if hedge in _HIGH_HEDGES:
        return v >= x - tol and v - x <= g + tol
    return abs(x - v) <= g / 2 + tol  # "about" acknowledges rounding, it does not widen it


# ---------------------------------------------------------------- bins, ranks, comparisons vocabulary
BIN_WORDS = {
    "high": ["high", "highly", "very common", "very frequent", "widespread", "dominant", "prevalent", "frequent", "heavy"],
    "moderate": ["moderate", "moderately", "medium", "middling", "intermediate", "mid-level", "mid-range", "midrange", "average"],
    "low": ["low", "rare", "rarely", "uncommon", "infrequent", "scarce", "marginal", "occasional"],
}
_BIN_NEEDS_NOUN = {"high": ["major", "large", "substantial", "big", "sizable", "considerable"],
                   "moderate": ["modest", "middle"],
                   "low": ["minor", "small", "limited", "niche", "slight", "little"]}
_BIN_PATTERNS = [(b, needs, re.compile(r"\b" + re.escape(w).replace(r"\ ", r"\s+").replace(r"\-", r"[\s-]?") + r"\b", re.I))
                 for src, needs in ((BIN_WORDS, False), (_BIN_NEEDS_NOUN, True)) for b, ws in src.items() for w in ws]
_SUPPORT_NOUNS = r"(?:support|share|shares|portion|part|fraction|proportion|presence|volume|number|amount|prevalence|level|bin|category|group|minority|concern|frequency|mass|theme|topic)"
_META_NOUNS = r"(?:privacy|noise|epsilon|ε|delta|δ|budget|margin|confidence|uncertainty|precision|sensitivity|risk)"
_RANK1 = r"(?:most\s+(?:common(?:ly)?|frequent(?:ly)?|prevalent|reported|cited|mentioned|discussed|popular|widespread|raised|frequently\s+\w+|commonly\s+\w+)|largest|biggest|highest|greatest|leading|top-ranked|top|number\s+one|no\.\s*1|#\s*1)"
_RANKLAST = r"(?:least\s+(?:common(?:ly)?|frequent(?:ly)?|prevalent|reported|cited|mentioned|discussed|popular|widespread|raised)|lowest|smallest|rarest|fewest)"
_ORD = r"(?P<ord>" + "|".join(_ORDINALS) + r"|\d+(?:st|nd|rd|th))"
_PLAN_NOUNS = r"(?:themes?|topics?|atoms?|issues?|categories|category|concepts?|items?|entries|entry|areas?|subjects?|complaint\s+types?|phrases?|labels?)"


def _ord_value(s: str) -> int:
    s = s.lower()
    return _ORDINALS[s] if s in _ORDINALS else int(re.sub(r"\D", "", s))


# ---------------------------------------------------------------- the checker
class _Checker:
    def __init__(self, text: str, plan: dict, dictionary, require_theme: bool = False):
        self.text, self.plan, self.require_theme = text, plan, require_theme
        self.lex = _Lexicon(plan, dictionary)
        self.out: list[Violation] = []
        self.margin = margin_of(plan)
        self.n = len(plan["atoms"])
        self.max_rank = max((int(a.get("rank", i + 1)) for i, a in enumerate(plan["atoms"])), default=0)
        self.consumed: list[tuple[int, int]] = []

    def atom(self, aid):
        return self.lex.atoms[aid]

    def run(self) -> Verdict:
        text = self.text
        if not text.strip():
            return Verdict(False, [Violation("empty", "", "the summary is empty", 0, 0)])
        self.mentions = _find_mentions(text, self.lex, self.out)
        detail_spans = _record_details(text, self.lex, self.mentions, self.out)
        chars = list(text)
        for m in self.mentions:
            chars[m.start:m.end] = "§" * (m.end - m.start)
        for s, e in detail_spans:
            chars[s:e] = "¤" * (e - s)
        for v in self.out:
            if v.code == "unadmitted_atom":
                chars[v.start:v.end] = "¤" * (v.end - v.start)
        self.masked = "".join(chars)
        self.ctx = _Context(self.masked, self.mentions)
        self.comparisons()
        self.ranks()
        self.bins()
        self.quantifiers()
        self.numbers()
        if self.require_theme and plan_has_atoms(self.plan) and not self.mentions:
            self.out.append(Violation("no_theme", "", "the summary mentions none of the plan's themes", 0, 0))
        seen, vs = set(), []
        for v in sorted(self.out, key=lambda v: (v.start, v.code)):
            if (v.code, v.start, v.end) not in seen:
                seen.add((v.code, v.start, v.end))
                vs.append(v)
        return Verdict(not vs, vs)

    def add(self, code, s, e, msg):
        self.out.append(Violation(code, self.text[s:e], msg, s, e))

    def consume(self, s, e):
        self.consumed.append((s, e))

    def is_consumed(self, s, e):
        return any(a <= s and e <= b for a, b in self.consumed)

    # --- quantifiers over the records ---------------------------------
    _POPULATION = (r"(?:consumers?|complaints?|complainers?|customers?|reviewers?|reviews?|users?|people|"
                   r"persons?|guests?|diners?|respondents?|records?|tickets?|clients?|borrowers?|patients?|"
                   r"buyers?|shoppers?|visitors?|members?|complainants?|them)")
    _RANK_ADJ = r"(?:common|frequent|prevalent|reported|cited|mentioned|discussed|popular|widespread|raised|often)"
    _MODIFIER = r"(?:\s+(?!(?:themes?|topics?|atoms?|categories|category|issues?|items?|plan)\b)[a-z'-]+){0,3}?"
    _QUANT = re.compile(
        r"\b(?P<q>most(?!\s+" + _RANK_ADJ + r")|more\s+than\s+half|over\s+half|(?:the\s+|a\s+)?vast\s+majority"
        r"|(?:the\s+)?bulk|almost\s+all|nearly\s+all|virtually\s+all|all|every|each|none|no)"
        r"(?:\s+of)?(?:\s+(?:the|these|those|our|their))?" + _MODIFIER + r"\s+" + _POPULATION + r"\b"
        r"|\b(?P<u>everyone|everybody|nobody|no\s+one|universally|without\s+exception|(?:near|nearly)[\s-]universal)\b",
        re.I)
    _METHOD = re.compile(r"\b(?:privacy|private|protect\w*|identif\w*|differential\w*|anonym\w*|noise|"
                         r"counts?\s+at\s+most|contribut\w*|ε|epsilon)\b", re.I)
    _NEED = {"most": 0.5, "more than half": 0.5, "over half": 0.5, "vast majority": 0.75, "the vast majority": 0.75,
             "a vast majority": 0.75, "bulk": 0.5, "the bulk": 0.5, "almost all": 0.9, "nearly all": 0.9,
             "virtually all": 0.9}

    def quantifiers(self):
        """"Most customers…", "every consumer…", "nobody…" claim a share of the records. A
        plan can back "most" / "more than half" (support above one half), "the vast
        majority" (above 0.75) or "almost all" (above 0.9) with the released support of an
        atom named in the same clause; it never backs a universal claim (all / every /
        none / universally), which would need every record. Sentences about the method
        itself ("no individual customer can be identified") are not claims about the data."""
        sentences = _sentences(self.masked)
        for m in self._QUANT.finditer(self.masked):
            q = re.sub(r"\s+", " ", (m.group("q") or m.group("u")).lower())
            s, e = next(((a, b) for a, b in sentences if a <= m.start() < b), (0, len(self.masked)))
            if self._METHOD.search(self.text[s:e]):
                continue
            need = self._NEED.get(q)
            cs, ce = next(((a, b) for a, b in _clauses(self.masked, s, e) if a <= m.start() < b), (s, e))
            supports = [self.atom(a).get("support") for x in self.mentions if cs <= x.start < ce for a in x.atoms]
            if need is not None and supports and all(v is not None and v > need for v in supports):
                self.consume(m.start(), m.end())
                continue
            why = ("a universal claim about the records that no plan can support" if need is None else
                   f"a claim that more than {need:.0%} of the records share a theme, which no released "
                   "support value of the theme it is about backs")
            self.add("unsupported_number", m.start(), m.end(), f'"{m.group(0)}" is {why}')
            self.consume(m.start(), m.end())

    # --- comparisons -------------------------------------------------
    _GT = re.compile(r"\b(?:more|higher|greater|larger|bigger)\b(?:\s+[\w-]+){0,3}?\s+than\b"
                     r"|\b(?:outnumber(?:s|ed)?|exceed(?:s|ed)?|surpass(?:es|ed)?|outpace(?:s|d)?|outrank(?:s|ed)?"
                     r"|eclipse(?:s|d)?|dwarf(?:s|ed)?|overshadow(?:s|ed)?)\b(?!\s+by)|\bahead\s+of\b", re.I)
    _LT = re.compile(r"\b(?:less|fewer|lower|smaller)\b(?:\s+[\w-]+){0,3}?\s+than\b"
                     r"|\b(?:outnumbered|exceeded|surpassed|outpaced|outranked|eclipsed|dwarfed|overshadowed)\s+by\b"
                     r"|\b(?:trail(?:s|ed|ing)?|lag(?:s|ged|ging)?(?:\s+behind)?|behind)\b", re.I)
    _SIM = re.compile(r"\b(?:(?:very\s+|quite\s+)?similar(?:ly)?|comparable|on\s+par|roughly\s+equal(?:ly)?|about\s+equal(?:ly)?"
                      r"|nearly\s+equal(?:ly)?|(?:about|roughly|nearly|almost|just)\s+as\s+\w+\s+as|as\s+(?:common|frequent|prevalent|often)\s+as"
                      r"|neck\s+and\s+neck|tied|level\s+with|close\s+to|in\s+line\s+with|match(?:es)?)\b", re.I)
    _RATIO = re.compile(r"\b(?P<k>twice|double|triple|half|(?:\d+(?:\.\d+)?|" + _NUMWORD + r")\s*(?:times|x))"
                        r"\s+(?:as\s+[\w-]+\s+as|more\s+(?:[\w-]+\s+){0,2}?than|the\s+\w+\s+of|that\s+of|as\s+many\s+[\w-]*\s*as|as\s+often\s+as)", re.I)
    _GAP = re.compile(r"(?P<q>\b(?:large|wide|big|clear|substantial|sizable|sizeable|significant|notable|considerable|"
                      r"small|narrow|slight|negligible|tiny|minor|little|no|marginal)\s+)?"
                      r"\b(?:gap|difference|margin|spread|distance)\s+(?:between|separating)\b|\bdiffer(?:s)?\s+by\b", re.I)

    def _groups(self, s: int, e: int) -> tuple[list[_Mention], list[_Mention]]:
        k = self.ctx.sentence_of(s)
        ss, se = self.ctx.sents[k]
        clauses = _merge_list_clauses(self.masked, _clauses(self.masked, ss, se), self.mentions)
        left = right = []
        for cs, ce in clauses:
            if cs <= s < ce:
                left = [m for m in self.ctx.in_range(cs, s)]
                right = [m for m in self.ctx.in_range(e, ce)]
        if not left:  # "A, with 480, is more common than B"
            prev = [m for m in self.ctx.in_range(ss, s)]
            left = prev[-1:]
        return left, right

    def _pair_verdict(self, a: _Mention, b: _Mention, op: str, k: float = 0.0) -> tuple[str, str] | None:
        best = None
        for x in a.atoms:
            for y in b.atoms:
                if x == y:
                    continue
                r = self._judge(_mass(self.atom(x)), _mass(self.atom(y)), op, k)
                if r is None:
                    return None
                best = best or r
        return best

    def _judge(self, ma, mb, op, k):
        d, M = ma - mb, self.margin
        if op == "gt":
            return None if d >= M else (("reversed_comparison", "the released masses order them the other way")
                                        if d <= -M else ("unsupported_comparison", f"their released masses differ by less than the comparison margin ({M:g})"))
        if op == "lt":
            return self._judge(mb, ma, "gt", k)
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
            return None if abs(r - k) <= 0.25 + 1e-9 else ("unsupported_comparison", f"the released ratio is {r:.2f}, not about {k:g}")
        return None

    def comparisons(self):
        txt = self.masked
        found: list[tuple[int, int, str, float, str]] = []
        for rx, op in ((self._RATIO, "ratio"), (self._GAP, "gap"), (self._GT, "gt"), (self._LT, "lt"), (self._SIM, "sim")):
            for m in rx.finditer(txt):
                s, e = m.span()
                if any(s < fe and fs < e for fs, fe, *_ in found):
                    continue
                if op in ("gt", "lt") and re.match(r"\s*(?:" + _HEDGE_APPROX + r")?\s*[\d~]", txt[e:e + 12]) \
                        and not re.match(r"\s*§", txt[e:]):
                    continue  # "more than 480": a hedge, not a comparison
                k = 0.0
                if op == "ratio":
                    kk = m.group("k").lower()
                    k = {"twice": 2, "double": 2, "triple": 3, "half": 0.5}.get(kk)
                    if k is None:
                        num = re.match(r"([\w.]+)", kk).group(1)
                        k = float(num) if re.match(r"[\d.]+$", num) else (_parse_words(num) or (0.0, 0))[0]
                    if "half" == kk:
                        k = 0.5
                    if "more" in m.group().lower() and k >= 1 and "times" in m.group().lower():
                        pass
                found.append((s, e, op, float(k), m.group("q") if op == "gap" else ""))
        for s, e, op, k, q in found:
            if op == "sim" and re.match(r"(?i)close to|match", txt[s:e]) and not re.match(r"\s*§", txt[e:e + 3]):
                continue
            self.consume(s, e)
            left, right = self._groups(s, e)
            if op == "gap":
                ms = [m for m in self.ctx.in_range(*self.ctx.sents[self.ctx.sentence_of(s)])]
                after = [m for m in ms if m.start >= e][:2]
                pair = after if len(after) == 2 else ms[:2]
                if len(pair) < 2:
                    continue
                ql = (q or "").strip().lower()
                op2 = "sim" if ql in ("small", "narrow", "slight", "negligible", "tiny", "minor", "little", "no", "marginal") else "gap_big"
                self._gap_numbers(pair[0], pair[1], s)
                r = self._pair_verdict(pair[0], pair[1], op2)
                if r:
                    self.add(r[0], s, max(pair[1].end, e), f'the stated gap between "{pair[0].text}" and "{pair[1].text}" is not supported: {r[1]}')
                continue
            if op == "sim" and not right and len(left) >= 2:
                left, right = left[:1], left[1:]
            if not left:
                continue
            if not right:
                if op in ("gt", "lt") and re.match(r"\s*(?:the|all|any|every)\s+(?:other|rest|remaining|others)", txt[e:e + 30]):
                    self._vs_rest(left[0], op, s, e)
                continue
            for a in left:
                for b in right:
                    r = self._pair_verdict(a, b, op, k)
                    if r:
                        word = txt[s:e].strip()
                        self.add(r[0], a.start, b.end,
                                 f'"{a.text}" {word} "{b.text}" is not supported: {r[1]}')

    def _vs_rest(self, a: _Mention, op: str, s: int, e: int):
        ranked = sorted(self.plan["atoms"], key=lambda x: int(x.get("rank", 0)))
        if len(ranked) < 2:
            return
        target = ranked[0] if op == "gt" else ranked[-1]
        other = ranked[1] if op == "gt" else ranked[-2]
        ok = any(int(self.atom(x).get("atom_id", x)) == int(target.get("atom_id", -9)) for x in a.atoms) and \
            abs(_mass(target) - _mass(other)) >= self.margin
        if not ok:
            self.add("unsupported_comparison", a.start, e,
                     f'"{a.text}" is not {("above" if op == "gt" else "below")} every other theme by the comparison margin ({self.margin:g})')

    def _gap_numbers(self, a: _Mention, b: _Mention, s: int):
        k = self.ctx.sentence_of(s)
        ss, se = self.ctx.sents[k]
        for num in _numbers(self.masked[ss:se]):
            num.start += ss
            num.end += ss
            vals = []
            for x in a.atoms:
                for y in b.atoms:
                    ax, ay = self.atom(x), self.atom(y)
                    vals.append(abs(_mass(ax) - _mass(ay)))
                    vals.append(abs(float(ax.get("display_mass", _mass(ax))) - float(ay.get("display_mass", _mass(ay)))))
                    if "support" in ax and "support" in ay:
                        vals.append(abs(float(ax["support"]) - float(ay["support"])) * 100)
            if any(number_matches(num, v) for v in vals):
                self.consume(num.start, num.end)

    # --- ranks -------------------------------------------------------
    def ranks(self):
        txt = self.masked
        pats = [
            (re.compile(rf"\b(?:the\s+)?{_ORD}[\s-]+(?:most|largest|biggest|highest|greatest|strongest)\b", re.I), "ord"),
            (re.compile(rf"\b{_ORD}[\s-]+(?:least|lowest|smallest|rarest)\b", re.I), "ordlast"),
            (re.compile(r"\b(?:rank(?:s|ed|ing)?|placed|places|position(?:ed)?|com(?:es|e|ing)\s+in|came\s+in|sits?\s+at|at|number|no\.|#)\s*(?:at\s+)?(?:number\s+|no\.\s*|#\s*)?"
                        r"(?P<k>\d+(?:st|nd|rd|th)?|" + "|".join(_ORDINALS) + r")\b", re.I), "k"),
            (re.compile(rf"\b(?:comes?|came|ranks?|ranked|placed|sits?|finish(?:es|ed)?)\s+(?:in\s+)?{_ORD}\b", re.I), "ordk"),
            (re.compile(rf"\b(?:in|at)\s+{_ORD}\s+(?:place|position|spot)\b", re.I), "ordk"),
            (re.compile(rf"\bthe\s+{_ORD}\s+(?:{_PLAN_NOUNS})\b", re.I), "ordk"),
            (re.compile(r"\b(?:top|first|leading)\s+(?P<k>\d+|" + "|".join(list(_UNITS)[2:] + list(_TENS)) + r")\b", re.I), "topn"),
            (re.compile(r"\bbottom\s+(?P<k>\d+|" + "|".join(list(_UNITS)[2:] + list(_TENS)) + r")\b", re.I), "bottomn"),
            (re.compile(rf"\b(?:the\s+)?{_RANK1}(?:[\s-]+(?P<pl>{_PLAN_NOUNS}))?", re.I), "r1"),
            (re.compile(rf"\b(?:the\s+)?{_RANKLAST}(?:[\s-]+(?P<pl>{_PLAN_NOUNS}))?", re.I), "rlast"),
            (re.compile(r"\b(?:tops|top\s+of|heads|leads)\s+(?:the\s+)?(?:list|ranking|plan|chart|table)\b|\bin\s+(?:the\s+)?lead\b", re.I), "r1v"),
            (re.compile(r"\b(?:comes?|came|ranks?|ranked|sits?|is|are)\s+(?:in\s+)?last\b|\bin\s+last\s+place\b|\bat\s+the\s+bottom\b", re.I), "rlastv"),
        ]
        taken: list[tuple[int, int]] = []
        for rx, kind in pats:
            for m in rx.finditer(txt):
                s, e = m.span()
                if any(s < te and ts < e for ts, te in taken) or self.is_consumed(s, e):
                    continue
                if kind == "r1" and re.match(r"(?i)the\s+top$|top$", m.group().strip()) and not m.group("pl"):
                    if not re.match(rf"\s*(?:{_PLAN_NOUNS}|of\s+the\s+(?:list|plan|ranking))", txt[e:e + 30], re.I):
                        continue
                if kind == "k" and re.match(r"(?i)(?:at|number|#|no\.)", m.group()) and not re.search(r"(?i)rank|#|no\.|number", m.group()):
                    continue
                if kind == "k" and re.match(r"(?i)at\s", m.group()) and not re.search(r"(?:st|nd|rd|th)\b|" + "|".join(_ORDINALS), m.group(), re.I):
                    continue
                if kind == "k" and re.match(r"(?i)number\s+\d", m.group()) and not re.search(r"(?i)\bat\s+$|\bis\s+$|\bas\s+$", txt[max(0, s - 6):s]):
                    continue
                taken.append((s, e))
                self.consume(s, e)
                self._rank_claim(kind, m, s, e)
        self._rank_spans = taken

    def _rank_claim(self, kind, m, s, e):
        gd = m.groupdict()
        if kind in ("topn", "bottomn"):
            kk = gd["k"]
            n = int(kk) if kk.isdigit() else int(_parse_words(kk)[0])
            ss, se = self.ctx.sents[self.ctx.sentence_of(s)]
            for men in self.ctx.in_range(ss, se):
                ranks = [int(self.atom(x).get("rank", 0)) for x in men.atoms]
                ok = any(r <= n for r in ranks) if kind == "topn" else any(r > self.max_rank - n for r in ranks)
                if not ok:
                    self.add("wrong_rank", men.start, men.end, f'"{men.text}" is not in the {"top" if kind == "topn" else "bottom"} {n} (released rank {ranks[0]})')
            return
        plural = bool(gd.get("pl")) and re.search(r"(?:s|ies)$", gd.get("pl") or "", re.I) and kind in ("r1", "rlast")
        if plural:
            ss, se = self.ctx.sents[self.ctx.sentence_of(s)]
            men = self.ctx.in_range(ss, se)
            n = len(men)
            for mm in men:
                ranks = [int(self.atom(x).get("rank", 0)) for x in mm.atoms]
                ok = any(r <= n for r in ranks) if kind == "r1" else any(r > self.max_rank - n for r in ranks)
                if not ok:
                    self.add("wrong_rank", mm.start, mm.end, f'"{mm.text}" is not among the {n} {"most" if kind == "r1" else "least"} common themes (released rank {ranks[0]})')
            return
        if kind in ("r1", "r1v"):
            want = 1
        elif kind in ("rlast", "rlastv"):
            want = self.max_rank
        elif kind == "ordlast":
            want = self.max_rank - _ord_value(gd["ord"]) + 1
        elif kind in ("ord", "ordk"):
            want = _ord_value(gd["ord"])
        else:
            want = _ord_value(gd["k"])
        att = self.ctx.attach(s, e)
        if not att:
            return
        men = att[0]
        ranks = [int(self.atom(x).get("rank", 0)) for x in men.atoms]
        if want not in ranks:
            self.add("wrong_rank", s, e, f'"{men.text}" has released rank {ranks[0]}, but the summary says rank {want}')

    # --- bins --------------------------------------------------------
    def bins(self):
        txt = self.masked
        for bin_name, needs_noun, rx in _BIN_PATTERNS:
            if True:
                for m in rx.finditer(txt):
                    s, e = m.span()
                    if self.is_consumed(s, e) or any(s < te and ts < e for ts, te in self._rank_spans):
                        continue
                    before = txt[max(0, s - 25):s].lower()
                    after = txt[e:e + 30]
                    if re.search(r"\b(?:more|less|most|least|as|not|never|no|equally|similarly)\s+$", before):
                        continue
                    if re.match(r"\s+than\b", after, re.I):
                        continue
                    if re.match(r"[\s-]+" + _META_NOUNS, after, re.I):
                        continue
                    if needs_noun and not re.match(r"[\s-]+(?:\w+\s+)?" + _SUPPORT_NOUNS + r"\b", after, re.I):
                        continue
                    att = self.ctx.attach(s, e, back=False)
                    if not att:
                        continue
                    men = att[0]
                    bins = {str(self.atom(x).get("bin", "")).lower() for x in men.atoms}
                    if bin_name not in bins:
                        self.add("wrong_bin", s, e, f'"{men.text}" is in the released "{sorted(bins)[0]}" bin, not "{bin_name}"')

    # --- numbers -----------------------------------------------------
    def _plan_values(self) -> dict[str, tuple[float, str]]:
        p = self.plan
        vals = {}
        for key, cue in (("epsilon", r"ε|epsilon|privacy|budget|dp"), ("delta", r"δ|delta"),
                         ("L", _PLAN_NOUNS + r"|plan|top|l\b"), ("m", _PLAN_NOUNS + r"|dictionary|universe|candidates?|m\b"),
                         ("K", r"k\b|per\s+record|assignments?|at\s+most|up\s+to"), ("B", r"\bb\b|bound|clip|contribution"),
                         ("public_denominator", r"out\s+of|of|among|across|total|records|complaints|reviews|documents|denominator|in"),
                         ("comparison_margin", r"margin"), ("noise_scale", r"noise|scale|σ|sigma")):
            if isinstance(p.get(key), (int, float)):
                vals[key] = (float(p[key]), cue)
        vals["n_atoms"] = (float(self.n), _PLAN_NOUNS + r"|plan")
        return vals

    def numbers(self):
        txt = self.masked
        plan_vals = self._plan_values()
        for num in _numbers(txt):
            s, e = num.start, num.end
            if any(s < te and ts < e for ts, te in self._rank_spans + self.consumed):
                continue
            if num.ordinal:
                continue  # ordinals are rank words, checked by ranks()
            window = txt[max(0, s - 30):min(len(txt), e + 30)]
            after = txt[e:e + 40]
            if not num.pct and num.value == int(num.value) and 0 < num.value <= self.n and \
                    re.match(r"\s+(?:[\w-]+\s+)?" + _PLAN_NOUNS + r"\b", after, re.I):
                continue  # "the two themes": counting what the plan lists
            att = self.ctx.attach(s, e)
            if any(number_matches(num, v) for v in self._atom_values(att, num)):
                continue
            ok = False
            for key, (v, cue) in plan_vals.items():
                if num.pct or num.kind not in ("digits", "words"):
                    continue
                if (re.search(r"(?i)(?:^|[\s(=:])(?:" + cue + r")", window)) and number_matches(num, v):
                    ok = True
                    break
            if ok:
                continue
            who = f' for "{att[0].text}"' if att else ""
            self.add("unsupported_number", s, e, f'"{num.text}" is not a released value{who} under the public rounding rule')

    def _atom_values(self, att: list[_Mention], num: _Num) -> list[float]:
        vals: list[float] = []
        for men in att:
            for x in men.atoms:
                a = self.atom(x)
                if num.pct:
                    if a.get("support") is not None:
                        vals.append(float(a["support"]) * 100)
                else:
                    vals.append(_mass(a))
                    if a.get("display_mass") is not None:
                        vals.append(float(a["display_mass"]))
                    if a.get("support") is not None and num.kind == "digits" and num.value < 1:
                        vals.append(float(a["support"]))
        return vals


def plan_has_atoms(plan: dict) -> bool:
    return bool(plan.get("atoms"))


def verify(summary: str, plan: Any, dictionary: Iterable | None = None, require_theme: bool = False) -> Verdict:
    """Check `summary` against the released `plan`; deterministic and public.

    `dictionary` (labels or {atom_id, label} dicts) overrides the plan's
    `dictionary_labels` so that non-admitted labels can be recognised.
    `require_theme` also rejects a summary that mentions no admitted theme
    (the decoding loop uses it so that an empty-of-content answer never wins).
    """
    return _Checker(summary or "", plan_dict(plan), dictionary, require_theme).run()


def verify_claims(claims: list, plan: Any, dictionary: Iterable | None = None,
                  require_theme: bool = False) -> tuple[str, Verdict]:
    """Structured claims: exact field checks plus the text check of their joined text."""
    p = plan_dict(plan)
    by_label = {_content(a["label"]): a for a in p["atoms"]}
    by_id = {int(a.get("atom_id", i)): a for i, a in enumerate(p["atoms"])}
    out: list[Violation] = []
    texts: list[str] = []
    margin = margin_of(p)
    for c in claims if isinstance(claims, list) else []:
        if not isinstance(c, dict):
            continue
        t = str(c.get("text") or "").strip()
        if t:
            texts.append(t)
        a = _claim_atom(c.get("atom"), by_label, by_id)
        if c.get("atom") not in (None, "") and a is None:
            out.append(Violation("unadmitted_atom", str(c.get("atom")), "the claim's atom is not in the released plan"))
            continue
        if a is None:
            continue
        if c.get("rank") not in (None, "") and str(c.get("rank")).strip() != str(a.get("rank")):
            out.append(Violation("wrong_rank", t or str(c["rank"]), f'"{a["label"]}" has released rank {a.get("rank")}, not {c["rank"]}'))
        if c.get("bin") not in (None, "") and str(c["bin"]).lower() != str(a.get("bin", "")).lower():
            out.append(Violation("wrong_bin", t or str(c["bin"]), f'"{a["label"]}" is in the "{a.get("bin")}" bin, not "{c["bin"]}"'))
        comp = c.get("comparison")
        if isinstance(comp, dict) and comp.get("other") not in (None, ""):
            b = _claim_atom(comp.get("other"), by_label, by_id)
            op = str(comp.get("op", "")).lower()
            if b is None:
                out.append(Violation("unadmitted_atom", str(comp.get("other")), "the compared atom is not in the released plan"))
            else:
                d = _mass(a) - _mass(b)
                good = {"more": d >= margin, "less": -d >= margin, "similar": abs(d) < margin}.get(op)
                if good is False:
                    out.append(Violation("unsupported_comparison", t or op, f'"{a["label"]}" {op} "{b["label"]}" is not supported under the margin {margin:g}'))
    text = " ".join(texts)
    v = verify(text, p, dictionary, require_theme)
    vs = out + v.violations
    if not texts:
        vs.append(Violation("empty", "", "no claim has any text"))
    return text, Verdict(not vs, vs)


def _claim_atom(ref, by_label, by_id):
    if ref is None or ref == "":
        return None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.strip().isdigit()):
        return by_id.get(int(ref))
    return by_label.get(_content(str(ref)))
