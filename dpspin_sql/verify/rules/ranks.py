"""Rank claims against the released ranks ("the most common", "ranks third", "the top three").

Superlatives always refer to the whole plan, so they are checked against rank 1 or
the last released rank; ordinals and rank numbers against the attached theme's rank;
rank groups against every theme named in the sentence.
"""
from __future__ import annotations

import functools
import re

from ..context import Check
from ..negation import judged
from ..numeric import ORDINALS, TENS, UNITS, ord_value, parse_words
from ..plan import mass
from ..vocab import ORD, PLAN_NOUNS, RANK1, RANK_ADJ, RANKLAST, SHARED_RANK
from .bins import bin_predicates

_COUNTW = "|".join(list(UNITS)[2:] + list(TENS))
_POS = r"(?:\d+(?:st|nd|rd|th)?|" + "|".join(ORDINALS) + "|" + "|".join(list(UNITS)[1:] + list(TENS)) + r")"
_GROUP_END = rf"(?=[\s-]+(?:[\w-]+\s+){{0,2}}?{PLAN_NOUNS}\b|\s*[,.;:)—–]|\s*$|\s+(?:are|were|is|was|have|has|all|both|each|together)\b)"
# "beyond the top three": the mentions are outside the group
_EXCLUDE = re.compile(r"\b(?:beyond|outside(?:\s+of)?|below|after|besides|apart\s+from|other\s+than|except(?:\s+for)?|"
                      r"excluding|(?:\bnot|n['’]t)\s+(?:in|among)|behind|trail(?:s|ed|ing)?|(?:narrowly\s+|just\s+)?miss(?:es|ed)?|falls?\s+(?:just\s+)?(?:outside|short\s+of)|follows?|close\s+to|near|(?:just\s+)?short\s+of)\s+(?:the\s+)?$", re.I)
PATTERNS = [
    (SHARED_RANK, "shared"),
    (re.compile(rf"\b(?:rank(?:s|ed|ing)?|positions?|places?|spots?|order(?:ing)?)\s+(?:from\s+)?#?\s*(?P<a>{_POS})\s*"
                rf"(?:to|through|thru|–|-|and)\s*#?\s*(?P<b>{_POS})\b", re.I), "range"),
    (re.compile(rf"\b(?:the\s+)?(?P<k>\d+|{_COUNTW})\s+(?:most\s+{RANK_ADJ}|largest|biggest|highest|greatest|leading|"
                r"top-ranked)\b", re.I), "topn"),
    (re.compile(rf"\b(?:the\s+)?(?P<k>\d+|{_COUNTW})\s+(?:least\s+{RANK_ADJ}|smallest|lowest|rarest)\b", re.I), "bottomn"),
    (re.compile(rf"\b(?:the\s+)?{ORD}[\s-]+(?:most|largest|biggest|highest|greatest|strongest)\b", re.I), "ord"),
    (re.compile(rf"\b{ORD}[\s-]+(?:least|lowest|smallest|rarest)\b", re.I), "ordlast"),
    (re.compile(r"\b(?:rank(?:s|ed|ing)?|placed|places|position(?:ed)?|com(?:es|e|ing)\s+in|came\s+in|sits?\s+at|at|number|no\.|#)\s*(?:at\s+)?(?:number\s+|no\.\s*|#\s*)?"
                r"(?P<k>\d+(?:st|nd|rd|th)?|" + "|".join(ORDINALS) + r")\b", re.I), "k"),
    (re.compile(rf"\b(?:comes?|came|ranks?|ranked|placed|sits?|finish(?:es|ed)?|is|are|was|were)\s+(?:in\s+)?{ORD}"
                r"\b(?![\s-]+(?:mentioned|listed|noted|reported|seen|raised|time|glance|sight))", re.I), "ordk"),
    (re.compile(rf"\b(?:in|at)\s+{ORD}\s+(?:place|position|spot)\b", re.I), "ordk"),
    # an ordinal in apposition to a theme: "mashed potatoes, seventh, is well below both"
    (re.compile(rf"(?<=[\w)§]),\s+{ORD}(?=\s*[,;)—–])", re.I), "ordk"),
    (re.compile(rf"\bthe\s+{ORD}\s+(?:{PLAN_NOUNS})\b", re.I), "ordk"),
    (re.compile(r"\b(?:top|first|leading)[\s-]+(?P<k>\d+|" + _COUNTW + r")\b", re.I), "topn"),
    (re.compile(r"\bbottom[\s-]+(?P<k>\d+|" + _COUNTW + r")\b", re.I), "bottomn"),
    (re.compile(r"\b(?:last|final)\s+(?P<k>\d+|" + _COUNTW + r")\b" + _GROUP_END, re.I), "bottomn"),
    (re.compile(rf"\b(?:the\s+)?{RANK1}(?:[\s-]+(?P<pl>{PLAN_NOUNS}))?", re.I), "r1"),
    (re.compile(r"(?<![\w#])(?:#|No\.|no\.|number\s+)\s*1\b(?![.,]\d)"), "r1"),   # "is #1", "is No. 1"
    (re.compile(rf"\b(?:the\s+)?{RANKLAST}(?:[\s-]+(?P<pl>{PLAN_NOUNS}))?", re.I), "rlast"),
    (re.compile(r"\b(?:top|lead|head)\s+(?:the\s+)?(?:list|ranking|plan|charts?|table|pack|field)\b", re.I), "r1pl"),
    (re.compile(r"\b(?:tops|top\s+of|heads|leads)\s+(?:the\s+)?(?:list|ranking|plan|charts?|table|pack|field)\b"
                r"|\bin\s+(?:the\s+)?lead\b"
                r"|\b(?:mentioned|cited|reported|raised|discussed|named)\s+(?:the\s+)?most(?:\s+(?:often|frequently))?\b"
                r"|\bmost\s+(?:often|frequently)(?!\s+than)\b"
                r"|\b(?:holds?|takes?|took|claims?|claimed)\s+(?:the\s+)?(?:first\s+place|top\s+spot|top\s+position|lead)\b"
                r"|\bthe\s+(?:main|primary|chief|principal|predominant|top|biggest|leading|number[\s-]one)\s+"
                r"(?:concern|complaint|problem|driver|pain\s+point)\b", re.I), "r1v"),
    (re.compile(r"\b(?:mentioned|cited|reported|raised|discussed)\s+(?:the\s+)?least(?:\s+(?:often|frequently))?\b"
                r"|\bleast\s+(?:often|frequently)(?!\s+than)\b", re.I), "rlastv"),
    (re.compile(r"\b(?:comes?|came|ranks?|ranked|sits?|is|are)\s+(?:in\s+)?last\b|\bin\s+last\s+place\b|\bat\s+the\s+bottom\b", re.I), "rlastv"),
]


