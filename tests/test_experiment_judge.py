"""The release-conditioned judge (experiment/judge.py): it sees the released object's public
view only, its scores are 1..5 integers, failures are recorded, and it is off by default.
Against a scripted OpenAI-compatible server always; against the local SmolLM2 server
(tests/fixtures_llm.py, .ci/install-llm) when it is installed."""
from __future__ import annotations

import json

import pytest

from dpspin_sql.decode import template_summary
from dpspin_sql.experiment import grid as G
from dpspin_sql.experiment import judge, runner

from tests.helpers.llm import ScriptedServer, local_llm, make_plan, pipeline_plan_with_canary  # noqa: F401
from tests.test_experiment_runner import tiny, tiny_grid, write_cfpb  # noqa: F401


def _cfg(url, **kw):
    return judge.JudgeConfig(base_url=url, model="m", api_key="k", max_retries=0, timeout=60, **kw)


def test_scores_parsed_and_only_the_release_is_sent(tmp_path):
    canary = "ZEBRACANARY"
    plan = pipeline_plan_with_canary(tmp_path, canary)
    summary = template_summary(plan)
    with ScriptedServer(['Here: {"faithfulness": 5, "coverage": 4, "fluency": 7}']) as srv:
        rec = judge.judge(summary, plan, _cfg(srv.base_url))
    assert rec["ok"] and (rec["faithfulness"], rec["coverage"], rec["fluency"]) == (5, 4, 5)   # clipped to 5
    assert rec["format"] == "json_object+schema"
    sent = json.dumps(srv.requests)
    assert canary not in sent and "dictionary_labels" not in sent
    body = srv.requests[0]["body"]
    assert body["response_format"]["schema"]["properties"]["coverage"]["enum"] == [1, 2, 3, 4, 5]
    assert summary.splitlines()[1] in body["messages"][1]["content"]
    for a in plan["atoms"]:
        assert a["label"] in body["messages"][1]["content"]
    assert judge.metrics(rec) == {"judge_faithfulness": 5.0, "judge_coverage": 4.0, "judge_fluency": 5.0,
                                  "judge_ok": 1.0}


def test_format_fallback_and_failures_are_recorded():
    plan = make_plan(3)
    with ScriptedServer([500, '{"faithfulness": 2, "coverage": 3, "fluency": 4}']) as srv:
        rec = judge.judge("Some summary.", plan, _cfg(srv.base_url))
    assert rec["ok"] and rec["format"] == "json_object" and rec["coverage"] == 3
    with ScriptedServer(["I think it is good."]) as srv:
        rec = judge.judge("Some summary.", plan, _cfg(srv.base_url))
    assert not rec["ok"] and rec["faithfulness"] is None and "JSON" in rec["error"]
    assert judge.metrics(rec)["judge_ok"] == 0.0
    rec = judge.judge("x", plan, _cfg("http://127.0.0.1:9/v1"))     # nothing listens: recorded, no raise
    assert not rec["ok"] and rec["error"]


def test_off_by_default_and_on_from_the_grid(tiny, tmp_path):  # noqa: F811
    g = G.expand(tiny_grid(tiny, seeds=[0], mechanism=["laplace"]))
    assert g.runs[0]["judge_base_url"] is None
    runner.run_grid(g, tmp_path / "off", show_progress=False, post=False)
    d = tmp_path / "off" / "runs" / g.runs[0]["run_id"]
    assert not (d / "judge.json").exists() and "judge_ok" not in json.loads((d / "metrics.json").read_text())
    with ScriptedServer(['{"faithfulness": 4, "coverage": 3, "fluency": 5}'] * 4) as srv:
        g = G.expand(tiny_grid(tiny, seeds=[0], mechanism=["laplace"], judge_base_url=srv.base_url,
                               method=["dpspin", "keyword_hist"], keyword_vocab_size=10))
        res = runner.run_grid(g, tmp_path / "on", show_progress=False)
    assert res.failed == 0
    for r in g.runs:
        met = json.loads((tmp_path / "on" / "runs" / r["run_id"] / "metrics.json").read_text())
        assert met["judge_faithfulness"] == 4.0 and met["judge_ok"] == 1.0
    assert "judge faithful" in (tmp_path / "on" / "report" / "comparison.md").read_text()


@pytest.mark.llm
@pytest.mark.slow
def test_judge_against_local_model(local_llm, tmp_path):  # noqa: F811
    """SmolLM2-135M is weak: this asserts the protocol (schema-constrained integer scores),
    not the scores' quality."""
    plans = [make_plan(s) for s in range(3)]
    for plan in plans:
        rec = judge.judge(template_summary(plan), plan, judge.JudgeConfig(base_url=local_llm, model="smollm2",
                                                                        api_key="local", max_retries=0, timeout=300))
        assert rec["error"] is None, rec
        assert rec["ok"] and all(rec[k] in (1, 2, 3, 4, 5) for k in judge.SCALES), rec
