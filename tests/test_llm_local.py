"""The full loop against a real local model (SmolLM2-135M via llama_cpp.server on 127.0.0.1).

The model is very weak: these tests assert the protocol and verdicts, never wording.
Claims mode is checked under the constraint forms llama-cpp-python takes (json_object with
a schema, found after json_schema is refused; a GBNF grammar). Rates over
DPSPIN_LLM_EVAL_PLANS plans (default 3, to keep CI short; bench/llm_rates.py reports on
real releases) are written to $DPSPIN_LLM_REPORT (default: the test's tmp dir) and printed.
"""
from __future__ import annotations

import json
import os

import pytest

from dpspin_sql.decode import LLMConfig, summarize, template_summary
from dpspin_sql.verify import verify
from tests.helpers.llm import ScriptedServer, local_llm, make_plan, pipeline_plan_with_canary  # noqa: F401 - fixture

pytestmark = [pytest.mark.llm, pytest.mark.slow]
R_MAX = 3


def _cfg(base_url: str, mode: str = "claims", **kw) -> LLMConfig:
    return LLMConfig(base_url=base_url, model="smollm2", api_key="local", mode=mode, max_retries=0,
                     timeout=600, max_tokens=160, temperature=0.3, **kw)


def _check_protocol(plan, r, srv=None):
    llm_attempts = r.model_attempts
    assert 1 <= len(llm_attempts) <= R_MAX
    assert [a["attempt"] for a in llm_attempts] == list(range(1, len(llm_attempts) + 1))
    for a in llm_attempts[:-1]:
        assert a["accepted"] is False and a["feedback"]
    # every recorded verdict contains the public verifier's verdict on the recorded text
    for a in llm_attempts:
        if any(v["code"] == "decoder_error" for v in a["violations"]):
            continue
        again = verify(a["text"], plan, require_theme=True).to_dict()["violations"]
        if a["mode"] == "text":
            assert again == a["violations"]
        else:
            assert all(v in a["violations"] for v in again)
            assert a["accepted"] == (not a["violations"])
    if r.fallback_used:
        assert r.final_source == "template_fallback"
        assert len(llm_attempts) == R_MAX and not any(a["accepted"] for a in llm_attempts)
        assert r.text == template_summary(plan) and r.attempts[-1]["attempt"] == "fallback"
    else:
        assert r.final_source == "model" and r.accepted_on == len(llm_attempts)
        assert llm_attempts[-1]["accepted"] and r.text == llm_attempts[-1]["text"]
    assert r.first_attempt_accepted == llm_attempts[0]["accepted"]
    assert r.accepted and verify(r.text, plan).accepted
    if srv is not None:  # one request per attempt, plus the constraint forms the server refused
        refused = sum(len(a.get("refused") or []) for a in llm_attempts)
        assert len(srv.requests) == len(llm_attempts) + refused


@pytest.mark.parametrize("mode", ["text", "claims"])
def test_full_loop_against_local_model(local_llm, mode):
    plan = make_plan(7, "phrases", L=5)
    with ScriptedServer(upstream=local_llm) as proxy:
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(proxy.base_url, mode))
    _check_protocol(plan, r, proxy)
    if mode == "claims":  # llama-cpp-python answers 500 to json_schema and takes json_object + schema
        assert proxy.forms()[:2] == ["json_schema", "json_object_schema"]
        assert r.model_attempts[0]["refused"] == ["json_schema: HTTP 500"]
        assert all(a["constraint"] == "json_object_schema" for a in r.model_attempts)
        assert all(a["constraint_enforced"] for a in r.model_attempts)   # the server enforced the enums


def test_grammar_constraint_against_local_model(local_llm):
    """The GBNF form (llama.cpp `grammar`) constrains the real model to the menu too."""
    plan = make_plan(21, "cfpb", L=4)
    with ScriptedServer(upstream=local_llm) as proxy:
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(proxy.base_url, constraint="grammar"))
    _check_protocol(plan, r, proxy)
    assert proxy.forms() == ["grammar"] * r.attempts_used
    assert r.model_attempts[0]["constraint_enforced"] and r.model_attempts[0]["claims"]


@pytest.fixture(scope="module")
def canary_plan(tmp_path_factory):
    """The real release pipeline's plan (an import failure of it fails the tests, never skips them)."""
    canary = "ZQXCANARY9921"
    return canary, pipeline_plan_with_canary(tmp_path_factory.mktemp("canary"), canary)


@pytest.mark.parametrize("mode", ["text", "claims"])
def test_canary_never_reaches_the_local_model(local_llm, canary_plan, mode):
    canary, plan = canary_plan
    assert canary not in json.dumps(plan)
    with ScriptedServer(upstream=local_llm) as proxy:
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(proxy.base_url, mode))
    _check_protocol(plan, r, proxy)
    assert canary not in proxy.all_text()  # prompts, schemas, grammars, feedback and the model's answers
    assert canary not in json.dumps(r.to_dict())


def test_acceptance_rates(local_llm, tmp_path):
    n = int(os.environ.get("DPSPIN_LLM_EVAL_PLANS", "3"))
    mode = os.environ.get("DPSPIN_LLM_EVAL_MODE", "claims")
    rows = []
    for i in range(n):
        plan = make_plan(1000 + i, "cfpb" if i % 2 else "phrases", L=[3, 5, 8][i % 3])
        r = summarize(plan, decoder="llm", max_attempts=R_MAX, llm=_cfg(local_llm, mode))
        _check_protocol(plan, r)
        rows.append({"plan": i, "final_source": r.final_source, "first": r.first_attempt_accepted,
                     "attempts": r.attempts_used,
                     "codes": sorted({v["code"] for a in r.model_attempts for v in a["violations"]})})
    report = {"model": "SmolLM2-135M-Instruct (Q4_1)", "mode": mode, "plans": n, "r_max": R_MAX,
              "first_attempt_acceptance": sum(bool(r["first"]) for r in rows) / n,
              "model_written_accepted": sum(r["final_source"] == "model" for r in rows) / n,
              "fallback_rate": sum(r["final_source"] == "template_fallback" for r in rows) / n, "rows": rows}
    out = os.environ.get("DPSPIN_LLM_REPORT") or str(tmp_path / "llm_rates.json")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}))
    assert report["model_written_accepted"] + report["fallback_rate"] == pytest.approx(1.0)
