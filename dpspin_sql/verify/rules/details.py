"""Record-level detail: contacts, identifiers, dates, money, quotations, names (anecdotes: `anecdotes`).

A plan holds aggregates only, so any of these in a summary is either invented or copied
from a record; neither is supported (docs/DESIGN.md §6: no quoted or record-specific details).
Detected spans are masked so that no later rule reads a date as a number.
"""
from __future__ import annotations

import re

from ..context import Check
from ..text import content, sentence_start, soft_breaks_as_spaces, word_tokens
from ..vocab import PUBLIC_VOCABULARY

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
           r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
PATTERNS = [
    ("contact_detail", "an e-mail address", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("contact_detail", "a web address", re.compile(r"(?i)\bhttps?://\S+|\bwww\.\S+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*"
                                                     r"\.(?:com|org|net|io|co|gov|edu|info|biz|app|dev|shop|store|uk|us|"
                                                     r"de|fr|ca|au|in)\b(?:/\S*)?")),
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
QUOTE_RE = re.compile(r"“([^”\n]+)”|\"([^\"\n]+)\"|‘([^’\n]+)’|(?<![\w])'([^'\n]{3,}?)'(?![\w])"
                      r"|«\s?([^»\n]+?)\s?»|„([^“”\n]+)[“”]|‹([^›\n]+)›|`([^`\n]+)`")
_QUOTE_CHARS = "\"“”‘’'″′"
_NOT_A_MARK = "\x01"  # a protected quote character: part of a label, or an inch / foot mark
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
    public_quotes = set(lex.variants) | {(w,) for w in ("high", "moderate", "low")} | _quoted_parts(lex)
    marks = _quote_marks(c)
    for m in QUOTE_RE.finditer(marks):
        inner = next(g for g in m.groups() if g is not None)
        if content(inner) in public_quotes or _inside_label(c, *m.span()):
            continue
        c.add("quotation", *m.span(), "quotations are record-level text; quote only released theme labels")
    allowed = set(_PUBLIC_CAPS)
    for v in lex.variants:
        allowed.update(v)
    for a in lex.atoms.values():
        allowed.update(content(a.get("description") or ""))
    taken = spans + [(v.start, v.end) for v in c.out if v.code == "unadmitted_atom"]
    for m in re.finditer(r"\b[A-Z][A-Za-z'-]*[a-zA-Z](?:[ \t]+[A-Z][A-Za-z'-]*[a-zA-Z])*", text):
        words = [(w.start() + m.start(), w.end() + m.start(), w.group()) for w in re.finditer(r"\S+", m.group())]
        words = [w for w in words if not inside(w[0], w[1]) and not any(a <= w[0] < b for a, b in taken)
                 and not c.is_consumed(w[0], w[1])]   # a table's header row is layout (rules/tables.py)
        flagged = [(s, e, w) for s, e, w in words if not (s == m.start() and sentence_start(text, s))
                   and not set(word_tokens(w)) <= allowed and w.lower() not in allowed
                   and not _public_compound(w, allowed)]
        if flagged:
            s, e = flagged[0][0], flagged[-1][1]
            c.add("named_entity", s, e, f'"{text[s:e]}" looks like a name; names of people, '
                  "companies or places are record-level details")
            spans.append((s, e))
    for s, e in spans:
        c.mask(s, e, "¤")


def _public_compound(word: str, allowed: set) -> bool:
    """"Gaussian-noised", "Laplace-based": a public word joined to lowercase words names nothing."""
    head, _, rest = word.partition("-")
    return bool(rest) and rest == rest.lower() and (head in allowed or head.lower() in allowed)


def _quoted_parts(lex) -> set[tuple]:
    """Quoted parts of public labels and descriptions ('"buy now" button' → "buy now"): public text, not record text."""
    out: set[tuple] = set()
    for texts in lex.texts_of.values():
        for t in texts:
            for m in QUOTE_RE.finditer(t):
                v = content(next(g for g in m.groups() if g is not None))
                if v:
                    out.add(v)
    return out


def _inside_label(c: Check, s: int, e: int) -> bool:
    """A quote whose marks stand inside a label match (or right at its edges) highlights the label itself."""
    return any(ls - 1 <= s and e <= le + 1 for ls, le, _ in c.label_spans)


def _quote_marks(c: Check) -> str:
    """The summary with the quote characters that are not quotation marks replaced (same length).

    Not quotation marks: a quote character of a label or description written where that text
    occurs (the template writes labels verbatim: '"buy now" button', '5" screen', "kids' toys");
    one inside a label match, or at its edge when the label itself begins or ends with one; and an
    inch or foot mark — a quote right after a digit ('5" screen', "6' cable", 5'10") when no
    quotation of that kind is open.
    """
    text, lex = soft_breaks_as_spaces(c.text), c.lex   # hard-wrapped text: '"good\nprice"' is one quotation
    chars = list(text)
    low = text.lower()

    def protect(i: int) -> None:
        if 0 <= i < len(chars) and chars[i] in _QUOTE_CHARS:
            chars[i] = _NOT_A_MARK

    for texts in lex.texts_of.values():
        for t in texts:
            t = t.strip()
            if not t or not any(q in t for q in _QUOTE_CHARS):
                continue
            start = low.find(t.lower())
            while start >= 0:
                for i in range(start, start + len(t)):
                    protect(i)
                start = low.find(t.lower(), start + 1)
    for ls, le, ids in c.label_spans:
        for i in range(ls + 1, le - 1):
            protect(i)
        labels = [t.strip() for x in ids for t in lex.texts_of.get(x, ())]
        if any(t[:1] in _QUOTE_CHARS for t in labels):
            protect(ls - 1)
            protect(ls)
        if any(t[-1:] in _QUOTE_CHARS for t in labels):
            protect(le - 1)
            protect(le)
    # inch / foot marks: a straight quote right after a digit that cannot close an open quotation
    open_double = open_single = False
    for i, ch in enumerate(chars):
        if ch == "\n":
            open_double = open_single = False
        elif ch in '"″':
            if i > 0 and text[i - 1].isdigit() and not open_double:
                chars[i] = _NOT_A_MARK
            elif ch == '"':
                open_double = not open_double
        elif ch in "'′":
            before = text[i - 1] if i > 0 else " "
            after = text[i + 1] if i + 1 < len(text) else " "
            if before.isdigit() and not open_single:
                chars[i] = _NOT_A_MARK
            elif not before.isalnum() and after.isalnum():
                open_single = True
            elif open_single and not after.isalnum():
                open_single = False
    return "".join(chars)
