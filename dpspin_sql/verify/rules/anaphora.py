"""Anaphora: a claim whose subject (or compared side) is a pronoun or anaphor is checked as if the theme were named.

"Taste good ranks second. It is more common than outdoor seating." makes the same claim as
"Taste good is more common than outdoor seating." This step finds the anaphors that carry
a claim — *it, this, that, they, these, those, them, both, its, their*, *this (that, the,
the same) theme / category / …*, *the former / the latter*, *the first (second, …) of these*,
*these two (themes)*, *the pair* — and resolves each to the theme(s) it refers to by a fixed
public rule (docs/VERIFIER.md, *Anaphora*):

* the **antecedent scope** is the part of the anaphor's sentence before it when that names a
  theme, else the previous sentence; a pronoun never refers to the other side of its own
  claim (the themes after it in its clause, the subject of the comparison it is the object of);
* a **singular** anaphor takes the only theme of the scope, else the theme that is the subject
  of a clause of the scope (the first mention of its clause, not conjoined with another);
* a **plural** anaphor takes the scope's conjunction ("A and B"): the subject conjunction,
  else each conjunction (a reading each), else every theme of the scope; *both* / *these two*
  need that many;
* *the former / the latter* take the first / last theme of that group, *the first / second …
  of these* the one at that place.

Each resolved anaphor becomes a mention (at the anaphor's own span, masked like a named theme,
`Mention.anaphor` set) that every later rule reads. When several readings remain, `check` returns
one fork of the check per reading (all combinations up to MAX_READINGS, else readings that between
them take every alternative of every anaphor); the orchestrator runs the later rules on each, and
a violation under any reading rejects the claim. Left alone: an anaphor that carries no claim,
expletives, a pronoun with no theme in scope or after themes in general of its number ("a theme …
it") or after people or records. A singular subject with no theme before it means the theme(s)
after its clause ("This theme ranks first: dry skin"); with none there either, a compared or
ranked pronoun or a theme noun phrase cannot be checked and is rejected with its claim's code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..context import Check
from ..lexicon import Mention
from ..numeric import numbers
from ..text import is_enumerator, span_of
from ..vocab import BIN_PATTERNS, PLAN_NOUNS, bin_word_applies
from . import comparisons, ranks

MAX_READINGS = 16

_ADV = (r"(?:also|still|only|clearly|just|barely|slightly|far|well|easily|likewise|similarly|too|again|even|roughly|"
        r"nearly|almost|notably|actually|indeed|really|now|then|both|all|each|each\s+also|comfortably|narrowly|"
        r"substantially|significantly|considerably|somewhat|noticeably|consistently|not|never|no\s+longer|therefore|"
        r"thus|however|in\s+turn|in\s+fact|by\s+contrast)")
# finite verbs and auxiliaries a claim about a theme is made with (after a demonstrative or a theme noun phrase)
_VERBS = (r"(?:is|was|are|were|'s|'re|has|have|had|ranks?|comes?|came|sits?|sat|stands?|stood|accounts?|accounted|"
          r"appears?|appeared|makes?\s+up|made\s+up|holds?|held|represents?|represented|leads?|led|trails?|trailed|"
          r"lags?|lagged|outnumbers?|outnumbered|outranks?|outranked|exceeds?|exceeded|surpass(?:es)?|surpassed|"
          r"outpaces?|outpaced|dwarfs?|eclipses?|follows?|followed|falls?|fell|lies|lie|lay|remains?|remained|"
          r"stays?|stayed|carries|carry|carried|draws?|drew|gets?|got|receives?|received|reaches|reach|reached|"
          r"places?|finish(?:es)?|finished|belongs?|occurs?|occurred|covers?|captures?|shows?\s+up|tops?|topped|"
          r"heads?|headed|beats?|matches|match|ties|tie|tied|shares?|shared|totals?|totalled|totaled|registers?|"
          r"attracts?|gathers?|earns?|scores?|features?|dominates?|comprises?|constitutes?|differs?|differ|"
          r"can|could|may|might|would|will|should|must|do|does|did)")
_VERB_FIRST = re.compile(rf"[\s,;:—–-]*(?:{_ADV}\s+){{0,2}}(?:{_VERBS}\b|$)", re.I)  # "…, is more common than it"
_VERB_AFTER = re.compile(rf"\s+(?:{_ADV}\s+){{0,2}}{_VERBS}\b", re.I)
# a clause-initial position: sentence or clause start, after a conjunction, or after a complementizer (pronouns)
_LEAD = (r"(?:\s*(?:and|but|so|yet|or|while|whereas|although|though|because|since|as|where|then|also|still|meanwhile|"
         r"moreover|however|overall|finally|next|notably|similarly|likewise|together|here|now|thus|hence|therefore|"
         r"indeed|instead|otherwise|in\s+turn|in\s+contrast|by\s+contrast|in\s+addition|at\s+the\s+same\s+time|"
         r"in\s+fact|in\s+particular|above\s+all|of\s+course|after\s+all|even\s+so|on\s+the\s+other\s+hand|"
         r"in\s+other\s+words|by\s+comparison|in\s+comparison|as\s+expected|for\s+(?:its|their)\s+part|"
         r"[a-z]+ly|(?:at|with)\s+(?:about\s+|around\s+|roughly\s+|[~≈]\s*)?[\d.,]+\s*%?)\b\s*,?)*\s*$")
_CONJ = r"\b(?:and|but|yet|so|or|while|whereas|although|though|because|since)\b"
_SUBJECT_POS = re.compile(r"(?:^|[,;:—–(]|\s-\s|^\s*(?:[-*•]|\d{1,2}[.)])\s|" + _CONJ + ")" + _LEAD, re.I)
_SUBJECT_POS_PRONOUN = re.compile(r"(?:^|[,;:—–(]|\s-\s|^\s*(?:[-*•]|\d{1,2}[.)])\s|\b(?:that|meaning|which\s+means)\b|"
                                  + _CONJ + ")"
                                  + _LEAD, re.I)
# "It is worth noting that …", "it seems", "it should be noted": no reference
_EXPLETIVE = re.compile(
    r"(?:it|this)\s+(?:is|was|'s|would\s+be|may\s+be|might\s+be|could\s+be|can\s+be|should\s+be|must\s+be|will\s+be|"
    r"remains|becomes)\s+(?:(?:not|also|still|therefore|thus|quite|very|especially|particularly|equally|hence|however|"
    r"perhaps|probably|certainly|again|more|most|less|so)\s+)*(?:worth|important|notable|noteworthy|clear|evident|"
    r"obvious|apparent|likely|unlikely|possible|impossible|unclear|striking|interesting|surprising|unsurprising|"
    r"true|fair|safe|reasonable|tempting|hard|difficult|easy|useful|helpful|necessary|essential|key|crucial|"
    r"advisable|wise|best|better|noted|stressed|emphasi[sz]ed|recalled|remembered|seen|said|expected|"
    r"no\s+surprise|a\s+(?:reminder|sign|signal|caveat|snapshot|single|point|good\s+idea|matter|question)|because|"
    r"why|how|what|where|whether|that|to|not\s+(?:clear|possible|known))\b"
    r"|it\s+(?:seems|seemed|appears|appeared|turns\s+out|turned\s+out|follows|helps|pays|bears|goes\s+without|"
    r"means|suggests|indicates|implies|shows|reflects|may\s+(?:seem|appear)|should\s+(?:be\s+)?not(?:ed)?|"
    r"(?:should|must|can|may|might|could|will|would)\s+(?:also\s+)?be\s+(?:noted|stressed|emphasi[sz]ed|said|argued|"
    r"seen|observed|recalled|remembered|added|read|understood))\b"
    r"|this\s+(?:means|suggests|indicates|implies|shows|reflects|reminds|matters|is\s+because|is\s+why|is\s+how|is\s+what|"
    r"is\s+consistent|is\s+in\s+line|is\s+expected|is\s+not\s+surprising)\b"
    r"|that\s+(?:is|'s)\s*,|that\s+said\b|that\s+is\s+to\s+say\b", re.I)
# what an object anaphor must not be followed by: a clause of its own ("than it used to be"), a modifier ("those about")
_OBJ_STOP = re.compile(r"\s*(?:[\w'-]+\s+)?(?:used|was|is|were|are|did|does|do|had|has|have|would|will|could|can|might|"
                       r"may|once|ever|seems?|seemed|appears?|appeared|looks?|gets?|got|about|of|with|in\s+(?!support|"
                       r"size|mass|share|volume|count)|for|that|which|who|whose|from|on|mentioning|describing|citing|"
                       r"regarding|concerning)\b", re.I)
_OBJ_STOP_PRONOUN = re.compile(r"\s+(?:used|was|is|were|are|did|does|do|had|has|have|would|will|could|can|might|may|"
                               r"once|ever|seems?|appears?|looks?|gets?|got|about|of|with|for|that|which|who|from|on|"
                               r"mentioning|describing|citing|regarding|concerning)\b", re.I)
_NOUNS = r"(?:theme|category|topic|issue|item|atom|label|concept|area|subject|complaint\s+type|entry)"
_NOUNS_PL = r"(?:themes|categories|topics|issues|items|atoms|labels|concepts|areas|subjects|complaint\s+types|entries)"
_NUMW = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6}
_IDX = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}
# the forms, longest first: (regex, kind); kind: sg | pl | former | latter | idx | poss_sg | poss_pl
_FORMS = [
    (re.compile(rf"\bthe\s+(?P<idx>first|second|third|fourth|fifth|last)\s+(?:one\s+)?of\s+(?:these|those|them|the\s+"
                rf"(?:two|three|four|five|pair))(?:\s+(?:two|three|four|five))?(?:\s+{_NOUNS_PL})?\b", re.I), "idx"),
    (re.compile(rf"\bthe\s+(?P<fl>former|latter)(?:\s+(?:{_NOUNS}|one))?\b(?!\s+(?:two|three|pair|group|{_NOUNS_PL})\b)",
                re.I), "fl"),
    (re.compile(r"\b(?:both|each|all)\s+of\s+(?:them|these|those|the\s+two)\b", re.I), "pl"),
    (re.compile(rf"\b(?:these|those|the|both)\s+(?P<n>two|three|four|five|six|[2-6](?![.,]\d))(?:\s+{_NOUNS_PL})?\b", re.I),
     "pl"),
    (re.compile(rf"\b(?:these|those|both)\s+{_NOUNS_PL}\b|\bthe\s+(?:pair|former\s+two|latter\s+two)\b", re.I), "pl"),
    (re.compile(rf"\b(?:this|that|the\s+same)\s+(?:{_NOUNS}|one)\b|\bthe\s+{_NOUNS}\b", re.I), "sg"),
    (re.compile(r"\b(?P<poss>its|their)\s+(?:\d+(?:\.\d+)?\s*(?:%|percent)\s+)?(?:(?:released|noisy|own|estimated|public|"
                r"overall|total|relative|displayed|accuracy|confidence)\s+)?"
                r"(?:share|shares|support|mass|masses|count|counts|rank|ranks|ranking|position|positions|bin|bins|"
                r"frequency|prevalence|volume|mentions|interval|intervals|value|values|number|numbers|percentage|"
                r"proportion|place|spot)\b", re.I), "poss"),
    (re.compile(r"\b(?:it|this|that)\b", re.I), "sg"),
    (re.compile(r"\b(?:they|these|those|them|both)\b", re.I), "pl"),
]
_PEOPLE = re.compile(r"\b(?:consumers|customers|reviewers|users|people|persons|guests|diners|respondents|clients|"
                     r"borrowers|patients|buyers|shoppers|visitors|members|complainants|writers|posters|travell?ers|"
                     r"homeowners|tenants|renters|cardholders|students|parents)\b", re.I)
_RECORDS_BARE = re.compile(r"\b(?:reviews|complaints|reports|records|posts|comments|tickets|narratives|submissions|"
                           r"documents|responses)\b(?!\s+(?:about|of|on|regarding|concerning|mentioning|citing|describing|"
                           r"over|related\s+to|that\s+mention|which\s+mention|tagged|with)\b)", re.I)
# a mention is its clause's subject when only these stand before it in the clause
_OPENER = re.compile(r"^[\s,;:—–()\-*•#>\d.]*(?:(?:and|but|so|yet|while|whereas|although|though|because|since|then|"
                     r"also|still|meanwhile|moreover|however|overall|finally|next|notably|similarly|likewise|together|"
                     r"here|now|only|even|the|a|an|this|that|theme|category|topic|issue|label|reviews?|complaints?|"
                     r"mentions?|reports?|records?|about|of|on|mentioning|regarding|concerning|describing|citing|"
                     r"by\s+contrast|in\s+contrast|in\s+turn|in\s+addition)\b[\s,]*)*$", re.I)
# themes in general, which a pronoun of the same number may refer to ("a theme … it", "two themes … their masses")
_GENERIC = {"sg": re.compile(rf"\b(?:a|an|each|any|every|one|another|no)\s+(?:[\w-]+\s+)?{PLAN_NOUNS}\b", re.I),
            "pl": re.compile(r"\b(?:themes|topics|atoms|issues|categories|concepts|items|entries|areas|subjects|"
                             r"complaint\s+types|phrases|labels)\b", re.I)}
_GLUE = re.compile(r"\s*(?:\([^()§]*\))?\s*(?:,\s*(?:and|or|&)?|and|or|&|as\s+well\s+as|plus|along\s+with|"
                   r"together\s+with)"
                   r"\s*(?:both\s+|also\s+)?$", re.I)


@dataclass
class Anaphor:
    start: int
    end: int
    text: str
    kind: str               # sg | pl | former | latter | idx
    sentence: int
    position: str           # subject | object | possessive
    n: int = 0              # the number a plural states ("these two", "both": 2)
    idx: int = 0
    noun: bool = False      # a theme noun phrase ("this theme", "the latter"): never the plan or a person
    exclude_before: int = -1  # object of a comparison: the subject group before the cue is not its referent
    cue: tuple[str, int] | None = None
    ident: int = 0
    candidates: list[list[frozenset]] | None = field(default_factory=list)  # _alternatives: None = not a reference


# ---------------------------------------------------------------- claim cues
def _cue(c: Check, s: int, e: int) -> tuple[str, int] | None:
    """The first claim in masked[s:e] and the code it is judged under (comparison, rank, bin, number, interval)."""
    txt = c.masked
    found: list[tuple[int, str]] = []
    for rx in (comparisons.RATIO, comparisons.GAP, comparisons.GT, comparisons.LT, comparisons.SIM):
        m = rx.search(txt, s, e)
        if m:
            code = "unsupported_comparison"
            if rx in (comparisons.GT, comparisons.LT) \
                    and re.match(r"\s*(?:about|around|roughly|nearly|almost)?\s*[\d~]", txt[m.end():m.end() + 16]):
                code = "unsupported_number"  # "more than 480": a hedged number
            found.append((m.start(), code))
    for rx, kind in ranks.PATTERNS:
        for m in rx.finditer(txt, s, e):
            if not ranks._skip(kind, m, txt, *m.span()):
                found.append((m.start(), "wrong_rank"))
                break
    for _, needs, rx in BIN_PATTERNS:
        for m in rx.finditer(txt, s, e):
            if bin_word_applies(txt, m.start(), m.end(), needs):
                found.append((m.start(), "wrong_bin"))
                break
    for n in numbers(txt[s:e]):
        if not n.ordinal and not is_enumerator(c.text, s + n.start, s + n.end):
            found.append((s + n.start, "unsupported_number"))
            break
    m = re.search(r"±|\+/-|plus\s+or\s+minus|margin\s+of\s+error", txt[s:e], re.I)
    if m:
        found.append((s + m.start(), "unsupported_interval"))
    if not found:
        return None
    pos, code = min(found)
    return code, pos


def _cue_ends(c: Check, ss: int, se: int) -> list[tuple[int, int]]:
    """Comparison cues of the sentence: (start, end) — an anaphor right after one is the compared side."""
    out = []
    for rx in (comparisons.RATIO, comparisons.GT, comparisons.LT, comparisons.SIM, comparisons.GAP):
        out += [m.span() for m in rx.finditer(c.masked, ss, se)]
    return out


# ---------------------------------------------------------------- detection
def _named(c: Check) -> list[Mention]:
    return [m for m in c.mentions if not m.anaphor]


def detect(c: Check) -> list[Anaphor]:
    txt = c.masked
    named = _named(c)
    out: list[Anaphor] = []
    taken: list[tuple[int, int]] = []
    for k, (ss, se) in enumerate(c.sents):
        cues = _cue_ends(c, ss, se)
        for rx, kind in _FORMS:
            for m in rx.finditer(txt, ss, se):
                s, e = m.span()
                if any(s < b and a < e for a, b in taken) or "§" in m.group() or "¤" in m.group():
                    continue
                a = _classify(c, m, kind, k, ss, se, cues, named)
                if a is None:
                    continue
                taken.append((s, e))
                out.append(a)
    out.sort(key=lambda a: a.start)
    for i, a in enumerate(out):
        a.ident = i
    return out


def _classify(c: Check, m: re.Match, kind: str, k: int, ss: int, se: int, cues, named) -> Anaphor | None:
    txt = c.masked
    s, e = m.span()
    word = m.group().lower()
    before, after = txt[ss:s], txt[e:se]
    gd = m.groupdict()
    a = Anaphor(s, e, c.text[s:e], "sg", k, "subject")
    if kind == "idx":
        a.kind, a.idx, a.noun = "idx", _IDX[gd["idx"].lower()], True
    elif kind == "fl":
        a.kind, a.noun = gd["fl"].lower(), True
    elif kind == "pl":
        a.kind = "pl"
        n = gd.get("n")
        a.n = _NUMW.get((n or "").lower(), 2 if word.startswith("both") or "pair" in word else 0)
        a.noun = bool(re.search(_NOUNS_PL + r"$|pair$|two$", word, re.I)) or a.n > 0
    elif kind == "poss":
        a.kind, a.position = ("pl" if gd["poss"].lower() == "their" else "sg"), "possessive"
    else:
        a.noun = bool(re.search(_NOUNS + r"$|one$", word, re.I))
    # the compared side: right after a comparison cue ("than it", "behind them", "similar to this theme")
    cue = next(((cs, ce) for cs, ce in cues if ce <= s and re.fullmatch(r"\s*(?:(?:to|with)\s+)?", txt[ce:s], re.I)),
               None)
    if cue is None:  # "the gap between it and X": after "between"
        g = re.search(r"\b(?:between|separating)\s+(?:§+\s+and\s+)?$", before, re.I)
        if g and any(cs <= ss + g.start() < ce for cs, ce in cues):
            cue = (ss + g.start(), ss + g.end())
    if a.position != "possessive" and cue is not None:
        stop = _OBJ_STOP if a.noun else _OBJ_STOP_PRONOUN
        if stop.match(after) or re.match(r"\s*§", after):
            return None
        if word in ("this", "that", "these", "those") and re.match(r"\s+[a-z]", after, re.I) \
                and not re.match(r"\s+(?:by|and|or|but|in\s+(?:support|size|mass|share))\b", after, re.I):
            return None  # "than those reviews", "than that figure"
        a.position, a.exclude_before, a.cue = "object", cue[0], ("unsupported_comparison", cue[0])
        return a
    if a.position == "possessive":
        a.cue = _cue(c, e, _next_named(named, e, se))
        return a if a.cue else None
    if word == "them":
        return None
    # the subject of a claim
    pronoun = word in ("it", "they")
    if not (_SUBJECT_POS_PRONOUN if pronoun else _SUBJECT_POS).search(before):
        return None
    if re.match(r"\s*(?:§|[,(—–]\s*§|[\"“‘']|\s*-\s*§)", after):
        return None  # "the theme dry skin", "this theme, dry skin, …": an apposition names the theme
    if not pronoun and not _VERB_AFTER.match(after) and not (a.kind == "pl" and a.n and re.match(r"\s*[,;.]", after)):
        return None  # "this means", "the theme ranked third", "these reviews", "the two most common themes"
    if _EXPLETIVE.match(txt, s, se):
        return None
    if re.match(r"\s+(?:ranked|listed|named|called|labell?ed|mentioned|described|with|of|in|at|among|that|which|who)\b",
                after, re.I):
        return None
    a.cue = _cue(c, _prev_named(named, s, ss), s) or _cue(c, e, _next_named(named, e, se))
    return a if a.cue else None


def _next_named(named: list[Mention], pos: int, se: int) -> int:
    return min([m.start for m in named if pos <= m.start < se] + [se])


def _prev_named(named: list[Mention], pos: int, ss: int) -> int:
    return max([m.end for m in named if ss <= m.end <= pos] + [ss])


# ---------------------------------------------------------------- resolution
def _groups_of(c: Check, ms: list[Mention]) -> list[list[Mention]]:
    """Runs of mentions joined as a list ("A, B and C", "both A and B"); virtual siblings are one run."""
    runs: list[list[Mention]] = []
    for m in ms:
        if runs:
            last = runs[-1][-1]
            same = m.anaphor and last.anaphor and m.start == last.start
            if same or (m.start >= last.end and _GLUE.fullmatch(c.masked[last.end:m.start])):
                runs[-1].append(m)
                continue
        runs.append([m])
    return runs


def _distinct(ms: list[Mention]) -> list[frozenset]:
    out: list[frozenset] = []
    for m in ms:
        if m.atoms not in out:
            out.append(m.atoms)
    return out


def _subject_runs(c: Check, ms: list[Mention]) -> list[list[Mention]]:
    """Runs that stand first in their clause (only openers before them): the clauses' subjects."""
    out = []
    for run in _groups_of(c, ms):
        first = run[0]
        k = c.sentence_of(first.start)
        cs, _ = span_of(c.clauses_of(k), first.start, c.sents[k])
        if _OPENER.match(c.masked[cs:first.start]):
            out.append(run)
    return out


