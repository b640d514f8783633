"""Change over time (`unsupported_trend`): one released plan is one snapshot.

A plan has no time dimension, so "complaints about fees have been rising", "dry skin
grew through the year" or "is more common than last year" cannot be supported,
whatever the wording and with or without a date. A clause makes such a claim when it
holds a word of change (a verb, noun, adjective or adverb of change) together with a
mark that the change is over time: a time frame, progressive or perfect aspect, a
change adverb or adjective, a change noun about prevalence, or a simple-tense change
verb whose subject is a prevalence subject; a comparison with an earlier time needs no
change word. Sentences that disclaim trends ("a single plan cannot show whether …")
are method statements. A plan carrying `time_dimension` disables the rule: a future
rule checks such claims against per-period values (docs/VERIFIER.md).
"""
from __future__ import annotations

import re

from ..context import Check
from ..vocab import PLAN_NOUNS, RECORD_NOUNS


def _regular(base: str) -> list[str]:
    stem = base[:-1] if base.endswith("e") else base
    third = base + ("es" if base.endswith(("s", "sh", "ch", "x")) else "s")
    double = base[-1] if re.search(r"[^aeiou][aeiou][pbtgm]$", base) and len(base) <= 5 else ""
    past = base + "d" if base.endswith("e") else base + double + "ed"
    ing = stem + "ing" if base.endswith("e") and not base.endswith("ee") else base + double + "ing"
    return [base, third, past, ing]


_IRREGULAR = {"rise": "rise rises rose risen rising", "grow": "grow grows grew grown growing",
              "fall": "fall falls fell fallen falling", "shrink": "shrink shrinks shrank shrunk shrinking",
              "swell": "swell swells swelled swollen swelling", "sink": "sink sinks sank sunk sinking",
              "overtake": "overtake overtakes overtook overtaken overtaking", "lose": "lose loses lost lost losing"}
_REGULAR = ("increase decrease decline drop climb surge spike jump soar plunge plummet expand double triple halve gain "
            "fluctuate peak dip rebound recover worsen improve escalate accelerate slow ease fade subside mount "
            "balloon wane dwindle taper shift change evolve emerge skyrocket tumble slump").split()
_PHRASAL = {"level": "off", "pick": "up", "tick": "up|down", "edge": "up|down"}
_FORMS: dict[str, str] = {}  # form -> kind: base | s | past | pp | ing
for _w in _REGULAR:
    for _f, _k in zip(_regular(_w), ("base", "s", "past", "ing")):
        _FORMS[_f] = _k
for _forms in _IRREGULAR.values():
    for _f, _k in zip(_forms.split(), ("base", "s", "past", "pp", "ing")):
        _FORMS[_f] = _k
_FORMS.update({"plummeted": "past", "plummeting": "ing", "tapered": "past", "tapering": "ing", "levelled": "past"})
_VERB_ALT = "|".join(sorted(_FORMS, key=len, reverse=True))
_PHRASAL_ALT = "|".join(rf"(?:{'|'.join(_regular(b))}|levelled)\s+(?:{p})" for b, p in _PHRASAL.items())
_GO = r"(?:go|goes|went|gone|going)\s+(?:up|down)"
VERB = re.compile(rf"\b(?P<v>{_PHRASAL_ALT}|{_GO}|{_VERB_ALT})\b", re.I)
_CHANGE_NOUNS = (r"increases?|rises?|growth|declines?|decreases?|drops?|falls?|surges?|spikes?|jumps?|upticks?|downticks?|"
                 r"upswings?|downturns?|dips?|climbs?|rebounds?|shifts?|changes?")
_CHANGE_ADJ = r"growing|rising|increasing|declining|falling|shrinking|mounting|emerging|dwindling|surging|climbing|worsening"
_CHANGE_ADV = (r"increasingly|decreasingly|progressively|more\s+and\s+more|less\s+and\s+less|ever\s+more|"
               r"ever[\s-]+(?:increasing|growing|rising)")
_MANNER = r"steadily|gradually|rapidly|sharply|dramatically|quickly|slowly|markedly|noticeably"
_PERIOD = (r"(?:years?|months?|quarters?|seasons?|weeks?|weekends?|periods?|decades?|holidays?|holiday\s+season|"
           r"winter|summer|spring|autumn|fall|time|course\s+of\s+the\s+(?:year|period|season))")
_QUAL = (r"(?:(?:the|this|that|a|an|each|every|its|their)\s+)?(?:(?:past|last|previous|recent|current|coming|first|second|"
         r"third|fourth|latter|early|late|whole|entire|full|same|prior|following|next|two|three|four|few|several|\d+)\s+)*")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
