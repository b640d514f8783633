"""Quantifiers over the records ("most customers", "every reviewer", "nobody").

They claim a share of the records: a plan backs "most" / "more than half" (released
support above one half), "the vast majority" (above 0.75) or "almost all" (above 0.9)
of an atom named in the same clause; it never backs a universal claim, which would
need every record. Sentences about the method itself ("no individual customer can be
identified") are not claims about the data.
"""
from __future__ import annotations

import re

from ..context import Check
from ..phrases import word_class
from ..text import clauses, span_of
from ..vocab import METHOD, is_bound_statement

_POPULATION = (r"(?:consumers?|complaints?|complainers?|customers?|reviewers?|reviews?|users?|people|"
               r"persons?|guests?|diners?|respondents?|records?|tickets?|clients?|borrowers?|patients?|"
               r"buyers?|shoppers?|visitors?|members?|complainants?|them)")
_RANK_ADJ = r"(?:common|frequent|prevalent|reported|cited|mentioned|discussed|popular|widespread|raised|often)"
_MODIFIER = r"(?:\s+(?!(?:themes?|topics?|atoms?|categories|category|issues?|items?|plan)\b)[a-z'-]+){0,3}?"
QUANT = re.compile(
    r"\b(?P<q>most(?!\s+" + _RANK_ADJ + r")|more\s+than\s+half|over\s+half|(?:the\s+|a\s+)?vast\s+majority"
    r"|(?:the\s+)?bulk|almost\s+all|nearly\s+all|virtually\s+all|all|every|each|none|no)"
    r"(?:\s+one(?=\s+of\b))?(?:\s+of)?(?:\s+(?:the|these|those|our|their))?(?:\s+\d[\d,.]*\d|\s+\d)?"
    + _MODIFIER + r"\s+" + _POPULATION + r"\b"
    r"|\b(?P<u>everyone|everybody|nobody|no\s+one|universally|without\s+exception|(?:near|nearly)[\s-]universal)\b",
    re.I)
_NEED = {"most": 0.5, "more than half": 0.5, "over half": 0.5, "vast majority": 0.75, "the vast majority": 0.75,
         "a vast majority": 0.75, "bulk": 0.5, "the bulk": 0.5, "almost all": 0.9, "nearly all": 0.9,
         "virtually all": 0.9}


def check(c: Check) -> None:
    masked = c.masked
    for m in QUANT.finditer(masked):
        if m.group("q") and _not_a_noun_phrase(masked, m):
            continue   # "no ordering among them", "each adjacent pair among them": the quantifier is not over records
        if m.group("q") and re.search(r"\bthem$", m.group(), re.I) and _them_are_themes(c, m.start()):
            continue   # "a complaint in two themes gives each of them half of its unit": "them" are themes
        if m.group("q") and re.match(r"['’]s\b", masked[m.end():]) and \
                re.search(r"\b(?:a|an|one|each|any|every|single)\s+(?:[a-z-]+\s+)?\w+$", m.group(), re.I) and \
                (re.search(r"\(\s*$", masked[max(0, m.start() - 3):m.start()]) or
                 re.search(r"\b(?:unit|level|protect\w*|guarantee\w*|contribut\w*|adjacen\w*|neighbou?r\w*|bound)\b",
                           masked[c.sents[c.sentence_of(m.start())][0]:m.start()], re.I)):
            continue   # "user level (all of a user's reviews)": what one unit is, not a claim about the records
        q = re.sub(r"\s+", " ", (m.group("q") or m.group("u")).lower())
        s, e = span_of(c.sents, m.start(), (0, len(masked)))
        if q == "all" and _FRAME.search(masked[s:m.start()]):
            continue   # "Of all 2,600 reviews, A is the most common theme": the frame of a claim, not a claim
        if METHOD.search(c.text[s:e]) or is_bound_statement(masked[s:e]):
            continue  # about the method or the assignment bound K, not about the records
        need = _NEED.get(q)
        cs, ce = span_of(clauses(masked, s, e), m.start(), (s, e))
        supports = [c.atom(a).get("support") for x in c.mentions if cs <= x.start < ce for a in x.atoms]
        if need is not None and supports and all(v is not None and v > need for v in supports):
            c.consume(m.start(), m.end())
            continue
        why = ("a universal claim about the records that no plan can support" if need is None else
               f"a claim that more than {need:.0%} of the records share a theme, which no released "
               "support value of the theme it is about backs")
        c.add("unsupported_number", m.start(), m.end(), f'"{m.group(0)}" is {why}')
        c.consume(m.start(), m.end())


# a prepositional frame opening its clause: "Of all reviews, …", "Across all 2,600 complaints, …"
# and a share or part of all of them: "9.6% of all 5,000 reviews", "a third of all complaints"
_FRAME = re.compile(r"(?:(?:^|[,;:(—–]|\b(?:and|but|so|then|overall))\s*(?:among|across|over)|\bof)\s+$", re.I)


def _not_a_noun_phrase(masked: str, m: re.Match) -> bool:
    """Do words other than adjectives and nouns stand between the quantifier and the population noun?"""
    inner = masked[m.end("q"):m.end()]
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", inner)[:-1]
    return any(word_class(w) in ("F", "V", "R") and w.lower() not in ("of", "one", "the", "these", "those", "our", "their")
               for w in words)


_PLAN_NOUN = re.compile(r"\b(?:themes?|topics?|atoms?|categories|category|issues?|ones|bins?|phrases?|labels?|§+)\b", re.I)


def _them_are_themes(c: Check, at: int) -> bool:
    """Is the last noun before "them" (in its sentence, else the one before) a theme noun rather than a population?"""
    k = c.sentence_of(at)
    for lo, hi in (c.sents[k][0], at), (c.sents[k - 1] if k > 0 else (0, 0)):
        before = c.masked[lo:hi]
        plan = [x.end() for x in _PLAN_NOUN.finditer(before)]
        people = [x.end() for x in re.finditer(r"\b" + _POPULATION.replace("|them)", ")") + r"\b", before, re.I)]
        if plan or people:
            return bool(plan) and (not people or plan[-1] > people[-1])
    return False
