"""Structured claims (decoder `--mode claims`): exact field checks plus the text rules."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .context import Verdict, Violation
from .entry import verify
from .plan import margin_of, mass, plan_dict
from .text import content


def verify_claims(claims: list, plan: Any, dictionary: Iterable | None = None,
                  require_theme: bool = False) -> tuple[str, Verdict]:
    """Check each claim's atom, rank, bin and comparison exactly, then their joined text."""
    p = plan_dict(plan)
    by_label = {content(a["label"]): a for a in p["atoms"]}
    by_id = {int(a.get("atom_id", i)): a for i, a in enumerate(p["atoms"])}
    out: list[Violation] = []
    texts: list[str] = []
    margin = margin_of(p)
    for c in claims if isinstance(claims, list) else []:
        if not isinstance(c, dict):
            continue
        t = str(c.get("text") or "").strip()
        if t:
            texts.append(t)
        a = _claim_atom(c.get("atom"), by_label, by_id)
        if c.get("atom") not in (None, "") and a is None:
            out.append(Violation("unadmitted_atom", str(c.get("atom")), "the claim's atom is not in the released plan"))
            continue
        if a is None:
            continue
        if c.get("rank") not in (None, "") and str(c.get("rank")).strip() != str(a.get("rank")):
            out.append(Violation("wrong_rank", t or str(c["rank"]), f'"{a["label"]}" has released rank {a.get("rank")}, not {c["rank"]}'))
        if c.get("bin") not in (None, "") and str(c["bin"]).lower() != str(a.get("bin", "")).lower():
            out.append(Violation("wrong_bin", t or str(c["bin"]), f'"{a["label"]}" is in the "{a.get("bin")}" bin, not "{c["bin"]}"'))
        comp = c.get("comparison")
        if isinstance(comp, dict) and comp.get("other") not in (None, ""):
            b = _claim_atom(comp.get("other"), by_label, by_id)
            op = str(comp.get("op", "")).lower()
            if b is None:
                out.append(Violation("unadmitted_atom", str(comp.get("other")), "the compared atom is not in the released plan"))
            else:
                d = mass(a) - mass(b)
                good = {"more": d >= margin, "less": -d >= margin, "similar": abs(d) < margin}.get(op)
                if good is False:
                    out.append(Violation("unsupported_comparison", t or op, f'"{a["label"]}" {op} "{b["label"]}" is not supported under the margin {margin:g}'))
    text = " ".join(texts)
    v = verify(text, p, dictionary, require_theme)
    vs = out + v.violations
    if not texts:
        vs.append(Violation("empty", "", "no claim has any text"))
    return text, Verdict(not vs, vs)


def _claim_atom(ref, by_label, by_id):
    if ref is None or ref == "":
        return None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.strip().isdigit()):
        return by_id.get(int(ref))
    return by_label.get(content(str(ref)))