TIME_FRAME = re.compile(
    rf"\b(?:over|during|through|throughout|across|in|within|by|toward|towards|from|until|into)\s+{_QUAL}{_PERIOD}\b"
    rf"|\bat\s+the\s+(?:start|end|beginning|close)\s+of\s+{_QUAL}{_PERIOD}\b"
    r"|\bsince\s+(?:last|the\s+(?:start|beginning|launch|last|previous|prior)|early|then|its)\b"
    r"|\b(?:recently|lately|nowadays|these\s+days|so\s+far|to\s+date|of\s+late)\b"
    rf"|\b(?:this|last|next|past|previous)\s+{_PERIOD}\b"
    r"|\b(?:year|month|quarter|week)[\s-]+(?:over|on)[\s-]+(?:year|month|quarter|week)\b|\b(?:YoY|MoM|QoQ)\b"
    r"|\b(?:a|one|two|three|four|several|few|\d+)\s+(?:years?|months?|weeks?|quarters?|seasons?)\s+ago\b"
    r"|\b(?:earlier|later)\s+in\s+the\s+(?:year|period|month|season|quarter)\b|\bseasonal(?:ly)?\b"
    r"|\b(?:each|every)\s+(?:winter|summer|spring|autumn|fall|year|month|quarter|season|week|weekend|holiday)\b"
    rf"|\b(?i:in|during|by|since|until|through|from)\s+(?i:early\s+|late\s+|mid-?)?{_MONTH}\b|\b(?:Q[1-4]|H[12])\b",
    re.I)
# the time frame words that are not case-insensitive: month names (May is also a modal verb)
TIME_FRAME_CS = re.compile(rf"\b(?:in|during|by|since|until|through|from)\s+(?:early\s+|late\s+|mid-?)?{_MONTH}\b")
EARLIER = re.compile(r"\bthan\s+(?:before|ever|previously|earlier|in\s+the\s+past|a\s+year\s+ago|last\s+(?:year|month|quarter|"
                     r"season|week|time|period)|it\s+(?:was|used\s+to\s+be))\b|\bcompared\s+(?:with|to)\s+(?:last|the\s+previous|"
                     r"the\s+prior|previous|prior|earlier|a\s+year\s+ago)\b|\bused\s+to\b|\bany\s?more\b|\bno\s+longer\b"
                     r"|\bnow\s+(?:more|less|the\s+most|the\s+least|leads|tops|outnumbers|exceeds|ranks)\b", re.I)
_ING_ALT = "|".join(sorted((f for f, k in _FORMS.items() if k == "ing"), key=len, reverse=True))
ASPECT = re.compile(rf"\b(?:is|are|was|were|be|been|being|am|keeps?|kept|keeping)\s+(?:(?:\w+ly|also|still|now|not)\s+)?"
                    rf"(?:{_ING_ALT}|(?:levelling|leveling|picking|ticking|edging)\s+(?:off|up|down)|going\s+(?:up|down))\b"
                    rf"|\b(?:has|have|had)\s+(?:(?:\w+ly|also|not|now)\s+)?(?:been\s+)?(?:(?:\w+ly)\s+)?(?:{_VERB_ALT}|{_PHRASAL_ALT}|{_GO})\b"
                    rf"|\bcontinu(?:e|es|ed|ing)\s+to\s+(?:{_VERB_ALT})\b"
                    r"|\bon\s+the\s+(?:rise|increase|decline|wane|upswing|up|way\s+up|way\s+down)\b", re.I)
STATE = re.compile(r"(?<!\bin\s)\b(?:become|becomes|became|becoming|get|gets|got|getting|grow|grows|grew|growing|turn|turns|turned|"
                   r"turning)\s+(?:(?:more|less|increasingly)\b|(?:rarer|commoner|scarcer|larger|smaller|bigger|higher|lower|"
                   r"fewer)\b)(?!\s+than)", re.I)
TREND = re.compile(r"\b(?:upward|downward|rising|growing|increasing|declining|falling)\s+trends?\b|\btrend(?:s|ed|ing)?\s+"
                   r"(?:up|down|upward|downward|higher|lower|toward|towards)\b|\btrending\b"
                   r"|\bseasonal(?:ly|ity)?\b|\bcyclical(?:ly)?\b"
                   r"|\b(?:gain(?:s|ed|ing)?|los(?:e|es|t|ing))\s+(?:ground|traction|momentum|share)\b"
                   r"|\b(?:is|are|was|were)\s+(?:up|down)\s+(?:from|since|on|compared|versus|vs\.?|by)\b", re.I)