_BARE_ANSWER = re.compile(r"\s*(?:[-*•>]\s*)*(?:(?:a|answer)\s*[:.]\s*)?(?:yes|no|yep|nope|indeed|correct|right|not\s+quite|"
                          r"not\s+really|partly|mostly|probably|likely|not\s+with\s+confidence)\s*[.!,;]?\s*", re.I)


def _scope(c: Check, a: Anaphor, mentions: list[Mention], back: bool = False) -> tuple[list[Mention], int]:
    """The antecedent scope: the mentions before the anaphor in its sentence, else (or with `back`) those of the
    previous sentence."""
    ss, se = c.sents[a.sentence]
    here = [] if back else [m for m in mentions if ss <= m.start and m.end <= a.start]
    if a.position == "object":  # not the subject of its own comparison: the themes before the cue in its clause,
        cs, _ = span_of(c.clauses_of(a.sentence), a.exclude_before, (ss, se))  # else the last before it when the
        subject = [m for m in here if cs <= m.start and m.end <= a.exclude_before]  # clause opens on its verb
        if not subject and _VERB_FIRST.match(c.masked, cs, a.exclude_before):
            subject = [m for m in here if m.end <= a.exclude_before][-1:]
        here = [m for m in here if m.atoms not in {x.atoms for x in subject}]
    if here:
        return here, a.sentence
    if a.sentence == 0:
        return [], -1
    k = a.sentence - 1
    while k > 0 and _BARE_ANSWER.fullmatch(c.masked[c.sents[k][0]:c.sents[k][1]]):
        k -= 1   # "Is A clearly the top theme? Yes. At 578.5 it is far ahead": the answer word names nothing
    if k > 0 and not any(c.sents[k][0] <= m.start < c.sents[k][1] for m in mentions) \
            and any(c.sents[k - 1][0] <= m.start < c.sents[k - 1][1] for m in mentions):
        k -= 1   # "Is A more common than B? We can't say. The two are 2.7 apart": one sentence naming nothing between
    ps, pe = c.sents[k]
    return [m for m in mentions if ps <= m.start < pe], k


