"""Negated and hedged claims ("X is not the most common", "it is unclear whether A is more
common than B"), judged through the claim they deny.

A rule checks the positive claim as usual; `judged` then turns its result around when the
claim's clause negates it: the negation is supported exactly when the plan does not support
the positive claim, and a hedge ("unclear whether") only when the plan leaves the question
open (the positive claim fails for want of margin, not because the plan shows the opposite).
Without this a dropped "not" would let a false sentence through and reject a true one.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from .context import Check

# a negator before the claim word in its clause ("is not", "isn't", "does not have", "no more … than")
_NEGATOR = re.compile(r"\b(?:not|never|cannot|hardly|scarcely|barely|neither|nor|fails?\s+to|failed\s+to|"
                      r"far\s+from|by\s+no\s+means|anything\s+but|it\s+is\s+(?:false|untrue)\s+that|few\s+would|"
                      r"(?:a\s+stretch|wrong|misleading|premature|unwise|unsafe|unjustified|an\s+overstatement)\s+to\s+"
                      r"(?:call|say|claim|conclude|describe|treat|rank|read|suggest|state))\b"
                      r"|n['’]t\b|\bno\b(?=\s+(?:more|less|fewer|higher|lower|greater|bigger|smaller|larger|rarer|"
                      r"commoner|scarcer)\b)", re.I)
# negations that do not deny what follows ("not only … but", "not surprisingly")
_NOT_DENIAL = re.compile(r"\bnot\s+(?:only|just|merely|surprisingly|unexpectedly|unlike)\b"
                         r"|(?:\bnot|n['’]t)\s+far\s+(?=behind|ahead|off|from\s+the\s+top)", re.I)   # "isn't far behind"
_HEDGE = re.compile(r"\b(?:unclear|uncertain|unknown|not\s+(?:clear|certain|known)|no\s+(?:clear\s+|firm\s+)?evidence|"
                    r"(?:do|does|did)\s+not\s+(?:show|establish|prove|tell)|(?:cannot|can\s+not|can['’]t)\s+"
                    r"(?:tell|say|show|establish|determine|rule\s+out|exclude)|hard\s+to\s+(?:tell|say)|too\s+close\s+to\s+call|"
                    r"may\s+or\s+may\s+not|might\s+or\s+might\s+not|doubtful|questionable|not\s+possible\s+to\s+(?:tell|say))\b",
                    re.I)
# a negated verb between the claim word and its theme ("the most common theme is not A",
# "the top three do not include A")
_AFTER_NEG = re.compile(r"\b(?:is|are|was|were|do|does|did|would\s+be)\s+not\b|\b(?:is|are|was|were|do|does|did)n['’]t\b",
                        re.I)
# the window ends at a conjunction: "not rare and is the most common" negates only "rare"
_CUT = re.compile(r"\b(?:and|or|then|so|yet)\b", re.I)
_OPEN = ("unsupported_comparison",)   # what a hedge may stand on: no margin either way


_ASKED_ENDS = re.compile(r"[:;—]")


def polarity(c: Check, s: int, e: int | None = None) -> str:
    """'positive', 'negated' or 'hedged' for the claim word at s..e, from the start of its clause
    (and, with e, between the claim word and the theme after it: "the most common theme is not A")."""
    cs, ce = c.clause_at(s)
    cut = list(_CUT.finditer(c.masked, cs, s))
    cs = cut[-1].end() if cut else cs
    window = _NOT_DENIAL.sub(lambda m: " " * len(m.group()), c.masked[cs:s + 12])  # past s: "no| more"
    if any(m.start() < s - cs for m in _HEDGE.finditer(window)):
        return "hedged"
    k = c.sentence_of(s)
    ss = c.sents[k][0]
    stop = max((m.end() for m in _ASKED_ENDS.finditer(c.masked, ss, s)), default=ss)   # a colon ends what is asked
    if re.search(r"\bwhether\b", c.masked[stop:s], re.I):   # "whether A is more common than B is unclear": asked, not said
        return "hedged"
    found = [m.group().lower() for m in _NEGATOR.finditer(window) if m.start() < s - cs]
    if e is not None:
        after = re.match(r"[^§¤]*?(?=§)", c.masked[e:ce])
        if after:
            found += [m.group().lower() for m in _AFTER_NEG.finditer(after.group())]
    if "nor" in found and "neither" in found:   # "neither A nor B": one negation of both
        found.remove("neither")
    if re.search(r"\banything\s+$", c.masked[max(0, cs - 12):cs], re.I) and c.masked[cs:cs + 3].lower() == "but":
        found.append("anything but")   # the clause split at "but" of "anything but rare"
    return "negated" if len(found) % 2 else "positive"


def _answer(c: Check, s: int) -> str | None:
    """'yes' or 'no' when the claim at s is asked in a question that the next sentence answers.
    A rank that modifies the question's subject ("Are the themes ranked 7 to 9 distinguishable?")
    is what the question presupposes, not what it asks."""
    if re.search(r"\b(?:themes?|topics?|ones|categories)\s+$", c.masked[max(0, s - 20):s], re.I) and \
            re.match(r"(?:ranked|ranking|in\s+ranks?|at\s+ranks?)\b", c.masked[s:s + 12], re.I):
        return None
    k = c.sentence_of(s)
    if not c.masked[c.sents[k][0]:c.sents[k][1]].rstrip().endswith("?") or k + 1 >= len(c.sents):
        return None
    nxt = c.masked[c.sents[k + 1][0]:c.sents[k + 1][1]]
    nxt = re.sub(r"^\s*(?:[-*•>]\s*)*(?:a|answer)\s*[:.]\s*", "", nxt, flags=re.I)   # "A: No."
    if re.match(r"\s*(?:yes|yep|indeed|correct|right|it\s+is|they\s+are)\b", nxt, re.I):
        return "yes"
    if re.match(r"\s*(?:no|nope|not\s+(?:really|quite|at\s+all|demonstrably|significantly|meaningfully|clearly|"
                r"reliably|necessarily|detectably|measurably)|it\s+is\s+not|it['’]s\s+not|(?:it\s+is\s+)?unclear|"
                r"(?:we\s+)?(?:cannot|can['’]t|could\s+not|couldn['’]t)\s+(?:say|tell|be\s+sure)|"
                r"(?:it['’]?s\s+|it\s+is\s+)?(?:hard|impossible|difficult)\s+to\s+(?:say|tell)|"
                r"(?:it['’]?s\s+|it\s+is\s+)?too\s+close\s+to\s+call|no\s+way\s+to\s+tell|"
                r"(?:(?:that|it|this|§+)\s+is\s+|(?:that|it)['’]s\s+)?not\s+(?:supported|with\s+(?:any\s+)?confidence|"
                r"by\s+the\s+(?:plan|release|data))|"
                r"the\s+(?:plan|release|data)\s+(?:does\s+not|doesn['’]t|cannot|can['’]t)\s+(?:support|show|say))\b", nxt, re.I):
        return "no"
    return None


def judged(c: Check, s: int, e: int, code: str, run: Callable[[], None]) -> None:
    """Run one positive claim's check, then apply the clause's polarity to its violations."""
    mode = polarity(c, s, e)
    answer = _answer(c, s)
    if answer == "no":   # "Is A the most common theme? No."
        mode = {"positive": "negated", "negated": "positive"}.get(mode, mode)
    before = len(c.out)
    run()
    if mode == "positive":
        return
    found = c.out[before:]
    del c.out[before:]
    if mode == "hedged":
        if found and any(v.code not in _OPEN for v in found):
            c.add(code, s, e, "the plan settles what this sentence calls unclear: " + found[0].message)
        elif not found:
            c.add(code, s, e, "the plan supports the claim this sentence calls unclear")
        return
    if not found:
        c.add(code, s, e, "the plan supports the claim this sentence denies")