def _skip(kind: str, m: re.Match, txt: str, s: int, e: int) -> bool:
    """Forms of the patterns that are not rank claims ("at 12", "the top", "number 3 of")."""
    if (kind == "r1" and re.match(r"(?i)the\s+top$|top$", m.group().strip()) and not m.group("pl")
            and not re.match(rf"\s*(?:{PLAN_NOUNS}|of\s+the\s+(?:list|plan|ranking))", txt[e:e + 30], re.I)):
        return True
    if kind == "k" and re.match(r"(?i)(?:at|number|#|no\.)", m.group()) and not re.search(r"(?i)rank|#|no\.|number", m.group()):
        return True
    if kind == "k" and re.match(r"(?i)at\s", m.group()) and not re.search(r"(?:st|nd|rd|th)\b|" + "|".join(ORDINALS), m.group(), re.I):
        return True
    return bool(kind == "k" and re.match(r"(?i)number\s+\d", m.group())
                and not re.search(r"(?i)\bat\s+$|\bis\s+$|\bas\s+$", txt[max(0, s - 6):s]))


def _ranks(c: Check, men) -> list[int]:
    return [int(c.atom(x).get("rank", 0)) for x in men.atoms]


def _shared(c: Check, m: re.Match, s: int, e: int) -> None:
    """'A and B are tied for second place': the themes' released masses lie within the margin of
    each other and the claimed rank is the best (smallest) of their ranks."""
    gd = m.groupdict()
    want = (1 if gd.get("stop") else c.max_rank if gd.get("slast") else
            int(gd["snum"]) if gd.get("snum") else ord_value(gd["sord"]))
    k = c.sentence_of(s)
    cs, ce = next(((x, y) for x, y in c.clauses_of(k) if x <= s < y), c.sents[k])
    named: list = []
    for men in c.in_range(cs, ce) or c.attach(s, e):
        if all(men.atoms != x.atoms for x in named):
            named.append(men)
    if not named:
        return
    readings: list[list[int]] = [[]]
    for men in named[:6]:
        readings = [r + [x] for r in readings for x in sorted(men.atoms)][:64]
    best: tuple[tuple[bool, bool], list[int], list[int], list[float]] | None = None
    for r in readings:
        others: list[int | None] = [x for x in c.lex.atoms if x not in r] if len(r) == 1 else []
        for o in others or [None]:  # one theme named: "A is tied for second" needs a partner within the margin
            group = r + ([o] if o is not None else [])
            masses = [mass(c.atom(x)) for x in group]
            ranks = [int(c.atom(x).get("rank", 0)) for x in group]
            # "tied for last" shares the bottom place; any other rank is the best of the tied ranks
            rank_ok = max(ranks) == c.max_rank if gd.get("slast") else min(ranks) == want
            close = len(group) > 1 and max(masses) - min(masses) < c.margin
            if rank_ok and close:
                return
            score = (rank_ok, close)
            if best is None or score > best[0]:
                best = (score, group, ranks, masses)
    assert best is not None  # readings is not empty: every named mention has at least one atom
    (rank_ok, close), group, ranks, masses = best
    names = " and ".join(f'"{c.lex.label_of[x]}"' for x in group)
    if not rank_ok:
        c.add("wrong_rank", s, e, f"{names} have released ranks {', '.join(map(str, ranks))}, so they cannot share "
              + ("the last place" if gd.get("slast") else f"rank {want}"))
    if not close:
        c.add("unsupported_comparison", named[0].start, max(e, named[-1].end),
              f"the plan releases no other theme for {names} to be tied with" if len(group) == 1 else
              f"{names} differ by at least the comparison margin ({c.margin:g}), so they are not tied")