def _excluded(c: Check, a: Anaphor, mentions: list[Mention]) -> set[frozenset]:
    """A pronoun is never the other side of its own claim: the themes after it in its clause."""
    if a.position == "possessive":
        return set()
    k = a.sentence
    _, ce = span_of(c.clauses_of(k), a.start, c.sents[k])
    return {m.atoms for m in mentions if a.end <= m.start < ce and not (m.anaphor and m.start == a.start)}


def _alternatives(c: Check, a: Anaphor, mentions: list[Mention]) -> list[list[frozenset]] | None:
    """The readings of one anaphor: a list of alternatives, each a list of referents (one per theme).

    [] — no theme to refer to; None — not a theme reference at all (left alone).
    """
    ss = c.sents[a.sentence][0]
    if not a.noun and not any(ss <= m.start and m.end <= a.start for m in mentions) \
            and _GENERIC["pl" if a.kind == "pl" else "sg"].search(c.masked, ss, a.start):
        return None  # "Two themes count as distinct only when their masses differ by the margin": themes in general
    ex = _excluded(c, a, mentions)
    for back in (False, True):  # a group anaphor looks back a sentence when its own names no group
        scope, k = _scope(c, a, mentions, back)
        scope = [m for m in scope if m.atoms not in ex]
        found = _referents(c, a, scope, k)
        if found or a.kind not in ("pl", "former", "latter", "idx") or k != a.sentence:
            break
    if found == [] and a.position == "subject" and a.kind == "sg":  # "This theme ranks first: dry skin"
        _, ce = span_of(c.clauses_of(a.sentence), a.start, c.sents[a.sentence])
        later = _distinct([m for m in mentions if ce <= m.start < c.sents[a.sentence][1]])
        found = [[t] for t in later]
    return found


