"""Verbalization of a released plan (SPEC §5): template and LLM decoders, verifier loop.

Both decoders see only `public_view(plan)` — a whitelist of released, public
fields — and fixed public instructions, so the summary is post-processing of
the plan. The LLM loop makes at most `max_attempts` tries (fixed before the
plan is seen); each rejection becomes feedback built only from the verifier's
violations and the plan; after the last rejection the deterministic template
is returned.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpspin_sql.errors import BadInput
from dpspin_sql.verify import Verdict, margin_of, plan_dict, verify, verify_claims

__all__ = ["LLMConfig", "SummaryResult", "public_view", "template_summary", "summarize",
           "write_summary", "build_feedback", "build_messages", "MAX_ATTEMPTS_LIMIT"]

MAX_ATTEMPTS_LIMIT = 20
_PUBLIC_META = ("schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "L", "m",
                "comparison_margin", "public_denominator", "bins", "bin_basis", "interval_confidence",
                "interval_half_width")
_PUBLIC_ATOM = ("atom_id", "rank", "label", "description", "display_mass", "noisy_mass", "support", "bin",
                "interval", "support_interval")


def public_view(plan: Any) -> dict:
    """Only released, public fields: what a decoder may see (never extra keys)."""
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
    return f"{x:.1f}"


def _atom_sentence(a: dict) -> str:
    shown = float(a.get("display_mass", max(_mass(a), 0.0)))
    parts = [f"{a.get('bin', 'low')} support"]
    if a.get("support") is not None:
        parts.append(f"{_fmt(float(a['support']) * 100)}% of records")
    parts.append(f"released mass {_fmt(shown)}")
    return f"Rank {int(a['rank'])}: {a['label']} — " + ", ".join(parts) + "."


def template_summary(plan: Any) -> str:
    """Deterministic plan-to-text map; the fallback, always accepted by the verifier."""
    v = public_view(plan)
    atoms = v["atoms"]
    if not atoms:
        return "The released plan admits no themes, so there is nothing to summarize."
    eps = v.get("epsilon")
    # a non-private reference (experiments only) must never read as a DP release
    kind = "non-private reference" if v.get("mechanism") == "non_private" else "differentially private"
    head = f"This {kind} plan lists {len(atoms)} themes"
    head += f" (ε = {eps:g})." if isinstance(eps, (int, float)) else "."
    lines = [head, f"The most common theme is {atoms[0]['label']}."]
    lines += [_atom_sentence(a) for a in atoms]
    margin = v["comparison_margin"]
    shown = 0
    for a, b in zip(atoms, atoms[1:]):
        if shown >= 3 or a["label"] == b["label"]:
            break
        if _mass(a) - _mass(b) >= margin:
            lines.append(f"{_cap(a['label'])} is more common than {b['label']}.")
        else:
            lines.append(f"{_cap(a['label'])} and {b['label']} have similar support.")
        shown += 1
    if len(atoms) > 1:
        lines.append(f"The least common theme in the plan is {atoms[-1]['label']}.")
    return "\n".join(lines)


# ---------------------------------------------------------------- LLM
@dataclass
class LLMConfig:
    """OpenAI-compatible endpoint; unset fields come from DPSPIN_LLM_* / OPENAI_* env vars."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    mode: str = "text"  # "text" | "claims"
    temperature: float = 0.3
    max_tokens: int = 300
    timeout: float = 120.0
    max_retries: int = 2
    seed: int | None = None

    def resolved(self) -> "LLMConfig":
        env = os.environ.get
        return LLMConfig(
            base_url=self.base_url or env("DPSPIN_LLM_BASE_URL") or env("OPENAI_BASE_URL"),
            model=self.model or env("DPSPIN_LLM_MODEL") or env("OPENAI_MODEL") or "local-model",
            api_key=self.api_key or env("DPSPIN_LLM_API_KEY") or env("OPENAI_API_KEY") or "sk-no-key",
            mode=self.mode, temperature=self.temperature, max_tokens=self.max_tokens,
            timeout=self.timeout, max_retries=self.max_retries, seed=self.seed)


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