def _claim(c: Check, kind: str, m: re.Match, s: int, e: int) -> None:
    gd = m.groupdict()
    if kind == "shared":
        _shared(c, m, s, e)
        return
    if kind == "range":
        _range(c, _pos(gd["a"]), _pos(gd["b"]), s, e)
        return
    if kind in ("topn", "bottomn"):
        n = _pos(gd["k"])
        word = "top" if kind == "topn" else "bottom"
        c.rank_counts.append((s, m.start("k"), m.end("k"), n, e))  # a count of ranks too (Counts: enumerations)
        if n > c.max_rank:
            c.add("wrong_rank", s, e, f'the plan ranks only {c.max_rank} themes, so there is no {word} {n}')
            return
        k = c.sentence_of(s)
        ss, se = c.sents[k]
        outside = bool(_EXCLUDE.search(c.masked[ss:s]))
        if not outside:
            top = kind == "topn"
            c.groups.setdefault(k, [frozenset({x}) for x, a in c.lex.atoms.items()
                                    if (int(a.get("rank", 0)) <= n if top else int(a.get("rank", 0)) > c.max_rank - n)])
        for men in c.in_range(ss, se):
            ranks = _ranks(c, men)
            inside = any(r <= n for r in ranks) if kind == "topn" else any(r > c.max_rank - n for r in ranks)
            if inside == outside:
                where = "outside" if not outside else "inside"
                c.add("wrong_rank", men.start, men.end, f'"{men.text}" (released rank {ranks[0]}) is {where} the {word} {n}')
        return
    plural = (bool(gd.get("pl")) and re.search(r"(?:s|ies)$", gd.get("pl") or "", re.I) and kind in ("r1", "rlast")) \
        or (kind in ("r1v", "rlastv") and re.search(rf"\b(?:{PLAN_NOUNS})\s+$", c.masked[c.sents[c.sentence_of(s)][0]:s], re.I)
            and re.search(r"(?:s|ies)\s+$", c.masked[:s], re.I))  # "themes at the bottom of the list"
    if kind == "r1pl":   # "A and B top the list": each is among the first as many ranks as are listed
        kind, plural = "r1", True
    kind = {"r1v": "r1", "rlastv": "rlast"}.get(kind, kind) if plural else kind
    if not plural and not c.in_range(*c.sents[c.sentence_of(s)]):
        items = c.list_items(s)   # "Most common theme:" and one item, or a list under it
        if len(items) > 1 and kind in ("r1", "rlast"):
            plural = True
    if plural:
        ss, se = c.sents[c.sentence_of(s)]
        listed = c.in_range(ss, se) or c.listed(s)
        n = len(listed)
        for mm in listed:
            ranks = _ranks(c, mm)
            ok = any(r <= n for r in ranks) if kind == "r1" else any(r > c.max_rank - n for r in ranks)
            if not ok:
                c.add("wrong_rank", mm.start, mm.end, f'"{mm.text}" is not among the {n} {"most" if kind == "r1" else "least"} common themes (released rank {ranks[0]})')
        return
    if kind in ("r1", "r1v", "rlast", "rlastv"):
        want = _restricted(c, kind, s, e)
    elif kind == "ordlast":
        want = c.max_rank - ord_value(gd["ord"]) + 1
    elif kind in ("ord", "ordk"):
        want = ord_value(gd["ord"])
    else:
        want = ord_value(gd["k"])
    k = c.sentence_of(s)
    cs = c.clause_at(s)[0]
    att = c.attach(s, e)
    answered = _answered(c, k)
    distinct = {m.atoms for m in answered}
    if len(distinct) > 1 and want in (1, c.max_rank) and kind in ("r1", "r1v", "rlast", "rlastv") and \
            re.search(r"\b(?:themes|topics|ones|are|were)\b", c.masked[c.sents[k][0]:c.sents[k][1]], re.I):
        n = len(distinct)   # "Which themes are least common? A, B and C.": each among the last (first) three
        for men in answered:
            ranks = _ranks(c, men)
            ok = any(r <= n for r in ranks) if want == 1 else any(r > c.max_rank - n for r in ranks)
            if not ok:
                c.add("wrong_rank", s, e, f'"{men.text}" has released rank {ranks[0]}, not among the '
                      f'{"first" if want == 1 else "last"} {n}')
        return
    if answered:
        att = answered[:1]
    elif not c.in_range(*c.sents[k]):
        att = c.listed(s)[:1] or att
    guess = c.claim_subject(s, e) if not c.list_items(s) and not answered else None
    if guess is not None and not guess.atoms:
        c.add("wrong_rank", cs, e, f'"{guess.text}" is no theme of the plan, so no released rank backs this claim')
        return
    if guess is not None:   # a paraphrase: the themes that share a word with it
        att = [guess]
    for men in att if c.plural(att) else att[:1]:  # "they rank second": each theme of a plural anaphor
        ranks = _ranks(c, men)
        if want not in ranks:
            c.add("wrong_rank", s, e, f'"{men.text}" has released rank {ranks[0]}, but the summary says rank {want}')
        elif want in (1, c.max_rank) and kind in ("r1", "r1v", "rlast", "rlastv") and _CERTAIN.search(_clause_text(c, s)):
            ordered = sorted(c.plan["atoms"], key=lambda a: int(a.get("rank", 0)))
            pair = ordered[:2] if want == 1 else ordered[-2:]
            if len(pair) == 2 and abs(mass(pair[0]) - mass(pair[1])) < c.margin:
                c.add("unsupported_comparison", s, e, f'"{men.text}" is stated to be {"first" if want == 1 else "last"} '
                      f"beyond doubt, but the released masses of the {'top' if want == 1 else 'bottom'} two differ by "
                      f"less than the comparison margin ({c.margin:g})")


