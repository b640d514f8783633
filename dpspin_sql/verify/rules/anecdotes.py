"""Anecdotes (`record_detail`): any reference to one individual's experience or statement.

Aggregate prose speaks about many records ("customers report …", "complaints
describe …"). A singular reference to one protected person or one record — a
determiner, modifiers and a singular person or record noun, followed by what makes it
an event (a possessive, *whose*, *named*, a finite verb) — reports one record, whatever
the verb: "a customer whose card was declined", "one diner's steak", "a reviewer in
Austin complained". Third-person singular pronouns and first-person singular narration
do the same. The grammar, not a phrase list, decides (docs/VERIFIER.md, *Anecdotes*).
"""
from __future__ import annotations

import re

from ..context import Check
from ..numeric import NUMWORD
from ..vocab import METHOD, PLAN_NOUNS, is_bound_statement
from .details import QUOTE_RE

PERSONS = set("""customer consumer reviewer user person client borrower complainant complainer guest diner patient man
woman individual buyer purchaser shopper homeowner tenant renter cardholder applicant member subscriber caller visitor
traveler traveller student parent mother father mom dad wife husband son daughter veteran senior retiree resident
victim writer poster commenter filer family lady gentleman guy girl boy friend couple""".split())
RECORDS = set("review complaint record report post comment ticket case submission narrative story rating".split())
# after "a / an" only the nouns that always name one record ("a report", "a record high", "a case" are other things)
_PLAIN_RECORDS = set("review complaint post comment ticket submission narrative".split())
_TWO_WORD_PERSONS = {("account", "holder")}
_PRONOUNS = {"he", "she", "him", "his", "her", "hers", "himself", "herself"}
_FIRST = {"my", "mine", "myself", "me"}
_STRONG = [("one", "particular"), ("one", "such"), ("a", "single"), ("a", "certain"), ("the", "same"),
           ("one",), ("another",), ("this",), ("that",)]
_RECORD_DETS = [("one", "particular"), ("one", "such"), ("a", "single"), ("a", "certain"), ("one",), ("another",),
                ("a",), ("an",)]
_GENERIC = {"typical", "average", "median", "hypothetical", "generic", "any", "every", "each", "ideal", "prospective"}
_FUNCTION = set("""of in on at to for by from and or but with than that which who whom whose is are was were be been
have has had do does did not no the a an this these those there it its their they them each every per any all""".split())
_COMPOUND = set("""service services support level base experience experiences data account accounts satisfaction care
review reviews complaint complaints feedback segment segments group groups journey side perspective view count counts
contribution contributions record records id identifier identifiers type types theme themes category categories unit
units name names""".split())
_MODALS = {"can", "could", "would", "will", "may", "might", "should", "must", "'d", "shall"}
_AUX_PAST = {"was", "were", "had", "did"}
_AUX = _AUX_PAST | {"is", "has", "does", "gets", "got"} | _MODALS
_REPORTING = set("""says writes notes reports describes complains mentions claims explains recalls adds states tells shares
recounts posts alleges insists argues remarks comments warns admits""".split())
_NOUNLIKE = {"reports", "posts", "comments", "notes", "shares", "mentions"}  # "the consumer reports" is a noun phrase
_IRREGULAR_PAST = set("""said wrote told got had paid bought lost found saw felt went came took gave made left sent spent ate
thought knew kept ran drove heard brought began broke chose forgot held met put sat stood understood won wore threw sold
sought swore spoke fell grew rose became did was were drank hid hung meant quit rang sang slept woke tore taught caught
fought bit built burnt dealt dug fed fled flew froze led lent lit rode shook shot shut slid split stole stuck struck
swam upset hurt cut hit set cost""".split())
_NOT_PAST = {"need", "feed", "seed", "speed", "bed", "red", "shed", "indeed", "exceed", "proceed", "succeed", "hundred",
             "embed", "breed", "bred", "based", "related", "used", "named", "called", "aged"}
_PREPS = {"in", "from", "with", "at", "of", "on", "near", "for", "living", "based"}
_ADVERBS = {"also", "even", "just", "only", "still", "later", "then", "once", "reportedly", "apparently", "actually",
            "never", "recently", "finally", "eventually", "repeatedly", "initially"}
_AUTHORIAL = set("""summarize summarise note find found count treat read interpret recommend suggest caution conclude
highlight emphasize emphasise estimate see would""".split())
_AUTHORIAL_NOUNS = set("""view assessment reading opinion analysis summary estimate interpretation judgment judgement
recommendation recommendations conclusion conclusions sense take reading""".split())
_PLAN_REF = re.compile(rf"§|\b(?:{PLAN_NOUNS}|plan|release|summary|margin|support|rank|bin|ε|epsilon|noise|mass)\b", re.I)
_ONE_IN_N = re.compile(rf"\s+(?:in|out\s+of)\s+(?:every\s+)?(?:\d+|{NUMWORD})\b", re.I)
_TOKEN = re.compile(r"§+|¤+|[A-Za-z][\w'’-]*|\d[\d.,]*|[^\s\w]")


