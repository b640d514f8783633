"""Verifying a summary against a comparison of two releases (docs/VERIFIER.md, *Comparisons of two releases*).

A comparison (`dpspin compare`, docs/PLAN.md "Comparisons") states, per atom, the difference
b − a of two releases' noisy masses with a family-wise interval, whether the change is
supported (the interval excludes 0), its direction, the ratio with its interval, and which
atoms only one release admits. Checked against it, a summary's sentences are of three kinds:

* a **claim of change** ("A rose", "fell", "doubled", "stayed about the same", "overtook C",
  "more common from 2017 than before 2017", "rose from about N to about M", "by 40%") is
  judged by the rule `change` (rules/change.py) against the comparison's fields; the rest
  of its sentence runs through the rules that need no side (mentions, details, anecdotes,
  causes and subgroups, unknown themes);
* a sentence about **one side** (it names that side: "before 2017", "in the second
  release") is verified as a summary of that side's plan, rebuilt from the comparison's
  released fields (masses, ranks, the side's public parameters);
* a sentence that names **no side** and claims no change must hold for both plans.

A sentence about both sides that claims no change is rejected (`mixed_sides`). Side names
come from the comparison (`a.name`, `b.name`, segments, "before 2017" for "before
2017-01-01") and the generic "the first / earlier release", "the second / later release".
Like the rest of the verifier, this reads only the comparison and public rules.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .context import Check, Verdict, Violation
from .core import run_rules, verdict_of, verify_plan
from .text import neutral

__all__ = ["is_comparison", "verify_comparison", "side_plan", "side_markers"]


def is_comparison(d: Any) -> bool:
    """Is `d` a comparison (`"kind": "comparison"`, docs/PLAN.md) rather than a plan?"""
    return isinstance(d, dict) and d.get("kind") == "comparison"


def _check_shape(comp: dict) -> None:
    for key in ("a", "b"):
        if not isinstance(comp.get(key), dict):
            raise ValueError(f"comparison has no side {key!r} (docs/PLAN.md \"Comparisons\")")
    for key in ("atoms", "only_in_a", "only_in_b"):
        rows = comp.get(key)
        if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("label"), str) for r in rows):
            raise ValueError(f"comparison {key!r} must be a list of atoms with string labels")
    for r in comp["atoms"]:
        for side in ("a", "b"):
            v = r.get(side)
            if not (isinstance(v, dict) and isinstance(v.get("noisy_mass"), (int, float))):
                raise ValueError(f"comparison atom {r['label']!r} has no released value on side {side!r}")


def rows_of(comp: dict) -> dict[int, dict]:
    """atom_id → its comparison row, with `where` = "both" | "a" | "b"."""
    out: dict[int, dict] = {}
    for key, where in (("atoms", "both"), ("only_in_a", "a"), ("only_in_b", "b")):
        for i, r in enumerate(comp[key]):
            aid = int(r.get("atom_id", -(len(out) + 1 + i)))
            out[aid] = dict(r, where=where)
    return out


def union_plan(comp: dict) -> dict:
    """The themes of either side, for finding mentions (no values: claims of change are judged on the rows)."""
    atoms: list[dict] = []
    for aid, r in rows_of(comp).items():
        side = r.get("b") if r["where"] != "a" else r.get("a")
        rank = side.get("rank") if isinstance(side, dict) else None
        atoms.append({"atom_id": aid, "label": r["label"], "description": r.get("description", ""),
                      "rank": rank if isinstance(rank, int) else len(atoms) + 1, "noisy_mass": None})
    return {"atoms": atoms, "noise_scale": None}


_SIDE_FIELDS = ("mechanism", "noise_scale", "epsilon", "delta", "unit", "adjacency", "B", "K", "L", "m",
                "release_id", "comparison_margin", "public_denominator")


def side_plan(comp: dict, side: str) -> dict:
    """One side's plan, rebuilt from the comparison's released fields: each admitted atom's noisy
    mass and rank, and the side's public parameters (its own interval half-width and confidence)."""
    meta = comp[side]
    atoms: list[dict] = []
    for key in ("atoms", "only_in_a" if side == "a" else "only_in_b"):
        for r in comp[key]:
            v = r[side]
            atoms.append({"atom_id": int(r.get("atom_id", len(atoms))), "label": r["label"],
                          "description": r.get("description", ""), "rank": int(v.get("rank", len(atoms) + 1)),
                          "noisy_mass": float(v["noisy_mass"]), "display_mass": round(float(v["noisy_mass"]), 1)})
    atoms.sort(key=lambda a: a["rank"])
    plan: dict = {k: meta[k] for k in _SIDE_FIELDS if meta.get(k) is not None}
    plan["atoms"] = atoms
    plan["dictionary"] = comp.get("dictionary")
    if meta.get("plan_interval_half_width") is not None:
        plan["interval_half_width"] = meta["plan_interval_half_width"]
        plan["interval_confidence"] = meta.get("plan_interval_confidence")
    return plan