_QUALIFIER = re.compile(r"[\s-]+(?:themes|topics|categories|issues|items|complaint\s+types|complaints|reviews|problems)\b", re.I)


def _referents(c: Check, a: Anaphor, scope: list[Mention], k: int) -> list[list[frozenset]] | None:
    """_alternatives within one scope. A mention that qualifies a plural plan noun names a group, not a theme
    ("A and B are the two credit reporting themes; the former …": credit reporting is no referent)."""
    scope = [m for m in scope if not _QUALIFIER.match(c.masked, m.end)] or scope
    themes = _distinct(scope)
    if not themes:
        # only a theme can be compared or ranked; "it" with a number may be the data ("It covers 8,000 reviews")
        themed = a.position == "subject" and a.cue is not None and a.cue[0] in ("unsupported_comparison", "wrong_rank")
        return [] if (a.noun or a.position == "object" or themed) else None
    if a.kind in ("pl", "former", "latter", "idx"):
        if a.kind == "pl" and not a.noun and k >= 0:
            ss = c.sents[k][0]
            head = c.masked[ss:scope[0].start] if scope else ""
            if _PEOPLE.search(head) or _RECORDS_BARE.search(head):
                return None  # "Customers praise A and B. They …": the people, not the themes
        runs = [r for r in _groups_of(c, scope) if len(_distinct(r)) >= 2]
        subj = [r for r in _subject_runs(c, scope) if len(_distinct(r)) >= 2]
        options = subj[:1] if len(subj) == 1 else runs if runs else [scope]
        groups = [_distinct(r) for r in options]
        if a.n:
            fit = [g for g in groups if len(g) == a.n]
            groups = fit or ([themes] if len(themes) == a.n else [])
        groups = [g for g in groups if len(g) >= 2]
        if not groups:
            return [] if a.noun and a.kind != "pl" else None
        if a.kind == "former":
            return [[g[0]] for g in groups]
        if a.kind == "latter":
            return [[g[-1]] for g in groups]
        if a.kind == "idx":
            return [[g[a.idx]] for g in groups if -len(g) <= a.idx < len(g)] or []
        return groups
    if len(themes) == 1:
        return [[themes[0]]]
    subjects = _distinct([r[0] for r in _subject_runs(c, scope) if len(_distinct(r)) == 1])
    if len(subjects) == 1:
        return [[subjects[0]]]
    return [[t] for t in (subjects or themes)]