# words that claim the rank is beyond the noise: they need the margin to the next theme
_CERTAIN = re.compile(r"\b(?:clearly|by\s+far|far\s+and\s+away|undisputed(?:ly)?|decisively|easily|unambiguously|"
                      r"definitely|certainly|undoubtedly|without\s+(?:a\s+|any\s+)?doubt|significantly|overwhelmingly|"
                      r"unquestionably|indisputably|comfortably|by\s+a\s+(?:wide|large|clear|big)\s+margin)\b", re.I)


def _clause_text(c: Check, s: int) -> str:
    cs, ce = c.clause_at(s)
    return c.masked[cs:ce]


def _pos(s: str) -> int:
    s = s.lower()
    if s.isdigit():
        return int(s)
    if s in ORDINALS or re.match(r"\d+(?:st|nd|rd|th)$", s):
        return ord_value(s)
    words = parse_words(s)
    assert words is not None  # the rank patterns admit only digits, ordinals and the number words of UNITS/TENS
    return int(words[0])


def _range(c: Check, a: int, b: int, s: int, e: int) -> None:
    """'ranks 2 to 4': the themes named there have ranks a..b; with no theme, a bin applies to each."""
    a, b = min(a, b), max(a, b)
    if b > c.max_rank:
        c.add("wrong_rank", s, e, f"the plan ranks only {c.max_rank} themes")
        return
    k = c.sentence_of(s)
    cs, ce = next(((x, y) for x, y in c.clauses_of(k) if x <= s < y), c.sents[k])
    named = c.in_range(cs, ce) or c.in_range(*c.sents[k])
    for men in named:
        ranks = _ranks(c, men)
        if not any(a <= r <= b for r in ranks):
            c.add("wrong_rank", men.start, men.end, f'"{men.text}" has released rank {ranks[0]}, not a rank from {a} to {b}')
    if named:
        return
    members = [x for x in c.lex.atoms if a <= int(c.atom(x).get("rank", 0)) <= b]
    c.groups.setdefault(k, [frozenset({x}) for x in members])
    after = [p for p in bin_predicates(c, e, c.sents[k][1]) if p[1] < ce]
    before = [p for p in bin_predicates(c, cs, s)]
    for bins, ws, we in (after[:1] or before[-1:]):  # the range's own bin word: the next one in its clause
        c.consume(ws, we)
        for x in members:
            got = str(c.atom(x).get("bin", "")).lower()
            if got not in bins:
                c.add("wrong_bin", ws, we, f'"{c.lex.label_of[x]}" (rank {c.atom(x).get("rank")}) is in the released "{got}" bin, not "{"/".join(sorted(bins))}"')


