"""The full loop against a real local model (SmolLM2-135M via llama_cpp.server on 127.0.0.1).

The model is very weak: these tests assert the protocol and verdicts, never text.
Rates over DPSPIN_LLM_EVAL_PLANS plans (default 5, to keep CI short; 20 for a report) are written to
$DPSPIN_LLM_REPORT (default: the test's tmp dir) and printed.
"""
from __future__ import annotations

import json
import os

import pytest

from dpspin_sql.decode import LLMConfig, summarize, template_summary
from dpspin_sql.verify import verify

from fixtures_llm import ScriptedServer, local_llm, make_plan, pipeline_plan_with_canary  # noqa: F401 - fixture

pytestmark = [pytest.mark.llm, pytest.mark.slow]
R_MAX = 3


def _cfg(base_url: str, mode: str = "text") -> LLMConfig:
    return LLMConfig(base_url=base_url, model="smollm2", api_key="local", mode=mode, max_retries=0,
                     timeout=300, max_tokens=160, temperature=0.3)


def _check_protocol(plan, r, srv=None):
    llm_attempts = [a for a in r.attempts if a["source"] == "llm"]
    assert 1 <= len(llm_attempts) <= R_MAX
    assert [a["attempt"] for a in llm_attempts] == list(range(1, len(llm_attempts) + 1))
    for a in llm_attempts[:-1]:
        assert a["accepted"] is False and a["feedback"]
    # every recorded verdict is the public verifier's verdict on the recorded text
    for a in llm_attempts:
        if a["mode"] == "text" and not any(v["code"] == "decoder_error" for v in a["violations"]):
            assert verify(a["text"], plan, require_theme=True).to_dict()["violations"] == a["violations"]
    if r.fallback_used:
        assert len(llm_attempts) == R_MAX and not any(a["accepted"] for a in llm_attempts)
        assert r.text == template_summary(plan) and r.attempts[-1]["attempt"] == "fallback"
    else:
        assert llm_attempts[-1]["accepted"] and r.text == llm_attempts[-1]["text"]
    assert r.accepted and verify(r.text, plan).accepted
    if srv is not None:  # one request per attempt, plus a json_schema request the server may refuse first
        n_schema = sum((q["body"].get("response_format") or {}).get("type") == "json_schema" for q in srv.requests)
        assert len(llm_attempts) <= len(srv.requests) <= len(llm_attempts) + n_schema


@pytest.mark.parametrize("mode", ["text", "claims"])
def test_full_loop_against_local_model(local_llm, tmp_path, mode):
    plan = make_plan(7, "phrases", L=5)
    with ScriptedServer(upstream=local_llm) as proxy:
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(proxy.base_url, mode))
    _check_protocol(plan, r, proxy)
    if mode == "claims":  # llama.cpp refuses json_schema: the decoder must have fallen back to json_object
        fmts = [req["body"].get("response_format", {}).get("type") for req in proxy.requests]
        assert fmts[0] == "json_schema" or "json_object" in fmts


def test_canary_never_reaches_the_local_model(local_llm, tmp_path):
    pytest.importorskip("opendp")
    canary = "ZQXCANARY9921"
    try:
        plan = pipeline_plan_with_canary(tmp_path, canary)
    except (ImportError, AttributeError) as e:
        pytest.skip(f"release pipeline not available: {e}")
    with ScriptedServer(upstream=local_llm) as proxy:
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(proxy.base_url))
    _check_protocol(plan, r, proxy)
    assert canary not in proxy.all_text()  # prompts, feedback and the model's answers
    assert canary not in json.dumps(r.to_dict())


def test_acceptance_rates(local_llm, tmp_path):
    n = int(os.environ.get("DPSPIN_LLM_EVAL_PLANS", "5"))  # the closing note used 20
    mode = os.environ.get("DPSPIN_LLM_EVAL_MODE", "text")
    rows = []
    for i in range(n):
        plan = make_plan(1000 + i, "cfpb" if i % 2 else "phrases", L=[3, 5, 8][i % 3])
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(local_llm, mode))
        _check_protocol(plan, r)
        llm = [a for a in r.attempts if a["source"] == "llm"]
        rows.append({"plan": i, "first": llm[0]["accepted"], "within": not r.fallback_used,
                     "fallback": r.fallback_used, "attempts": len(llm),
                     "codes": sorted({v["code"] for a in llm for v in a["violations"]})})
    report = {"model": "SmolLM2-135M-Instruct (Q4_1)", "mode": mode, "plans": n, "r_max": R_MAX,
              "first_attempt_acceptance": sum(r["first"] for r in rows) / n,
              "acceptance_within_r_max": sum(r["within"] for r in rows) / n,
              "fallback_rate": sum(r["fallback"] for r in rows) / n, "rows": rows}
    out = os.environ.get("DPSPIN_LLM_REPORT") or str(tmp_path / "llm_rates.json")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}))
    assert report["acceptance_within_r_max"] + report["fallback_rate"] == pytest.approx(1.0)
