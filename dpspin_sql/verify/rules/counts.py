"""Counts: numbers about the plan's own themes, ranks and bins are checked against its structure.

"Four of the ten themes have moderate support" counts themes, it does not state a
mass: the 10 must be the plan's size and the 4 the number of admitted atoms in the
moderate bin. A count is recognised by its grammar (a plan noun after it, a partitive,
a group determiner, a bin noun) and judged by the first rule that applies
(docs/VERIFIER.md, *Counts*): dictionary size, bin count, listed themes, a referenced
group, the plan size, else at most the plan size.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..context import Check
from ..numeric import FRACTIONS, NUMWORD, ORDINALS, Num, numbers
from ..text import span_of
from ..vocab import BIN_NOUNS, PEOPLE_NOUNS, PER_RECORD, PLAN_NOUNS, RANK_ADJ, RECORD_NOUNS
from .bins import bin_predicates

_W = r"[\w'§-]+"
ORDW = "|".join(ORDINALS)
# a modifier inside a counted noun phrase: any word but verbs, function words and other nouns
_NOT_MOD = re.compile(rf"(?:of|in|on|at|to|for|by|from|and|or|but|with|than|that|which|who|whose|is|are|was|were|be|"
                      rf"been|have|has|had|do|does|did|not|no|mention|mentions|mentioned|appear|appears|appeared|"
                      rf"account|accounts|\d[\d.,]*|{RECORD_NOUNS}|{PEOPLE_NOUNS})$", re.I)
_NOUN_AFTER = re.compile(rf"(?:-|\s+)(?P<mods>(?:{_W}\s+){{0,3}}?)(?P<noun>{PLAN_NOUNS})\b", re.I)
_BINS_AFTER = re.compile(rf"\s+(?P<mods>(?:{_W}\s+){{0,2}}?)(?P<noun>{BIN_NOUNS})\b", re.I)
_DICT = re.compile(r"\b(?:dictionary|universe|candidates?|possible|vocabulary|taxonomy)\b", re.I)
_GROUP_DET = re.compile(r"(?:\b(?:all(?:\s+of\s+(?:the|these|those))?|both|each\s+of\s+(?:the|these|those)|the|these|those|"
                        r"its|their)|'s)\s+$", re.I)
_OTHER_DET = re.compile(r"\b(?:the\s+)?(?:other|remaining|rest\s+of\s+the|additional|further)\s+$", re.I)
_QUANT_OF = re.compile(r"\b(?:all|each|every|both|none|most|majority|half|third|thirds|quarter|quarters|fifth|tenth|"
                       r"several|many|few|some|any)\s+of\s+(?:the|these|those|its)\s+$", re.I)
_PARTITIVE_M = re.compile(r"\b(?:of|out\s+of)\s+(?:the\s+|these\s+|those\s+|its\s+)$", re.I)
_RANKED_OF = re.compile(rf"\b(?:{'|'.join(ORDINALS)}|\d+(?:st|nd|rd|th)|most\s+{RANK_ADJ}|least\s+{RANK_ADJ}|largest|"
                        rf"biggest|highest|smallest|lowest|rarest|last)\s+(?:one\s+)?(?:out\s+)?of\s+$", re.I)
# after an elliptical count ("all three fall …", "these three form …"): no record noun or unit
_ELLIPTIC = re.compile(rf"\s*(?:$|[,.;:!?)—–§])|\s+(?!(?:[\w-]+\s+){{0,2}}?(?:{RECORD_NOUNS}|{PEOPLE_NOUNS})\b)"
                       rf"(?!(?:{RECORD_NOUNS}|{PEOPLE_NOUNS}|percent|per|pp|x|%|times|"
                       rf"mentions?|units?|years?|months?|weeks?|days?|hours?|minutes?|dollars?|stars?|"
                       rf"(?:comparison\s+)?margin|threshold|noise|epsilon|budget|scale)\b)[a-z]", re.I)
_TIER_OF = re.compile(r"\b(?:high|moderate|low)(?:[\s-]+support)?\s+(?:tier|bin|group|band|cluster)\s+of\s+$", re.I)  # "a high tier of three: …"
_BARE_START = re.compile(r"(?:^|[,;:—–(]|\b(?:and|but|while|whereas|with|whilst))\s*$", re.I)
_BARE_NEXT = re.compile(rf"\s+(?!(?:{RECORD_NOUNS}|{PEOPLE_NOUNS}|of|out|in|per|percent)\b)[a-z]+\b")
_ANY_NOUN = re.compile(rf"\b(?:(?P<plan>{PLAN_NOUNS})|{RECORD_NOUNS}|{PEOPLE_NOUNS})\b", re.I)
_BOTH = re.compile(r"\b(?P<q>both|all)\b(?=\s+(?:are|were|have|has|had|fall|fell|sit|remain|show|lie|belong|carry|get)\b)", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b", re.I)
_RANGE_AFTER = re.compile(r"\s+(?:ranked|ranking|in\s+positions?|at\s+ranks?|from\s+rank)\s+#?(?P<a>\d+)\s*(?:to|through|thru|–|-|and)\s*#?(?P<b>\d+)\b", re.I)
_BOTH_AB = re.compile(r"\bboth\s+§+\s+and\s+§+", re.I)
_TOTAL_SUBJECT = re.compile(r"\b(?:plan|release|summary|list|snapshot|report|it|this|dp-spin)\b", re.I)
_TOTAL_MARK = re.compile(r"\b(?:released|admitted|listed|published|reported)\b", re.I)
_TOTAL_AFTER = re.compile(r"\s+(?:in\s+total|in\s+all|altogether|overall)\b", re.I)
# a listed theme may carry its own values: "A (rank 5)", "A at 12%", "A (about 480)", "A with 9.6% of reviews"
_VALUE = (rf"(?:(?:about|around|roughly|approximately|nearly|almost|just\s+over|just\s+under|over|under|~|≈)\s*)?"
          rf"(?:(?:rank(?:ed)?|number|no\.|#)\s*)?(?:\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|(?:{NUMWORD})(?:[\s-](?:{NUMWORD}))*|{ORDW})"
          rf"(?:\s*(?:%|percent\b|per\s+cent\b))?(?:\s+(?:of\s+)?(?:the\s+|all\s+)?(?:{RECORD_NOUNS}|{PEOPLE_NOUNS})\b)?")
_ATTACHED = (rf"(?:\s*\([^()§¤\n]*\)|\s+(?:(?:at|with|on|in|ranked|ranking)\s+)?{_VALUE}"
             rf"|\s*,\s*(?:at|with|ranked|ranking)\s+{_VALUE})")
_ITEM = rf"§+(?:{_ATTACHED})*"
_LIST = rf"{_ITEM}(?:(?:\s*,\s*|\s+)(?:and\s+|or\s+|&\s+)?{_ITEM})*"
_BULLET = re.compile(rf"[ \t]*(?:[-*•–]|\d{{1,2}}[.)])[ \t]+(?:\*\*)?(?P<l>{_LIST})")
_LIST_STOP = re.compile(r"\b(?:than|ahead|behind|while|whereas|but|although|though|trail\w*|lag\w*|compared|versus|vs|"
                        r"outside|beyond|except|besides|below|after|unlike)\b", re.I)
_LIST_MORE = re.compile(rf"\s*,?\s*(?:followed\s+(?:closely\s+)?by|(?:and\s+)?then)\s+(?P<l>{_LIST})", re.I)
_COLON_EOL = re.compile(rf"(?:\s+{_W}){{0,3}}\s*:\s*$")
_LIST_EXACT = re.compile(rf"(?:\s*[:—–(]\s*|\s+-\s+|\s*,?\s*namely\s+|\s+(?:are|were)\s+|(?:\s+{_W}){{1,3}}\s*:\s*)(?P<l>{_LIST})", re.I)
_LIST_COMMA = re.compile(rf"\s*,\s*(?P<l>{_LIST})(?=\s*(?:,|\)|—|–|[.;!?]|$))")
_LIST_SOME = re.compile(rf"\s*,?\s*(?:including|include|includes|included|such\s+as|e\.g\.,?|among\s+them|like)\s+(?P<l>{_LIST})", re.I)

_EXACT = {"", "about", "around", "approximately", "approx.", "approx", "roughly", "some", "close to", "an estimated",
          "estimated", "~", "≈", "circa"}
_GE = {"at least", "no fewer than", "no less than"}
_GT = {"over", "more than", "above", "upwards of", "exceeding", "greater than"}
_LE = {"up to", "at most", "no more than"}
_LT = {"under", "below", "less than", "fewer than"}
_QUANT = re.compile(
    r"\b(?P<q>all(?:\s+of)?|every|each(?:\s+of)?|both(?:\s+of)?|none\s+of|no|most(?:\s+of)?(?!\s+" + RANK_ADJ + r")|"
    r"(?:the|a)\s+majority\s+of|only\s+one(?:\s+of)?|just\s+one(?:\s+of)?|a\s+single|one\s+of|"
    + "|".join(re.escape(f) + r"(?:\s+of)?" for f in sorted(FRACTIONS, key=len, reverse=True) if "majority" not in f) +
    r")(?:\s+(?:the|these|those|its|their))?\s+(?P<mods>(?:[\w'-]+\s+){0,3}?)(?P<noun>" + PLAN_NOUNS + r")\b", re.I)


@dataclass
class _Count:
    num: Num
    n: int
    start: int
    end: int            # end of the counted noun phrase (or of the number)
    noun: str = ""      # "" for an elliptical count
    mods: str = ""
    det: str = ""       # group | other | ""
    of_m: _Count | None = None   # "N of the M": the M
    of_group: bool = False         # "N of them / these"
    bins_noun: bool = False


def _last_noun_is_plan(before: str) -> bool:
    """An elliptical number takes the last noun before it: 'two themes …, and four …' counts themes."""
    nouns = list(_ANY_NOUN.finditer(before))
    return bool(nouns and nouns[-1].group("plan"))


def _value(num: Num) -> int | None:
    if num.pct or num.ordinal or num.kind not in ("digits", "words") or num.value != int(num.value) or num.value < 0:
        return None
    return int(num.value)


def _mods_ok(mods: str) -> bool:
    """Modifier words of a counted noun; a theme mention among them names a category ("three credit reporting themes").
    A record noun right before the plan noun is a compound ("ten complaint themes", "the review themes")."""
    words = mods.split()
    if words and re.fullmatch(r"(?:complaint|review|record|customer|consumer|diner|product|restaurant|beauty)s?", words[-1],
                              re.I):
        words = words[:-1]
    return not any(_NOT_MOD.match(w) for w in words if not w.startswith("§")) and "¤" not in mods


def _category(c: Check, ct: _Count) -> list[frozenset] | None:
    """The admitted atoms a mention inside the counted noun phrase names (a shared label segment)."""
    ms = [m for m in c.in_range(ct.num.end, ct.end) if m.end <= ct.end]
    if not ms:
        return None
    atoms = frozenset.intersection(*(m.atoms for m in ms))
    return [frozenset({x}) for x in sorted(atoms)]


def _hedge(c: Check, num: Num) -> str:
    h = num.hedge
    before = c.masked[:num.start].lower()
    after = c.masked[num.end:num.end + 12].lower()
    if re.search(r"\bno\s+$", before) and h in ("more than", "fewer than", "less than"):
        return "no " + h
    if re.search(r"\b(?:only|exactly|just)\s+$", before):
        return ""
    if re.match(r"\s+or\s+more\b", after):
        return "at least"
    if re.match(r"\s+or\s+(?:fewer|less)\b", after):
        return "at most"
    return h


def count_ok(h: str, n: int, v: int) -> bool:
    """Counts are exact integers; hedges keep their plain meaning."""
    if h in _GE:
        return v >= n
    if h in _GT:
        return v > n
    if h in _LE:
        return v <= n
    if h in _LT:
        return v < n
    if h in ("nearly", "almost", "just under"):
        return v == n - 1
    if h == "just over":
        return v == n + 1
    return v == n


def _members_named(c: Check, s: int, e: int) -> list[frozenset]:
    """Distinct admitted themes named in s..e (one entry per distinct mention)."""
    out: list[frozenset] = []
    for m in c.in_range(s, e):
        if m.atoms not in out:
            out.append(m.atoms)
    return out


def _groups(c: Check, k: int, start: int, wide: bool = False) -> list[list[frozenset]]:
    """Groups a determiner may refer to: this sentence's themes, the previous sentence's, (`wide`, for a count
    matched by its size) the themes of the last two or three sentences, the plan."""
    out = []
    if c.groups.get(k):
        out.append(c.groups[k])
    here = _members_named(c, *c.sents[k])
    if here:
        out.append(here)
    if k > 0:
        prev = _members_named(c, *c.sents[k - 1])
        if prev:
            out.append(prev)
    for j in (2, 3) if wide else ():   # a list told over a few sentences or list items ("- A … - B … - C …; these three")
        if k - j >= 0:
            for end in (c.sents[k - 1][1], c.sents[k][1]):
                group = _members_named(c, c.sents[k - j][0], end)
                if group and group not in out:
                    out.append(group)
    out.append([frozenset({x}) for x in c.lex.atoms])
    return out


def _in_bins(c: Check, member: frozenset, bins: set) -> bool:
    return any(str(c.atom(x).get("bin", "")).lower() in bins for x in member)


def _n_bin(c: Check, bins: set, group: list[frozenset] | None = None) -> int:
    group = group if group is not None else [frozenset({x}) for x in c.lex.atoms]
    return sum(1 for m in group if _in_bins(c, m, bins))


def _plan_sizes(c: Check) -> set[int]:
    sizes = {c.n}
    if isinstance(c.plan.get("L"), (int, float)) and not isinstance(c.plan.get("L"), bool):
        sizes.add(int(c.plan["L"]))
    return sizes


def _dict_sizes(c: Check) -> set[int]:
    sizes = set()
    if isinstance(c.plan.get("m"), (int, float)):
        sizes.add(int(c.plan["m"]))
    if c.plan.get("dictionary_labels"):
        sizes.add(len(c.plan["dictionary_labels"]))
    return sizes


def _bin_levels(c: Check) -> set[int]:
    levels = set()
    if isinstance(c.plan.get("bins"), dict):
        levels.add(len(set(c.plan["bins"]) | {"low"}))
    levels.add(len({str(a.get("bin", "")).lower() for a in c.plan["atoms"]}))
    return levels


# ---------------------------------------------------------------- recognition
def _recognise(c: Check) -> list[_Count]:
    txt = c.masked
    nums = [x for x in numbers(txt, include_one=True) if not c.overlaps(x.start, x.end, c.rank_spans + c.consumed)]
    counts: list[_Count] = []
    used: set[int] = set()
    for num in nums:
        n = _value(num)
        if n is None or num.start in used:
            continue
        k = c.sentence_of(num.start)
        se = c.sents[k][1]
        before, after = txt[c.sents[k][0]:num.start], txt[num.end:se]
        after = re.sub(r"^\s+or\s+(?:more|fewer|less)\b", lambda m: " " * len(m.group()), after, flags=re.I)  # "four or more themes"
        ct = None
        if num.text.lower() == "one" and re.match(r"\s+(?:between|that|which|who|whose|with|for|of|in|on|at|from|"
                                                r"where|to|among|above|below|after|before)\b", after, re.I):
            continue  # "the one between A and B": a pronoun, not a count
        if _QUANT_OF.search(before) and not (re.search(r"\b(?:all|each|every|both)\s+of\s+(?:the|these|those)\s+$",
                                                       before, re.I) and _ELLIPTIC.match(after)
                                             and not _NOUN_AFTER.match(after)):
            continue  # "half of the ten themes": read by _quantifiers; "each of the three" is the group of three
        if num.text.lower() == "two" and re.search(r"\bno\s+$", before, re.I):
            c.consume(num.start, num.end)
            continue  # "no two themes can be told apart": no pair, not a count
        if (m := _NOUN_AFTER.match(after)) and _mods_ok(m.group("mods")):
            ct = _Count(num, n, num.start, num.end + m.end(), m.group("noun"), m.group("mods"))
        elif (m := _BINS_AFTER.match(after)) and _mods_ok(m.group("mods")):
            ct = _Count(num, n, num.start, num.end + m.end(), m.group("noun"), m.group("mods"), bins_noun=True)
        elif (_PARTITIVE_M.search(before) or _GROUP_DET.search(before) or _OTHER_DET.search(before)
              or _RANKED_OF.search(before) or _TIER_OF.search(before)) and _ELLIPTIC.match(after):
            ct = _Count(num, n, num.start, num.end)
        elif _BARE_START.search(before) and _BARE_NEXT.match(after) and _last_noun_is_plan(
                before if _ANY_NOUN.search(before) or k == 0 else txt[c.sents[k - 1][0]:c.sents[k - 1][1]] + " " + before):
            # "Ten themes were released; three are high": a sentence or clause that starts with the count takes
            # the last noun of the one before
            ct = _Count(num, n, num.start, num.end)  # "Of the six themes, four have …", "two themes …, and four …"
        if ct is None:
            # "N of the M …", "N of them", "N out of M themes"
            if (m := re.match(r"\s+(?:of|out\s+of)\s+(?:them|these|those)\b(?!\s+\w*\d)", after, re.I)) and \
                    not re.match(r"\s+(?:of|out\s+of)\s+(?:these|those)\s+(?:" + RECORD_NOUNS + "|" + PEOPLE_NOUNS + r")\b", after, re.I):
                ct = _Count(num, n, num.start, num.end + m.end(), of_group=True)
            else:
                continue
        if _OTHER_DET.search(before):
            ct.det = "other"
        elif _GROUP_DET.search(before) or _PARTITIVE_M.search(before) or _RANKED_OF.search(before):
            ct.det = "group"
        counts.append(ct)
        used.add(num.start)
    # attach "N of the M": the N is a subset count of the M group
    by_start = {ct.start: ct for ct in counts}
    for num in nums:
        n = _value(num)
        if n is None or num.start in by_start:
            continue
        after = txt[num.end:]
        m = re.match(r"\s+(?:of|out\s+of)\s+(?:the\s+|these\s+|those\s+|its\s+)?", after, re.I)
        if m and (num.end + m.end()) in by_start:
            inner = by_start[num.end + m.end()]
            counts.append(_Count(num, n, num.start, inner.end, inner.noun, inner.mods, of_m=inner))
    # "one out of ten themes" reads as one number
    for num in numbers(txt):
        if num.kind == "onein" and not c.overlaps(num.start, num.end, c.rank_spans + c.consumed):
            m = _NOUN_AFTER.match(txt[num.end:])
            if m and _mods_ok(m.group("mods")):
                inner_num = Num(num.start, num.end, num.text, num.value, 1, "", "digits", False, False)
                inner = _Count(inner_num, int(num.value), num.start, num.end + m.end(), m.group("noun"), m.group("mods"), det="group")
                one = Num(num.start, num.end, num.text, 1, 1, num.hedge, "words", False, False)
                counts.append(_Count(one, 1, num.start, inner.end, inner.noun, inner.mods, of_m=inner))
    return counts


# ---------------------------------------------------------------- judgement
def _predicate(c: Check, ct: _Count) -> tuple[set, int, int, bool] | None:
    """The count's bin predicate: inside its noun phrase, or in its clause when that names no theme."""
    txt = c.masked
    np_s, np_e = ct.num.end, ct.end
    if ct.of_m is None:  # in "N of the M high-bin themes" the bin word belongs to M
        for bins, ws, we in bin_predicates(c, np_s, np_e):
            return bins, ws, we, True
    m = re.match(r"\s+(?:with|in|at|of)\s+(?:a\s+|an\s+|the\s+)?", txt[np_e:])
    if m:
        for bins, ws, we in bin_predicates(c, np_e + m.end(), min(len(txt), np_e + m.end() + 20)):
            if ws == np_e + m.end():
                return bins, ws, we, True
    k = c.sentence_of(ct.start)
    cs, ce = span_of(c.clauses_of(k), ct.start, c.sents[k])
    if any(not (ct.start <= m.start < ct.end) for m in c.in_range(cs, ce)):
        return None  # the clause names a theme of its own: the bin word is that theme's (rule bins)
    for bins, ws, we in bin_predicates(c, cs, c.sents[k][1]):  # a list "high, moderate or low" may run past a comma
        if ws >= ce:
            break
        if not (ct.start <= ws < ct.end):
            if ws > ct.end and _NEGATION.search(txt[ct.end:ws]):  # "most themes do not reach moderate support"
                bins = _all_bins(c) - bins
            return bins, ws, we, False
    return None