def _SOURCE_BEFORE(sc: _Scan, i: int) -> bool:
    """The reference is a source: 'in / from / per / by / according to / in the words of' one review or reviewer."""
    return sc.low(i - 1) in ("in", "from", "per", "by") or (sc.low(i - 2), sc.low(i - 1)) in (
        ("according", "to"), ("words", "of"), ("told", "by"), ("account", "of"))


def _past_in_clause(c: Check, sc: _Scan, j: int) -> bool:
    """Is there a past-tense verb after token j in its clause?"""
    pos = sc.toks[j][2]
    k = c.sentence_of(pos)
    ce = next((b for a, b in c.clauses_of(k) if a <= pos < b), c.sents[k][1])
    return any(_past(t) for t, s, _ in sc.toks[j + 1:] if s < ce)


_PRESENT = {"is", "are", "counts", "has", "contributes", "appears", "goes", "belongs", "maps", "adds", "gets", "remains",
            "enters", "falls", "lands", "can", "may", "will", "would", "should", "must"}


def _later_present(c: Check, sc: _Scan, j: int) -> bool:
    """A present-tense verb later in token j's clause: the past form at j was a participle modifier."""
    pos = sc.toks[j][2]
    k = c.sentence_of(pos)
    ce = next((b for a, b in c.clauses_of(k) if a <= pos < b), c.sents[k][1])
    return any(t.lower() in _PRESENT for t, s, _ in sc.toks[j + 1:] if s < ce)


def _method_sentence(c: Check, pos: int) -> bool:
    """A sentence about the method ("a review is counted at most once", "a record contributes …")."""
    ss, se = c.sents[c.sentence_of(pos)]
    return bool(METHOD.search(c.text[ss:se]) or is_bound_statement(c.masked[ss:se]))


def _past(w: str) -> bool:
    w = w.lower()
    return w in _IRREGULAR_PAST or (len(w) > 3 and w.endswith("ed") and w not in _NOT_PAST)


def _finite(w: str) -> bool:
    """A finite verb after a singular subject: past, third person -s, an auxiliary."""
    lw = w.lower()
    return _past(lw) or lw in _AUX or (len(lw) > 3 and lw.endswith("s") and not lw.endswith(("ss", "us", "is", "'s", "’s"))
                                       and lw not in _FUNCTION)


def _word(t: str) -> str:
    return re.sub(r"['’]s$", "", t.lower())


class _Scan:
    def __init__(self, c: Check):
        self.c = c
        self.toks = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(c.masked)]
        quotes = [m.span() for m in QUOTE_RE.finditer(c.text)]
        self.quoted = lambda pos: any(a <= pos < b for a, b in quotes)

    def low(self, i: int) -> str:
        return self.toks[i][0].lower() if 0 <= i < len(self.toks) else ""

    def det_at(self, i: int, dets) -> int:
        """Length of the determiner starting at token i, 0 if none."""
        for d in dets:
            if all(self.low(i + k) == d[k] for k in range(len(d))):
                return len(d)
        return 0

    def continuation(self, j: int) -> list[int]:
        """Token indices where the predicate may start after a noun ending at j-1 (parenthesis, PP, adverbs)."""
        starts = [j]
        if self.low(j) == ",":
            for k in range(j + 2, min(j + 9, len(self.toks))):
                if self.low(k) == ",":
                    starts.append(k + 1)
                    break
                if not re.match(r"[\w'’-]+$", self.toks[k][0]):
                    break
        if self.low(j) in _PREPS:
            for k in range(j + 2, min(j + 6, len(self.toks) + 1)):
                if all(re.match(r"[A-Za-z][\w'’-]*$|\d|§|¤", self.toks[x][0]) for x in range(j + 1, k)):
                    starts.append(k)
        out = []
        for s in starts:
            out.append(s)
            k = s
            while self.low(k) in _ADVERBS or (self.low(k).endswith("ly") and len(self.low(k)) > 4):
                k += 1
                out.append(k)
        return out