# ---------------------------------------------------------------- side names in the text
_NOUNS = r"(?:releases?|plans?|periods?|sides?|segments?|snapshots?|samples?|data(?:\s*sets?)?)"
_RECORDS = (r"(?:(?:the\s+)?(?:complaints?|records?|reviews?|reports?|narratives?|submissions?|data)\s+"
            r"(?:(?:received|filed|submitted|made|sent|dated|written|posted|released|from\s+the\s+period)\s+)?)")
_PREFIX = r"(?:(?:\b(?:in|among|for|during|within|across|of|over)\s+)?" + _RECORDS + r"?|\b(?:in|among|for|during)\s+)"
_FIRST = r"(?:first|earlier|former|older|previous|prior|initial|baseline)"
_SECOND = r"(?:second|later|latter|newer|more\s+recent|recent|current|final|subsequent)"
_BOTH = re.compile(r"(?:\b(?:in|among|for|across)\s+)?\b(?:both|each\s+of\s+the\s+two|either\s+of\s+the\s+two|the\s+two)\s+"
                   + _NOUNS + r"\b|\bin\s+each\s+(?:release|plan|period|segment)\b", re.I)
_DATE = re.compile(r"^(?P<p>before|until|to|prior\s+to|from|since|on\s+or\s+after)\s+(?P<y>\d{4})-01-01$", re.I)


def _literal(name: str) -> str:
    return r"\s+".join(re.escape(w) for w in name.split())


def _side_forms(meta: dict, which: str) -> list[str]:
    forms: list[str] = []
    names = {v.strip() for v in (meta.get("name"), meta.get("segment")) if isinstance(v, str) and v.strip()}
    for name in names:
        lit = _literal(name)
        q = r"[\"“'‘]?"
        qe = r"[\"”'’]?"
        forms += [rf"\b{_NOUNS}\s+{q}{lit}{qe}(?!\w)", rf"(?:\bthe\s+)?{q}{lit}{qe}\s+{_NOUNS}\b", rf"[\"“]{lit}[\"”]"]
        if re.search(r"[\d\W]", name.replace(" ", "")) or len(name.split()) >= 2:
            forms.append(rf"(?<![\w-]){lit}(?![\w-])")
        m = _DATE.match(name)
        if m:
            y = m.group("y")
            if m.group("p").lower() in ("before", "until", "to", "prior to"):
                forms.append(rf"\b(?:before|prior\s+to|until|up\s+to|pre-?)\s*{y}(?!-?\d)")
            else:
                forms.append(rf"\b(?:from|since|in\s+and\s+after|as\s+of)\s+{y}(?!-?\d)(?:\s+(?:on(?:wards?)?|onward|and\s+later|"
                             rf"and\s+after))?|\b{y}\s+(?:onwards?|and\s+later|and\s+after)\b")
    ordinal = _FIRST if which == "a" else _SECOND
    letter = "A" if which == "a" else "B"
    forms += [rf"\b(?:the\s+)?{ordinal}\s+{_NOUNS}\b(?:\s+\((?:a|{letter})\))?",
              rf"\bthe\s+{'first' if which == 'a' else 'second'}(?=\s*(?:[,.;:)!?]|$|\s+(?:to|and|than|one)\b))"
              r"(?:\s+one\b)?",
              rf"\b(?:release|plan|side|segment|period)\s+{letter}\b"]
    return forms


