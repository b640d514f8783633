"""Verbalization of a released plan (docs/DESIGN.md §6): template and LLM decoders, verifier loop.

Both decoders see only `public_view(plan)` — a whitelist of released, public
fields — and fixed public instructions, so the summary is post-processing of
the plan. The LLM loop makes at most `max_attempts` tries (fixed before the
plan is seen); each rejection becomes feedback built only from the verifier's
violations and the plan; after the last rejection the deterministic template
is returned.
"""
from __future__ import annotations

import copy
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpspin_sql.errors import BadInput
from dpspin_sql.verify import Verdict, margin_of, plan_dict, verify

__all__ = ["LLMConfig", "SummaryResult", "EndpointUnreachable", "CONSTRAINTS", "FINAL_SOURCES", "public_view",
           "template_summary", "summarize", "write_summary", "build_feedback", "build_messages", "MAX_ATTEMPTS_LIMIT"]

MAX_ATTEMPTS_LIMIT = 20
_PUBLIC_META = ("schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "L", "m",
                "comparison_margin", "public_denominator", "bins", "bin_basis", "interval_confidence",
                "interval_half_width", "B", "K", "noise_scale", "calibration", "mass_unit")
_PUBLIC_ATOM = ("atom_id", "rank", "label", "description", "display_mass", "noisy_mass", "support", "bin",
                "interval", "support_interval")


def public_view(plan: Any) -> dict:
    """Only released, public fields: what a decoder may see (never extra keys). A comparison
    (`dpspin compare`) is post-processing of two released plans, public as a whole: a copy."""
    if isinstance(plan, dict) and plan.get("kind") == "comparison":
        return copy.deepcopy(plan)
    p = plan_dict(plan)
    view = {k: p[k] for k in _PUBLIC_META if k in p}
    view["comparison_margin"] = margin_of(p)
    atoms = sorted(p["atoms"], key=lambda a: int(a.get("rank", 0)))
    view["atoms"] = [{k: a[k] for k in _PUBLIC_ATOM if k in a and a[k] is not None} for a in atoms]
    if "dictionary_labels" in p:
        view["dictionary_labels"] = [{"atom_id": d.get("atom_id"), "label": d.get("label")}
                                     for d in p["dictionary_labels"] if isinstance(d, dict)]
    return view


# ---------------------------------------------------------------- template
def _mass(a: dict) -> float:
    return float(a.get("noisy_mass", a.get("display_mass", 0.0)) or 0.0)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fmt(x: float) -> str:
    return f"{x + 0.0:.1f}" if round(x, 1) != 0 else "0.0"   # never "-0.0"


def _atom_sentence(a: dict) -> str:
    shown = float(a.get("display_mass", max(_mass(a), 0.0)))
    parts = [f"{a.get('bin', 'low')} support"]
    if a.get("support") is not None:
        parts.append(f"{_fmt(float(a['support']) * 100)}% of records")
    parts.append(f"released mass {_fmt(shown)}")
    return f"Rank {int(a['rank'])}: {a['label']} — " + ", ".join(parts) + "."


def _half_width(a: dict, v: dict) -> float | None:
    """The atom's released interval half-width: (high − low)/2 of its own interval, else
    the plan's interval_half_width; None when the plan releases no interval."""
    iv = a.get("interval")
    if isinstance(iv, (list, tuple)) and len(iv) == 2:
        return (float(iv[1]) - float(iv[0])) / 2
    h = v.get("interval_half_width")
    return float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) else None


def _template_atom_sentence(a: dict, v: dict, intervals: bool) -> str:
    """One line per atom: its bin, support and released mass, with the released interval
    half-width as "released mass 95.3 (±4.1)" when the plan has intervals."""
    shown = float(a.get("display_mass", max(_mass(a), 0.0))) + 0.0   # never "-0.0"
    parts = [f"{a.get('bin', 'low')} support"]
    if a.get("support") is not None:
        parts.append(f"{_fmt(float(a['support']) * 100)}% of records")
    h = _half_width(a, v) if intervals else None
    parts.append(f"released mass {_fmt(shown)}" + (f" (±{_fmt(h)})" if h is not None else ""))
    return f"Rank {int(a['rank'])}: {a['label']} — " + ", ".join(parts) + "."