def _all_bins(c: Check) -> set:
    return {str(a.get("bin", "")).lower() for a in c.plan["atoms"]} | set(c.plan.get("bins") or {}) | {"low"}


def _listed(c: Check, ct: _Count, np_end: int | None = None) -> tuple[int, bool, list[frozenset], set[int]] | None:
    """Themes listed right after the counted phrase: (number, exact?, members, numbers a count may equal).

    "The top three themes are A and B, followed by C" may count the continuation too: the
    count may equal the list or the list with its continuation.
    """
    txt = c.masked
    se = c.sents[c.sentence_of(ct.start)][1]
    end = ct.end
    if np_end and np_end > end:  # "two themes of moderate support, A and B": the bin phrase is in the noun phrase
        tail = re.match(r"(?:[\s-]+(?:support|bins?|levels?|shares?|frequency|prevalence|mass))?", txt[np_end:])
        assert tail is not None  # the pattern is optional, so it matches (empty) everywhere
        end = np_end + tail.end()
    rest = txt[end:se]
    for rx, exact in ((_LIST_SOME, False), (_LIST_EXACT, True), (_LIST_COMMA, True)):
        m = rx.match(rest)
        if m:
            a, b = end + m.start("l"), end + m.end("l")
            members = _members_named(c, a, b)
            ok = {len(members)}
            more = _LIST_MORE.match(txt, b, se)
            if more:
                ok.add(len(members) + len([x for x in _members_named(c, more.start("l"), more.end("l")) if x not in members]))
            # an item the list grammar cannot read ("dry skin, long-lasting wear and strong smell") must not shorten
            # the enumeration: the themes named from the list to the end of the sentence (or a comparison) count too
            stop = _LIST_STOP.search(txt, b, se)
            ok.add(len(_members_named(c, a, stop.start() if stop else se)))
            return len(members), exact, members, ok
    if _COLON_EOL.match(rest):  # "Three themes stand out:" and a bulleted or numbered list on the next lines
        members = []
        pos = txt.find("\n", ct.end)
        while pos >= 0:
            end = txt.find("\n", pos + 1)
            line = txt[pos + 1:end if end >= 0 else len(txt)]
            if not line.strip():
                if members:
                    break
                pos = end
                continue
            m = _BULLET.match(line)
            if not m:
                break
            for x in _members_named(c, pos + 1 + m.start("l"), pos + 1 + m.end("l")):
                if x not in members:
                    members.append(x)
            pos = end
        if members:
            return len(members), True, members, {len(members)}
    return None


