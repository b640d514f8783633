"""Fail closed on themes: every noun phrase in a theme position names a released theme (`unknown_theme`).

A theme the plan does not hold — in neither the plan nor the dictionary — must not pass because
it stands beside released ones ("A and hair loss are the two most common themes", "A, followed
by hair loss", "hair loss is among the low-support themes"). So the rule reads each sentence by
its structure (`phrases`) and finds the noun phrases in theme positions:

* a **conjunct** of a theme mention: joined to it by a comma, *and*, *or*, *&*, *plus*, *as well
  as*, *along with*, *together with*, *followed (closely) by*, *then*, a slash — in either order,
  along the whole list — unless it is the object of a preposition ("in the restaurant data, A");
* the **subject of a claim** in a clause that names no theme: the noun phrase that opens the
  clause before a claim verb (*is, ranks, leads, trails, follows, accounts for, appears, makes,
  comes, has, …*) when the clause makes a claim (a rank, bin or comparison word, a number, a plan
  noun, *among, one of, included, released, listed, admitted*);
* the **complement of a theme description**: what follows *is / are / comes / :* after a plan
  noun or a rank phrase ("the most common theme is …", "the top three are …", "second is …",
  "in second place is …"), and what follows *include(s), including, such as, namely, followed
  by, then, ahead of, behind, than, over, outranks, beats, trails, edges out* in a sentence that
  names a theme or a plan noun;
* a **valued phrase**: a noun phrase directly followed by a parenthesis, a colon or a dash that
  holds a value, a rank or a bin ("hair loss (rank 5)", "- Hair loss: 4%"), or by *at / with* and a
  number ("hair loss at 4%");
* an **item** under a lead line or heading that makes a claim about themes, and the short
  **answer** to a question about themes.

Each such phrase must resolve: to a theme mention (a released label or a documented paraphrase:
*Matching text to atoms*), to the public vocabulary of the method and the plan (plan, record,
people, measure and method nouns: *themes, reviews, customers, share, margin, noise, …*), or to a
paraphrase of one admitted theme (more than half of its content words are words of the theme's
label or description: "scent" for *pleasant scent*). A phrase whose head is public vocabulary
still has its noun modifiers checked ("shipping complaints"). Anything else is `unknown_theme`.
A dictionary label that was not admitted is `unadmitted_atom` (rule `mentions`).
"""
from __future__ import annotations

import re

from ..context import Check
from ..phrases import Tok, np_left, np_right, tokens
from ..text import content
from ..vocab import THEME_PUBLIC as PUBLIC

# adjectives and quantities that modify a public noun without naming a theme
_CLAIM_PRED = re.compile(
    r"\b(?:most|least|top|bottom|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|"
    r"rank(?:s|ed)?|among|one\s+of|included|released|listed|admitted|common|frequent|rare|popular|prevalent|"
    r"high|moderate|low|support|share|themes?|topics?|more|less|fewer|ahead|behind|trails?|leads?|follows?|"
    r"appears?|features?|makes?\s+the|cut|list|plan)\b|\d|§", re.I)
_CLAIM_VERB = re.compile(
    r"(?:is|are|was|were|ranks?|ranked|leads?|led|trails?|follows?|followed|tops?|accounts?|appears?|makes?|"
    r"comes?|came|sits?|stands?|holds?|has|have|had|registers?|rounds?|completes?|closes?|takes?|gets?|draws?|"
    r"earns?|receives?|captures?|covers?|dominates?|edges?|outranks?|outnumbers?|exceeds?|beats?|lags?|falls?|"
    r"lies|places?|scores?|features?|includes?|lands?|reaches?|represents?|totals?|belongs?|occurs?|surpass(?:es)?|"
    r"outpaces?|pulls?|posts?|carries|ties?|tied|shares?|also|still|clearly|then|again|only|just|is)$", re.I)
