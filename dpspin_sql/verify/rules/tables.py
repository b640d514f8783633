"""Markdown tables: each body row is a claim about the theme in its theme column; the headers
give the other columns their roles (docs/VERIFIER.md, *Tables*).

A table is a run of lines that start (after spaces) with `|` and hold at least two cells, with
a separator line (`|---|:--:|`) after the header. Each header is read as a column role:

| role | headers (case-insensitive, any word of the header) | a cell must be |
|---|---|---|
| theme | theme, topic, label, category, issue, atom, subject, item, name, complaint type | the theme of the row |
| rank | rank, #, no., position, place, order | the theme's released rank |
| share | share, support, %, percent, percentage, prevalence, of reviews / complaints / records | 100·support under the rounding rule |
| mass | mass, weight, count, mentions, value, estimate | noisy_mass or display_mass under the rounding rule |
| bin | bin, band, tier, level, support level | the released bin word |
| interval | interval, CI, range, ±, uncertainty, margin of error | the theme's accuracy interval (or ± half-width) |
| note | anything else | prose, read by every other rule with the row's theme as its antecedent |

A header that names none of these takes the role its cells show: all bin words → bin, all
percentages → share, the ranks 1, 2, 3 … in order → rank; otherwise note. The header row
and the separator are public layout (no names, no claims); every cell of a checked role is
consumed, so no later rule reads a rank as a mass. A row whose theme cell names no admitted
theme fails closed (`unknown_theme`, or `unadmitted_atom` from `mentions`).
"""
from __future__ import annotations

import re

from ..context import Check
from ..lexicon import Mention
from ..numeric import number_matches, numbers
from ..plan import half_width, mass, mass_interval, support_interval
from ..text import content, stem
from ..vocab import BIN_PATTERNS, THEME_PUBLIC, bin_word_applies

_ROLES = [
    ("rank", re.compile(r"^(?:#|no\.?|n[º°]|rank(?:ing)?|position|place|order|pos\.?)$", re.I)),
    ("interval", re.compile(r"\b(?:interval|ci|range|uncertainty|margin\s+of\s+error|plausible)\b|±|\+/-", re.I)),
    ("theme", re.compile(r"\b(?:themes?|topics?|labels?|categor(?:y|ies)|issues?|atoms?|subjects?|items?|names?|"
                         r"complaint\s+types?|sub-?issues?|concerns?)\b", re.I)),
    ("bin", re.compile(r"\b(?:bins?|bands?|tiers?|levels?|support\s+level|support\s+bin)\b", re.I)),
    ("share", re.compile(r"%|\b(?:share|support|percent|percentage|prevalence|proportion|of\s+(?:reviews|complaints|"
                         r"records|documents))\b", re.I)),
    ("mass", re.compile(r"\b(?:mass|weight|count|mentions|value|estimate|noisy|display)\b", re.I)),
    ("rank", re.compile(r"\b(?:rank(?:ing)?|position)\b", re.I)),
]
_ROW = re.compile(r"^[ \t]*\|.*\|?[ \t]*$")
_SEP = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+[ \t]*(?::?-{2,}:?[ \t]*)?$")