_PREVALENCE = (rf"(?:{RECORD_NOUNS}|share|shares|support|mass|masses|prevalence|frequency|volume|number|count|proportion|"
               rf"percentage|rank|ranking|popularity|incidence|{PLAN_NOUNS}|concerns?|it|they|this|these|those)")
NOUN_CHANGE = re.compile(rf"\b(?:{_CHANGE_NOUNS})\s+(?:in|of)\s+(?:(?:the|its|their|a|an)\s+)?(?:[\w-]+\s+){{0,2}}?"
                         rf"(?:§+|(?:{_PREVALENCE})\b)", re.I)
ADJ = re.compile(rf"\b(?:{_CHANGE_ADJ})\s+(?!(?:to|up|down|out|off|in|on|at|by|for|from|with|into|over|through|"
                 rf"as|and|or|but|than|of|the|a|an|steadily|sharply)\b)(?:§+|[a-z][\w-]*)", re.I)
ADV = re.compile(rf"\b(?:{_CHANGE_ADV})\b", re.I)
NOT_CHANGE = re.compile(r"\b(?:fall|falls|fell|fallen|falling)\s+(?:in|into|within|under|between|inside|outside|among)\b"
                        r"|\b(?:fall|falls|fell|fallen|falling)\s+(?:(?:about|roughly|some|just|well|far)\s+)?(?:[\d.,]+\s+)?short\b"   # "falls about 22 short of B": a gap
                        r"|\b(?:emerge[sd]?|emerging)\s+as\b|\brises\s+to\s+(?:the\s+)?(?:top|first)\b"
                        r"|\b(?:falls|sinks|drops)\s+to\s+(?:the\s+)?(?:bottom|last)\b", re.I)
DISCLAIMER = re.compile(
    r"\bwhether\b|\bcannot\b|\bcan't\b|\bcan\s+not\b|\bunable\b|\bimpossible\b|\bnot\s+possible\b|\bout\s+of\s+scope\b"
    r"|\bbeyond\s+the\s+scope\b|\b(?:does|do|did|will|would|could)\s*(?:not|n't)\s+(?:show|tell|say|indicate|capture|cover|"
    r"contain|include|support|track|measure|reveal|allow|permit|describe|provide|give|speak|reflect)\b"
    r"|\bnot\s+(?:covered|shown|captured|available|measured|tracked|visible|supported)\b"
    r"|\b(?:no|without\s+(?:a|any)?)\s*(?:time|temporal|trend|longitudinal|historical|over-time)\b", re.I)
NEGATION = re.compile(r"\b(?:not|no|nothing|never|neither|nor|none)\b|n't\b", re.I)
ABILITY = re.compile(r"\b(?:show|shows|tell|tells|say|says|indicate|indicates|capture|captures|cover|covers|contain|"
                     r"contains|include|includes|support|supports|track|tracks|measure|measures|reveal|reveals|allow|"
                     r"allows|describe|describes|establish|determine|speak|speaks|reflect|reflects|infer|inferred)\b", re.I)
HYPOTHETICAL = re.compile(r"\b(?:would|could|might|if)\b", re.I)
RANK_CONTEXT = re.compile(r"\b(?:top|bottom)\s+(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\b|\branks?\b|"
                          r"\branking\b|\blist\b|\bpositions?\b|\bdown\s+the\s+(?:list|ranking|table)\b|"
                          r"\b(?:below|after|beyond|past)\s+the\s+(?:top|first|leading)\b", re.I)
_SKIP_BEFORE = re.compile(r"^(?:has|have|had|is|are|was|were|been|did|does|do|not|also|all|both|only|still|now|then|"
                          r"\w+ly|n't)$", re.I)
_OBJECT = re.compile(r"\s+(?:the|a|an|their|his|her|its|my|our|your|them|him|us|me|some|any|prices?|fees?)\b", re.I)


def _subject_is_prevalence(txt: str, s: int) -> bool:
    """The word right before the verb group is a theme, record, measure or plan noun, or a pronoun."""
    words = re.findall(r"§+|[\w'-]+", txt[:s])
    while words and _SKIP_BEFORE.match(words[-1]):
        words.pop()
    if words and words[-1].lower() in ("that", "which", "who"):
        words.pop()
    return bool(words) and (words[-1].startswith("§") or re.fullmatch(_PREVALENCE, words[-1], re.I) is not None)


_MEASURE = re.compile(r"(?:share|shares|support|mass|masses|mentions?|counts?|numbers?|volume|frequency|values?|prevalence)",
                      re.I)


def _subject_is_measure(txt: str, s: int) -> bool:
    """'Support declined down the list': a measure across the ranking, not a theme's event."""
    words = re.findall(r"§+|[\w'-]+", txt[:s])
    while words and _SKIP_BEFORE.match(words[-1]):
        words.pop()
    return bool(words) and _MEASURE.fullmatch(words[-1]) is not None