_GLUE = re.compile(r"^(?:,|and|or|&|plus|/|,\s*and|,\s*or|as\s+well\s+as|along\s+with|together\s+with|"
                   r"followed(?:\s+closely)?\s+by|,\s*followed(?:\s+closely)?\s+by|then|and\s+then|,\s*then|"
                   r"vs\.?|versus)$", re.I)
_INTRO = re.compile(r"(?:include[sd]?|including|such\s+as|namely|followed(?:\s+closely)?\s+by|then|ahead\s+of|"
                    r"behind|than|outranks?|beats?|trails?|edges?\s+out|goes\s+to|go\s+to|went\s+to|"
                    r"mention(?:s|ed|ing)?|cite[sd]?|citing|raise[sd]?|raising|discuss(?:es|ed|ing)?|praise[sd]?|"
                    r"(?:talk|talks|talked|complain|complains|complained|complaints|comments|concerns|questions|"
                    r"reviews|mentions)\s+about|covers?|lists?|admits?|features?)$", re.I)
_DESCRIBED = re.compile(r"(?:theme|topic|category|issue|item|entry|one|ones|themes|topics|categories|issues|items|"
                        r"entries|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|next|"
                        r"runner-up|leader|place|spot|position)$", re.I)


_HOLDER = re.compile(r"(?:reviews?|complaints?|records?|reports?|posts?|comments?|tickets?|submissions?|narratives?|"
                     r"documents?|ratings?|responses?|texts?|data|dataset|corpus|consumers?|customers?|reviewers?|"
                     r"users?|people|persons?|guests?|diners?|respondents?|clients?|borrowers?|patients?|buyers?|"
                     r"shoppers?|visitors?|members?|complainants?|writers?|readers?)", re.I)


def _resolves(c: Check, words: list[Tok]) -> bool:
    """Does this noun phrase name an admitted theme, public vocabulary, or a paraphrase of one theme?"""
    toks = [t for w in words for t in content(w.text)]
    rest = [t for t in toks if t not in PUBLIC and not t.isdigit()]
    nouns = [w for w in words if w.cls in ("N", "G") and any(t not in PUBLIC for t in content(w.text))]
    if not rest or not nouns:
        return True
    if _HOLDER.fullmatch(words[-1].text):
        return True   # "restaurant reviews", "beauty-product reviewers": the records or their writers, not a theme
    roots = [_root(t) for t in rest]
    for a in c.lex.atoms.values():
        own = {_root(t) for t in content(a["label"]) + content(a.get("description") or "")}
        if 2 * sum(t in own for t in roots) > len(rest):
            return True
    return False


def _root(t: str) -> str:
    """A light derivational fold for paraphrases ("pricing" ~ "price", "sensitivity" ~ "sensitive", "scented" ~
    "scent"); tokens are already folded for plurals (text.stem)."""
    for suffix in ("ities", "ity", "ing", "ed", "ive", "es", "e"):
        if t.endswith(suffix) and len(t) - len(suffix) >= 4:
            return t[: -len(suffix)]
    return t


def _flag(c: Check, toks: list[Tok], a: int, b: int, seen: set) -> None:
    words = toks[a:b]
    if not words or any(w.cls in "§¤" for w in words):
        return
    s, e = words[0].start, words[-1].end
    if (s, e) in seen or c.is_consumed(s, e) or any(v.start <= s and e <= v.end for v in c.out):
        return
    seen.add((s, e))
    if _resolves(c, words):
        return
    c.add("unknown_theme", s, e, f'"{c.text[s:e]}" stands where a theme is named, but it is no released theme of '
          "the plan (nor public vocabulary of the method); name only the plan's themes")


def _prep_before(toks: list[Tok], j: int) -> bool:
    """Is the phrase starting at toks[j] (determiners skipped) the object of a preposition?"""
    k = j - 1
    while k >= 0 and toks[k].cls == "D":
        k -= 1
    return k >= 0 and toks[k].cls == "F" and toks[k].text.lower() not in ("and", "or", "nor", "but", "then", "plus")


