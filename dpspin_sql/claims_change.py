"""Claims about a comparison of two releases (decoder `--mode claims` over `dpspin compare`'s
output, docs/PLAN.md "Comparisons"): the model chooses which changes to state; this module
writes them from the comparison's own released fields.

A comparison is post-processing of two released plans, so every field of it is public and
the decoder may see it whole (docs/DESIGN.md §6).

* `menu(comp)` — every claim the comparison supports, true by construction, largest
  |difference| first: `change` for an atom in both releases whose difference interval
  excludes 0 (it rose or fell, at the family-wise level), `no_change` for one whose
  interval includes 0 ("the comparison does not support a change for X" — not "it stayed
  the same", which needs the equivalence band), and `top_in` for the rank-1 theme of each
  side (`field` names the side, "a" or "b").
* `render(claims, comp)` — deterministic prose; the model never writes a number or a word.
  The text still goes through the verifier (`verify.verify` takes a comparison).

The schema, grammar and reading of the model's answer are `claims`' own: a comparison's
claims are `Claim`s of the kinds in `KINDS` here.
"""
from __future__ import annotations

import re

from dpspin_sql.claims import Claim, _cap, _fmt

__all__ = ["KINDS", "menu", "render", "side_phrase", "facts", "prompt", "KIND_HELP", "INSTRUCTIONS"]

KINDS = ("change", "no_change", "top_in")
SIDES = ("a", "b")

KIND_HELP = {
    "change": "change (a theme whose change between the two releases is supported: rose or fell)",
    "no_change": "no_change (a theme whose change the comparison does not support)",
    "top_in": 'top_in (the most common theme of one release: field "a" or "b")',
}

INSTRUCTIONS = """Choose 4 to 6 facts for a short summary of what changed, the most important first: start with the
largest supported changes, then the top theme of each release or themes without a supported change.
Example answer for another comparison:
{"claims": [{"kind": "change", "theme": "late delivery"}, {"kind": "change", "theme": "damaged box"}, \
{"kind": "top_in", "theme": "late delivery", "field": "b"}, {"kind": "no_change", "theme": "refund"}]}
Kinds: {kinds}."""


def _rows(comp: dict) -> list[dict]:
    """The atoms in both releases, largest |difference| first, one per label."""
    seen: set[str] = set()
    out = []
    for r in sorted(comp.get("atoms", []), key=lambda r: (-abs(float(r["difference"])), r["label"])):
        if r["label"] not in seen:
            seen.add(r["label"])
            out.append(r)
    return out


def _top(comp: dict, side: str) -> str | None:
    """The label of the side's rank-1 theme (over both the shared and the one-sided rows)."""
    best: tuple[int, str] | None = None
    for key in ("atoms", "only_in_a" if side == "a" else "only_in_b"):
        for r in comp.get(key, []):
            rank = (r.get(side) or {}).get("rank")
            if isinstance(rank, int) and not isinstance(rank, bool) and (best is None or rank < best[0]):
                best = (rank, r["label"])
    return best[1] if best and best[0] == 1 else None


def menu(comp: dict) -> list[Claim]:
    """Every claim the comparison supports, in a fixed order."""
    rows = _rows(comp)
    out = [Claim("change", r["label"]) for r in rows if r.get("supported")]
    for side in SIDES:
        top = _top(comp, side)
        if top is not None:
            out.append(Claim("top_in", top, field=side))
    out += [Claim("no_change", r["label"]) for r in rows if not r.get("supported")]
    return out


def side_phrase(comp: dict, which: str) -> str:
    """How a summary names a side: its name when the verifier reads it as exactly that side
    ("before 2017", "in the 2016 release"), else "in the first / second release"."""
    from dpspin_sql.verify.comparison import side_markers

    name = str(comp[which].get("name") or "")
    for phrase in (name if re.match(r"(?i)(?:before|from|since|until|after)\s", name) else f"in {name}",
                   f"in the {name} release"):
        found = side_markers(phrase, comp)
        if len(name) >= 3 and len(found) == 1 and found[0][2] == which and found[0][1] - found[0][0] == len(phrase):
            return phrase
    return "in the first release" if which == "a" else "in the second release"


def level_phrase(comp: dict) -> str:
    return f"{100 * float(comp.get('confidence', 0.95)):g}%"


def render(claims: list[Claim], comp: dict) -> tuple[str, list[tuple[int, int, list[Claim]]]]:
    """Prose for `claims` from the comparison's released values, with each sentence's
    (start, end, claims) so that a verifier violation can be traced to the claims behind it.
    One sentence per claim, in the model's order, duplicates dropped; the first change
    states the family-wise level. Every subject is named."""
    rows = {r["label"]: r for r in _rows(comp)}
    pa, pb = side_phrase(comp, "a"), side_phrase(comp, "b")
    on_menu = set(menu(comp))
    sentences: list[tuple[str, Claim]] = []
    leveled = False
    for c in dict.fromkeys(claims):
        if c not in on_menu:
            continue   # read_claims reports what is not on the menu; nothing is written for it
        label = str(c.theme)
        if c.kind == "change":
            r = rows[label]
            verb = "rose" if r["change"] == "rose" else "fell"
            s = (f"{_cap(label)} {verb} from about {_fmt(r['a']['noisy_mass'])} {pa} to about "
                 f"{_fmt(r['b']['noisy_mass'])} {pb}")
            s += "." if leveled else f" at the {level_phrase(comp)} family-wise level."
            leveled = True
        elif c.kind == "no_change":
            s = f"The comparison does not support a change for {label}."
        else:   # top_in
            s = f"{_cap(label)} was the most common theme {pa if c.field == 'a' else pb}."
        sentences.append((s, c))
    text, spans = "", []
    for s, c in sentences:
        start = len(text) + (1 if text else 0)
        text = f"{text} {s}" if text else s
        spans.append((start, len(text), [c]))
    return text, spans


def facts(comp: dict, items: list[Claim]) -> str:
    """The comparison as public text for a decoder: each offered theme's two released values
    and whether its change is supported, and the top theme of each side."""
    pa, pb = side_phrase(comp, "a"), side_phrase(comp, "b")
    lines = [f"Two releases compared: A = {pa}, B = {pb} (family-wise level {level_phrase(comp)})."]
    offered = {c.theme for c in items}
    for r in _rows(comp):
        if r["label"] not in offered:
            continue
        change = r["change"] if r.get("supported") else "no supported change"
        lines.append(f"- {r['label']}: about {_fmt(r['a']['noisy_mass'])} in A, about {_fmt(r['b']['noisy_mass'])} "
                     f"in B ({change})")
    for c in items:
        if c.kind == "top_in":
            lines.append(f"Most common theme in {c.field.upper() if c.field else '?'}: {c.theme}")
    return "\n".join(lines)


def prompt(comp: dict, items: list[Claim]) -> str:
    """The claims-mode user message: `facts`, then the answer format."""
    kinds = [k for k in KINDS if any(c.kind == k for c in items)]
    return facts(comp, items) + "\n\n" + INSTRUCTIONS.replace("{kinds}", ", ".join(KIND_HELP[k] for k in kinds))