def _label(c: Check, atoms: frozenset) -> str:
    return " / ".join(c.lex.label_of[x] for x in sorted(atoms))


def _virtual(c: Check, a: Anaphor, referents: list[frozenset]) -> list[Mention]:
    return [Mention(a.start, a.end, r, f"{a.text} [{_label(c, r)}]", anaphor=a.text, group=a.ident) for r in referents]


def readings(c: Check, anaphors: list[Anaphor]) -> list[list[Mention]]:
    """The resolutions of the anaphors, in text order: every combination of their alternatives when there are
    at most MAX_READINGS, else readings that between them take every alternative of every anaphor."""
    def alternatives(a: Anaphor, chosen: list[Mention]):
        a.candidates = _alternatives(c, a, sorted(_named(c) + chosen, key=lambda m: (m.start, m.end)))
        return a.candidates

    out: list[list[Mention]] = []

    def walk(i: int, chosen: list[Mention]) -> None:
        if len(out) > MAX_READINGS:
            return
        if i == len(anaphors):
            out.append(chosen)
            return
        alts = alternatives(anaphors[i], chosen)
        for alt in alts or [None]:
            walk(i + 1, chosen + (_virtual(c, anaphors[i], alt) if alt else []))

    walk(0, [])
    if len(out) <= MAX_READINGS:
        return out
    out, j, widest = [], 0, 1
    while j < min(widest, MAX_READINGS):  # reading j takes alternative j of each anaphor (modulo their number)
        chosen: list[Mention] = []
        for a in anaphors:
            alts = alternatives(a, chosen)
            if alts:
                widest = max(widest, len(alts))
                chosen = chosen + _virtual(c, a, alts[j % len(alts)])
        out.append(chosen)
        j += 1
    return out