def _glue_at(toks: list[Tok], i: int, forward: bool) -> int | None:
    """Index just past list glue that starts at i (forward) / ends at i (backward), or None."""
    for n in (4, 3, 2, 1):
        if forward:
            seg = toks[i:i + n]
        else:
            seg = toks[max(0, i - n + 1):i + 1]
        if len(seg) < n:
            continue
        txt = " ".join(t.text for t in seg).replace(" ,", ",")
        if _GLUE.match(txt) or _GLUE.match(txt.replace(" ", "")):
            return i + n if forward else i - n
    return None


def _conjuncts(c: Check, toks: list[Tok], seen: set) -> None:
    for i, t in enumerate(toks):
        if t.cls != "§":
            continue
        j = _past_paren(toks, i + 1)
        while j < len(toks):   # rightwards along the list
            g = _glue_at(toks, j, True)
            if g is None or g >= len(toks):
                break
            if toks[g].cls == "§":
                j = _past_paren(toks, g + 1)
                continue
            np = np_right(toks, g)
            if np is None or np[0] != _skip_det(toks, g):
                break
            if toks[j].text == "," and g == j + 1 and not _list_goes_on(toks, np[1]):
                break   # "A, B and C, form close pairs": after a bare comma only a list item that the list continues
            _flag(c, toks, *np, seen)
            j = np[1]
        j = i - 1
        while j >= 0:   # leftwards
            g = _glue_at(toks, j, False)
            if g is None or g < 0:
                break
            if toks[g].cls == "§":
                j = g - 1
                continue
            np = np_left(toks, g + 1)
            if np is None:
                break
            if not _prep_before(toks, np[0]):
                _flag(c, toks, *np, seen)
            j = np[0] - 1


def _past_paren(toks: list[Tok], j: int) -> int:
    """Past a parenthesis right at toks[j] ("A (about 2.1%) and B"): a list item's own values."""
    if j < len(toks) and toks[j].text == "(":
        depth = 0
        for k in range(j, len(toks)):
            depth += toks[k].text == "("
            depth -= toks[k].text == ")"
            if depth == 0:
                return k + 1
    return j


def _list_goes_on(toks: list[Tok], k: int) -> bool:
    """Does a list continue (or close) right after toks[k - 1]?"""
    if k >= len(toks):
        return True
    t = toks[k].text.lower()
    return t in (",", "and", "or", "&", ")", ".", ";", "!", "?", "plus", "/")


def _skip_det(toks: list[Tok], j: int) -> int:
    while j < len(toks) and toks[j].cls == "D":
        j += 1
    return j


_ADVERBS = {"also", "still", "only", "just", "then", "even", "again", "clearly", "now", "too", "likewise", "similarly"}


def _clause_subjects(c: Check, toks: list[Tok], seen: set) -> None:
    """The phrase that opens a clause naming no theme, before a claim verb, in a clause that makes a claim."""
    starts = [0] + [i + 1 for i, t in enumerate(toks) if (t.cls == "." and t.text in ",;:—–(")
                    or t.text.lower() in ("while", "whereas", "but", "although", "though", "yet")]
    ends = starts[1:] + [len(toks) + 1]
    for a, b in zip(starts, ends):
        clause = toks[a:b - 1] if b <= len(toks) else toks[a:]
        if not clause:
            continue
        k = 0
        while k < len(clause) and (clause[k].cls == "R" or clause[k].text.lower() in ("and", "but", "so", "yet")
                                   or clause[k].text in ("-", "*", "•", "#", ">", "+")):
            k += 1
        np = np_right(clause, k)
        if np is None or np[1] >= len(clause) or _prep_before(clause, np[0]):
            continue
        if np[0] != _skip_det(clause, k):
            continue
        v = np[1]
        while v < len(clause) - 1 and (clause[v].cls == "R" or clause[v].text.lower() in _ADVERBS):
            v += 1   # "hair loss also appears", "hair loss clearly trails"
        verb = clause[v]
        if verb.cls != "V" or not _CLAIM_VERB.match(verb.text):
            continue
        rest = " ".join(t.text for t in clause[np[1]:])
        if not _CLAIM_PRED.search(rest) and not any(t.cls == "§" for t in clause[np[1]:]):
            continue
        _flag(c, clause, *np, seen)


