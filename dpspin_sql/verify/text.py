"""Shared text helpers: normalisation, tokens, sentences and clauses.

Every rule reads the summary through these functions so that labels and prose are
normalised one way and every scope ("same clause", "same sentence") means the same
thing everywhere (docs/VERIFIER.md, *Matching text to atoms*, *Sentences and clauses*).
"""
from __future__ import annotations

import functools
import re

STOP = {"a", "an", "the", "to", "of", "or", "and", "for", "on", "in", "with", "by", "at", "from", "&"}
GLUE = {"is", "are", "wa", "were", "be", "been", "being", "that", "which", "very", "really", "quite",
        "so", "too", "extremely", "rather", "fairly", "felt", "feel", "seem", "seemed", "look",
        "looked", "its", "their", "overly", "somewhat", "was"}
_CONTRACTIONS = [(r"(?i)\bcan't\b", "can not"), (r"(?i)\bwon't\b", "will not"), (r"(?i)n't\b", " not"),
                 (r"(?i)\bcont'd\b", "continued"), (r"(?i)'s\b", ""), (r"(?i)'(re|ve|ll|m|d)\b", "")]
WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
BOUNDARY_CHARS = ".;:!?—–()[]\"“”\n"


def stem(w: str) -> str:
    """Fold plural to singular by a fixed suffix rule (labels and prose alike)."""
    w = w.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if len(w) > 4 and w.endswith(("ches", "shes", "xes", "zzes")):  # "sizes" → "size", "boxes" → "box"
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


@functools.lru_cache(maxsize=65536)
def word_tokens(word: str) -> tuple[str, ...]:
    """One written word as normalised tokens (contractions expanded, stemmed)."""
    if "'" in word or "n't" in word:
        for pat, rep in _CONTRACTIONS:
            word = re.sub(pat, rep, word)
    return tuple(stem(t) for t in re.findall(r"[A-Za-z0-9]+", word))


@functools.lru_cache(maxsize=16384)
def content(text: str) -> tuple[str, ...]:
    """Normalised content tokens of a label: case, plural, hyphens, stopwords ignored."""
    out: list[str] = []
    for m in WORD_RE.finditer(text):
        out.extend(t for t in word_tokens(m.group()) if t not in STOP)
    return tuple(out)


def tokenize(text: str, boundaries: str) -> list[tuple[str, int, int]]:
    """Content tokens with character spans; '|' marks a hard boundary."""
    toks: list[tuple[str, int, int]] = []
    pos = 0
    for m in WORD_RE.finditer(text):
        if any(c in boundaries for c in text[pos:m.start()]):
            toks.append(("|", pos, m.start()))
        for t in word_tokens(m.group()):
            if t not in STOP:
                toks.append((t, m.start(), m.end()))
        pos = m.end()
    return toks


def contains(seq: tuple, sub: tuple) -> bool:
    return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


def sentence_start(text: str, pos: int) -> bool:
    """Is `pos` the first word of a sentence or list item (capitals there are not names)?"""
    before = text[:pos].rstrip(" \t\"“'(*•#->_†‡§¶|")
    before = re.sub(r"(?:^|\n)\s*\d+[.)]$", "\n", before)
    return before == "" or before[-1] in ".!?:\n"


# Markdown / HTML emphasis and code marks ("**more common**", "<b>most</b>", "`rare`") and a
# line break inside a sentence hide cue words from the rules' patterns; `neutral` blanks
# them (same length, so positions still agree with the summary). A list marker, a heading or
# a line that starts with a capital keeps its break.
_MARKUP = re.compile(r"</?[A-Za-z][^<>\n]{0,40}>|(?<!\w)[*_]{1,3}(?=[^\s*_])|(?<=[^\s*_])[*_]{1,3}(?!\w)|`+")
# a line that goes on in lowercase, with a quoted or parenthesised lowercase word, or with a number that is no
# list item's ("… clearly more common than\n"outdoor seating" (about\n154)") continues its sentence
_SOFT_BREAK = re.compile(r"(?<=[\w,§¤%)\"”’])[ \t]*\n(?=[ \t]*(?:[a-z]|[\"“‘'(][a-z]|\d(?![\d,.]*[.)](?:\s|$))))")