# "the dictionary has / lists / holds 27 themes": the dictionary is the clause's subject
_DICT_HAS = re.compile(r"\b(?:dictionary|universe|vocabulary|taxonomy)\s+(?:itself\s+)?(?:has|had|holds|held|contains|contained|"
                       r"lists|listed|covers|covered|offers|offered|includes|included|comprises|comprised|spans|spanned)"
                       r"\s+(?:all\s+|only\s+|just\s+)?$", re.I)


def _is_dictionary(c: Check, ct: _Count) -> bool:
    """'18 candidate themes', 'a dictionary of 18 themes', 'a 16-theme dictionary', '50 themes in the dictionary'."""
    before = c.masked[c.sents[c.sentence_of(ct.start)][0]:ct.start]
    return bool(_DICT.search(ct.mods) or re.search(r"\b(?:dictionary|universe|vocabulary|taxonomy)\s+of\s+$", before, re.I)
                or _DICT_HAS.search(before)
                or re.match(r"\s+(?:in\s+(?:the\s+|its\s+|a\s+)?(?:public\s+)?)?(?:dictionary|universe|vocabulary|taxonomy)\b",
                            c.masked[ct.end:], re.I))


# "seven themes were admitted", "ten of the 50 candidate themes made it into the plan": the count's own predicate
# is admission to the plan, optionally followed by a phrase about the release that names no theme
_ADMIT_VERB = re.compile(r"\s+(?:(?:were|was|are|is|have\s+been|has\s+been|got|get|are\s+all|were\s+all)\s+)?"
                         r"(?:admitted|released|selected|retained|kept|published|included)\b"
                         r"|\s+(?:made(?:\s+it)?(?:\s+(?:into|onto|to))?|(?:are|were|is|was|appear|appeared|sit|remain)\s+(?:in|on))"
                         r"\s+(?:the\s+)?(?:final\s+|released\s+|published\s+)?(?:plan|release|top[\s-]*l|cut)\b", re.I)