def _confidence_sentence(v: dict) -> str | None:
    conf = v.get("interval_confidence")
    if not isinstance(conf, (int, float)) or isinstance(conf, bool):
        return None
    return (f"Each ± is a {float(conf) * 100:g}% accuracy interval; the intervals hold together with "
            f"{float(conf) * 100:g}% confidence.")


@functools.lru_cache(maxsize=1)
def _verifier_reads_intervals() -> bool:
    """Whether the public verifier accepts the template's interval wording: checked once on
    a fixed public example (no plan involved). While it does not, the template leaves the
    intervals out, so the fallback stays accepted."""
    probe: dict[str, Any] = {"L": 1, "m": 1, "comparison_margin": 1.0, "interval_confidence": 0.95, "interval_half_width": 2.5,
             "atoms": [{"atom_id": 0, "rank": 1, "label": "alpha theme", "description": "", "noisy_mass": 10.0,
                        "display_mass": 10.0, "bin": "high", "interval": [7.5, 12.5]}]}
    confidence = _confidence_sentence(probe)
    assert confidence is not None  # the probe states its interval confidence
    text = "\n".join([_template_atom_sentence(probe["atoms"][0], probe, True), confidence])
    try:
        return verify(text, probe).accepted
    except Exception:
        return False


def _method_sentence(v: dict) -> str | None:
    """The public method fields in one line ("Method: released with the Gaussian mechanism; record-level
    protection; ε = 1; …"), written by the claims renderer from the plan's own values."""
    from dpspin_sql.claims import METHOD_FIELDS, method_clause
    if v.get("mechanism") == "non_private":
        return None
    parts = [p for p in (method_clause(v, f) for f in METHOD_FIELDS) if p]
    return "Method: " + "; ".join(parts) + "." if parts else None


def _unit_sentence(v: dict) -> str | None:
    """The plan's unit of mass as one sentence ("Unit of mass: records that mention the
    theme, …"), or None when the plan states none or the verifier would not accept it."""
    unit = v.get("mass_unit")
    if not isinstance(unit, str) or not unit.strip():
        return None
    sentence = f"Unit of mass: {' '.join(unit.split()).rstrip('.')}."
    return sentence if _verifier_reads_unit(sentence) else None


@functools.lru_cache(maxsize=64)
def _verifier_reads_unit(sentence: str) -> bool:
    """Whether the public verifier accepts the unit sentence, checked once per wording on a
    fixed public example (no plan involved), so the template stays accepted."""
    probe: dict[str, Any] = {"L": 1, "m": 1, "comparison_margin": 1.0,
                             "atoms": [{"atom_id": 0, "rank": 1, "label": "alpha theme", "description": "",
                                        "noisy_mass": 10.0, "display_mass": 10.0, "bin": "high"}]}
    text = "\n".join([sentence, _template_atom_sentence(probe["atoms"][0], probe, False)])
    try:
        return verify(text, probe).accepted
    except Exception:
        return False