def apply(c: Check, virtual: list[Mention]) -> None:
    """Add one reading's resolved anaphors to the mentions every later rule reads, masked like a named theme."""
    c.mentions = sorted(c.mentions + virtual, key=lambda m: (m.start, m.end))
    for m in virtual:
        c.mask(m.start, m.end, "§")
    c._respective = None


def check(c: Check) -> list[Check] | None:
    """Find and resolve the anaphors; reject a theme reference that has no theme to refer to.

    Returns one fork per reading (the orchestrator runs the later rules on each), or None
    when no anaphor was resolved."""
    anaphors = detect(c)
    found = readings(c, anaphors)
    for a in anaphors:
        if a.candidates == [] and a.cue is not None:
            k = a.sentence
            start = min(a.start, a.cue[1])
            _, ce = span_of(c.clauses_of(k), max(a.end, a.cue[1]), c.sents[k])
            end = max(len(c.text[:ce].rstrip(" .;:!?,")), a.end)
            c.add(a.cue[0], start, end, f'"{a.text}" refers to no theme named before it, so the claim cannot be '
                  "checked; name the theme")
            c.consume(start, end)
    if not any(found):
        return None
    forks = []
    for virtual in found:
        f = c.fork()
        apply(f, virtual)
        forks.append(f)
    return forks