_ADMIT_TAIL = re.compile(rf"\s*$|\s+(?:to|in|into|from|by|for|out\s+of|at|under|with|over|among|across|in\s+total|"
                         rf"in\s+all|altogether|overall)\b(?![^§¤]*§)(?!.*\b(?:{RECORD_NOUNS}|{PEOPLE_NOUNS})\b)", re.I)


def _admitted_predicate(c: Check, np_end: int, clause_end: int) -> bool:
    """Is the counted noun phrase's predicate admission to the plan (rule *total*)?"""
    m = _ADMIT_VERB.match(c.masked, np_end, clause_end)
    return bool(m and _ADMIT_TAIL.match(c.masked[m.end():clause_end].rstrip(".!?; ")))


def _fail(c: Check, ct: _Count, why: str) -> None:
    c.add("unsupported_number", ct.num.start, ct.num.end, f'"{ct.num.text}" {why}')


def _check_members(c: Check, members: list[frozenset], pred) -> None:
    bins, ws, we, _ = pred
    for mem in members:
        if not _in_bins(c, mem, bins):
            x = sorted(mem)[0]
            got = str(c.atom(x).get("bin", "")).lower()
            c.add("wrong_bin", ws, we, f'"{c.lex.label_of[x]}" is in the released "{got}" bin, not "{"/".join(sorted(bins))}"')