def template_summary(plan: Any) -> str:
    """Deterministic plan-to-text map; the fallback, always accepted by the verifier.

    Numbers are the released values rounded to one decimal; with accuracy intervals in the
    plan each mass carries its interval half-width ("released mass 95.3 (±4.1)") and one
    sentence states the intervals' confidence. A comparison: `comparison_summary`."""
    v = public_view(plan)
    if v.get("kind") == "comparison":
        return comparison_summary(v)
    atoms = v["atoms"]
    if not atoms:
        return "The released plan admits no themes, so there is nothing to summarize."
    confidence = _confidence_sentence(v)
    intervals = (any(_half_width(a, v) is not None for a in atoms) and confidence is not None
                 and _verifier_reads_intervals())
    eps = v.get("epsilon")
    # a non-private reference (experiments only) must never read as a DP release
    kind = "non-private reference" if v.get("mechanism") == "non_private" else "differentially private"
    head = f"This {kind} plan lists {len(atoms)} themes"
    head += f" (ε = {eps:g})." if isinstance(eps, (int, float)) else "."
    lines = [head]
    method = _method_sentence(v)
    if method:
        lines.append(method)
    lines.append(f"The most common theme is {atoms[0]['label']}.")
    unit = _unit_sentence(v)
    if unit is not None:
        lines.append(unit)
    lines += [_template_atom_sentence(a, v, intervals) for a in atoms]
    if intervals and confidence is not None:
        lines.append(confidence)
    margin = v["comparison_margin"]
    for shown, (a, b) in enumerate(zip(atoms, atoms[1:])):
        if shown >= 3 or a["label"] == b["label"]:
            break
        if _mass(a) - _mass(b) >= margin:
            lines.append(f"{_cap(a['label'])} is more common than {b['label']}.")
        else:
            lines.append(f"{_cap(a['label'])} and {b['label']} have similar support.")
    if len(atoms) > 1:
        lines.append(f"The least common theme in the plan is {atoms[-1]['label']}.")
    return "\n".join(lines)


def comparison_summary(comparison: dict, top: int = 3) -> str:
    """A short faithful summary of a comparison (docs/PLAN.md "Comparisons"): the `top` supported
    changes of atoms in both plans by |difference|, each with both sides' released values; the
    verifier accepts it (tests/test_verify_changes.py)."""
    from dpspin_sql import claims_change

    changes = [c for c in claims_change.menu(comparison) if c.kind == "change"][:top]
    if not changes:
        return "The comparison does not support a change for any theme at its family-wise level."
    text, spans = claims_change.render(changes, comparison)   # the claims renderer's sentences, one a line
    return "\n".join(text[a:b] for a, b, _ in spans)


