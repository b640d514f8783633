"""Record-level detail: contacts, identifiers, dates, money, quotations, names (anecdotes: `anecdotes`).

A plan holds aggregates only, so any of these in a summary is either invented or copied
from a record; neither is supported (SPEC §5: "quoted or record-specific details").
Detected spans are masked so that no later rule reads a date as a number.
"""
from __future__ import annotations

import re

from ..context import Check
from ..text import content, sentence_start, word_tokens
from ..vocab import PUBLIC_VOCABULARY

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
           r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
PATTERNS = [
    ("contact_detail", "an e-mail address", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("contact_detail", "a web address", re.compile(r"(?i)\bhttps?://\S+|\bwww\.\S+")),
    ("contact_detail", "a phone number",
     re.compile(r"(?<![\w.])(?:\+?\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?![\w])")),
    ("identifier", "an identification number", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("identifier", "a redacted record detail", re.compile(r"\b(?:X{2,}[/-]?)+(?:\d+)?\b|\{\$[\d.,]+\}")),
    ("identifier", "an account-like string",
     re.compile(r"(?<![\w.])(?=[A-Za-z0-9#-]*\d)(?=[A-Za-z0-9#-]*[A-Za-z])(?![0-9.]+[eE][-+]?\d+\b)"
                r"(?!\d+(?:st|nd|rd|th)\b)(?!\d+(?:\.\d+)?-[a-z]+\b)(?![A-Za-z]{3,}-\d{1,2}\b)[A-Za-z0-9][A-Za-z0-9#-]{4,}\b")),
    ("identifier", "an account-like number", re.compile(r"(?<![\d,.])\d{6,}(?![\d,]|\.\d)|(?<!\w)#\d{3,}\b")),
    ("record_detail", "a calendar date",
     re.compile(rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|\b{_MONTHS}\s+\d{{4}}\b"
                r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b"
                r"|(?i:\b(?:in|since|during|from|until|before|after|year|circa|early|late|mid)[\s-]+)(?:19|20)\d{2}\b(?![.,]\d|\s*%)")),
    ("record_detail", "a money amount",
     re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|usd|euros?|pounds)\b", re.I)),
    ("named_entity", "a named person", re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Madam)\.?\s+[A-Z][a-z]+")),
]
QUOTE_RE = re.compile(r"“([^”]+)”|\"([^\"]+)\"|‘([^’]+)’|(?<![\w])'([^']{3,}?)'(?![\w])")
# public vocabulary: the listed words, and any word whose normalised tokens are all tokens of listed words
_PUBLIC_CAPS = {w.lower() for w in PUBLIC_VOCABULARY} | {t for w in PUBLIC_VOCABULARY for t in word_tokens(w)}


def check(c: Check) -> None:
    text, lex, mentions = c.text, c.lex, c.mentions
    spans: list[tuple[int, int]] = []

    def inside(s, e):
        return any(m.start <= s and e <= m.end for m in mentions)

    for code, what, rx in PATTERNS:
        for m in rx.finditer(text):
            s, e = m.span()
            if inside(s, e) or any(a <= s < b or a < e <= b for a, b in spans):
                continue
            spans.append((s, e))
            c.add(code, s, e, f'"{m.group()}" is {what}; record-level details are never supported by a plan')
    public_quotes = set(lex.variants) | {(w,) for w in ("high", "moderate", "low")}
    for m in QUOTE_RE.finditer(text):
        inner = next(g for g in m.groups() if g is not None)
        if content(inner) not in public_quotes:
            c.add("quotation", *m.span(), "quotations are record-level text; quote only released theme labels")
    allowed = set(_PUBLIC_CAPS)
    for v in lex.variants:
        allowed.update(v)
    for a in lex.atoms.values():
        allowed.update(content(a.get("description") or ""))
    taken = spans + [(v.start, v.end) for v in c.out if v.code == "unadmitted_atom"]
    for m in re.finditer(r"\b[A-Z][A-Za-z'-]*[a-zA-Z](?:[ \t]+[A-Z][A-Za-z'-]*[a-zA-Z])*", text):
        words = [(w.start() + m.start(), w.end() + m.start(), w.group()) for w in re.finditer(r"\S+", m.group())]
        words = [w for w in words if not inside(w[0], w[1]) and not any(a <= w[0] < b for a, b in taken)]
        flagged = [(s, e, w) for s, e, w in words if not (s == m.start() and sentence_start(text, s))
                   and not set(word_tokens(w)) <= allowed and w.lower() not in allowed]
        if flagged:
            s, e = flagged[0][0], flagged[-1][1]
            c.add("named_entity", s, e, f'"{text[s:e]}" looks like a name; names of people, '
                  "companies or places are record-level details")
            spans.append((s, e))
    for s, e in spans:
        c.mask(s, e, "¤")