def side_markers(text: str, comp: dict) -> list[tuple[int, int, str]]:
    """Where the text names a side: (start, end, "a" | "b" | "both"), longest first, not overlapping."""
    found: list[tuple[int, int, str]] = []
    txt = neutral(text)
    cands: list[tuple[int, int, str]] = [(m.start(), m.end(), "both") for m in _BOTH.finditer(txt)]
    for which in ("a", "b"):
        for form in _side_forms(comp[which], which):
            rx = re.compile(rf"(?:{_PREFIX})?(?:{form})", re.I)
            cands += [(m.start(), m.end(), which) for m in rx.finditer(txt) if m.end() > m.start()]
    for s, e, w in sorted(cands, key=lambda t: (-(t[1] - t[0]), t[0])):
        while s < e and txt[s].isspace():
            s += 1
        if not any(s < fe and fs < e for fs, fe, _ in found):
            found.append((s, e, w))
    return sorted(found)


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        for i in range(s, e):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


# ---------------------------------------------------------------- the check
def verify_comparison(summary: str, comparison: Any, dictionary: Iterable | None = None,
                      require_theme: bool = False) -> Verdict:
    """Check `summary` against a comparison of two releases (module docstring); deterministic and public."""
    from .rules import COMPARISON_FIRST, COMPARISON_RULES, change

    comp = comparison
    _check_shape(comp)
    text = summary or ""
    if not text.strip():
        return Verdict(False, [Violation("empty", "", "the summary is empty", 0, 0)])
    dictionary = list(dictionary) if dictionary is not None else None
    markers = side_markers(text, comp)
    blanked = _blank(text, [(s, e) for s, e, _ in markers])
    union = union_plan(comp)
    base = Check(blanked, union, dictionary)
    base.comparison, base.side_spans = comp, markers
    for rule in COMPARISON_FIRST:
        rule.check(base)
    plans = {"a": side_plan(comp, "a"), "b": side_plan(comp, "b")}
    names = {w: str(comp[w].get("name") or w) for w in ("a", "b")}
    out: list[Violation] = []
    change_sents: list[tuple[int, int]] = []
    for k, (ss, se) in enumerate(base.sents):
        if change.claims_change(base, k):
            change_sents.append((ss, se))
            continue
        sides = {w for s, _, w in markers if ss <= s < se}
        others = [(a, b) for a, b in base.sents if (a, b) != (ss, se)]
        alone = _blank(blanked, others)
        if {"a", "b"} <= sides:
            out.append(Violation("mixed_sides", text[ss:se].strip(), "this sentence speaks of both releases but makes "
                                 "no claim of change the comparison can check; state each release's values in a "
                                 f"sentence of its own ({names['a']!r}, {names['b']!r}), or say how it changed",
                                 ss, se))
            continue
        targets = ["a"] if sides == {"a"} else ["b"] if sides == {"b"} else ["a", "b"]
        for w in targets:
            got = verify_plan(alone, plans[w], dictionary)
            where = f"in {names[w]!r}" if len(targets) == 1 else f"a sentence naming no release must hold in both; in {names[w]!r}"
            out += [Violation(x.code, text[x.start:x.end] if x.start >= 0 else x.span, f"{where}: {x.message}",
                              x.start, x.end) for x in got.violations]
    if change_sents:
        keep = _blank(blanked, [(a, b) for a, b in base.sents if (a, b) not in change_sents])
        out += [Violation(x.code, text[x.start:x.end] if x.start >= 0 else x.span, x.message, x.start, x.end)
                for x in run_rules(Check(keep, union, dictionary), COMPARISON_RULES, comp, markers)]
    if require_theme and not base.mentions:
        out.append(Violation("no_theme", "", "the summary mentions none of the comparison's themes", 0, 0))
    return verdict_of(out)