# ---------------------------------------------------------------- LLM
@dataclass
class LLMConfig:
    """OpenAI-compatible endpoint; unset fields come from DPSPIN_LLM_* / OPENAI_* env vars.

    `constraint` (claims mode): one of `CONSTRAINTS` to use only that form, or None to
    detect per endpoint which form it takes (tried in order, the first that works is kept).
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    mode: str = "text"  # "text" | "claims"
    temperature: float = 0.3
    max_tokens: int = 300
    timeout: float = 120.0
    max_retries: int = 2
    seed: int | None = None
    constraint: str | None = None

    def resolved(self) -> LLMConfig:
        env = os.environ.get
        return LLMConfig(
            base_url=self.base_url or env("DPSPIN_LLM_BASE_URL") or env("OPENAI_BASE_URL"),
            model=self.model or env("DPSPIN_LLM_MODEL") or env("OPENAI_MODEL") or "local-model",
            api_key=self.api_key or env("DPSPIN_LLM_API_KEY") or env("OPENAI_API_KEY") or "sk-no-key",
            mode=self.mode, temperature=self.temperature, max_tokens=self.max_tokens,
            timeout=self.timeout, max_retries=self.max_retries, seed=self.seed, constraint=self.constraint)


class EndpointUnreachable(BadInput):
    """The LLM endpoint gave no answer at all (connection refused, unknown host, timeout)."""


# Ways to send the claims constraint, in the order they are tried (claims mode):
#   json_schema         response_format={"type": "json_schema", ...}: OpenAI, vLLM, llama.cpp's own server
#   json_object_schema  response_format={"type": "json_object", "schema": ...}: llama-cpp-python's server
#   guided_json         extra_body={"guided_json": ...}: vLLM guided decoding
#   grammar             extra_body={"grammar": GBNF}: llama.cpp servers
#   json_object         plain JSON mode (no enums enforced: the answer is checked against the menu)
#   none                no constraint (the same check)
CONSTRAINTS = ("json_schema", "json_object_schema", "guided_json", "grammar", "json_object", "none")
_ENFORCING = frozenset(CONSTRAINTS[:4])
_REFUSAL_STATUS = (400, 422, 500, 501)   # how servers answer a request field they do not take
_DETECTED: dict[tuple[str, str], int] = {}   # (base_url, model) → index of the first form worth trying


SYSTEM_PROMPT = """You summarize a list of themes for a report. A strict checker reads your answer.
Rules:
- Mention only the themes in the list, by their labels.
- Copy numbers exactly from the list or leave them out. Never add other numbers.
- Use the support word (high, moderate, low) given for each theme.
- Say "more common than" only for pairs listed under supported comparisons.
- "Most common" is the rank 1 theme only.
- No quotes, names, places, dates, examples or contact details.
Answer with 2 or 3 short sentences and nothing else."""

EXAMPLE = ("Example answer for another list: Late delivery is the most common theme, with high support. "
           "Late delivery is more common than damaged box. Damaged box has low support.")

COMPARISON_SYSTEM_PROMPT = """You summarize what changed between two releases of a list of themes. A strict checker reads your answer.
Rules:
- Mention only the themes in the list, by their labels.
- Say a theme rose or fell only where the list says its change is supported, in that direction.
- For the others say only that the comparison does not support a change.
- Copy numbers exactly from the list or leave them out. Never add other numbers.
- No quotes, names, places, dates, examples or contact details.
Answer with 2 or 3 short sentences and nothing else."""

COMPARISON_EXAMPLE = ("Example answer for another comparison: Late delivery rose from about 40.2 in the first release "
                      "to about 75.9 in the second release. The comparison does not support a change for damaged box.")

COMPARISON_CLAIMS_SYSTEM_PROMPT = """You choose the facts for a short summary of what changed between two releases.
A program writes the sentences from your choices, so you only pick facts and their order.
Answer with one JSON object and nothing else."""

CLAIMS_SYSTEM_PROMPT = """You choose the facts for a short summary of a ranked list of themes.
A program writes the sentences from your choices, so you only pick facts and their order.
Answer with one JSON object and nothing else."""

CLAIMS_INSTRUCTIONS = """Choose 4 to 6 facts for a short summary, the most important first: start with the top
theme, then cover other themes and a comparison. Example answer for another list:
{"claims": [{"kind": "top_theme", "theme": "late delivery"}, {"kind": "mass", "theme": "late delivery"}, \
{"kind": "comparison", "theme": "late delivery", "other": "damaged box"}, {"kind": "rank", "theme": "damaged box"}, \
{"kind": "bin", "theme": "damaged box"}, {"kind": "count", "bin": "low"}]}
Kinds: {kinds}."""

_KIND_HELP = {
    "top_theme": "top_theme (the rank 1 theme)",
    "rank": "rank (a theme's rank)",
    "bin": "bin (a theme's support level)",
    "mass": "mass (a theme's released mass)",
    "interval": "interval (a theme's accuracy interval)",
    "comparison": "comparison (theme is more common than other: supported pairs only)",
    "similar": "similar (theme and other have similar support: similar pairs only)",
    "count": 'count (how many themes: bin "all" or one support level)',
}


def plan_prompt(plan: Any) -> str:
    """The plan as public text for the decoder (facts and supported comparisons only); for a
    comparison, each compared theme's two values and whether its change is supported."""
    v = public_view(plan)
    if v.get("kind") == "comparison":
        from dpspin_sql import claims_change

        return claims_change.facts(v, claims_change.menu(v))
    lines = ["Released plan (themes by rank):"]
    for a in v["atoms"]:
        lines.append("- " + _atom_sentence(a))
    margin = v["comparison_margin"]
    comps: list[str] = []
    for i, a in enumerate(v["atoms"]):
        for b in v["atoms"][i + 1:]:
            if _mass(a) - _mass(b) >= margin and len(comps) < 6:
                comps.append(f"- {a['label']} is more common than {b['label']}.")
    lines.append("Supported comparisons:" if comps else "Supported comparisons: none.")
    lines += comps
    return "\n".join(lines)


