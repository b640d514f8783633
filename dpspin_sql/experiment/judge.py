"""Release-conditioned judging (paper §6.5, Tables 1–2): an LLM scores a summary on 1–5
scales — faithfulness to the released object, coverage of it, fluency — seeing only the
object released to that summary's decoder (its public view: the whitelist of released
fields `decode.public_view` gives a decoder) and public instructions. Never the records,
the non-private sketch or the non-private reference summary.

Optional evaluation, off by default: a grid sets `judge_base_url` (and `judge_model`), or
`dpspin experiment run --judge-base-url URL`. Any OpenAI-compatible endpoint works; the
answer is asked for as a JSON object whose scores are constrained to 1..5 where the
server supports a schema (llama.cpp: `json_object` + `schema`), else as plain JSON. The
scores are evaluation output, not part of the privacy mechanism.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

SCALES = ("faithfulness", "coverage", "fluency")

SYSTEM = """You are a strict evaluator of short reports. You see a released list of themes and a summary
written from it. Score the summary on three 1-5 scales, using only the released list:
- faithfulness: 5 = every statement is supported by the list (themes, ranks, support words, numbers,
  comparisons); 1 = mostly unsupported or contradicted.
- coverage: 5 = the summary conveys the main themes of the list and their relative importance; 1 = it
  conveys almost none.
- fluency: 5 = clear, natural, well-formed English; 1 = hard to read.
Answer with one JSON object: {"faithfulness": <1-5>, "coverage": <1-5>, "fluency": <1-5>}."""

SCHEMA = {"type": "object", "required": list(SCALES),
          "properties": {k: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for k in SCALES}}


@dataclass
class JudgeConfig:
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 60
    timeout: float = 120.0
    max_retries: int = 1
    seed: int | None = 0

    def resolved(self) -> "JudgeConfig":
        env = os.environ.get
        return JudgeConfig(base_url=self.base_url or env("DPSPIN_JUDGE_BASE_URL"),
                           model=self.model or env("DPSPIN_JUDGE_MODEL") or "judge-model",
                           api_key=self.api_key or env("DPSPIN_JUDGE_API_KEY") or env("OPENAI_API_KEY") or "sk-no-key",
                           temperature=self.temperature, max_tokens=self.max_tokens, timeout=self.timeout,
                           max_retries=self.max_retries, seed=self.seed)


def released_view(plan: Any) -> dict:
    """What the judge may see of the release: exactly what its decoder saw."""
    from dpspin_sql.decode import public_view

    view = public_view(plan)
    view.pop("dictionary_labels", None)
    return view


def build_messages(summary: str, plan: Any) -> list[dict]:
    from dpspin_sql.decode import plan_prompt

    user = (plan_prompt(released_view(plan)) + "\n\nSummary to evaluate:\n" + (summary or "").strip()
            + "\n\nAnswer with the JSON object only.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_scores(raw: str) -> dict | None:
    """The three integer scores of an answer (first JSON object in it), each clipped to 1..5."""
    start, end = (raw or "").find("{"), (raw or "").rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(raw[start:end + 1])
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    out = {}
    for k in SCALES:
        v = obj.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            return None
        try:
            x = float(v)
        except ValueError:
            return None
        out[k] = int(min(5, max(1, round(x))))
    return out


def judge(summary: str, plan: Any, cfg: JudgeConfig) -> dict:
    """Scores and a record of the call: {"faithfulness", "coverage", "fluency", "ok", "raw", "error", ...}."""
    from openai import APIStatusError, OpenAI

    cfg = cfg.resolved()
    messages = build_messages(summary, plan)
    rec: dict = {"model": cfg.model, "ok": False, "raw": None, "error": None, "format": None,
                 **{k: None for k in SCALES}}
    client = OpenAI(base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout, max_retries=cfg.max_retries)
    kw: dict = {"model": cfg.model, "messages": messages, "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
    if cfg.seed is not None:
        kw["seed"] = cfg.seed
    formats = [("json_object+schema", {"type": "json_object", "schema": SCHEMA}), ("json_object", {"type": "json_object"}),
               ("none", None)]
    try:
        for name, fmt in formats:
            try:
                resp = client.chat.completions.create(**kw, **({"response_format": fmt} if fmt else {}))
                rec["format"] = name
                break
            except APIStatusError as e:   # a server that refuses the format: try the next one
                if e.status_code < 400 or fmt is None:
                    raise
        raw = (resp.choices[0].message.content or "").strip()
        rec["raw"] = raw
        scores = parse_scores(raw)
        if scores is None:
            rec["error"] = "the answer is not a JSON object with the three scores"
        else:
            rec.update(scores, ok=True)
    except Exception as e:  # noqa: BLE001 - a failed judgement is recorded, the run goes on
        rec["error"] = f"{type(e).__name__}: {e}"[:300]
    return rec


def metrics(rec: dict) -> dict:
    return {f"judge_{k}": (float(rec[k]) if rec.get(k) is not None else None) for k in SCALES} | \
        {"judge_ok": 1.0 if rec.get("ok") else 0.0}