def _judge(c: Check, ct: _Count) -> None:
    h = _hedge(c, ct.num)
    n = ct.n
    k = c.sentence_of(ct.start)
    txt = c.masked
    c.consume(ct.num.start, ct.num.end)
    if ct.bins_noun:
        if not any(count_ok(h, n, v) for v in _bin_levels(c)):
            _fail(c, ct, f"is not the number of support bins ({'/'.join(map(str, sorted(_bin_levels(c))))})")
        return
    if ct.noun and PER_RECORD.search(txt[span_of(c.clauses_of(k), ct.start, c.sents[k])[0]:ct.start]) \
            and isinstance(c.plan.get("K"), (int, float)):  # "each review counts toward at most 3 themes": K
        if n != int(c.plan["K"]):  # "at most" / "up to" belong to the bound's definition
            _fail(c, ct, f"is not the public bound K = {c.plan['K']:g} on themes per record")
        return
    if ct.of_m is None and _is_dictionary(c, ct):  # in "N of the M dictionary themes" the qualifier is M's
        if not any(count_ok(h, n, v) for v in _dict_sizes(c)):
            _fail(c, ct, f"is not the dictionary size (m = {'/'.join(map(str, sorted(_dict_sizes(c)))) or 'not released'})")
        return
    pred = _predicate(c, ct)
    if pred:
        c.consume(pred[1], pred[2])
    group_members: list[frozenset] | None = None
    group_size = 0
    category = _category(c, ct) if ct.of_m is None else None
    if category is not None:  # "three credit reporting themes", "two credit card themes have low support"
        limit = len(category) - (1 if ct.det == "other" else 0)
        want = _n_bin(c, pred[0], category) if pred else None
        total = bool(_TOTAL_SUBJECT.search(txt[span_of(c.clauses_of(k), ct.start, c.sents[k])[0]:ct.start]))
        if want is not None and ct.det != "other":
            ok = count_ok(h, n, want)
        elif ct.det == "group" or total:
            ok = count_ok(h, n, limit)
        else:
            ok = n <= limit or h in _LE | _LT
        if not ok:
            _fail(c, ct, f"does not fit the {len(category)} admitted themes of that category")
        else:
            c.groups.setdefault(k, category)
        return
    if ct.of_m is not None:  # "N of the M …": M names the group
        resolved = _resolve_group(c, ct.of_m, pred)
        if resolved is None:
            return
        group_members, group_size = resolved
    elif ct.of_group:
        group_members = _groups(c, k, ct.start)[0]
        group_size = len(group_members)
        if not count_ok(h if h not in _EXACT else "at least", n, len(group_members)):
            _fail(c, ct, f"is more than the {len(group_members)} themes it is taken from")
            return
    if ct.det == "other":
        limit = c.n - 1 if not pred else _n_bin(c, pred[0])
        if n > limit:
            _fail(c, ct, f"is more than the plan's other themes allow ({limit})")
        return
    if ct.det == "group" and ct.of_m is None and not ct.of_group:
        _judge_group(c, ct, h, pred)
        return
    listed = _listed(c, ct, pred[2] if pred and pred[3] else None)
    if pred and listed and listed[2]:
        _check_members(c, listed[2], pred)
    cs, ce = span_of(c.clauses_of(k), ct.start, c.sents[k])
    # in "N of the M released themes" the marker qualifies M (the group), not N's predicate
    total = bool(_TOTAL_SUBJECT.search(txt[cs:ct.start]) or (_TOTAL_MARK.search(ct.mods) and ct.of_m is None)
                 or _TOTAL_AFTER.match(txt[ct.end:]) or _admitted_predicate(c, ct.end, ce))
    if pred and pred[3] and listed and listed[1] and not total and group_members is None:
        # "two themes of moderate support, A and B, follow": the enumeration restricts the count
        if not any(count_ok(h, n, v) for v in listed[3]):
            _fail(c, ct, f"does not match the {listed[0]} themes listed")
        return
    if pred:
        want = _n_bin(c, pred[0], group_members)
        if not count_ok(h, n, want):
            where = "" if group_members is None else " of that group"
            _fail(c, ct, f'is not the number of themes{where} in the "{"/".join(sorted(pred[0]))}" bin ({want})')
        return
    if listed:
        got, exact, _, ok_counts = listed
        if (exact and not any(count_ok(h, n, v) for v in ok_counts)) or (not exact and got > n):
            _fail(c, ct, f"does not match the {got} themes listed")
        return
    if group_members is not None:
        if total:  # "seven of the 24 dictionary themes were admitted": the group's admitted members
            if not count_ok(h, n, len(group_members)):
                _fail(c, ct, f"is not the number of admitted themes of that group ({len(group_members)})")
        elif not count_ok(h if h not in _EXACT else "at least", n, group_size):
            _fail(c, ct, f"is more than the {group_size} themes of the group")
        return
    if total:
        if not any(count_ok(h, n, v) for v in _plan_sizes(c)):
            _fail(c, ct, f"is not the number of themes in the plan ({c.n})")
        return
    size = max(_plan_sizes(c))
    if not (h in _LE | _LT or (n + 1 if h in _GT or h == "just over" else n) <= size):
        _fail(c, ct, f"is more themes than the plan has ({c.n})")