def _cells(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """Cell spans of the row text[s:e] (without the pipes; trimmed)."""
    out, pos = [], s
    line = text[s:e]
    bars = [s + i for i, ch in enumerate(line) if ch == "|"]
    if not bars:
        return []
    edges = bars + ([e] if line.rstrip()[-1:] != "|" else [])
    for a, b in zip(edges, edges[1:]):
        a += 1
        while a < b and text[a] in " \t":
            a += 1
        while b > a and text[b - 1] in " \t":
            b -= 1
        out.append((a, b))
    del pos
    return out


def tables(text: str) -> list[list[tuple[int, int]]]:
    """Each table as its lines' spans: header, separator, body rows."""
    out, lines, pos = [], [], 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    i = 0
    while i + 1 < len(lines):
        s, e = lines[i]
        ns, ne = lines[i + 1]
        if _ROW.match(text[s:e]) and text[s:e].count("|") >= 2 and _SEP.match(text[ns:ne]):
            j = i + 2
            while j < len(lines) and _ROW.match(text[lines[j][0]:lines[j][1]]) and text[lines[j][0]:lines[j][1]].count("|") >= 2:
                j += 1
            out.append(lines[i:j])
            i = j
        else:
            i += 1
    return out


def _bin_of(c: Check, s: int, e: int) -> list[tuple[str, int, int]]:
    found = []
    for name, needs, rx in BIN_PATTERNS:
        for m in rx.finditer(c.masked, s, e):
            if bin_word_applies(c.masked, m.start(), m.end(), False) or not needs:
                found.append((name, m.start(), m.end()))
    return found


# "Released mass (±7.8)": a value column whose header states the plan's half-width
_HEAD_PM = re.compile(r"\(\s*(?:±|\+/-)\s*(?P<h>[\d.,]+)\s*(?P<pct>%|pp|points?)?\s*\)")


def _role_of(header: str, cells: list[str], n_rows: int) -> str:
    plain = _HEAD_PM.sub("", header)
    if plain != header:
        for role in ("share", "mass"):
            if dict(_ROLES)[role].search(plain.strip(" *_`")):
                return role
    for role, rx in _ROLES:
        if rx.search(header.strip(" *_`")):
            return role
    vals = [x.strip(" *_`").lower() for x in cells if x.strip()]
    if vals and all(v in ("high", "moderate", "low") for v in vals):
        return "bin"
    if vals and all(re.fullmatch(r"[~≈]?\s*\d+(?:\.\d+)?\s*%", v) for v in vals):
        return "share"
    if vals and all(re.fullmatch(r"#?\d{1,3}", v) for v in vals):
        nums = [int(v.lstrip("#")) for v in vals]
        if nums == sorted(nums) and nums[0] >= 1 and nums[-1] <= n_rows + 50:
            return "rank"
    return "note"


def check(c: Check) -> None:
    text = c.text
    for table in tables(text):
        head = _cells(text, *table[0])
        body = [_cells(text, *row) for row in table[2:]]
        roles = [_role_of(text[a:b], [text[r[k][0]:r[k][1]] for r in body if k < len(r)], len(body))
                 for k, (a, b) in enumerate(head)]
        if "theme" not in roles:   # the first column of text that names themes is the theme column
            for k in range(len(head)):
                if roles[k] == "note" and any(k < len(r) and c.in_range(*r[k]) for r in body):
                    roles[k] = "theme"
                    break
        for (a, b), role in zip(head, roles):   # "Released mass (±7.8)": the header's half-width is the plan's
            m = _HEAD_PM.search(text, a, b) if role in ("mass", "share") else None
            if m:
                _header_half_width(c, m, role)
        for s, e in table[:2]:   # header and separator: layout, no claims, no names
            c.mask(s, e, " ")
            c.consume(s, e)
        for row in body:
            _row(c, row, roles)


def _header_half_width(c: Check, m: re.Match, role: str) -> None:
    hw = half_width(c.plan)
    nums = numbers(m.group("h"))
    d = c.plan.get("public_denominator")
    want = [] if hw is None else [hw] if role == "mass" else \
        [100.0 * hw / float(d)] if isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0 else []
    if not nums or not any(number_matches(nums[0], v) for v in want):
        c.add("unsupported_interval", m.start(), m.end(),
              f'"{m.group()}" in the {role} column\'s header is not the plan\'s released half-width')


def _row(c: Check, row: list[tuple[int, int]], roles: list[str]) -> None:
    theme = next(((a, b) for (a, b), r in zip(row, roles) if r == "theme"), None)
    if theme is None:
        return
    ms = c.in_range(*theme)
    if not ms:
        a, b = theme
        if b > a and not any(v.start >= a and v.end <= b for v in c.out) and re.search(r"[A-Za-z]", c.text[a:b]):
            c.add("unknown_theme", a, b, f'"{c.text[a:b]}" in the theme column is no released theme of the plan')
            c.mask(a, b, "¤")
        for (s, e), role in zip(row, roles):
            if role not in ("note", "theme"):
                c.consume(s, e)
                c.mask(s, e, " ")
        return
    _unnamed_in_cell(c, theme, ms)
    atoms = [c.atom(x) for m in ms for x in m.atoms]
    for (s, e), role in zip(row, roles):
        if role in ("note", "theme") or e <= s:
            continue
        cell = c.text[s:e]
        ok, code = True, ""
        if role == "rank":
            digits = re.findall(r"\d+", cell)
            ok = bool(digits) and any(int(a.get("rank", 0)) == int(digits[0]) for a in atoms)
            code = "wrong_rank"
        elif role == "bin":
            found = _bin_of(c, s, e)
            ok = not found or any(any(a.get("bin") == f[0] for a in atoms) for f in found)
            code = "wrong_bin"
        elif role in ("share", "mass"):
            nums = [n for n in numbers(c.masked[s:e])]
            ok = all(_value_ok(c, atoms, n, role) for n in nums)
            code = "unsupported_number"
        elif role == "interval":
            ok = _interval_ok(c, atoms, cell)
            code = "unsupported_interval"
        if not ok:
            who = " / ".join(f'"{a["label"]}"' for a in atoms)
            c.add(code, s, e, f'"{cell}" in the {role} column is not the released {role} of {who}')
        c.consume(s, e)
        c.mask(s, e, " ")


_FILLER = {"and", "or", "the", "a", "an", "etc", "plus", "also", "both", "with", "nor"}


def _unnamed_in_cell(c: Check, cell: tuple[int, int], ms: list[Mention]) -> None:
    """A theme cell that lists several themes ("wait staff, live music") fails closed on each item:
    what is left of the cell when its mentions are taken out must be separators and public words."""
    a, b = cell
    chars = list(c.text[a:b])
    for m in ms:
        for i in range(max(m.start, a), min(m.end, b)):
            chars[i - a] = " "
    rest = "".join(chars)
    known = {t for x in c.lex.atoms.values() for t in content(str(x.get("label", "")) + " " + str(x.get("description") or ""))}
    for part in re.finditer(r"[^,;/&|+]+", rest):
        words = [w.lower() for w in re.findall(r"[A-Za-z][\w'-]*", part.group()) if content(w)]   # no stop words
        # a word of some theme's label or description is a paraphrase or a qualifier ("(payday)"), judged elsewhere
        if any(w not in _FILLER and w not in THEME_PUBLIC and stem(w) not in THEME_PUBLIC
               and not (set(content(w)) & known) for w in words):
            s0 = a + part.start() + (len(part.group()) - len(part.group().lstrip()))
            e0 = a + part.start() + len(part.group().rstrip())
            c.add("unknown_theme", s0, e0, f'"{c.text[s0:e0]}" in the theme column is no released theme of the plan')


def _value_ok(c: Check, atoms: list[dict], n, role: str) -> bool:
    for a in atoms:
        if n.pct or role == "share":
            if a.get("support") is not None and number_matches(n, 100.0 * float(a["support"])):
                return True
            if not n.pct and a.get("support") is not None and 0 < n.value < 1 and number_matches(n, float(a["support"])):
                return True
        else:
            vals = [mass(a)] + ([float(a["display_mass"])] if a.get("display_mass") is not None else [])
            if any(number_matches(n, v) for v in vals):
                return True
    return False


def _interval_ok(c: Check, atoms: list[dict], cell: str) -> bool:
    nums = numbers(cell)
    if not nums:
        return True
    pct = any(n.pct for n in nums) or "%" in cell
    for a in atoms:
        iv = support_interval(c.plan, a) if pct else mass_interval(c.plan, a)
        if iv is None:
            continue
        lo, hi = (100 * iv[0], 100 * iv[1]) if pct else iv
        if "±" in cell or "+/-" in cell:
            h = (hi - lo) / 2
            vals = [n for n in nums]
            if len(vals) == 1 and number_matches(vals[0], h):
                return True
            if len(vals) == 2 and number_matches(vals[1], h):
                return True
        elif len(nums) >= 2 and (number_matches(nums[0], lo) or (lo < 0 and nums[0].value == 0)) \
                and number_matches(nums[1], hi):
            return True
    return False


__all__ = ["check", "tables", "Mention"]
