"""The public dictionary as matchable label variants (docs/VERIFIER.md, *Matching text to atoms*)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .text import BOUNDARY_CHARS, content

_POSSESSIVE = {"their", "your", "my", "his", "her", "its", "our"}
_PLACEHOLDER = {("none",), ("other",), ("n", "a"), ("unknown",), ("i", "do", "not", "know"), ("not", "applicable")}


@dataclass
class Mention:
    """A stretch of summary text that names admitted atom(s)."""

    start: int
    end: int
    atoms: frozenset
    text: str


class Lexicon:
    """Every public label, split into matchable variants, with its atom ids."""

    def __init__(self, plan: dict, dictionary: Iterable | None):
        self.atoms = {int(a.get("atom_id", i)): a for i, a in enumerate(plan["atoms"])}
        self.admitted = set(self.atoms)
        labels: list[tuple[int | None, str]] = [(aid, a["label"]) for aid, a in self.atoms.items()]
        extra = dictionary if dictionary is not None else plan.get("dictionary_labels") or []
        for d in extra:
            if isinstance(d, dict):
                labels.append((d.get("atom_id"), str(d.get("label", ""))))
            else:
                labels.append((None, str(d)))
        by_label: dict[str, int] = {}
        self.variants: dict[tuple, set] = {}
        next_id = -1
        all_chars = "".join(lbl for _, lbl in labels)
        self.boundaries = "".join(c for c in BOUNDARY_CHARS if c not in all_chars) + "\n"
        for aid, lbl in labels:
            key = " ".join(content(lbl))
            if aid is None:
                aid = by_label.get(key, next_id)
                if aid == next_id:
                    next_id -= 1
            by_label.setdefault(key, aid)
            aid = int(aid)
            for v in label_variants(lbl):
                self.variants.setdefault(v, set()).add(aid)
        for aid, a in self.atoms.items():
            v = content(a.get("description") or "")
            if len(v) >= 2:
                self.variants.setdefault(v, set()).add(aid)
        self.admitted_ngrams: set[tuple] = set()
        for a in self.atoms.values():
            c = content(a["label"])
            for i in range(len(c)):
                for j in range(i + 1, min(len(c), i + 12) + 1):
                    self.admitted_ngrams.add(c[i:j])
        self.by_first: dict[str, list[tuple[tuple, tuple]]] = {}  # first token -> (pattern, variant)
        for v in self.variants:
            self.by_first.setdefault(v[0], []).append((v, v))
            if len(v) == 2:  # "staff friendly" for "friendly staff"
                self.by_first.setdefault(v[1], []).append(((v[1], v[0]), v))
            if 2 <= len(v) <= 3:  # "dryskin"
                self.by_first.setdefault("".join(v), []).append((("".join(v),), v))
        for lst in self.by_first.values():
            lst.sort(key=lambda pv: len(pv[1]), reverse=True)
        self.label_of = {aid: a["label"] for aid, a in self.atoms.items()}


def label_variants(label: str) -> set[tuple]:
    """The whole label and every contiguous run of its ' / '-separated segments."""
    segs = [s for s in re.split(r"\s+/\s+|\s*>\s*|\s*\|\s*", label) if s.strip()]
    out: set[tuple] = set()
    full = content(label)
    if full:
        out.add(full)
    for i in range(len(segs)):
        for j in range(i + 1, len(segs) + 1):
            v = content(" ".join(segs[i:j]))
            if v and v not in _PLACEHOLDER:
                out.add(v)
    # "Their investigation did not fix an error" is also named as "an investigation that did not fix …"
    out |= {v[1:] for v in out if len(v) > 2 and v[0] in _POSSESSIVE}
    return out
