"""The phrase reader: words with their word classes, and the noun phrases of a stretch of text.

The verifier reads claims by structure, not by character distance: a sentence is a sequence
of words, theme mentions (`§`), masked details (`¤`) and punctuation; each word has a word
class (noun, adjective, verb, adverb, function word, …) from a fixed public lexicon
(`data/word_classes.txt.gz`: Brill's tagger lexicon, each word's most frequent tag, with the
claim verbs and function words of this module fixed by hand). A noun phrase is a run of
determiners, adjectives and nouns that ends in a noun; it stops at a verb, a preposition, a
conjunction, punctuation or a theme mention. Words outside the lexicon are read as nouns
(fail closed: an unknown word can name a theme).
"""
from __future__ import annotations

import functools
import gzip
import re
from dataclasses import dataclass
from pathlib import Path

_DATA = Path(__file__).parent / "data" / "word_classes.txt.gz"


@functools.lru_cache(maxsize=1)
def _lexicon() -> dict[str, str]:
    out: dict[str, str] = {}
    with gzip.open(_DATA, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or "\t" not in line:
                continue
            cls, words = line.rstrip("\n").split("\t", 1)
            for w in words.split():
                out[w] = cls
    return out


DETERMINERS = set("""a an the this that these those its their our your my his her all both each every some any
another no either neither such what which whose much many several few more most less least other
one""".split())
FUNCTION = set("""of in on at by for to from with without within into onto upon over under above below between among
amongst across through throughout during before after behind beyond about around against toward towards via per
than as like unlike versus vs and or nor but yet so plus if whether because since while whereas although though
unless until once where when how why who whom which that it they them we us you i he she him its itself
themselves there here not n't also still only just even too very quite rather really again already then thus
hence therefore however instead else none nothing nobody everything everyone anything something neither
each""".split())
# verbs a claim is made with: never nouns here, whatever the lexicon's most frequent tag
VERBS = set("""is are was were be been being am 's 're has have had having do does did can could may might will would
shall should must rank ranks ranked ranking lead leads led trail trails trailed follow follows followed top tops
topped account accounts accounted appear appears appeared make makes made come comes came sit sits sat stand stands
stood hold holds held remain remains remained show shows showed shown register registers registered round rounds
rounded complete completes completed close closes closed take takes took get gets got draw draws drew earn earns
earned receive receives received capture captures captured cover covers covered dominate dominates dominated edge
edges edged outrank outranks outranked outnumber outnumbers outnumbered exceed exceeds exceeded beat beats lag lags
lagged fall falls fell lie lies lay place places placed score scores scored mention mentions mentioned feature
features featured include includes included land lands landed reach reaches reached represent represents
represented total totals totalled totaled sits belong belongs occur occurs occurred surpass surpasses surpassed
outpace outpaces outpaced appear pull pulls pulled post posts posted carry carries carried tie ties tied share
shares shared cite cites cited raise raises raised note notes noted list lists listed""".split())


def word_class(w: str) -> str:
    """N noun, A adjective, G -ing form, P participle, V verb, R adverb, C number, D determiner, F function word."""
    lw = w.lower().strip("'")
    if lw in DETERMINERS:
        return "D"
    if lw in FUNCTION:
        return "F"
    if lw in VERBS:
        return "V"
    if re.fullmatch(r"[\d.,]+%?", lw):
        return "C"
    cls = _lexicon().get(lw)
    if cls is None and "-" in lw:   # "skin-care", "long-lasting": the last part decides
        cls = _lexicon().get(lw.rsplit("-", 1)[1], "N")
        return "A" if cls in ("A", "P", "G") else "N"
    if cls is None and lw.endswith("s"):
        cls = _lexicon().get(lw[:-1])
        if cls == "N":
            return "N"
        cls = None
    if cls is None:
        return "N" if lw.isalpha() else "X"
    return {"U": "F", "F": "F"}.get(cls, cls)


@dataclass(frozen=True)
class Tok:
    text: str
    start: int
    end: int
    cls: str   # word class; "§" theme mention, "¤" masked detail, "." punctuation


_TOK = re.compile(r"§+|¤+|[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'’-]*[A-Za-zÀ-ÿ]|[A-Za-zÀ-ÿ]|\d[\d,.]*(?:\s?%)?|[^\s\w]")


def tokens(masked: str, s: int, e: int) -> list[Tok]:
    out = []
    for m in _TOK.finditer(masked, s, e):
        t = m.group()
        if t[0] == "§":
            cls = "§"
        elif t[0] == "¤":
            cls = "¤"
        elif not (t[0].isalnum()):
            cls = "."
        else:
            cls = word_class(t)
        out.append(Tok(t, m.start(), m.end(), cls))
    return out


NOUNISH = ("N", "A", "G", "P")


def _verb_before_object(toks: list[Tok], j: int, k: int) -> bool:
    """A word after a plural noun that a determiner follows is the verb of a clause, not part of the phrase
    ("reviews that mention several themes split their unit"): no compound noun goes on with "their", "the"."""
    return (k > j and toks[k].cls == "N" and toks[k - 1].cls == "N" and toks[k - 1].text.lower().endswith("s")
            and k + 1 < len(toks) and toks[k + 1].cls == "D")


def np_right(toks: list[Tok], i: int) -> tuple[int, int] | None:
    """The noun phrase that starts at toks[i] (determiners skipped): (first, last + 1) word indexes, or None."""
    j = i
    while j < len(toks) and toks[j].cls == "D":
        j += 1
    k = j
    while k < len(toks) and not _verb_before_object(toks, j, k) and (toks[k].cls in NOUNISH or (toks[k].cls == "R" and k + 1 < len(toks)
                                                         and toks[k + 1].cls in ("A", "N", "G"))   # "fast shipping"
                             or (toks[k].cls == "V" and toks[k].text.lower() not in VERBS and k + 1 < len(toks)
                                 and toks[k + 1].cls == "N")):   # "live music", "wait staff": a verb form as modifier
        k += 1
    # the phrase ends in its last noun ("hair loss", not "hair loss common"; an -ing noun counts: "fast shipping")
    while k > j and toks[k - 1].cls not in ("N", "G"):
        k -= 1
    if k > j and toks[k - 1].cls == "G" and k - 1 == j:
        k -= 1   # a lone -ing form is a verb ("making it …"), not a phrase
    return (j, k) if k > j else None


def np_left(toks: list[Tok], i: int) -> tuple[int, int] | None:
    """The noun phrase that ends at toks[i - 1]: (first, last + 1), or None when it is not a noun."""
    k = i
    if k <= 0 or toks[k - 1].cls != "N":
        return None
    j = k
    while j > 0 and toks[j - 1].cls in NOUNISH:
        j -= 1
    return (j, k)


_LEAD = set("""and but so yet or also still then next finally overall meanwhile however moreover further furthermore
notably similarly likewise together instead otherwise thus hence therefore indeed""".split())
_PP = ("of", "on", "about", "with", "for", "in", "during", "from", "around", "over")


def leading_np(masked: str, lo: int, hi: int) -> tuple[int, int] | None:
    """The noun phrase a clause opens with, as a character span (with one prepositional phrase:
    "errors on the consumer reports"), or None when the clause opens with a verb, a relative
    pronoun, a preposition or a pronoun (", which puts it in …", ", make up the low bin",
    "Further down the list …"): then the clause has no subject of its own."""
    toks = tokens(masked, lo, hi)
    k = 0
    while k < len(toks) and (toks[k].cls == "." or toks[k].text.lower() in _LEAD
                             or (toks[k].cls == "R" and k + 1 < len(toks) and toks[k + 1].cls in ("D", "N", "A", "."))):
        k += 1
    if k >= len(toks) or toks[k].cls in ("V", "F", "§", "¤", "C", "X"):
        return None
    np = np_right(toks, k)
    if np is None:
        return None
    a, b = np
    if a == k and b < len(toks) and toks[b].cls in ("D", "F") and toks[b].text.lower() not in _PP + ("and", "or"):
        return None   # ", form the low bin", "make up the …": a bare word before a determiner is a verb
    if b + 1 < len(toks) and toks[b].text.lower() in _PP:
        more = np_right(toks, b + 1)
        if more is not None:
            b = more[1]
    return toks[a].start, toks[b - 1].end