def claims_prompt(view: dict, items: list) -> str:
    """The claims-mode user message: the plan's themes and the pairs the margin supports
    (from the menu), then the answer format."""
    from dpspin_sql.claims import themes

    lines = ["Themes by rank:"]
    rank = {}
    for a in themes(view):
        rank[a["label"]] = int(a["rank"])
        lines.append(f"{int(a['rank'])}. {a['label']} ({a.get('bin', 'low')} support)")
    more = [f"{rank[c.theme]} > {rank[c.other]}" for c in items if c.kind == "comparison"][:12]
    alike = [f"{rank[c.theme]} ~ {rank[c.other]}" for c in items if c.kind == "similar"][:12]
    lines.append("Supported comparisons (by rank): " + ("; ".join(more) if more else "none"))
    lines.append("Similar pairs (by rank): " + ("; ".join(alike) if alike else "none"))
    kinds = [k for k in _KIND_HELP if any(c.kind == k for c in items)]
    lines.append("")
    lines.append(CLAIMS_INSTRUCTIONS.replace("{kinds}", ", ".join(_KIND_HELP[k] for k in kinds)))
    return "\n".join(lines)


def claim_menu(view: dict) -> list:
    """The claims a plan or a comparison supports (claims.menu / claims_change.menu)."""
    if view.get("kind") == "comparison":
        from dpspin_sql import claims_change

        return claims_change.menu(view)
    from dpspin_sql.claims import menu

    return menu(view)


def claim_render(claims: list, view: dict) -> tuple[str, list]:
    if view.get("kind") == "comparison":
        from dpspin_sql import claims_change

        return claims_change.render(claims, view)
    from dpspin_sql.claims import render

    return render(claims, view)


def build_messages(plan: Any, mode: str, history: list[str], items: list | None = None) -> list[dict]:
    v = public_view(plan)
    compared = v.get("kind") == "comparison"
    if mode == "claims":
        if items is None:
            items = claim_menu(v)
        if compared:
            from dpspin_sql import claims_change

            user = claims_change.prompt(v, items)
        else:
            user = claims_prompt(v, items)
        msgs = [{"role": "system", "content": COMPARISON_CLAIMS_SYSTEM_PROMPT if compared else CLAIMS_SYSTEM_PROMPT},
                {"role": "user", "content": user}]
    elif compared:
        user = plan_prompt(v) + "\n\n" + COMPARISON_EXAMPLE + "\n\nNow write the summary of this comparison."
        msgs = [{"role": "system", "content": COMPARISON_SYSTEM_PROMPT}, {"role": "user", "content": user}]
    else:
        user = plan_prompt(plan) + "\n\n" + EXAMPLE + "\n\nNow write the summary of this list."
        msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    if history:
        msgs.append({"role": "user", "content": history[-1]})
    return msgs


def build_feedback(verdict: Verdict, plan: Any, dropped: list | None = None) -> str:
    """Public feedback: only the violations and the plan (post-processing). In claims mode
    `dropped` lists the claims behind the violations, which the next menu leaves out."""
    v = public_view(plan)
    lines = ["Your previous summary was rejected by the verifier:"]
    for x in verdict.violations[:8]:
        lines.append(f"- [{x.code}] {x.message}")
    if dropped is not None:
        from dpspin_sql.claims import describe

        if dropped:
            lines.append("These choices are no longer offered: " + "; ".join(describe(c) for c in dropped[:8]) + ".")
        lines.append("Choose again from the facts above.")
    else:
        lines.append("Allowed themes: " + "; ".join(a["label"] for a in v["atoms"]) + ".")
        lines.append("Rewrite the summary using only the plan facts above.")
    return "\n".join(lines)