def soft_breaks_as_spaces(text: str) -> str:
    """The summary with soft line breaks (a line that goes on in lowercase) made spaces, same length."""
    return _SOFT_BREAK.sub(lambda m: " " * len(m.group()), text)


def neutral(text: str) -> str:
    """The summary with markup blanked and soft line breaks made spaces, same length."""
    return soft_breaks_as_spaces(_MARKUP.sub(lambda m: " " * len(m.group()), text))


# ---------------------------------------------------------------- sentences / clauses
# a dash splits clauses, except inside a numeric range ("4–7", "603.6–621.2")
CLAUSE_SPLIT = re.compile(r"[,;:|]|(?<!\d)[—–]|[—–](?!\d)|\s-\s|\b(?:while|whereas|but|although|though|followed by)\b", re.I)


_ABBREV = re.compile(r"(?i)(?:\bvs|\be\.g|\bi\.e|\bapprox|\bcf|\bca|\bapprox|\besp|\bresp)$")


def sentences(masked: str) -> list[tuple[int, int]]:
    """Sentence spans: end at . ! ? ; before white space or the end, and at line breaks."""
    out, start = [], 0
    for m in re.finditer(r"[.!?;](?=\s|$)|\n", masked):
        if m.group() == "." and (_ABBREV.search(masked, 0, m.start()) or
                                 (re.search(r"(?i)\bno$", masked[max(0, m.start() - 3):m.start()])
                                  and re.match(r"\s*\d", masked[m.end():m.end() + 3]))):
            continue   # "vs.", "e.g.", "approx." and "No. 1" end no sentence
        out.append((start, m.end()))
        start = m.end()
    if start < len(masked):
        out.append((start, len(masked)))
    return [(s, e) for s, e in out if masked[s:e].strip()]


def clauses(masked: str, s: int, e: int) -> list[tuple[int, int]]:
    """Clause spans of the sentence masked[s:e]."""
    depth, inside = 0, set()
    for i, ch in enumerate(masked[s:e]):   # a comma inside parentheses ("four themes (A, B, C and D)") splits nothing
        depth = depth + 1 if ch == "(" else max(0, depth - 1) if ch == ")" else depth
        if depth and ch == ",":
            inside.add(i)
    cuts = [s] + [m.start() + s for m in CLAUSE_SPLIT.finditer(masked[s:e]) if m.start() not in inside] + [e]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def merge_list_clauses(masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """'A, B and C are high': a clause holding only mentions (§) joins the next one."""
    out: list[tuple[int, int]] = []
    carry = None
    for cs, ce in spans:
        if carry is not None:
            cs, carry = carry, None
        body = masked[cs:ce]
        rest = re.sub(r"§+|\band\b|\bor\b|\bboth\b|[,\s]", "", body)
        if rest == "" and "§" in body:
            carry = cs
            continue
        out.append((cs, ce))
    if carry is not None:
        out.append((carry, spans[-1][1]))
    return out


def span_of(spans: list[tuple[int, int]], pos: int, default: tuple[int, int]) -> tuple[int, int]:
    """The span in `spans` that holds `pos`."""
    return next(((a, b) for a, b in spans if a <= pos < b), default)


def is_enumerator(text: str, s: int, e: int) -> bool:
    """'1. Dry skin …', '2) …', '(3) …' at the start of a line or sentence: a list marker, not a claim."""
    if not re.fullmatch(r"\(?\d{1,2}", text[s:e]) and not (s > 0 and text[s - 1] == "(" and text[s:e].isdigit()):
        return False
    start = s - 1 if s > 0 and text[s - 1] == "(" else s
    after = text[e:e + 2]
    closes = after[:1] in (".", ")") and (after[1:2] in (" ", "\t", "\n", "") )
    if text[start:start + 1] == "(":
        closes = after[:1] == ")"
    before = text[:start].rstrip(" \t*•#>-")
    return closes and (before == "" or before[-1] in "\n.!?:;")
