"""Support words ("high", "rare", "a minor share") against the attached theme's released bin."""
from __future__ import annotations

import functools
import re

from ..context import Check
from ..negation import judged
from ..vocab import BIN_PATTERNS, bin_word_applies


def bin_predicates(c: Check, s: int, e: int) -> list[tuple[set, int, int]]:
    """Bin words in masked[s:e] that make a support claim: ({bin names}, start, end).

    "moderate or low" is one predicate with two bins (either is true of a member).
    """
    txt = c.masked
    found: list[tuple[str, int, int]] = []
    for bin_name, needs_noun, rx in BIN_PATTERNS:
        for m in rx.finditer(txt, s, e):
            ws, we = m.span()
            if c.is_consumed(ws, we) or c.overlaps(ws, we, c.rank_spans) or any(ws < b and a < we for _, a, b in found):
                continue
            if bin_word_applies(txt, ws, we, needs_noun, negatable=True):
                found.append((bin_name, ws, we))
    found.sort(key=lambda f: f[1])
    runs: list[list[tuple[str, int, int]]] = []
    for f in found:
        if runs and re.fullmatch(r"\s*(?:,|or|,\s*or|/|and/or)\s*", txt[runs[-1][-1][2]:f[1]]):
            runs[-1].append(f)
        else:
            runs.append([f])
    out: list[tuple[set, int, int]] = []
    for run in runs:  # "high, moderate or low" is one claim; "high, moderate" without "or" is two
        glue = [txt[a[2]:b[1]] for a, b in zip(run, run[1:])]
        if len(run) > 1 and any(re.search(r"or|/", g) for g in glue):
            out.append(({n for n, _, _ in run}, run[0][1], run[-1][2]))
        else:
            out.extend(({n}, ws, we) for n, ws, we in run)
    return out


def _claim(c: Check, names: set, s: int, e: int, guess=None) -> None:
    att = [guess] if guess is not None else c.attach(s, e, back=False)
    for men in att if c.plural(att) else att[:1]:  # "both are low": each theme of a plural anaphor
        bins = {str(c.atom(x).get("bin", "")).lower() for x in men.atoms}
        if not bins & names:
            c.add("wrong_bin", s, e,
                  f'"{men.text}" is in the released "{sorted(bins)[0]}" bin, not "{"/".join(sorted(names))}"')


# "A (14.3%) and B (9.3%) are both high-support themes": a list subject and a bin-qualified plan noun as its predicate
_LIST_SUBJECT = re.compile(r"(?P<subj>§+(?:\s*\([^()\n]*\))?(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*)§+(?:\s*\([^()\n]*\))?)*)"
                           r"\s+(?:are|were|is|was|remain|rank\s+as|count\s+as|stand\s+as)\s+(?:(?:both|all|also|each|"
                           r"still|the\s+only|the\s+two|the\s+three)\s+)*(?:an?\s+|the\s+)?(?P<bin>[\w-]+(?:[\s-]+support)?)"
                           r"[\s-]+(?:bin\s+)?(?:themes?|topics?|ones?|categories|category)\b", re.I)


def _list_predicates(c: Check) -> None:
    for m in _LIST_SUBJECT.finditer(c.masked):
        names = {b for b, _, rx in BIN_PATTERNS if rx.fullmatch(m.group("bin").split()[0].split("-")[0])}
        if not names:
            continue
        s, e = m.start("bin"), m.end("bin")
        for men in c.in_range(m.start("subj"), m.end("subj")):
            judged(c, s, e, "wrong_bin", functools.partial(_claim, c, names, s, e, men))


# the public bin rule stated: "bins use support thresholds of 10% for high and 3% for moderate",
# "the cut-off for low is rank 8": the bin word names a bin of the rule, not a theme's bin
_RULE_CLAUSE = re.compile(r"\b(?:thresholds?|cut-?offs?|bin\s+rule|bins?\s+(?:use|are\s+set|follow|mean|go\s+by))\b", re.I)
_RULE_BIN = re.compile(r"\bfor\s+(?:the\s+)?(?:a\s+)?$", re.I)


def _names_the_rule(c: Check, s: int, e: int) -> bool:
    cs, ce = c.clause_at(s)
    return (not c.in_range(cs, ce) and bool(_RULE_CLAUSE.search(c.masked[cs:ce]))
            and bool(_RULE_BIN.search(c.masked[max(cs, s - 12):s])))


_REST_SUBJECT = re.compile(r"\b(?:everything|every\s+other\s+theme|all\s+(?:the\s+)?(?:other|remaining)\s+themes|"
                           r"(?:all\s+)?the\s+(?:rest|others)|the\s+remaining\s+themes|all\s+others)\b(?:\s+else)?", re.I)
_EXCEPT = re.compile(r"\s*,?\s*(?:except(?:\s+for)?|apart\s+from|other\s+than|save\s+for|but\s+not)\b", re.I)


def _rest_except(c: Check, names: set, s: int, e: int) -> bool:
    """"Everything else released is moderate except A, which is low": the bin is claimed of every admitted theme
    not named before this sentence and not excepted after it; False when the sentence is not of that form."""
    k = c.sentence_of(s)
    ss, se = c.sents[k]
    if not _EXCEPT.match(c.masked, e) or not _REST_SUBJECT.search(c.masked, ss, s):
        return False
    excepted = {x for m in c.in_range(e, se) for x in m.atoms}
    earlier = {x for m in c.in_range(0, ss) for x in m.atoms}
    for x in c.lex.atoms:
        if x in excepted or x in earlier:
            continue
        b = str(c.atom(x).get("bin", "")).lower()
        if b not in names:
            c.add("wrong_bin", s, e, f'"{c.atom(x).get("label")}", not named before and not excepted, is in the '
                                     f'released "{b}" bin, not "{"/".join(sorted(names))}"')
            break
    return True


def check(c: Check) -> None:
    _list_predicates(c)
    for names, s, e in bin_predicates(c, 0, len(c.masked)):
        if _names_the_rule(c, s, e):
            continue
        if _rest_except(c, names, s, e):
            continue
        k = c.sentence_of(s)
        cs = c.clause_at(s)[0]
        items = [] if c.in_range(*c.sents[k]) else c.listed(s)
        if items:   # "Rare themes:" / "## Low support" then the themes
            for men in items:
                judged(c, s, e, "wrong_bin", functools.partial(_claim, c, names, s, e, men))
            continue
        guess = c.claim_subject(s, e)
        if guess is not None and not guess.atoms:   # "allergic reactions have high support"
            c.add("wrong_bin", cs, e, f'"{guess.text}" is no theme of the plan, so no released bin backs this claim')
            continue
        if guess is not None or c.attach(s, e, back=False):   # "not high": judged through "high" (negation.py)
            judged(c, s, e, "wrong_bin", functools.partial(_claim, c, names, s, e, guess))