def _resolve_group(c: Check, m_ct: _Count, pred) -> tuple[list[frozenset], int] | None:
    """The group an M of "N of the M" names: (its admitted members, its size M).

    The qualifiers of the noun phrase are M's ("of the 24 dictionary themes": the group is
    the dictionary, size D, whose admitted members are the plan). Reports and returns None
    when M fits no group.
    """
    c.consume(m_ct.num.start, m_ct.num.end)
    k = c.sentence_of(m_ct.start)
    inner = _predicate(c, m_ct) if m_ct.noun else None
    if inner and inner[3]:  # "two of the three high-support themes"
        c.consume(inner[1], inner[2])
        members = [frozenset({x}) for x in c.lex.atoms if _in_bins(c, frozenset({x}), inner[0])]
        if len(members) != m_ct.n:
            _fail(c, m_ct, f'is not the number of themes in the "{"/".join(sorted(inner[0]))}" bin ({len(members)})')
            return None
        return members, len(members)
    if _is_dictionary(c, m_ct):   # "out of the 27 in the public dictionary" names the dictionary without a noun
        if m_ct.n not in _dict_sizes(c):
            _fail(c, m_ct, f"is not the dictionary size (m = {'/'.join(map(str, sorted(_dict_sizes(c)))) or 'not released'})")
            return None
        return [frozenset({x}) for x in c.lex.atoms], m_ct.n
    for g in _groups(c, k, m_ct.start, wide=True):
        if len(g) == m_ct.n:
            return g, len(g)
    if m_ct.n in _plan_sizes(c):
        return [frozenset({x}) for x in c.lex.atoms], m_ct.n
    _fail(c, m_ct, f"is not the number of themes in the plan ({c.n}) nor of a group named before")
    return None


def _judge_group(c: Check, ct: _Count, h: str, pred) -> None:
    """"The six themes", "all three", "these two": the plan or a group named before."""
    k = c.sentence_of(ct.start)
    if pred and pred[3]:  # "the three high-support themes": the bin's group
        want = _n_bin(c, pred[0])
        c.groups.setdefault(k, [frozenset({x}) for x in c.lex.atoms if _in_bins(c, frozenset({x}), pred[0])])
        if not count_ok(h, ct.n, want):
            _fail(c, ct, f'is not the number of themes in the "{"/".join(sorted(pred[0]))}" bin ({want})')
        listed = _listed(c, ct)
        if listed:
            _check_members(c, listed[2], pred)
        return
    rng = _RANGE_AFTER.match(c.masked[ct.end:])
    if rng:  # "the six themes ranked 2 through 7": the range is the group
        a, b = sorted((int(rng.group("a")), int(rng.group("b"))))
        if not count_ok(h, ct.n, b - a + 1):
            _fail(c, ct, f"is not the number of ranks from {a} to {b}")
        return
    for g in _groups(c, k, ct.start, wide=True):
        if count_ok(h, ct.n, len(g)):
            c.groups.setdefault(k, g)
            if pred:
                _check_members(c, g, pred)
            return
    if any(count_ok(h, ct.n, v) for v in _plan_sizes(c)):
        plan = [frozenset({x}) for x in c.lex.atoms]
        c.groups.setdefault(k, plan)
        if pred:
            _check_members(c, plan, pred)
        return
    _fail(c, ct, f"is not the number of themes in the plan ({c.n}) nor of a group named before")