CLAIMS_INSTRUCTIONS = """Answer with one JSON object: {"claims": [{"atom": <theme label>, "rank": <int or null>,
"bin": <"high"|"moderate"|"low" or null>, "comparison": {"op": "more"|"less"|"similar", "other": <theme label>} or null,
"text": <one sentence stating this claim>}]}. Give 2 to 5 claims."""

CLAIMS_SCHEMA = {
    "name": "plan_claims", "strict": False,
    "schema": {"type": "object", "required": ["claims"], "properties": {"claims": {"type": "array", "items": {
        "type": "object", "required": ["atom", "text"], "properties": {
            "atom": {"type": "string"}, "rank": {"type": ["integer", "null"]},
            "bin": {"type": ["string", "null"], "enum": ["high", "moderate", "low", None]},
            "comparison": {"type": ["object", "null"]}, "text": {"type": "string"}}}}}},
}


def plan_prompt(plan: Any) -> str:
    """The plan as public text for the decoder (facts and supported comparisons only)."""
    v = public_view(plan)
    lines = ["Released plan (themes by rank):"]
    for a in v["atoms"]:
        lines.append("- " + _atom_sentence(a))
    margin = v["comparison_margin"]
    comps = []
    for i, a in enumerate(v["atoms"]):
        for b in v["atoms"][i + 1:]:
            if _mass(a) - _mass(b) >= margin and len(comps) < 6:
                comps.append(f"- {a['label']} is more common than {b['label']}.")
    lines.append("Supported comparisons:" if comps else "Supported comparisons: none.")
    lines += comps
    return "\n".join(lines)


def build_messages(plan: Any, mode: str, history: list[str]) -> list[dict]:
    user = plan_prompt(plan) + "\n\n" + (EXAMPLE + "\n\nNow write the summary of this list." if mode == "text"
                                         else CLAIMS_INSTRUCTIONS)
    msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    if history:
        msgs.append({"role": "user", "content": history[-1]})
    return msgs


def build_feedback(verdict: Verdict, plan: Any) -> str:
    """Public feedback: only the violations and the plan (post-processing)."""
    v = public_view(plan)
    lines = ["Your previous summary was rejected by the verifier:"]
    for x in verdict.violations[:8]:
        lines.append(f"- [{x.code}] {x.message}")
    lines.append("Allowed themes: " + "; ".join(a["label"] for a in v["atoms"]) + ".")
    lines.append("Rewrite the summary using only the plan facts above.")
    return "\n".join(lines)