def _constraint_kwargs(form: str, schema: dict | None, gbnf: str | None) -> dict:
    if form == "json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "plan_claims", "strict": True, "schema": schema}}}
    if form == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if form == "guided_json":
        return {"extra_body": {"guided_json": schema}}
    if form == "grammar":
        return {"extra_body": {"grammar": gbnf}}
    if form == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _call_llm(cfg: LLMConfig, messages: list[dict], state: dict, schema: dict | None = None,
              gbnf: str | None = None, min_tokens: int = 0) -> tuple[str, dict]:
    """One chat completion; returns (answer, {"constraint", "finish_reason", "refused"}).

    Claims mode sends the constraint in the first form the endpoint takes, starting from
    the form that worked last time for this endpoint; a form it refuses (HTTP 400/422/500/
    501) moves on to the next one within the same attempt."""
    from openai import APIStatusError, OpenAI

    client = OpenAI(base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout, max_retries=cfg.max_retries)
    kw: dict = {"model": cfg.model, "messages": messages, "temperature": cfg.temperature,
                "max_tokens": max(cfg.max_tokens, min_tokens)}
    if cfg.seed is not None:
        kw["seed"] = cfg.seed
    if cfg.mode != "claims":
        resp = client.chat.completions.create(**kw)
        return (resp.choices[0].message.content or "").strip(), {"finish_reason": resp.choices[0].finish_reason}
    key = (str(cfg.base_url), str(cfg.model))
    forms = [cfg.constraint] if cfg.constraint else list(CONSTRAINTS)
    start = 0 if cfg.constraint else state.setdefault("form", _DETECTED.get(key, 0))
    refused: list[str] = []
    for idx in range(start, len(forms)):
        form = forms[idx]
        try:
            resp = client.chat.completions.create(**kw, **_constraint_kwargs(form, schema, gbnf))
        except APIStatusError as e:
            if cfg.constraint or form == "none" or e.status_code not in _REFUSAL_STATUS:
                raise
            refused.append(f"{form}: HTTP {e.status_code}")
            continue
        if not cfg.constraint:
            state["form"] = _DETECTED[key] = idx
        return ((resp.choices[0].message.content or "").strip(),
                {"constraint": form, "finish_reason": resp.choices[0].finish_reason, "refused": refused})
    raise RuntimeError("no constraint form left")  # unreachable: "none" either answers or raises


def _demote(cfg: LLMConfig, state: dict) -> None:
    """The endpoint took the form but did not enforce it: start from the next form."""
    if cfg.constraint:
        return
    nxt = min(state.get("form", 0) + 1, len(CONSTRAINTS) - 1)
    state["form"] = _DETECTED[(str(cfg.base_url), str(cfg.model))] = nxt


# ---------------------------------------------------------------- loop
FINAL_SOURCES = ("model", "template_fallback", "template")