def _quantifiers(c: Check) -> None:
    """"All themes …", "no theme …", "half of the themes …": checked when a bin is the predicate."""
    txt = c.masked
    for m in _QUANT.finditer(txt):
        s, e = m.span()
        if c.overlaps(s, e, c.rank_spans + c.consumed) or not _mods_ok(re.sub(r"^\d[\d,]*\s+", "", m.group("mods"))):
            continue  # a leading number names the group ("half of the 10 themes")
        q = re.sub(r"\s+", " ", m.group("q").lower())
        q = re.sub(r" of$", "", q)
        c.consume(s, e)
        num = Num(s, m.end("q"), m.group("q"), 0, 1, "", "words", False, False)
        ct = _Count(num, 0, s, e, m.group("noun"), m.group("mods"))
        k = c.sentence_of(s)
        plan = [frozenset({x}) for x in c.lex.atoms]
        size = len(plan)
        inner = [n for n in numbers(txt[m.start("mods"):m.end("mods")], include_one=True) if _value(n) is not None]
        if inner:  # "half of the ten themes": the ten names the group
            n0 = inner[0]
            n0.start += m.start("mods")
            n0.end += m.start("mods")
            resolved = _resolve_group(c, _Count(n0, int(n0.value), n0.start, e, m.group("noun"),
                                                txt[n0.end:m.end("mods")]), None)
            if resolved is None:
                continue
            plan, size = resolved
        pred = _predicate(c, ct)
        if not pred:
            continue
        c.consume(pred[1], pred[2])
        nb = _n_bin(c, pred[0], plan)
        if q in ("all", "every", "each", "both"):
            group = plan
            if not inner and (re.search(r"\b(?:these|those)\b", m.group(0), re.I) or q == "both"):
                group = _groups(c, k, s)[0] if q != "both" or len(_groups(c, k, s)[0]) == 2 else plan
            _check_members(c, group, pred)
            continue
        ok = {"none": nb == 0, "no": nb == 0, "most": nb > size / 2, "the majority": nb > size / 2,
              "a majority": nb > size / 2, "only one": nb == 1, "just one": nb == 1, "a single": nb == 1,
              "one": nb >= 1}.get(q)
        if ok is None and q in FRACTIONS and size:
            f = FRACTIONS[q] / 100
            ok = 0.8 * f - 1e-9 <= nb / size <= 1.2 * f + 1e-9
        if ok is False:
            c.add("unsupported_number", s, m.end("q"), f'"{m.group("q")}" does not fit the plan: {nb} of those {size} '
                  f'themes are in the "{"/".join(sorted(pred[0]))}" bin')


_QUANT_THEM = re.compile(r"\b(?P<q>" + "|".join(re.escape(f) for f in sorted(FRACTIONS, key=len, reverse=True)
                                                if "majority" not in f) + r"|most|none|all|each|both)\s+of\s+(?:them|these|those)\b"
                         r"(?!\s+(?:" + RECORD_NOUNS + "|" + PEOPLE_NOUNS + "|" + PLAN_NOUNS + r")\b)", re.I)


def _quantified_them(c: Check) -> None:
    """"Half of them are low": a quantifier over the group named before."""
    for m in _QUANT_THEM.finditer(c.masked):
        s, e = m.span()
        if c.overlaps(s, e, c.rank_spans + c.consumed):
            continue
        c.consume(s, e)
        k = c.sentence_of(s)
        group = _groups(c, k, s)[0]
        ct = _Count(Num(s, m.end("q"), m.group("q"), 0, 1, "", "words", False, False), 0, s, e)
        pred = _predicate(c, ct)
        if not pred:
            continue
        c.consume(pred[1], pred[2])
        q = m.group("q").lower()
        nb = _n_bin(c, pred[0], group)
        if q in ("all", "each", "both"):
            _check_members(c, group, pred)
            continue
        ok = {"none": nb == 0, "most": nb > len(group) / 2}.get(q)
        if ok is None and q in FRACTIONS and group:
            f = FRACTIONS[q] / 100
            ok = 0.8 * f - 1e-9 <= nb / len(group) <= 1.2 * f + 1e-9
        if ok is False:
            c.add("unsupported_number", s, m.end("q"), f'"{m.group("q")}" does not fit: {nb} of those {len(group)} themes '
                  f'are in the "{"/".join(sorted(pred[0]))}" bin')


def _both(c: Check) -> None:
    """"A and B both have moderate support", "Both A and B are rare", "All are rare": every member of the group."""
    for m in _BOTH_AB.finditer(c.masked):
        s, e = m.span()
        k = c.sentence_of(s)
        ce = span_of(c.clauses_of(k), s, c.sents[k])[1]
        preds = [p for p in bin_predicates(c, e, c.sents[k][1]) if p[1] < ce] if not c.is_consumed(s, s + 4) else []
        if preds:
            group = _members_named(c, s, e)
            c.consume(s, s + 4)
            _check_members(c, group, (*preds[0], False))
    for m in _BOTH.finditer(c.masked):
        s, e = m.span()
        if c.overlaps(s, e, c.rank_spans + c.consumed):
            continue
        k = c.sentence_of(s)
        ce = span_of(c.clauses_of(k), s, c.sents[k])[1]
        preds = bin_predicates(c, e, ce)
        if not preds:
            continue
        group = _groups(c, k, s)[0]
        c.consume(s, e)
        _check_members(c, group, (*preds[0], False))


_BINW = r"(?P<b>high|moderate|low)"
_BIN_GROUP = re.compile(rf"\b(?:the\s+)?{_BINW}[\s-]+(?:support|bin)\s+(?P<n>{PLAN_NOUNS})\b"
                        rf"|\b(?P<n2>{PLAN_NOUNS})\s+(?:in|with|from)\s+(?:the\s+)?(?P<b2>high|moderate|low)(?:[\s-]+(?:support|bin))?\b",
                        re.I)


def _bin_groups(c: Check) -> None:
    """'Themes in the low bin are each …', 'the low-support themes all …': a plural noun names the bin's group."""
    for m in _BIN_GROUP.finditer(c.masked):
        noun = m.group("n") or m.group("n2")
        if not re.search(r"(?:s|ies)$", noun, re.I) or c.overlaps(*m.span(), c.rank_spans + c.consumed):
            continue
        name = (m.group("b") or m.group("b2")).lower()
        k = c.sentence_of(m.start())
        group = [frozenset({x}) for x, a in c.lex.atoms.items() if str(a.get("bin", "")).lower() == name]
        if group:
            c.groups.setdefault(k, group)
            c.consume(*m.span("b" if m.group("b") else "b2"))