def _complements(c: Check, toks: list[Tok], seen: set) -> None:
    """After an introducing word ('include', 'such as', 'followed by', 'than') or after a copula whose
    subject is a plan noun or rank phrase ('the most common theme is', 'second is'): the phrases listed."""
    for i, t in enumerate(toks):
        two = (toks[i - 1].text + " " + t.text) if i > 0 else t.text
        intro = _INTRO.match(two) or _INTRO.match(t.text)
        cop = (t.text.lower() in ("is", "are", "was", "were", "comes", "come", ":") and i > 0
               and _DESCRIBED.match(toks[i - 1].text) and not any(x.cls == "§" for x in toks[:i]))
        if not intro and not cop:
            continue
        j = i + 1
        while j < len(toks):
            np = np_right(toks, j)
            if np is None or np[0] != _skip_det(toks, j):
                break
            _flag(c, toks, *np, seen)
            g = _glue_at(toks, np[1], True) if np[1] < len(toks) else None
            if g is None:
                break
            j = g
            if j < len(toks) and toks[j].cls == "§":
                j += 1
                g2 = _glue_at(toks, j, True) if j < len(toks) else None
                if g2 is None:
                    break
                j = g2


_VALUE = re.compile(r"^\s*(?:\(|:|—|–|-|at\b|with\b)\s*(?:about|around|roughly|approximately|nearly|~|≈|rank(?:ed)?|"
                    r"#|no\.)?\s*(?:\d|high|moderate|low|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|"
                    r"tenth|top|last)", re.I)


def _valued(c: Check, toks: list[Tok], seen: set, txt: str) -> None:
    for i, t in enumerate(toks):
        if t.cls != "N":
            continue
        if i + 1 < len(toks) and toks[i + 1].cls == "N":
            continue
        if not _VALUE.match(txt[t.end:t.end + 40]):
            continue
        np = np_left(toks, i + 1)
        if np is None or _prep_before(toks, np[0]):
            continue
        _flag(c, toks, *np, seen)


_LEAD = re.compile(r"(?:themes?|topics?|categor(?:y|ies)|issues?|most|least|top|bottom|high|moderate|low|support|bin|"
                   r"ranks?|ranked|leading|common|frequent|rare)\b", re.I)
_ITEM = re.compile(r"[ \t]*(?:[-*•+]|\d{1,2}[.)])[ \t]+")


def _lead_items(c: Check, seen: set) -> None:
    """Items under a lead line or heading about themes ("Moderate themes:" then "- A", "- B"): each item's
    leading noun phrase names a theme."""
    txt = c.masked
    lines, pos = [], 0
    for line in txt.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    for i, (s, e) in enumerate(lines):
        head = txt[s:e].strip()
        if not head or not (head.endswith(":") or head.startswith("#")) or not _LEAD.search(head):
            continue
        for ls, le in lines[i + 1:]:
            m = _ITEM.match(txt, ls, le)
            if not m:
                break
            toks = tokens(txt, m.end(), le)
            if not toks or toks[0].cls == "§" or any(ls <= v.start < le for v in c.out):
                continue
            np = np_right(toks, 0)
            if np is not None and np[0] == _skip_det(toks, 0):
                _flag(c, toks, *np, seen)


def check(c: Check) -> None:
    txt = c.masked
    seen: set = set()
    _lead_items(c, seen)
    for ss, se in c.sents:
        if any(ss <= v.start < se for v in c.out):
            continue   # the sentence is rejected already: one report of it is enough
        toks = tokens(txt, ss, se)
        if not toks:
            continue
        _conjuncts(c, toks, seen)
        _clause_subjects(c, toks, seen)
        _complements(c, toks, seen)
        _valued(c, toks, seen, txt)