@dataclass
class SummaryResult:
    """The final text and how it came about.

    `final_source`: "model" (a model-written text the verifier accepted), "template_fallback"
    (no model attempt passed, or the endpoint could not be reached with fallback allowed),
    "template" (the template decoder was asked for), or None (no fallback allowed and no
    attempt passed: `text` is empty and `accepted` False)."""

    text: str
    accepted: bool
    attempts: list[dict] = field(default_factory=list)
    fallback_used: bool = False
    decoder: str = "template"
    max_attempts: int = 0
    final_source: str | None = "template"
    mode: str | None = None
    constraint: str | None = None
    note: str | None = None

    @property
    def model_attempts(self) -> list[dict]:
        return [a for a in self.attempts if a.get("source") == "llm"]

    @property
    def attempts_used(self) -> int:
        return len(self.model_attempts)

    @property
    def first_attempt_accepted(self) -> bool | None:
        llm = self.model_attempts
        return bool(llm[0]["accepted"]) if llm else None

    @property
    def accepted_on(self) -> int | None:
        """The model attempt whose text became the summary (1-based), else None."""
        return self.attempts_used if self.final_source == "model" else None

    def status_line(self) -> str:
        """One line on where the final text came from."""
        if self.decoder == "template":
            return "summary: template decoder (accepted by the verifier)"
        how = f"{self.mode} mode" + (f", constraint {self.constraint}" if self.constraint else "")
        if self.final_source == "model":
            return (f"summary: model-written ({how}), accepted on attempt {self.accepted_on} of {self.max_attempts}"
                    f"; first attempt {'accepted' if self.first_attempt_accepted else 'rejected'}")
        if self.final_source == "template_fallback":
            why = self.note or f"no model attempt accepted in {self.attempts_used} attempt(s)"
            return f"summary: template fallback ({why}; {how})"
        return f"summary: none — no model attempt accepted in {self.attempts_used} attempt(s) and no fallback ({how})"

    def to_dict(self) -> dict:
        return {"decoder": self.decoder, "mode": self.mode, "constraint": self.constraint,
                "max_attempts": self.max_attempts, "final_source": self.final_source, "accepted": self.accepted,
                "attempts_used": self.attempts_used, "first_attempt_accepted": self.first_attempt_accepted,
                "accepted_on_attempt": self.accepted_on, "fallback_used": self.fallback_used, "note": self.note,
                "final_text": self.text, "attempts": self.attempts}