_BARE_RANGE = re.compile(r"(?<![\w.,])(?P<a>\d{1,2})\s*[–-]\s*(?P<b>\d{1,2})(?![\w.,%])")


_AFTER_X = re.compile(r"\b(?:after|apart\s+from|besides|other\s+than|excluding|except(?:\s+for)?|behind|below|"
                      r"beyond|outside\s+of|among\s+the\s+rest|of\s+the\s+rest)\s+(?=§)", re.I)
_BIN_AFTER = re.compile(r"[\s-]*(?:the\s+)?(?P<b>high|moderate|low)[\s-]+support\b"
                        r"|\s+(?:of|among|in|within)\s+(?:the\s+)?(?P<b2>high|moderate|low)(?:[\s-]+support)?[\s-]+"
                        r"(?:themes?|ones|topics?|bin|tier|band|group)\b", re.I)   # "the largest of the moderate themes"


_OF_THEM = re.compile(r"\s+(?:of|among)\s+(?:them|these|those|this\s+group|that\s+group)\b", re.I)


def _restricted(c: Check, kind: str, s: int, e: int) -> int:
    """The rank a superlative claims, within its restriction: "the most common low-support theme"
    is the first of the low bin, "after A, B is the most common" the first of the others."""
    top = kind in ("r1", "r1v")
    pool = dict(c.lex.atoms)
    binned = _BIN_AFTER.match(c.masked, e)
    if binned:
        which = (binned.group("b") or binned.group("b2")).lower()
        pool = {x: a for x, a in pool.items() if str(a.get("bin", "")).lower() == which}
    k = c.sentence_of(s)
    if _OF_THEM.match(c.masked, e) and k > 0:   # "Eight are low: A, B, …  The largest of them is A"
        named = {x for m in c.in_range(*c.sents[k - 1]) for x in m.atoms}
        if len(named) > 1:
            pool = {x: a for x, a in pool.items() if x in named}
    ss = c.sents[k][0]
    for m in _AFTER_X.finditer(c.masked, ss, s):
        for men in c.in_range(m.end(), s)[:1]:
            pool = {x: a for x, a in pool.items() if x not in men.atoms}
    if not pool or len(pool) == len(c.lex.atoms):
        return 1 if top else c.max_rank
    ranks = [int(a.get("rank", 0)) for a in pool.values()]
    return min(ranks) if top else max(ranks)


def _answered(c: Check, k: int) -> list:
    """The themes of a short answer to a question that names none ("The most common theme? A.")."""
    ss, se = c.sents[k]
    if not c.masked[ss:se].rstrip().endswith("?") or c.in_range(ss, se) or k + 1 >= len(c.sents):
        return []
    a, b = c.sents[k + 1]
    words = re.findall(r"[A-Za-z§]+", c.masked[a:b])
    return c.in_range(a, b) if len(words) <= 12 else []