def _claims(c: Check, txt: str, ss: int, se: int) -> list[tuple[int, int]]:
    """Spans of temporal claims in the sentence ss..se (at most one per clause)."""
    sentence = txt[ss:se]
    frame = TIME_FRAME.search(sentence) or TIME_FRAME_CS.search(c.text[ss:se])
    out: list[tuple[int, int]] = []
    k = c.sentence_of(ss)
    for cs, ce in c.clauses_of(k):
        clause = txt[cs:ce]
        blocked = [m.span() for m in NOT_CHANGE.finditer(clause)]
        hit: tuple[int, int] | None = None
        for rx in (EARLIER, TREND, ADV, STATE, ASPECT, NOUN_CHANGE, ADJ):
            m = rx.search(clause)
            if m and not any(a <= m.start() < b for a, b in blocked):
                hit = m.span()
                break
        if hit is None:
            for m in VERB.finditer(clause):
                if any(a <= m.start() < b for a, b in blocked):
                    continue
                form = _FORMS.get(m.group("v").split()[0].lower(), "base")
                if not frame and RANK_CONTEXT.search(sentence) and (form != "past" or _subject_is_measure(clause, m.start())):
                    continue  # "support drops (dropped) off after the top three": the ranking's shape, not time
                if frame or (form in ("s", "past", "base") and _subject_is_prevalence(clause, m.start())
                             and not _OBJECT.match(clause[m.end():])):
                    hit = m.span()
                    mm = re.match(rf"\s+(?:{_MANNER})\b", clause[m.end():], re.I)
                    if mm:
                        hit = (hit[0], m.end() + mm.end())
                    break
        if hit is None:
            continue
        s, e = cs + hit[0], cs + hit[1]
        if frame and cs <= ss + frame.start() < ce and ss + frame.end() > e:
            e = ss + frame.end()
        out.append((s, e))
    return out


# change stated without a change verb of the lists above ("has become the top theme", "is now the most common")
_MORE_CHANGE = re.compile(r"\b(?:has|have|had)\s+(?:now\s+|since\s+)?become\b|\b(?:is|are)\s+now\s+(?:the\s+)?"
                          r"(?:most|least|top|leading|more|less|second|third|biggest|largest|main)\b"
                          r"|\bgetting\s+(?:worse|better|more|less|commoner|rarer)\b|\bescalating\b"
                          r"|\bmultipl(?:ied|ying)\b|\b(?:up|down)\s+(?:sharply|steeply|significantly)\b", re.I)


# no change over time is a claim about time too ("stayed about the same", "unchanged", "little changed")
STEADY = re.compile(r"\b(?:stayed|stays|remained|remains|held|holds)\s+(?:(?:about|roughly|nearly|much|largely|essentially|"
                    r"broadly|virtually|practically)\s+)?(?:the\s+same|unchanged|steady|stable|flat|constant)\b"
                    r"|\b(?:held|holding)\s+steady\b|\bunchanged\b|\b(?:little|barely|hardly)\s+changed\b", re.I)


def _disclaimed(c: Check, ss: int, s: int) -> bool:
    """A disclaimer governs the claim at s: it comes before it in the sentence ("a single plan cannot show
    whether …"), or stands in the claim's own clause; one in a later clause of its own does not ("A has been
    growing over recent months, though it cannot be separated from B")."""
    cs, ce = c.clause_at(s)
    for lo, hi in ((ss, s), (cs, ce)):
        part = c.text[lo:hi]
        if DISCLAIMER.search(part) or (NEGATION.search(part) and ABILITY.search(part)):
            return True
    return False


def check(c: Check) -> None:
    if c.plan.get("time_dimension"):
        return  # a plan with per-period values: left to a rule that can check change against them
    txt = c.masked
    for ss, se in c.sents:
        sentence = c.text[ss:se]
        if HYPOTHETICAL.search(sentence) and not (TIME_FRAME.search(txt[ss:se]) or TIME_FRAME_CS.search(sentence)):
            continue  # "a change of a few complaints would not alter the ranking"
        extra = [m.span() for rx in (_MORE_CHANGE, STEADY) for m in rx.finditer(txt, ss, se)]
        for s, e in sorted(set(_claims(c, txt, ss, se)) | set(extra)):
            if _disclaimed(c, ss, s):
                continue  # "a single plan cannot show whether …", "they say nothing about how themes change"
            c.add("unsupported_trend", s, e, f'"{c.text[s:e]}" claims a change over time; a released plan is one '
                  "snapshot with no time dimension, so no trend is supported")