def summarize(plan: Any, decoder: str = "template", max_attempts: int = 3,
              llm: LLMConfig | None = None, dictionary=None, fallback: bool | None = None) -> SummaryResult:
    """Verbalize `plan`; the LLM path retries with feedback, then falls back to the template.

    `fallback`: None (default) — the template after `max_attempts` rejections, but an
    endpoint that cannot be reached raises `EndpointUnreachable`; True — the template in
    both cases (the result's `note` says why); False — never the template: after the last
    rejection the result has `final_source` None and `accepted` False, and an unreachable
    endpoint raises."""
    if decoder not in ("template", "llm"):
        raise BadInput(f"unknown decoder {decoder!r} (template|llm)")
    if not 0 <= int(max_attempts) <= MAX_ATTEMPTS_LIMIT:
        raise BadInput(f"--max-attempts must be in 0..{MAX_ATTEMPTS_LIMIT}")
    view = public_view(plan)  # from here on only the public view is used
    if decoder == "template":
        text = template_summary(view)
        verdict = verify(text, view, dictionary)
        rec: dict = {"attempt": 1, "source": "template", "text": text, **verdict.to_dict(), "feedback": None}
        return SummaryResult(text, verdict.accepted, [rec], False, "template", int(max_attempts), "template")
    from dpspin_sql.extras import require

    require("openai")   # the llm extra; else a transport error would silently fall back to the template
    cfg = (llm or LLMConfig()).resolved()
    if not cfg.base_url:
        raise BadInput("the llm decoder needs a base URL (--base-url or DPSPIN_LLM_BASE_URL / OPENAI_BASE_URL)")
    if cfg.mode not in ("text", "claims"):
        raise BadInput(f"unknown mode {cfg.mode!r} (text|claims)")
    if cfg.constraint is not None and cfg.constraint not in CONSTRAINTS:
        raise BadInput(f"unknown constraint {cfg.constraint!r} ({'|'.join(CONSTRAINTS)})")
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    from dpspin_sql import claims as cl
    from dpspin_sql.verify import Violation

    attempts: list[dict] = []
    history: list[str] = []
    state: dict = {}
    items = claim_menu(view) if cfg.mode == "claims" else []
    dropped: set = set()
    reached, note, constraint = False, None, None
    rounds = int(max_attempts)
    if cfg.mode == "claims" and not items:
        rounds, note = 0, "the plan admits no themes, so there is nothing for the model to choose"
    for r in range(1, rounds + 1):
        allowed = [c for c in items if c not in dropped] or items
        messages = build_messages(view, cfg.mode, history, allowed if cfg.mode == "claims" else None)
        rec = {"attempt": r, "source": "llm", "mode": cfg.mode, "model": cfg.model,
                     "feedback_in": history[-1] if history else None, "messages": messages}
        blame: list = []
        try:
            if cfg.mode == "claims":
                raw, meta = _call_llm(cfg, messages, state, cl.claims_schema(allowed), cl.claims_gbnf(allowed),
                                      cl.token_budget(allowed))
            else:
                raw, meta = _call_llm(cfg, messages, state)
            reached = True
            rec["raw"] = raw
            rec.update(meta)
            constraint = meta.get("constraint")
            if cfg.mode == "claims":
                chosen, structural, conforms = cl.read_claims(cl.parse(raw), allowed)
                rec["claims"] = [c.as_json() for c in chosen]
                rec["constraint_enforced"] = conforms
                if not conforms and meta["constraint"] in _ENFORCING and meta.get("finish_reason") != "length":
                    _demote(cfg, state)
                text, spans = claim_render(chosen, view)
                checked = verify(text, view, dictionary, require_theme=True)  # never trust the renderer
                verdict = Verdict(not structural and checked.accepted, [*structural, *checked.violations])
                blame = sorted(cl.blamed(checked.violations, text, spans), key=cl.describe)
            else:
                text, verdict = raw, verify(raw, view, dictionary, require_theme=True)
        except APIConnectionError as e:  # no answer; unreachable unless it connected and was too slow
            slow = isinstance(e, APITimeoutError) and "connect" not in type(e.__cause__).__name__.lower()
            msg = f"cannot reach the LLM endpoint {cfg.base_url} ({type(e).__name__}: {e})"
            if not reached and not slow:
                if fallback is not True:
                    raise EndpointUnreachable(msg) from None
                rec.update({"text": "", "accepted": False,
                            "violations": [Violation("decoder_error", "", msg[:300]).to_dict()], "feedback": None})
                attempts.append(rec)
                note = msg
                break
            text, verdict = "", Verdict(False, [Violation("decoder_error", "", msg[:300])])
        except APIStatusError as e:
            reached = True
            text, verdict = "", Verdict(False, [Violation("decoder_error", "", f"{type(e).__name__}: {e}"[:300])])
        except Exception as e:  # any other failure counts as a rejected attempt
            text, verdict = "", Verdict(False, [Violation("decoder_error", "", f"{type(e).__name__}: {e}"[:300])])
        rec.update({"text": text, **verdict.to_dict()})
        if verdict.accepted:
            rec["feedback"] = None
            attempts.append(rec)
            return SummaryResult(text, True, attempts, False, "llm", int(max_attempts), "model", cfg.mode, constraint)
        if cfg.mode == "claims":
            dropped.update(blame)
            rec["dropped_from_menu"] = [c.as_json() for c in blame]
        fb = build_feedback(verdict, view, blame if cfg.mode == "claims" else None)
        rec["feedback"] = fb
        history.append(fb)
        attempts.append(rec)
    if fallback is False:
        return SummaryResult("", False, attempts, False, "llm", int(max_attempts), None, cfg.mode, constraint, note)
    text = template_summary(view)
    verdict = verify(text, view, dictionary)
    attempts.append({"attempt": "fallback", "source": "template", "text": text, **verdict.to_dict(), "feedback": None})
    return SummaryResult(text, verdict.accepted, attempts, True, "llm", int(max_attempts), "template_fallback",
                         cfg.mode, constraint, note)


def write_summary(result: SummaryResult, out: str | Path | None, attempts_out: str | Path | None) -> None:
    """summary.txt gets the final text (none when no text passed); verifier_attempts.json
    every attempt and verdict, and where the final text came from."""
    from dpspin_sql.outputs import write_text_atomic  # checks the directory, writes via rename

    if attempts_out:
        write_text_atomic(attempts_out, json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    if out and result.accepted and result.final_source is not None:
        write_text_atomic(out, result.text.rstrip("\n"))