def _call_llm(cfg: LLMConfig, messages: list[dict], state: dict) -> str:
    from openai import APIStatusError, OpenAI

    client = OpenAI(base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout, max_retries=cfg.max_retries)
    kw: dict = {"model": cfg.model, "messages": messages, "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
    if cfg.seed is not None:
        kw["seed"] = cfg.seed
    if cfg.mode == "claims":
        formats = [{"type": "json_schema", "json_schema": CLAIMS_SCHEMA}, {"type": "json_object"}, None]
        for fmt in formats[state.get("format_index", 0):]:
            try:
                extra = {"response_format": fmt} if fmt else {}
                resp = client.chat.completions.create(**kw, **extra)
                break
            except APIStatusError as e:  # e.g. llama.cpp answers 500 to json_schema
                if e.status_code < 400 or fmt is None:
                    raise
                state["format_index"] = state.get("format_index", 0) + 1
    else:
        resp = client.chat.completions.create(**kw)
    return (resp.choices[0].message.content or "").strip()


def _parse_claims(raw: str) -> list | None:
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(raw[start:end + 1])
    except json.JSONDecodeError:
        return None
    claims = obj.get("claims") if isinstance(obj, dict) else None
    return claims if isinstance(claims, list) else None


# ---------------------------------------------------------------- loop
@dataclass
class SummaryResult:
    text: str
    accepted: bool
    attempts: list[dict] = field(default_factory=list)
    fallback_used: bool = False
    decoder: str = "template"
    max_attempts: int = 0

    def to_dict(self) -> dict:
        return {"decoder": self.decoder, "max_attempts": self.max_attempts, "accepted": self.accepted,
                "fallback_used": self.fallback_used, "final_text": self.text, "attempts": self.attempts}


def summarize(plan: Any, decoder: str = "template", max_attempts: int = 3,
              llm: LLMConfig | None = None, dictionary=None) -> SummaryResult:
    """Verbalize `plan`; the LLM path retries with feedback, then falls back to the template."""
    if decoder not in ("template", "llm"):
        raise BadInput(f"unknown decoder {decoder!r} (template|llm)")
    if not 0 <= int(max_attempts) <= MAX_ATTEMPTS_LIMIT:
        raise BadInput(f"--max-attempts must be in 0..{MAX_ATTEMPTS_LIMIT}")
    view = public_view(plan)  # from here on only the public view is used
    if decoder == "template":
        text = template_summary(view)
        verdict = verify(text, view, dictionary)
        rec = {"attempt": 1, "source": "template", "text": text, **verdict.to_dict(), "feedback": None}
        return SummaryResult(text, verdict.accepted, [rec], False, "template", int(max_attempts))
    cfg = (llm or LLMConfig()).resolved()
    if not cfg.base_url:
        raise BadInput("the llm decoder needs a base URL (--base-url or DPSPIN_LLM_BASE_URL / OPENAI_BASE_URL)")
    attempts: list[dict] = []
    history: list[str] = []
    state: dict = {}
    for r in range(1, int(max_attempts) + 1):
        messages = build_messages(view, cfg.mode, history)
        rec: dict = {"attempt": r, "source": "llm", "mode": cfg.mode, "model": cfg.model,
                     "feedback_in": history[-1] if history else None, "messages": messages}
        try:
            raw = _call_llm(cfg, messages, state)
            rec["raw"] = raw
            if cfg.mode == "claims":
                claims = _parse_claims(raw)
                rec["claims"] = claims
                if claims is None:
                    text, verdict = raw, verify(raw, view, dictionary, require_theme=True)
                    verdict = Verdict(False, [*_malformed(raw), *verdict.violations])
                else:
                    text, verdict = verify_claims(claims, view, dictionary, require_theme=True)
            else:
                text, verdict = raw, verify(raw, view, dictionary, require_theme=True)
        except Exception as e:  # transport errors count as a rejected attempt
            from dpspin_sql.verify import Violation
            text, verdict = "", Verdict(False, [Violation("decoder_error", "", f"{type(e).__name__}: {e}"[:300])])
        rec.update({"text": text, **verdict.to_dict()})
        if verdict.accepted:
            rec["feedback"] = None
            attempts.append(rec)
            return SummaryResult(text, True, attempts, False, "llm", int(max_attempts))
        fb = build_feedback(verdict, view)
        rec["feedback"] = fb
        history.append(fb)
        attempts.append(rec)
    text = template_summary(view)
    verdict = verify(text, view, dictionary)
    attempts.append({"attempt": "fallback", "source": "template", "text": text, **verdict.to_dict(), "feedback": None})
    return SummaryResult(text, verdict.accepted, attempts, True, "llm", int(max_attempts))


def _malformed(raw: str):
    from dpspin_sql.verify import Violation
    return [Violation("malformed_output", raw[:80], 'the answer is not a JSON object with a "claims" list')]


def write_summary(result: SummaryResult, out: str | Path | None, attempts_out: str | Path | None) -> None:
    """summary.txt gets the final text; verifier_attempts.json every attempt and verdict."""
    from dpspin_sql.outputs import write_text_atomic  # checks the directory, writes via rename

    if attempts_out:
        write_text_atomic(attempts_out, json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    if out:
        write_text_atomic(out, result.text.rstrip("\n"))