_BY_RANK = re.compile(r"\b(?:by|in\s+order\s+of)\s+(?:rank|mass|support|frequency|prevalence|size)\b"
                      r"|\b(?:ranked|ranking|ranks)\b", re.I)


def _ranked_lists(c: Check) -> None:
    """'Themes by rank:' then '1. A', '2. B': each numbered item is a claim of that rank."""
    for m in re.finditer(r"[^\n]*:[ \t]*\n", c.text):
        if not _BY_RANK.search(m.group()):
            continue
        for number, ms in c.list_items(m.end() - 2):
            for men in ms[:1]:
                if number is not None and number not in _ranks(c, men):
                    c.add("wrong_rank", men.start, men.end, f'"{men.text}" is listed at {number} but has released '
                          f"rank {_ranks(c, men)[0]}")


def check(c: Check) -> None:
    _ranked_lists(c)
    txt = c.masked
    taken: list[tuple[int, int]] = []
    range_sentences: set[int] = set()
    for rx, kind in PATTERNS:
        for m in rx.finditer(txt):
            s, e = m.span()
            if c.overlaps(s, e, taken) or c.is_consumed(s, e) or _skip(kind, m, txt, s, e):
                continue
            taken.append((s, e))
            c.consume(s, e)
            if kind == "range":
                range_sentences.add(c.sentence_of(s))
            if kind in ("topn", "bottomn") and _EXCLUDE.search(c.masked[c.sents[c.sentence_of(s)][0]:s]):
                _claim(c, kind, m, s, e)   # "not among the top three" is judged as outside the group
            else:
                judged(c, s, e, "wrong_rank", functools.partial(_claim, c, kind, m, s, e))
    # "ranks 1–3 are high, 4–7 moderate and 8–10 low": further bare ranges of a rank-range sentence
    for k in sorted(range_sentences):
        for m in _BARE_RANGE.finditer(txt, *c.sents[k]):
            s, e = m.span()
            if c.overlaps(s, e, taken) or c.is_consumed(s, e):
                continue
            taken.append((s, e))
            c.consume(s, e)
            _range(c, int(m.group("a")), int(m.group("b")), s, e)
    # "ranks 7, 8 and 9 are effectively tied": the list's further ranks are ranks too, within the plan's
    # only with a similarity predicate, which is checked here over the themes of those ranks
    for m in _RANK_LIST.finditer(txt):
        s, e = m.start("more"), m.end("more")
        ce = min(c.sents[c.sentence_of(m.start())][1], e + 40)   # the list's own commas split clauses
        if c.overlaps(s, e, taken) or c.is_consumed(s, e) or not _TIED.search(txt, e, ce):
            continue
        ranks = [int(x) for x in re.findall(r"\d+", m.group())]
        by_rank = {int(a.get("rank", 0)): a for a in c.plan["atoms"]}
        taken.append((m.start(), e))
        c.consume(m.start(), e)
        if any(r not in by_rank for r in ranks):
            c.add("wrong_rank", m.start(), e, f"the plan releases no theme at some of these ranks ({len(by_rank)} released)")
            continue
        ms = [mass(by_rank[r]) for r in ranks]
        if max(ms) - min(ms) >= c.margin:
            c.add("unsupported_comparison", m.start(), ce, f"the themes at these ranks differ by at least the "
                  f"comparison margin ({c.margin:g}), so they are not all similar")
    c.rank_spans = taken


_RANK_LIST = re.compile(r"\branks\s+\d+(?P<more>(?:\s*,\s*\d+)*\s*,?\s*(?:and|or|&)\s+\d+)\b(?![.,]\d|\s*%)", re.I)
_TIED = re.compile(r"\b(?:(?:effectively|statistically|essentially|practically)\s+)?(?:tied|similar|indistinguishable|"
                   r"level|the\s+same|cannot\s+be\s+(?:told\s+apart|distinguished)|not\s+distinguishable)\b", re.I)


_RANK_LIST = re.compile(r"\branks\s+\d+(?P<more>(?:\s*,\s*\d+)*\s*,?\s*(?:and|or|&)\s+\d+)\b(?![.,]\d|\s*%)", re.I)