_DISCOURSE = re.compile(r"(?:-|\s+)(?:[\w-]+\s+){0,2}?(?:patterns?|priorities|takeaways?|groups?|clusters?|points?|findings?|"
                        r"messages?|signals?|observations?|insights?|highlights?|questions?|dimensions?|aspects?|factors?|"
                        r"kinds?|types?|sets?|tiers?|areas?\s+of\s+concern|concerns?|lessons?|strengths?|weaknesses?|"
                        r"pain\s+points?|recommendations?|things?)\b", re.I)
_ITEMS_AFTER = re.compile(r"(?:\s+[\w-]+){0,3}\s*:\s*(?P<items>[^.;!?\n]+)")


def _discourse_counts(c: Check) -> None:
    """'Two priorities stand out: A and B': a count of the summary's own points equals the items it lists."""
    txt = c.masked
    for num in numbers(txt, include_one=False):
        n = _value(num)
        if n is None or c.overlaps(num.start, num.end, c.rank_spans + c.consumed):
            continue
        m = _DISCOURSE.match(txt, num.end)
        if not m:
            continue
        items = _ITEMS_AFTER.match(txt, m.end())
        if not items:
            continue
        parts = [x for x in re.split(r"\s*(?:,|;|\band\b|\bor\b)\s*", items.group("items")) if x.strip()]
        c.consume(num.start, num.end)
        if len(parts) != n:
            c.add("unsupported_number", num.start, num.end, f'"{num.text}" does not match the {len(parts)} items listed after it')


def _rank_group_lists(c: Check) -> None:
    """'The five most common themes are A, B, C and D': a rank group's count that introduces (or
    follows) an enumeration must equal the number of themes enumerated (the ranks are checked by *Ranks*)."""
    txt = c.masked
    for s, ns, ne, n, e in c.rank_counts:
        k = c.sentence_of(s)
        np = re.match(rf"[\s-]+(?:[\w-]+\s+){{0,2}}?{PLAN_NOUNS}\b", txt[e:c.sents[k][1]], re.I)
        end = e + (np.end() if np else 0)
        num = Num(ns, ne, txt[ns:ne], n, 1, "", "words", False, False)
        listed = _listed(c, _Count(num, n, ns, end))
        before = re.fullmatch(rf"\s*(?:(?:[-*•]|\d{{1,2}}[.)])\s+)?(?:both\s+)?(?P<l>{_LIST})\s+(?:are|were|remain|form|make\s+up)"
                              rf"\s+(?:the\s+)?", txt[c.sents[k][0]:s], re.I)  # the whole subject is the list
        if listed:
            got, exact, _, ok = listed
            bad = n not in ok if exact else got > n
        elif before:
            got = len(_members_named(c, c.sents[k][0] + before.start("l"), c.sents[k][0] + before.end("l")))
            bad = got != n
        else:
            continue
        if bad:
            c.add("unsupported_number", ns, ne, f'"{num.text}" does not match the {got} themes listed')


# counts without a number: "no (other) theme has high support", "several themes have low support"
_VAGUE_Q = (r"(?P<q>no|none\s+of\s+the|not\s+a\s+single|not\s+one|several|many|multiple|numerous|a\s+few|"
            r"a\s+handful\s+of|a\s+couple\s+of|various)")
_VAGUE = re.compile(
    rf"(?<!how\s)\b{_VAGUE_Q}\s+(?P<other>other\s+|more\s+|further\s+)?(?:(?P<b1>high|moderate|low)[\s-]+support\s+(?:{PLAN_NOUNS})"
    rf"|(?:{PLAN_NOUNS})\s+(?:\w+\s+)?(?:have|has|had|show|shows|carry|carries|get|gets|reach|reaches|are\s+in|is\s+in|"
    rf"fall\s+in(?:to)?|falls\s+in(?:to)?|sit\s+in|sits\s+in|land\s+in|lands\s+in)\s+(?:the\s+)?(?:a\s+)?"
    rf"(?P<b2>high|moderate|low)\b)", re.I)
_VAGUE_RANGE = {"no": (0, 0), "none of the": (0, 0), "not a single": (0, 0), "not one": (0, 0),
                "a couple of": (2, 3), "a few": (2, 5), "a handful of": (2, 6), "several": (3, None),
                "many": (3, None), "numerous": (3, None), "multiple": (2, None), "various": (2, None)}


def _vague_counts(c: Check) -> None:
    for m in _VAGUE.finditer(c.masked):
        if c.is_consumed(*m.span()):
            continue
        q = re.sub(r"\s+", " ", m.group("q").lower())
        lo, hi = _VAGUE_RANGE[q]
        b = (m.group("b1") or m.group("b2")).lower()
        members = {x for x, a in c.lex.atoms.items() if str(a.get("bin", "")).lower() == b}
        if m.group("other"):   # "no other theme": the themes just named are set apart
            k = c.sentence_of(m.start())
            named = {x for mm in c.in_range(c.sents[max(0, k - 1)][0], m.start()) for x in mm.atoms}
            members -= named
        n = len(members)
        c.consume(*m.span())
        if n < lo or (hi is not None and n > hi):
            want = "none" if hi == 0 else f"at least {lo}" if hi is None else f"{lo} to {hi}"
            c.add("unsupported_number", *m.span(), f'"{m.group()}" says {want} themes have {b} support; the plan '
                  f"releases {n}")


def check(c: Check) -> None:
    _vague_counts(c)
    _rank_group_lists(c)
    _discourse_counts(c)
    counts = _recognise(c)
    inner = {id(ct.of_m) for ct in counts if ct.of_m is not None}
    for ct in sorted(counts, key=lambda x: x.start):
        if id(ct) in inner or c.is_consumed(ct.num.start, ct.num.end):
            continue
        _judge(c, ct)
    _quantifiers(c)
    _quantified_them(c)
    _both(c)
    _bin_groups(c)  # after the counts, which own "the two low-support themes"