def check(c: Check) -> None:
    sc = _Scan(c)
    toks = sc.toks
    reported: list[tuple[int, int]] = []

    def report(i: int, k: int, what: str) -> None:
        s, e = toks[i][1], toks[min(k, len(toks) - 1)][2]
        if sc.quoted(s) or any(a <= s < b for a, b in reported):
            return
        reported.append((s, e))
        c.add("record_detail", s, e, f'"{c.text[s:e]}" {what}; a plan reports aggregates, never one person\'s record')

    def method_modal(i: int, k: int) -> bool:
        ss, se = c.sents[c.sentence_of(toks[i][1])]
        return sc.low(k) in _MODALS and bool(METHOD.search(c.text[ss:se]))

    for i in range(len(toks)):
        low = sc.low(i)
        # pronouns and first-person narration
        if low in _PRONOUNS or low in _FIRST or toks[i][0] == "I":
            if low == "me" and sc.low(i - 1) in ("let", "to"):
                continue  # "let me note", "it seems to me"
            if low == "my" and sc.low(i + 1) in _AUTHORIAL_NOUNS:
                continue  # "in my view", "my reading of the plan"
            if toks[i][0] == "I":
                nxt = sc.low(i + 1)
                if nxt in _MODALS:
                    continue
                k = c.sentence_of(toks[i][1])
                cs, ce = next(((a, b) for a, b in c.clauses_of(k) if a <= toks[i][1] < b), c.sents[k])
                if nxt in _AUTHORIAL and _PLAN_REF.search(c.masked[cs:ce]):
                    continue
            report(i, i, "refers to one individual" if low in _PRONOUNS else "is first-person narration from a record")
            continue
        # someone / somebody + verb
        if low in ("someone's", "somebody's", "someone’s", "somebody’s"):
            report(i, i, "is an anecdote about one person")
            continue
        if low in ("someone", "somebody") and sc.low(i + 1) != "else":
            for p in sc.continuation(i + 1):
                if p < len(toks) and _finite(toks[p][0]) and not method_modal(i, p):
                    report(i, p, "is an anecdote about one person")
                    break
            continue
        # "one of the customers said"
        if low == "one" and sc.low(i + 1) == "of" and sc.low(i + 2) in ("the", "these", "those") \
                and sc.low(i + 3).rstrip("s") in PERSONS and sc.low(i + 3).endswith("s"):
            for p in sc.continuation(i + 4):
                if p < len(toks) and _finite(toks[p][0]) and not method_modal(i, p):
                    report(i, p, "is an anecdote about one person")
                    break
            continue
        strong = sc.det_at(i, _STRONG)
        plain = 0 if strong else (1 if low in ("a", "an") else 0)
        the = 0 if strong or plain else (1 if low == "the" else 0)
        d = strong or plain or the
        if not d:
            continue
        if sc.low(i + d) in _GENERIC:
            continue
        for mods in range(0, 4):
            n = i + d + mods
            if n >= len(toks):
                break
            if mods and (sc.low(n - 1) in _FUNCTION or not re.match(r"\w[\w'’-]*$", toks[n - 1][0])):
                break
            noun_tok = toks[n][0]
            w = _word(noun_tok)
            two = (w, sc.low(n + 1)) in _TWO_WORD_PERSONS
            is_person = w in PERSONS or two
            is_record = w in RECORDS and sc.det_at(i, _RECORD_DETS) == d and d and (not plain or w in _PLAIN_RECORDS)
            if not (is_person or is_record):
                continue
            end = n + (1 if two else 0)
            possessive = bool(re.search(r"['’]s$", noun_tok))
            nxt = sc.low(end + 1)
            if not possessive and (nxt in _COMPOUND or _ONE_IN_N.match(c.masked[toks[end][2]:])):
                break  # "a customer-service theme", "one customer in ten"
            if w == "couple" and nxt == "of":
                break  # "a couple of reviewers" is a quantifier
            cited = (sc.low(i - 2), sc.low(i - 1)) in (("according", "to"), ("words", "of"))
            if ((is_record or strong) and not plain and _SOURCE_BEFORE(sc, i)) or (is_record and plain and cited):
                report(i, end, "points at one record" if is_record else "cites one person")
                break  # "in one review, …", "according to one reviewer, …"
            if is_record:  # "one review mentioned …", "a complaint described …" (not "a review is assigned …")
                for p in sc.continuation(end + 1):
                    if p >= len(toks):
                        break
                    v = sc.low(p)
                    told = _past(v) or v in _REPORTING or (v in ("was", "were") and _past(sc.low(p + 1)))
                    if told and plain and _past(v) and v not in _AUX_PAST and _later_present(c, sc, p):
                        break  # "a review tagged with dry skin counts once": a participle, not the record's act
                    if told and not (plain and _method_sentence(c, toks[i][1])):
                        report(i, p, "is an anecdote from one record")
                        break
                break
            if possessive:  # "one diner's steak"; "a customer's card was declined" (but "a reviewer's perspective is …")
                if strong or (plain and _past_in_clause(c, sc, end)):
                    report(i, end, "is an anecdote about one person")
                break
            if nxt == "whose" and not the:
                report(i, end + 1, "is an anecdote about one person")
                break
            if nxt in ("named", "called"):
                report(i, end + 1, "is an anecdote about one person")
                break
            if nxt in ("who", "that") and (_past(sc.low(end + 2)) or sc.low(end + 2) in _AUX_PAST):
                report(i, end + 2, "is an anecdote about one person")
                break
            for p in sc.continuation(end + 1):
                if p >= len(toks):
                    break
                v = toks[p][0]
                lv = v.lower()
                if strong:
                    ok = _finite(v) and not method_modal(i, p)
                elif plain:
                    ok = _past(v) or lv in _REPORTING or (lv in ("was", "were") and _past(sc.low(p + 1)))
                else:  # "the customer": generic in the present, one person in the past or when reporting
                    ok = (_past(v) or lv in _REPORTING - _NOUNLIKE) and not method_modal(i, p)
                if ok:
                    report(i, p, "is an anecdote about one person")
                    break
            break
    for s, e in reported:
        c.mask(s, e, "¤")
